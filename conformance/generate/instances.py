"""Concrete graphs that instantiate catalog patterns.

`instance_plans(entry)` expands a pattern tree into plans: which leaf each op takes, how many
copies each repetition has, which option of an alternation, which member of a category, and
whether a binary post-op reads its operand through a Dequantize. Together the plans reach every
alternative, every repetition count inside the bounds, every optional branch and every category
member. `build_instance(entry, plan)` wires a plan into a valid graph with small shapes:

- the main chain flows through port 0; a binary's other operand is a fresh input (or a
  Dequantize of one, where the pattern has a ``<t2`` side subgraph);
- ``<t1`` side subgraphs (the weights path, a Dequantize-fed Add) are built and wired to the
  reading op's other input;
- dtypes follow the family: f32 for float patterns; u8/s8 in and out of quantized ones; SoftMax's
  TypeCast goes to bf16.

The partitioner's tests check that each such graph is exactly one partition of its pattern;
the conformance strategies draw from the same plans.
"""

from __future__ import annotations

import hashlib
import itertools
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field, replace

from fusionspec.spec.catalog import PatternEntry
from fusionspec.spec.categories import BINARY, CATEGORIES, REDUCTION, UNARY
from fusionspec.spec.dtypes import DataType
from fusionspec.spec.graph import AttrValue, Graph, LogicalTensor, Op
from fusionspec.spec.match import MatchError
from fusionspec.spec.notation import to_notation
from fusionspec.spec.onednn_json import dumps
from fusionspec.spec.opschemas import SCHEMAS
from fusionspec.spec.pattern_tree import (
    Alternation,
    CategoryRef,
    Chain,
    Group,
    Node,
    OpRef,
    Repeat,
    Subgraphs,
    first_kinds,
    mark_sites,
    node_at,
)

from ..cases import Case, CaseKind
from .model import UNDRAWN, schema_ranks, tensor_items
from .values import clean_plan, targeted_corners, with_values

__all__ = ["Plan", "instance_plans", "build_instance", "instance_cases", "UNARY_ATTRS",
           "UNARY_VARIANTS",
           "narrow_product_cases", "narrow_fill_cases", "NARROW_PRODUCT_TERMS"]

F32, BF16, F16, U8, S8 = DataType.f32, DataType.bf16, DataType.f16, DataType.u8, DataType.s8

#: Attributes that make each unary op of the pages valid, one variant per value class of its
#: attribute (`fusionspec.conformance.generate.model`): the instances take them in turn.
UNARY_VARIANTS: dict[str, tuple[dict[str, AttrValue], ...]] = {
    "Clamp": ({"min": -1.0, "max": 1.0}, {"min": 0.25, "max": 1.0},
              {"min": -1.0, "max": -0.25}),
    "Elu": ({"alpha": 0.5}, {"alpha": 0.0}, {"alpha": -0.5}),
    "LeakyReLU": ({"alpha": 1.5}, {"alpha": 0.0}, {"alpha": -0.5}, {"alpha": 1.0}),
    "Pow": ({"beta": 2.0}, {"beta": -1.0}, {"beta": 0.0}),
    "SoftPlus": ({"beta": -1.0}, {"beta": 2.0}),
    "GELU": ({}, {"mode": "gelu_tanh"}),
}
#: Each reduction's ``keep_dims`` both ways, taken in turn like the unary variants, so the
#: deterministic floor shows both output ranks whatever the random draws happen to reach.
REDUCTION_VARIANTS: dict[str, tuple[dict[str, AttrValue], ...]] = {
    kind: ({"keep_dims": False}, {"keep_dims": True}) for kind in REDUCTION}
#: Every op's variants the instances take in turn.
_VARIANTS = {**UNARY_VARIANTS, **REDUCTION_VARIANTS}
#: The first variant of each (what a lone instance takes).
UNARY_ATTRS: dict[str, dict[str, AttrValue]] = {k: v[0] for k, v in UNARY_VARIANTS.items()}

