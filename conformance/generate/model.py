"""The coverage model: what the op schemas allow each op of a pattern to be, as items.

Nothing here is written per op: the items come from the op schemas
(`fusionspec.spec.opschemas.SCHEMAS`) of every op kind a catalog pattern can hold (its main
chain, its post-ops and its side subgraphs). For an op kind ``K``:

- each attribute ``a`` gives the feature ``K.a`` with a value class per way the schema lets it
  differ: ``omitted`` when it is optional (the default applies); each allowed string; ``true``
  and ``false`` for a boolean; for a number, ``negative``, ``zero``, ``one`` and ``positive``
  (other positive values) within the schema's bounds, and ``at minimum`` / ``at maximum``
  where the schema draws a bound;
- each optional input or output port ``p`` gives ``K.input p`` / ``K.output p`` with the values
  ``present`` and ``absent``;
- an attribute that an optional input of the same name can replace (a reduction's ``axes``)
  gives ``K.a source``: ``attribute``, ``input`` or ``neither`` (the default applies: empty
  axes, the identity);
- a binary op gives ``K.operand ranks``: ``equal``, ``lower`` or ``lower with ambiguous
  alignment`` (a lower-rank operand whose dims line up with more than one run of the other
  operand's dims, so that aligning it anywhere but at the end gives another result);
- ``K.rank``: each rank of the op's first input from 1 to `MAX_RANK` (the largest the generator
  draws, which keeps tensors small) that the schema accepts: an op built with every required
  input of that rank (or of rank 1, for a bias, a scale or an axes list) and the least
  values of its list attributes passes the schema's validation and shape inference
  (`schema_ranks`);
- the number lists of a quantization op (an op whose ``qtype`` may be ``per_channel``:
  ``scales``, ``zps``): ``per-tensor``, ``per-channel uniform``, ``per-channel differing``, and
  where zero is allowed, ``all zero``, ``all non-zero`` and ``per-channel differing
  non-zero`` (zero points that differ per channel and none of them 0).

`graph_features(graph)` reads the same items off a graph (every op, side subgraphs included):
it is what a case records among its features, so the results document counts it per pattern
and the report shows it per op and per pattern. `model_items(entry)` is what a pattern's ops
could show (the structural situations its rules speak of are its near misses' rules:
`fusionspec.conformance.generate.near_miss.structure_items`), less `UNDRAWN`: the items the
generator leaves out, each with the reason it cannot be drawn as a valid case.
`fusionspec.conformance.generate.items` joins them with the dtype row x attribute pairs and
the ill-formed settings into what the ci profile must draw (`required_items`); a test holds
it to drawing every required item at least once.

>>> value_classes(AttrSpec("epsilon", AttrKind.f32, required=True, minimum=0.0), 0.0)
('zero', 'at minimum')
>>> [v for k, v in op_items("SoftMax") if k == "SoftMax.output stats"]
['present', 'absent']
>>> schema_ranks("Convolution"), schema_ranks("MatMul")
((3, 4, 5), (1, 2, 3, 4, 5))
"""

from __future__ import annotations

import itertools
from collections.abc import Mapping
from functools import cache

from fusionspec.spec.catalog import PatternEntry
from fusionspec.spec.categories import BINARY
from fusionspec.spec.dtypes import DataType
from fusionspec.spec.errors import FusionspecError
from fusionspec.spec.graph import AttrValue, Graph, LogicalTensor, Op
from fusionspec.spec.match import Role
from fusionspec.spec.opschemas import SCHEMAS
from fusionspec.spec.pattern_tree import leaves, op_kinds
from fusionspec.spec.schema import AttrKind, AttrSpec, InferenceFailure, OpSchema
from fusionspec.spec.validate import validate_op

from .attrs import MAX_RANK
from .dtypes import required_rows

#: A coverage item: (feature key, value as text), as `fusionspec.conformance.generate.coverage`
#: spells them.
Item = tuple[str, str]

