"""What the strategies must reach for a pattern, and what one case reached.

A case's `features` (see `fusionspec.conformance.generate.plan`) are read as (key, value)
*items*: ``("[Unary | Binary]^{0-3}_{>out}", "2")``, ``("Unary", "ReLU")``,
``("dtype_row", "bf16>f32")``, ``("data_format", "NXC")``. For each pattern:

- `grammar_items`: every count of every repetition, every option of every alternation and
  every member of every category in its tree;
- `row_items`: every dtype row it can take (`fusionspec.conformance.generate.dtypes`);
- `variant_items`: the attribute variants of the op kinds its main chain has (data formats,
  weights formats, groups, padding modes, broadcasts, bias inputs, 1-D MatMul operands,
  SoftMax's stats output, a negative SoftPlus beta, per-channel zero points that differ ...).

The op schemas' own items (every attribute's value classes, every optional port) are the
coverage model's (`fusionspec.conformance.generate.model`), required of the ci profile as a
whole rather than of each pattern.

`coverage_items` is all three; `case_items` the items one case's features exercise. The
report's grammar coverage and the reachability tests compare the two sets.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping

from fusionspec.spec.catalog import PatternEntry
from fusionspec.spec.categories import BINARY, REDUCTION
from fusionspec.spec.match import Role
from fusionspec.spec.notation import to_notation
from fusionspec.spec.opschemas import COMMUTATIVE_KINDS
from fusionspec.spec.pattern_tree import Alternation, CategoryRef, Repeat, leaves, op_kinds, walk

from .build import BROADCASTS
from .dtypes import has_table, required_rows
from .plan import feature_keys, main_part

__all__ = ["Item", "grammar_items", "row_items", "variant_items", "coverage_items",
           "case_items"]

#: A coverage item: (feature key, value as text).
Item = tuple[str, str]


def grammar_items(entry: PatternEntry) -> tuple[Item, ...]:
    """Every (feature key, value) pair the grammar of `entry` allows: each count of each
    Repeat, each option of each Alternation and each member of each category."""
    items: list[Item] = []
    keys = feature_keys(entry.id)
    for path, node in walk(entry.tree):
        if path not in keys:
            continue
        if isinstance(node, Repeat):
            items += [(keys[path], str(n)) for n in range(node.low, node.high + 1)]
        elif isinstance(node, Alternation):
            items += [(keys[path], to_notation(option)) for option in node.options]
        elif isinstance(node, CategoryRef):
            items += [(keys[path], kind) for kind in node.kinds]
    return tuple(items)


def row_items(entry: PatternEntry) -> tuple[Item, ...]:
    return tuple(("dtype_row", row) for row in required_rows(entry))


def _post_op_commutative(entry: PatternEntry) -> bool:
    return any(entry.roles[path] is Role.post_op and op_kinds(leaf) & COMMUTATIVE_KINDS
               for path, leaf in leaves(entry.tree))


def variant_items(entry: PatternEntry) -> tuple[Item, ...]:
    """Attribute features that instances of `entry` must show between them."""
    main, _ = main_part(entry)
    kinds = op_kinds(main)
    wanted: dict[str, tuple[str, ...]] = {}
    convs = kinds & {"Convolution", "ConvTranspose", "ConvolutionBackwardWeights"}
    if convs:
        wanted.update(data_format=("NCX", "NXC"), groups=("1", "2", "depthwise"),
                      auto_pad=("None", "SAME_UPPER", "SAME_LOWER", "VALID"),
                      spatial_dims=("1", "2", "3"),
                      weights_format=("IOX", "XOI") if "ConvTranspose" in convs
                      else ("OIX", "XIO"))
        if "ConvolutionBackwardWeights" in convs:
            wanted["weights_shape_source"] = ("attribute", "input")
        else:
            wanted["bias_input"] = ("yes", "no")
    if "MatMul" in kinds:
        wanted.update(transpose_a=("yes", "no"), transpose_b=("yes", "no"),
                      bias_input=("yes", "no"), src_rank=("1", "2", "3", "4"),
                      weights_rank=("1", "2", "3"))
    if kinds & {"AvgPool", "MaxPool"}:
        wanted.update(rounding_type=("floor", "ceil"), data_format=("NCX", "NXC"))
    if "AvgPool" in kinds:
        wanted["exclude_pad"] = ("yes", "no")
    if "Interpolate" in kinds:
        wanted.update(mode=("nearest", "linear", "bilinear", "trilinear"),
                      size_source=("sizes", "scales", "sizes input"),
                      coordinate_transformation_mode=("half_pixel", "align_corners"))
    if kinds & set(REDUCTION):
        wanted["keep_dims"] = ("yes", "no")
        wanted["axes_source"] = ("attribute", "input")
    if "LeakyReLU" in kinds:
        wanted["leaky_relu_alpha"] = ("above 1", "at most 1")
    if "SoftMax" in kinds:
        wanted["softmax_mode"] = ("none", "inf_as_zero")
        wanted["softmax_stats"] = ("yes", "no")
    if "SoftPlus" in kinds:
        wanted["softplus_beta"] = ("negative", "positive")
    if kinds & set(BINARY):
        wanted.update(broadcast=BROADCASTS, auto_broadcast=("numpy", "none"))
    if _post_op_commutative(entry):
        wanted["chain_port"] = ("src_0", "src_1")
    if kinds & {"BatchNormInference", "BatchNormTrainingBackward"}:
        wanted["bn_stats"] = ("f32", "bf16")
    if "BatchNormTrainingBackward" in kinds:
        wanted["bn_bwd_outputs"] = ("1", "3")
    if Role.weights_q2f in entry.roles.values():
        wanted["weights_quantization"] = ("per_tensor", "per_channel")
        wanted["quantization_axis"] = ("negative", "non-negative")
        wanted["channel_zps"] = ("differing", "uniform")
    if has_table(entry):
        wanted["engine_kind"] = ("cpu", "gpu")
    if "Reorder" in kinds:
        wanted["reorder_layout"] = ("dense", "permuted")
    return tuple((key, value) for key, values in wanted.items() for value in values)


def coverage_items(entry: PatternEntry) -> tuple[Item, ...]:
    """Everything the valid cases of `entry` must reach between them."""
    return grammar_items(entry) + row_items(entry) + variant_items(entry)


def case_items(features: Mapping[str, str | int]) -> Iterator[Item]:
    """The (key, value) pairs one case's features exercise (comma-joined values split)."""
    for key, value in features.items():
        if isinstance(value, int):
            yield key, str(value)
        else:
            for part in value.split(","):
                if part:
                    yield key, part