_ACT = (1, 4, 6, 6)  # NCX activations
#: The activation of each rank the rank floor builds instances at (`rank_floor_cases`).
_ACT_BY_RANK = {1: (6,), 2: (2, 6), 3: (1, 4, 6), 4: _ACT, 5: (1, 4, 3, 3, 2)}
#: Head kinds whose instance takes an activation of any rank (the others have shapes of
#: their own: a convolution's, a pool's, a MatMul's).
_ANY_RANK_HEADS = frozenset({*UNARY, *BINARY, *REDUCTION, "Reciprocal", "Reorder",
                             "BatchNormInference"})
_VEC = (4,)
_CONV: dict[str, AttrValue] = {"strides": (1, 1), "pads_begin": (1, 1), "pads_end": (1, 1),
                               "dilations": (1, 1), "data_format": "NCX"}


@dataclass(frozen=True)
class Plan:
    """The main chain's op kinds in order; `dequantized` marks the binary post-ops (by position
    in `kinds`) whose other operand comes through a Dequantize; `weights_quantize` adds the
    optional Quantize on the weights path."""

    kinds: tuple[str, ...]
    dequantized: frozenset[int] = field(default_factory=frozenset)
    weights_quantize: bool = False

    def describe(self) -> str:
        parts = [f"{k}(dq)" if i in self.dequantized else k for i, k in enumerate(self.kinds)]
        return " + ".join(parts) + ("  [Quantize on weights]" if self.weights_quantize else "")


# -- expanding a tree into plans -----------------------------------------------------------

def _expand(node: Node) -> list[list[str]]:
    """Every sequence of leaf tokens a node can match: op kinds, or '@Category' placeholders."""
    if isinstance(node, OpRef):
        return [[node.kind]]
    if isinstance(node, CategoryRef):
        return [[f"@{node.name}"]]
    if isinstance(node, Alternation):
        return [seq for option in node.options for seq in _expand(option)]
    if isinstance(node, Group):
        return _expand(node.body)
    if isinstance(node, Repeat):
        body = _expand(node.body)
        found: list[list[str]] = []
        for count in range(node.low, node.high + 1):
            # Cycle the body's options across copies instead of taking their full product.
            found.append([tok for i in range(count) for tok in body[i % len(body)]])
            if len(body) > 1 and count > 0:
                found.append([tok for i in range(count) for tok in body[(i + 1) % len(body)]])
        return found
    if isinstance(node, Chain):
        seqs: list[list[str]] = [[]]
        for item in node.items:
            seqs = [a + b for a in seqs for b in _expand(item)]
        return seqs
    raise ValueError("Subgraphs are expanded by instance_plans")


def instance_plans(entry: PatternEntry) -> list[Plan]:
    """Plans reaching every alternative, count, optional branch and category member."""
    tree = entry.tree
    main = tree.parts[-1] if isinstance(tree, Subgraphs) else tree
    sides = tree.parts[:-1] if isinstance(tree, Subgraphs) else ()
    has_t2 = any(isinstance(p, Repeat) for p in sides)
    weights_q = any(_has_optional_quantize(p) for p in sides)
    members = _member_cycles()
    unseen = {name: set(kinds) for name, kinds in CATEGORIES.items()}
    plans: dict[Plan, None] = {}
    sequences = _expand(main)
    needed = {tok[1:] for seq in sequences for tok in seq if tok.startswith("@")}
    n = 0
    # Go round again until every member of every category the pattern uses has appeared.
    while n == 0 or any(unseen[name] for name in needed):
        for seq in sequences:
            kinds = tuple(next(members[tok[1:]]) if tok.startswith("@") else tok for tok in seq)
            for tok, kind in zip(seq, kinds):
                if tok.startswith("@"):
                    unseen[tok[1:]].discard(kind)
            if _impossible(kinds):
                continue
            binaries = [i for i, k in enumerate(kinds) if k in BINARY and i > 0]
            dq = frozenset(binaries[: n % (len(binaries) + 1)]) if has_t2 else frozenset()
            plans[Plan(kinds, dq, weights_q and n % 2 == 1)] = None
            n += 1
    return list(plans)