__all__ = ["Item", "OMITTED", "SOURCES", "replaceable", "source_of", "OPERAND_RANKS",
           "operand_ranks", "value_classes",
           "list_classes", "op_items", "schema_items", "model_items",
           "graph_features", "schema_ranks", "tensor_items", "UNDRAWN",
           "MAX_RANK", "SPECIAL_KINDS", "SPECIAL_VALUES"]

OMITTED = "omitted"
#: Op kinds whose results on NaN and inf inputs are where implementations part ways (a max
#: that drops a NaN, a clamp that keeps it, a division guarded against zero, a pool or a
#: SoftMax over infinities): each must read a tensor with NaN and inf in some case.
SPECIAL_KINDS = frozenset({"Divide", "Reciprocal", "Maximum", "Minimum", "Clamp", "ReLU", "Log",
                           "Sqrt", "MaxPool", "AvgPool", "SoftMax", "Round"})
SPECIAL_VALUES = "NaN and inf"
_NUMBERS = (AttrKind.f32, AttrKind.s64)


def _number_classes(spec: AttrSpec) -> list[str]:
    low = spec.minimum if spec.minimum is not None else float("-inf")
    high = spec.maximum if spec.maximum is not None else float("inf")
    found = [name for name, allowed in (("negative", low < 0), ("zero", low <= 0 <= high),
                                        ("one", low <= 1 <= high), ("positive", high > 0))
             if allowed]
    if spec.minimum is not None:
        found.append("at minimum")
    if spec.maximum is not None:
        found.append("at maximum")
    return found


def _attr_classes(spec: AttrSpec) -> list[str]:
    found = [] if spec.required else [OMITTED]
    if spec.kind is AttrKind.string and spec.allowed:
        found += list(spec.allowed)
    elif spec.kind is AttrKind.boolean:
        found += ["true", "false"]
    elif spec.kind in _NUMBERS:
        found += _number_classes(spec)
    return found


def _probe_type(types: frozenset[DataType], avoid: DataType | None = None) -> DataType:
    choices = sorted(types - {avoid} if types - {avoid} else types, key=lambda d: d.value)
    return DataType.f32 if DataType.f32 in choices else choices[0]


def _probe_values(spec: AttrSpec, length: int) -> list[AttrValue]:
    """Values of a required attribute a probe tries: the least the schema allows (a list of
    `length` of them; 1 or 0 where it sets no bound)."""
    if spec.kind is AttrKind.s64_list:
        if spec.minimum is not None:
            return [(int(spec.minimum),) * length]
        return [(1,) * length, (0,) * length]
    if spec.kind is AttrKind.f32_list:
        return [(1.0,)]
    if spec.kind is AttrKind.string:
        return [(spec.allowed or ("",))[0]]
    if spec.kind is AttrKind.boolean:
        return [False]
    least = spec.minimum if spec.minimum is not None else 1
    return [float(least) if spec.kind is AttrKind.f32 else int(least)]


def _accepts_rank(schema: OpSchema, rank: int) -> bool:
    """Whether some op of `schema` whose first input has `rank` validates and infers."""
    required = [p for p in schema.inputs if not p.optional]
    outputs = [p for p in schema.outputs if not p.optional]
    needed = [a for a in schema.attrs if a.required]
    for length in dict.fromkeys((max(rank - 2, 0), rank, 1)):
        # An optional list that shape inference needs one of (Interpolate's sizes).
        # (ConvolutionBackwardWeights' weights_shape has one value per dim, not per spatial
        # dim.)
        extras: list[dict[str, AttrValue]] = [{}] + [
            {a.name: (1,) * n} for a in schema.attrs
            if not a.required and a.kind is AttrKind.s64_list
            for n in dict.fromkeys((length, rank))]
        others = [[(1,) * rank, (1,), (rank,)]] * (len(required) - 1)
        for values, extra, shapes, change in itertools.product(
                itertools.product(*(_probe_values(a, length) for a in needed)), extras,
                itertools.product([(1,) * rank], *others), (False, True)):
            inputs = tuple(LogicalTensor(i, _probe_type(schema.types[p.symbol]), shape)
                           for i, (p, shape) in enumerate(zip(required, shapes)))
            # The output's type, or another one where the schema allows it (TypeCast must
            # change the type).
            avoid = inputs[0].dtype if inputs and change else None
            outs = tuple(LogicalTensor(100 + i, _probe_type(schema.types[p.symbol], avoid))
                         for i, p in enumerate(outputs))
            attrs = {a.name: v for a, v in zip(needed, values)}
            try:
                op = validate_op(Op(0, schema.kind, inputs, outs, {**attrs, **extra}))
                if schema.infer is not None:
                    schema.infer(op, list(shapes))
            except (FusionspecError, InferenceFailure, ValueError, LookupError, TypeError):
                continue
            return True
    return False


