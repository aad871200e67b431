"""The deterministic floors beside the catalog instances, by kind of coverage they add.

Each takes the instance plans of a pattern (`fusionspec.conformance.generate.instance_plans`)
and builds the few extra instances the coverage model (`fusionspec.conformance.generate.model`)
asks for that the plans in turn do not reach:

- `variant_cases`: each attribute variant (`UNARY_VARIANTS`, `REDUCTION_VARIANTS`) an op's uses
  did not take in turn, on the shortest plan holding the op;
- `rank_floor_cases`: each rank besides the instances' 4, on the fewest plans;
- `narrow_fill_cases`: each float base op in uniform bf16 and f16 with inexact values;
- `narrow_product_cases`: a lone bf16 and f16 ReduceProd over many inexact terms;
- `source_floor_cases`: a lone op given neither the attribute nor the input that can replace
  it (a reduction without axes);
- `operand_rank_cases`: a lone binary op with an operand of lower rank, whose dims line up
  with the other's trailing dims only or with other dims too.
"""

from __future__ import annotations

import hashlib
from collections.abc import Mapping, Sequence
from dataclasses import replace

from fusionspec.spec.catalog import PatternEntry
from fusionspec.spec.categories import BINARY
from fusionspec.spec.dtypes import DataType
from fusionspec.spec.errors import FusionspecError
from fusionspec.spec.graph import Graph, LogicalTensor, Op
from fusionspec.spec.onednn_json import dumps
from fusionspec.spec.opschemas import SCHEMAS
from fusionspec.spec.pattern_tree import Chain, Subgraphs, first_kinds

from ..cases import Case, CaseKind
from .instance_build import (
    ACT_BY_RANK,
    ANY_RANK_HEADS,
    VARIANTS,
    InstanceBuilder,
    build_instance,
    grammar_features,
    instance_case,
)
from .instance_plans import Plan
from .model import UNDRAWN, replaceable, schema_ranks, tensor_items
from .values import clean_plan, with_values

__all__ = ["variant_cases", "rank_floor_cases", "narrow_fill_cases", "narrow_product_cases",
           "NARROW_PRODUCT_TERMS", "source_floor_cases", "operand_rank_cases",
           "OPERAND_SHAPES"]

F32, BF16, F16 = DataType.f32, DataType.bf16, DataType.f16


def variant_cases(entry: PatternEntry, plans: Sequence[Plan], turns: Mapping[str, int],
                  engine_kind: str = "cpu") -> list[Case]:
    """The attribute variants the plans did not reach in turn (`turns`: how many uses of each
    op kind the plans' instances counted), each on the shortest plan holding its op."""
    cases = []
    for kind, variants in VARIANTS.items():
        holding = sorted((p for p in plans if kind in p.kinds), key=lambda p: len(p.kinds))
        for turn in range(turns.get(kind, 0), len(variants) if holding else 0):
            graph = build_instance(entry, holding[0], engine_kind, {**turns, kind: turn})
            case = instance_case(entry, graph, f"catalog instance: {holding[0].describe()}, "
                                               f"{kind} {variants[turn]}")
            # Full-precision values first: the grid's products may cancel to weak signal where
            # the variant zeroes a half (alpha = 0), and the positive grid would hide it.
            cases.append(with_values(case, clean_plan(graph, "dense")))
    return cases


def _takes_rank(kinds: Sequence[str], rank: int) -> bool:
    return all(k not in SCHEMAS or (rank in schema_ranks(k)
                                    and (f"{k}.rank", str(rank)) not in UNDRAWN) for k in kinds)


def rank_floor_cases(entry: PatternEntry, plans: Sequence[Plan]) -> list[Case]:
    """The ranks the coverage model asks of each op kind (`model.schema_ranks`), besides the
    instances' own 4: for each other rank, the fewest plans headed by an op of
    `ANY_RANK_HEADS` that between them hold every kind the plans hold at that rank, built
    with an activation of that rank (the random draws reach the ranks of the other heads)."""
    cases = []
    for rank in (r for r in sorted(ACT_BY_RANK) if r != 4):
        fitting = [p for p in plans if p.kinds[0] in ANY_RANK_HEADS
                   and _takes_rank(p.kinds, rank)]
        wanted = {k for p in fitting for k in p.kinds}
        while wanted:
            best = max(fitting, key=lambda p: (len(wanted & set(p.kinds)), -len(p.kinds)))
            wanted -= set(best.kinds)
            graph = build_instance(entry, best, rank=rank)
            case = instance_case(entry, graph, f"catalog instance: {best.describe()}, "
                                               f"rank {rank}")
            cases.append(with_values(case, clean_plan(graph)))
    return cases


def _narrowed(graph: Graph, dtype: DataType) -> Graph:
    """`graph` with every f32 tensor turned `dtype` (the uniform bf16/f16 rows), save those on
    a port whose schema does not allow it (a batch norm's f16 statistics stay f32)."""
    kept = {t.id for op in graph.ops
            for ports, tensors in ((SCHEMAS[op.kind].inputs, op.inputs),
                                   (SCHEMAS[op.kind].outputs, op.outputs))
            for port, t in zip(ports, tensors)
            if dtype not in SCHEMAS[op.kind].types[port.symbol]}

    def retyped(t: LogicalTensor) -> LogicalTensor:
        if t.dtype != F32 or t.id in kept:
            return t
        return LogicalTensor(t.id, dtype, t.shape, t.strides, t.layout_type, t.property_type)
    return Graph([Op(op.id, op.kind, tuple(map(retyped, op.inputs)),
                     tuple(map(retyped, op.outputs)), dict(op.attrs), op.name)
                  for op in graph.ops], engine_kind=graph.engine_kind)