def _impossible(kinds: Sequence[str]) -> bool:
    """Kind sequences the notation allows but no well-formed graph has: a Quantize right after
    a TypeCast would read bf16/f16, and Quantize takes f32 only (decision dec.sm_f2f_and_f2q)."""
    return any(a == "TypeCast" and b == "Quantize" for a, b in itertools.pairwise(kinds))




def _member_cycles() -> dict[str, Iterator[str]]:
    return {name: itertools.cycle(kinds) for name, kinds in CATEGORIES.items()}


def _has_optional_quantize(node: Node) -> bool:
    return isinstance(node, Chain) and any(
        isinstance(i, Repeat) and isinstance(i.body, OpRef) and i.body.kind == "Quantize"
        for i in node.items)


# -- building a graph ----------------------------------------------------------------------

class _Builder:
    def __init__(self, engine_kind: str, turns: dict[str, int] | None = None,
                 act: tuple[int, ...] = _ACT) -> None:
        self.act = act
        self.ops: list[Op] = []
        self.ids = itertools.count()
        self.engine_kind = engine_kind
        self.turns = turns

    def variant_attrs(self, kind: str) -> dict[str, AttrValue]:
        variants = _VARIANTS.get(kind, ({},))
        if self.turns is None:
            return dict(variants[0])
        turn = self.turns.get(kind, 0)
        self.turns[kind] = turn + 1
        return dict(variants[turn % len(variants)])

    def tensor(self, shape: Sequence[int], dtype: DataType = F32) -> LogicalTensor:
        return LogicalTensor(next(self.ids), dtype, tuple(shape))

    def op(self, kind: str, inputs: Sequence[LogicalTensor], outputs: Sequence[LogicalTensor],
           attrs: dict[str, AttrValue] | None = None) -> LogicalTensor:
        self.ops.append(Op(len(self.ops), kind, tuple(inputs), tuple(outputs), attrs or {}))
        return outputs[0]

    def dequantize(self, shape: Sequence[int], dtype: DataType = U8) -> LogicalTensor:
        return self.op("Dequantize", [self.tensor(shape, dtype)], [self.tensor(shape)],
                       {"scales": (0.5,), "zps": (2,) if dtype == U8 else (0,)})


def build_instance(entry: PatternEntry, plan: Plan, engine_kind: str = "cpu",
                   turns: dict[str, int] | None = None, rank: int = 4) -> Graph:
    """A valid graph holding exactly one instance of `entry` laid out as `plan`. Each unary op
    with attributes takes the next of its `UNARY_VARIANTS` by `turns` (its uses so far, counted
    there), or the first when `turns` is None. A head of `_ANY_RANK_HEADS` reads an activation
    of `rank`."""
    b = _Builder(engine_kind, turns, _ACT_BY_RANK[rank])
    sides = entry.tree.parts[:-1] if isinstance(entry.tree, Subgraphs) else ()
    t1_reader = _t1_reader(entry)
    cur: LogicalTensor | None = None
    for i, kind in enumerate(plan.kinds):
        if cur is None:
            cur = _head(b, kind, plan)
            continue
        if kind == t1_reader and sides:
            cur = _t1_op(b, kind, cur, plan)
        elif kind in BINARY:
            other = (b.dequantize(cur.shape or ()) if i in plan.dequantized
                     else b.tensor(cur.shape or ()))
            cur = b.op(kind, [cur, other], [b.tensor(cur.shape or ())])
        else:
            cur = _follower(b, kind, cur)
    return Graph(b.ops, engine_kind=engine_kind)


def _t1_reader(entry: PatternEntry) -> str | None:
    for site in mark_sites(entry.tree):
        if not site.output and site.name == "t1":
            node: Node = entry.tree
            for index in site.path:
                node = _child(node, index)
            if isinstance(node, OpRef):
                return node.kind
    return None


def _child(node: Node, index: int) -> Node:
    if isinstance(node, Subgraphs):
        return node.parts[index]
    if isinstance(node, Chain):
        return node.items[index]
    if isinstance(node, Alternation):
        return node.options[index]
    assert isinstance(node, Group | Repeat)
    return node.body