@cache
def schema_ranks(kind: str) -> tuple[int, ...]:
    """The ranks from 1 to `MAX_RANK` the schema of `kind` accepts for its first input."""
    return tuple(r for r in range(1, MAX_RANK + 1) if _accepts_rank(SCHEMAS[kind], r))


def _quantizes(schema: OpSchema) -> bool:
    qtype = schema.attr_spec("qtype")
    return qtype is not None and "per_channel" in (qtype.allowed or ())


_LISTS = (AttrKind.f32_list, AttrKind.s64_list)


def _list_item_classes(spec: AttrSpec) -> list[str]:
    found = ["per-tensor", "per-channel uniform", "per-channel differing"]
    if spec.minimum is None or spec.minimum <= 0:
        found += ["all zero", "all non-zero", "per-channel differing non-zero"]
    return found


def list_classes(spec: AttrSpec, value: AttrValue | None) -> tuple[str, ...]:
    """The classes of a quantization op's number list `value` (see the module docstring)."""
    if not isinstance(value, tuple) or not value:
        return ()
    numbers = [float(v) for v in value if isinstance(v, int | float)]
    spread = ("per-tensor" if len(numbers) == 1 else "per-channel differing"
              if len(set(numbers)) > 1 else "per-channel uniform")
    found = [spread]
    if spec.minimum is None or spec.minimum <= 0:
        if not any(numbers):
            found.append("all zero")
        elif all(numbers):
            found.append("all non-zero")
            if spread == "per-channel differing":
                found.append("per-channel differing non-zero")
    return tuple(found)


@cache
def op_items(kind: str) -> tuple[Item, ...]:
    """Every item the schema of `kind` allows (see the module docstring)."""
    schema = SCHEMAS[kind]
    items: list[Item] = []
    for spec in schema.attrs:
        items += [(f"{kind}.{spec.name}", value) for value in _attr_classes(spec)]
        if spec.kind in _LISTS and _quantizes(schema):
            items += [(f"{kind}.{spec.name}", value) for value in _list_item_classes(spec)]
    items += [(f"{kind}.rank", str(rank)) for rank in schema_ranks(kind)]
    items += [(f"{kind}.{name} source", v) for name in replaceable(kind) for v in SOURCES]
    if kind in BINARY:
        items += [(f"{kind}.operand ranks", v) for v in OPERAND_RANKS]
    for direction, ports in (("input", schema.inputs), ("output", schema.outputs)):
        for port in ports:
            if port.optional:
                items += [(f"{kind}.{direction} {port.name}", v) for v in ("present", "absent")]
    return tuple(items)


#: How a binary op's operands compare in rank: the same, or one lower, with its dims lining up
#: with the other's trailing dims only, or also with another run of them (aligned at the end,
#: as broadcasting does, and at the channel axis or the front, as a backend might).
OPERAND_RANKS = ("equal", "lower", "lower with ambiguous alignment")