def narrow_fill_cases(entry: PatternEntry, plans: Sequence[Plan]) -> list[Case]:
    """For each kind the base op of a float pattern can be, and each of bf16 and f16 among its
    uniform rows: the shortest plan with that base op, every tensor of that type, filled with
    full-precision values (``dense``) whose products and sums are not exact in it, so that an
    accumulator or an intermediate of the narrow type shows (`tensor_items` of the coverage
    model asks for them). ReduceProd has its own (`narrow_product_cases`)."""
    wanted = {(key.split(".")[0], value.split()[0]) for key, value in tensor_items(entry)
              if key.endswith(".narrow fill")}
    cases = []
    for kind, dtype in sorted(wanted):
        holding = sorted((p for p in plans if p.kinds[0] == kind), key=lambda p: len(p.kinds))
        if not holding or kind == "ReduceProd":
            continue
        graph = _narrowed(build_instance(entry, holding[0]), DataType(dtype))
        case = instance_case(entry, graph, f"catalog instance: {holding[0].describe()}, "
                                           f"{dtype} with inexact values")
        cases.append(with_values(replace(case, dtype=dtype), clean_plan(graph, "dense")))
    return cases


#: Elements each output of a narrow ReduceProd instance multiplies: enough for an accumulator
#: of the narrow type to drift past the output's rounding.
NARROW_PRODUCT_TERMS = 16


def narrow_product_cases(entry: PatternEntry) -> list[Case]:
    """For a pattern whose head may be a ReduceProd: a lone bf16 and a lone f16 ReduceProd over
    `NARROW_PRODUCT_TERMS` elements, filled with values whose products are not exact in that
    type (the ``dense`` domain), so that nothing after it hides how it accumulates."""
    main = entry.tree.parts[-1] if isinstance(entry.tree, Subgraphs) else entry.tree
    items = main.items if isinstance(main, Chain) else (main,)
    if "ReduceProd" not in first_kinds(items[0]):
        return []
    cases = []
    for dtype in (BF16, F16):
        b = InstanceBuilder("cpu")
        src = b.tensor((4, NARROW_PRODUCT_TERMS), dtype)
        b.op("ReduceProd", [src], [b.tensor((4,), dtype)], {"axes": (-1,)})
        cases.append(_lone_case(entry, Graph(b.ops), f"catalog instance: ReduceProd {dtype} "
                                f"over {NARROW_PRODUCT_TERMS} inexact terms", "grid",
                                dtype.value))
    return cases


def _lone_case(entry: PatternEntry, graph: Graph, description: str, base: str = "dense",
               dtype: str = "f32") -> Case:
    """A graph built op by op as a catalog instance of `entry`, its values from `base`."""
    digest = hashlib.sha256(dumps(graph, indent=None).encode()).hexdigest()[:8]
    features: dict[str, str | int] = {"source": "catalog instance",
                                      **grammar_features(entry, graph)}
    case = Case(f"{entry.id}/valid/instance-{digest}", CaseKind.valid, entry.id, graph,
                dtype=dtype, features=features, description=description)
    return with_values(case, clean_plan(graph, base))


def source_floor_cases(entry: PatternEntry) -> list[Case]:
    """For each kind a pattern's head may be that has an attribute an optional input can
    replace (`model.replaceable`): a lone op of that kind given neither, where the schema
    takes that (a reduction without axes reduces nothing: Sum, Mean, Max, Min and Prod give
    src back, L1 and L2 give |x|), filled with full-precision values."""
    cases = []
    for kind in sorted(_heads(entry)):
        if kind not in SCHEMAS or not replaceable(kind):
            continue
        b = InstanceBuilder("cpu")
        b.op(kind, [b.tensor((2, 3, 4))], [LogicalTensor(next(b.ids), F32)])
        try:
            graph = Graph(b.ops).finalize()
        except FusionspecError:
            continue  # an op that needs one of the two (Interpolate, the weights shape)
        cases.append(_lone_case(entry, graph, f"catalog instance: {kind} given neither "
                                f"{' nor '.join(replaceable(kind))} by attribute nor by input"))
    return cases


def _heads(entry: PatternEntry) -> frozenset[str]:
    main = entry.tree.parts[-1] if isinstance(entry.tree, Subgraphs) else entry.tree
    items = main.items if isinstance(main, Chain) else (main,)
    return frozenset(first_kinds(items[0]))


#: The operand shapes of the operand-rank floor: a lower-rank operand that lines up only with
#: the trailing dims, and one that also lines up with the dims from the channel axis.
OPERAND_SHAPES = (((2, 4, 3, 3), (3, 3)), ((2, 3, 3, 3), (3, 3)))


def operand_rank_cases(entry: PatternEntry) -> list[Case]:
    """For each binary kind: a lone op whose second operand has a lower rank (each of
    `OPERAND_SHAPES`), in the first pattern of the catalog a binary op may head (the items
    are the op's, so one pattern draws them)."""
    from fusionspec.spec.catalog import CATALOG

    first = next((e.id for e in CATALOG if _heads(e) & set(BINARY)), None)
    if entry.id != first:
        return []
    cases = []
    for kind in sorted(_heads(entry) & set(BINARY)):
        for src, operand in OPERAND_SHAPES:
            b = InstanceBuilder("cpu")
            b.op(kind, [b.tensor(src), b.tensor(operand)], [b.tensor(src)])
            cases.append(_lone_case(entry, Graph(b.ops).finalize(), f"catalog instance: "
                                    f"{kind} of {list(src)} and a lower-rank {list(operand)}"))
    return cases