def _head(b: _Builder, kind: str, plan: Plan) -> LogicalTensor:
    if kind == "Dequantize":
        first = plan.kinds[1] if len(plan.kinds) > 1 else ""
        shape = (4, 8) if first == "MatMul" else _ACT
        return b.dequantize(shape, U8)
    if kind == "Convolution":
        return b.op(kind, [b.tensor(_ACT), b.tensor((4, 4, 3, 3))], [b.tensor(_ACT)],
                    {**_CONV, "weights_format": "OIX"})
    if kind == "ConvTranspose":
        return b.op(kind, [b.tensor(_ACT), b.tensor((4, 4, 3, 3))], [b.tensor(_ACT)],
                    {**_CONV, "weights_format": "IOX"})
    if kind == "MatMul":
        return b.op(kind, [b.tensor((4, 8)), b.tensor((8, 8))], [b.tensor((4, 8))])
    if kind == "Interpolate":
        return b.op(kind, [b.tensor((1, 4, 3, 3))], [b.tensor(_ACT)],
                    {"mode": "nearest", "sizes": (6, 6), "data_format": "NCX"})
    if kind.startswith("Reduce"):
        # The axes from the optional input (the random draws mostly take the attribute); the
        # only axis of a rank-1 src is kept.
        attrs = b.variant_attrs(kind)
        act = b.act
        if len(act) == 1:
            attrs["keep_dims"] = True
        axis = min(1, len(act) - 1)
        out = (*act[:axis], *((1,) if attrs.get("keep_dims") else ()), *act[axis + 1:])
        return b.op(kind, [b.tensor(act), b.tensor((1,), DataType.s32)], [b.tensor(out)],
                    attrs)
    if kind == "SoftMax":
        return b.op(kind, [b.tensor((4, 8))], [b.tensor((4, 8))], {"axis": 1})
    if kind == "ConvolutionBackwardWeights":
        return b.op(kind, [b.tensor(_ACT), b.tensor(_ACT)], [b.tensor((4, 4, 3, 3))],
                    {**_CONV, "weights_format": "OIX", "weights_shape": (4, 4, 3, 3)})
    if kind == "ReLUBackward" or kind in BINARY:
        return b.op(kind, [b.tensor(b.act), b.tensor(b.act)], [b.tensor(b.act)])
    return _follower(b, kind, b.tensor(b.act))


def _t1_op(b: _Builder, kind: str, cur: LogicalTensor, plan: Plan) -> LogicalTensor:
    """The op reading a ``<t1`` side subgraph: the base op's weights or an Add's operand."""
    shape = cur.shape or ()
    if kind in ("Convolution", "ConvTranspose", "MatMul"):
        wshape = (8, 8) if kind == "MatMul" else (4, 4, 3, 3)
        if plan.weights_quantize:
            q = b.op("Quantize", [b.tensor(wshape)], [b.tensor(wshape, S8)], {"scales": (0.25,)})
            weights = b.op("Dequantize", [q], [b.tensor(wshape)], {"scales": (0.25,)})
        else:
            weights = b.dequantize(wshape, S8)
        attrs: dict[str, AttrValue] = {}
        if kind != "MatMul":
            attrs = {**_CONV, "weights_format": "OIX" if kind == "Convolution" else "IOX"}
        out_shape = (4, 8) if kind == "MatMul" else _ACT
        return b.op(kind, [cur, weights], [b.tensor(out_shape)], attrs)
    return b.op(kind, [cur, b.dequantize(shape, U8)], [b.tensor(shape)])