def operand_ranks(a: tuple[int, ...] | None, b: tuple[int, ...] | None) -> str | None:
    """The `OPERAND_RANKS` class of two operand shapes (None when a rank is unknown)."""
    if a is None or b is None:
        return None
    if len(a) == len(b):
        return OPERAND_RANKS[0]
    big, small = (a, b) if len(a) > len(b) else (b, a)
    # Where the smaller fits inside the bigger without changing its shape; where it fits at
    # more than one place and is not all ones, the places give different results.
    fits = [start for start in range(len(big) - len(small) + 1)
            if all(s in (1, d) for s, d in zip(small, big[start:]))]
    ambiguous = len(fits) > 1 and any(s != 1 for s in small)
    return OPERAND_RANKS[2] if ambiguous else OPERAND_RANKS[1]


#: Where an attribute that an optional input of the same name can replace takes its value
#: from: the attribute, the input, or neither (the default: empty axes reduce nothing).
SOURCES = ("attribute", "input", "neither")


@cache
def replaceable(kind: str) -> tuple[str, ...]:
    """The attributes of `kind` that an optional input of the same name can replace
    (a reduction's ``axes``, Interpolate's ``sizes``, ConvolutionBackwardWeights'
    ``weights_shape``)."""
    schema = SCHEMAS[kind]
    names = {a.name for a in schema.attrs}
    return tuple(p.name for p in schema.inputs if p.optional and p.name in names)


def source_of(op: Op, name: str) -> str:
    """Where `op` takes the value of `name` (one of `replaceable`) from (see `SOURCES`)."""
    port = next(i for i, p in enumerate(SCHEMAS[op.kind].inputs) if p.name == name)
    if port < len(op.inputs):
        return "input"
    return "attribute" if op.attrs.get(name) else "neither"


def value_classes(spec: AttrSpec, value: AttrValue | None) -> tuple[str, ...]:
    """The classes `value` of the attribute `spec` falls in (a bound may also be zero or one;
    none for an attribute without classes, such as a list)."""
    if value is None:
        return () if spec.required else (OMITTED,)
    if spec.kind is AttrKind.string and spec.allowed:
        return (str(value),)
    if spec.kind is AttrKind.boolean:
        return ("true" if value else "false",)
    if spec.kind not in _NUMBERS or isinstance(value, bool) or not isinstance(value,
                                                                             int | float):
        return ()
    found = ["negative" if value < 0 else "zero" if value == 0 else "one" if value == 1
             else "positive"]
    if spec.minimum is not None and value == spec.minimum:
        found.append("at minimum")
    if spec.maximum is not None and value == spec.maximum:
        found.append("at maximum")
    return tuple(found)


def graph_features(graph: Graph) -> dict[str, str]:
    """The model items `graph` shows, as case features: ``K.a`` -> its value classes,
    comma-joined and sorted."""
    found: dict[str, set[str]] = {}
    for op in graph.ops:
        schema = SCHEMAS.get(op.kind)
        if schema is None:
            continue
        for spec in schema.attrs:
            classes = value_classes(spec, op.attrs.get(spec.name))
            if spec.kind in _LISTS and _quantizes(schema):
                classes += list_classes(spec, op.attrs.get(spec.name))
            if classes:
                found.setdefault(f"{op.kind}.{spec.name}", set()).update(classes)
        for direction, ports, given in (("input", schema.inputs, len(op.inputs)),
                                        ("output", schema.outputs, len(op.outputs))):
            for index, port in enumerate(ports):
                if port.optional:
                    found.setdefault(f"{op.kind}.{direction} {port.name}", set()).add(
                        "present" if index < given else "absent")
        if op.inputs and op.inputs[0].shape is not None:
            found.setdefault(f"{op.kind}.rank", set()).add(str(len(op.inputs[0].shape)))
        if op.kind in BINARY and len(op.inputs) == 2:
            ranks = operand_ranks(op.inputs[0].shape, op.inputs[1].shape)
            if ranks is not None:
                found.setdefault(f"{op.kind}.operand ranks", set()).add(ranks)
        for name in replaceable(op.kind):
            found.setdefault(f"{op.kind}.{name} source", set()).add(source_of(op, name))
    return {key: ",".join(sorted(values)) for key, values in sorted(found.items())}