def _follower(b: _Builder, kind: str, cur: LogicalTensor) -> LogicalTensor:
    """An op after the head, consuming `cur` on port 0."""
    shape = cur.shape or ()
    out = b.tensor(shape)
    channels = (shape[1],) if len(shape) > 1 else (shape[-1],)
    if kind in UNARY_ATTRS or kind in _UNARY_PLAIN:
        return b.op(kind, [cur], [out], b.variant_attrs(kind))
    if kind == "BiasAdd":
        fmt = "NCX" if len(shape) == 4 else "NXC"
        size = (shape[1],) if fmt == "NCX" else (shape[-1],)
        return b.op(kind, [cur, b.tensor(size)], [out], {"data_format": fmt})
    if kind == "BatchNormInference":
        return b.op(kind, [cur, *(b.tensor(channels) for _ in range(4))], [out],
                    {"epsilon": 1e-5, "data_format": "NCX"})
    if kind == "Quantize":
        return b.op(kind, [cur], [b.tensor(shape, U8)], {"scales": (0.5,), "zps": (3,)})
    if kind == "TypeCast":
        return b.op(kind, [cur], [b.tensor(shape, BF16)])
    if kind == "Reorder":
        return b.op(kind, [cur], [out])
    if kind in ("AvgPool", "MaxPool"):
        attrs: dict[str, AttrValue] = {"kernel": (3, 3), "strides": (1, 1), "pads_begin": (1, 1),
                                       "pads_end": (1, 1), "data_format": "NCX"}
        if kind == "AvgPool":
            attrs["exclude_pad"] = False
        return b.op(kind, [cur], [out], attrs)
    if kind == "BiasAddBackward":
        return b.op(kind, [cur], [b.tensor((shape[1],))], {"data_format": "NCX"})
    if kind == "BatchNormTrainingBackward":
        return b.op(kind, [cur, b.tensor(shape), *(b.tensor(_VEC) for _ in range(3))],
                    [out, b.tensor(_VEC), b.tensor(_VEC)],
                    {"epsilon": 1e-5, "data_format": "NCX"})
    if kind == "Multiply" or kind in BINARY:
        return b.op(kind, [cur, b.tensor(shape)], [out])
    raise ValueError(f"no instance builder for {kind} after another op")


#: Unary ops that need no attribute value of the instance's choosing (Reciprocal is not in the
#: Unary category but takes the same place in the patterns that name it).
_UNARY_PLAIN = frozenset(k for k in (*UNARY, "Reciprocal") if k not in UNARY_ATTRS)


def instance_cases(entry: PatternEntry, engine_kind: str = "cpu") -> list[Case]:
    """Every plan of `entry` as a valid f32/int8 `Case`: the deterministic floor of coverage
    the suite runs before drawing random cases (every category member, every count), each with
    clean values; then, for each op kind reading a graph input and each corner specific to it
    (`fusionspec.conformance.generate.values.TARGETED`), the shortest instance showing that
    pair once more with that corner (the fewer ops after it, the less can hide it: a Minimum
    after an Exp clips its overflow away); then, for each unary op with attributes and each
    reduction, the `UNARY_VARIANTS` and `REDUCTION_VARIANTS` its uses did not reach in turn, on
    the shortest plan holding it; last, `narrow_product_cases`."""
    cases: list[Case] = []
    corners: dict[tuple[str, int, str], tuple[int, int, Case]] = {}
    turns: dict[str, int] = {}
    plans = instance_plans(entry)
    for plan in plans:
        graph = build_instance(entry, plan, engine_kind, turns)
        case = _instance_case(entry, graph, f"catalog instance: {plan.describe()}")
        cases.append(with_values(case, clean_plan(graph)))
        for key, corner in targeted_corners(graph):
            rank = (len(graph.ops), len(cases))
            if key not in corners or rank < corners[key][:2]:
                corners[key] = (*rank, with_values(case, corner))
    # The variants the plans did not reach in turn: each on the shortest plan holding its op.
    for kind, variants in _VARIANTS.items():
        holding = sorted((p for p in plans if kind in p.kinds), key=lambda p: len(p.kinds))
        for turn in range(turns.get(kind, 0), len(variants) if holding else 0):
            graph = build_instance(entry, holding[0], engine_kind, {**turns, kind: turn})
            case = _instance_case(entry, graph, f"catalog instance: {holding[0].describe()}, "
                                                f"{kind} {variants[turn]}")
            # Full-precision values first: the grid's products may cancel to weak signal where
            # the variant zeroes a half (alpha = 0), and the positive grid would hide it.
            cases.append(with_values(case, clean_plan(graph, "dense")))
    cases += [c for _, _, c in sorted(corners.values(), key=lambda v: v[:2])]
    return (cases + rank_floor_cases(entry, plans) + narrow_product_cases(entry)
            + narrow_fill_cases(entry, plans))


def _takes_rank(kinds: Sequence[str], rank: int) -> bool:
    return all(k not in SCHEMAS or (rank in schema_ranks(k)
                                    and (f"{k}.rank", str(rank)) not in UNDRAWN) for k in kinds)


def rank_floor_cases(entry: PatternEntry, plans: Sequence[Plan]) -> list[Case]:
    """The ranks the coverage model asks of each op kind (`model.schema_ranks`), besides the
    instances' own 4: for each other rank, the fewest plans headed by an op of
    `_ANY_RANK_HEADS` that between them hold every kind the plans hold at that rank, built
    with an activation of that rank (the random draws reach the ranks of the other heads)."""
    cases = []
    for rank in (r for r in sorted(_ACT_BY_RANK) if r != 4):
        fitting = [p for p in plans if p.kinds[0] in _ANY_RANK_HEADS
                   and _takes_rank(p.kinds, rank)]
        wanted = {k for p in fitting for k in p.kinds}
        while wanted:
            best = max(fitting, key=lambda p: (len(wanted & set(p.kinds)), -len(p.kinds)))
            wanted -= set(best.kinds)
            graph = build_instance(entry, best, rank=rank)
            case = _instance_case(entry, graph, f"catalog instance: {best.describe()}, "
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
        case = _instance_case(entry, graph, f"catalog instance: {holding[0].describe()}, "
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
        b = _Builder("cpu")
        src = b.tensor((4, NARROW_PRODUCT_TERMS), dtype)
        b.op("ReduceProd", [src], [b.tensor((4,), dtype)], {"axes": (-1,)})
        graph = Graph(b.ops)
        digest = hashlib.sha256(dumps(graph, indent=None).encode()).hexdigest()[:8]
        features: dict[str, str | int] = {"source": "catalog instance",
                                          **_grammar_features(entry, graph)}
        case = Case(f"{entry.id}/valid/instance-{digest}", CaseKind.valid, entry.id, graph,
                    dtype=dtype.value, features=features,
                    description=f"catalog instance: ReduceProd {dtype} over "
                                f"{NARROW_PRODUCT_TERMS} inexact terms")
        cases.append(with_values(case, clean_plan(graph)))
    return cases


def _instance_case(entry: PatternEntry, graph: Graph, description: str) -> Case:
    digest = hashlib.sha256(dumps(graph, indent=None).encode()).hexdigest()[:8]
    quantized = any(t.dtype in (U8, S8) for op in graph.ops for t in (*op.inputs, *op.outputs))
    features: dict[str, str | int] = {"source": "catalog instance",
                                      **_grammar_features(entry, graph)}
    return Case(f"{entry.id}/valid/instance-{digest}", CaseKind.valid, entry.id, graph,
                dtype="int8" if quantized else "f32", features=features,
                description=description)


def _grammar_features(entry: PatternEntry, graph: Graph) -> dict[str, str | int]:
    """The grammar features of an instance, keyed as the strategies key them (repetition
    counts, alternation options and category members taken), read off its match."""
    from fusionspec.reference.partitioner import partition

    from .plan import feature_keys

    parts = partition(graph.finalize())
    if len(parts) != 1:
        return {}
    try:
        paths = [m.path for m in entry.bind(list(parts[0].ops)).ops if m.path is not None]
    except MatchError:
        return {}  # an earlier catalog row's instance whose op order this tree does not read
    found: dict[str, str | int] = {}
    for path, key in feature_keys(entry.id).items():
        node = node_at(entry.tree, path)
        below = [p for p in paths if p[:len(path)] == path]
        if isinstance(node, Repeat):
            found[key] = len(below)
        elif isinstance(node, Alternation) and below:
            taken = {to_notation(node.options[p[len(path)]]) for p in below}
            found[key] = ",".join(sorted(taken))
        elif isinstance(node, CategoryRef) and below:
            kinds = {op.kind for op, q in zip(parts[0].ops, paths) if q == path}
            found[key] = ",".join(sorted(kinds))
    return found