#: Items of the model no valid case can show, and why. Keyed by (feature, value); each reason
#: is a rule of the spec or a recorded decision, never a choice of the generator's.
_GROUPS = ("groups splits the channels into that many groups: shape inference needs a "
           "positive divisor of both channel counts, so no well-formed graph has it")
UNDRAWN: Mapping[Item, str] = {
    **{(f"{kind}.groups", value): _GROUPS for kind in (
        "Convolution", "ConvTranspose", "ConvolutionBackwardWeights")
       for value in ("negative", "zero")},
    **{(f"{kind}.groups", "at maximum"): "2^31 - 1 groups need as many channels on each "
       "side: far past any tensor a case can hold" for kind in (
        "Convolution", "ConvTranspose", "ConvolutionBackwardWeights")},
    ("SoftPlus.beta", "zero"): "the formula ln(1 + e^(beta*x))/beta divides by beta: no value "
    "is defined for beta = 0 (the reference rejects it as bad input)",
    ("MatMul.accumulation_mode", "f16"): "licenses sums held in f16, an error the bounds do not "
    "model: a case would fail a backend that takes the licence (a suite limitation)",
    ("BiasAddBackward.rank", "2"): "its one pattern (train.conv_bwd_weights_bias_bwd) feeds it "
    "the output of a ConvolutionBackwardWeights: convolution weights, rank 3 and up",
    ("ReLUBackward.rank", "1"): "its one pattern (train.relu_bwd_bn_bwd) feeds its output to a "
    "BatchNormTrainingBackward, whose schema needs rank 2 and up",
    ("TypeCast.rank", "1"): "TypeCast appears only after a SoftMax (softmax.post_ops), whose "
    "schema needs a src of rank 2 and up",
    **{(f"{kind}.scales", "all zero"): "a zero scale: Quantize divides by it and Dequantize "
       "maps every value to 0, so no output would carry a signal the suite could judge"
       for kind in ("Quantize", "Dequantize")},
    ("ConvolutionBackwardWeights.weights_shape source", "neither"): "the weights shape comes "
    "from the attribute or the input: without either, no output shape exists (an ill-formed "
    "graph, schema.shape.infer)",
    ("MatMul.accumulation_mode", "s32"): "integer accumulation: every MatMul of the patterns "
    "multiplies f32, bf16 or f16 operands (the int8 patterns dequantize first)",
}


def tensor_items(entry: PatternEntry) -> tuple[Item, ...]:
    """The tensor value classes `entry` must show: NaN and inf into each op kind of
    `SPECIAL_KINDS` it holds, and fills inexact in bf16 and in f16 into each kind its base op
    can be, where its dtype rows make the whole chain bf16 or f16."""
    kinds = op_kinds(entry.tree)
    items = [(f"{kind}.special values", SPECIAL_VALUES) for kind in sorted(kinds & SPECIAL_KINDS)]
    narrow = [row for row in ("bf16", "f16") if row in required_rows(entry)]
    base = sorted({kind for path, leaf in leaves(entry.tree)
                   if entry.roles.get(path) is Role.base for kind in op_kinds(leaf)})
    items += [(f"{kind}.narrow fill", f"{row} inexact") for kind in base for row in narrow]
    return tuple(items)


def schema_items(entry: PatternEntry) -> tuple[Item, ...]:
    """The items of every op kind `entry` can hold (`op_items`)."""
    return tuple(item for kind in sorted(op_kinds(entry.tree)) if kind in SCHEMAS
                 for item in op_items(kind))


def model_items(entry: PatternEntry) -> tuple[Item, ...]:
    """The model items of every op kind `entry` can hold and its tensor value classes, less
    `UNDRAWN` (`fusionspec.conformance.generate.items` adds the pairs and the ill-formed
    settings)."""
    return tuple(item for item in (*schema_items(entry), *tensor_items(entry))
                 if item not in UNDRAWN)
