"""Catalog instances as graphs: a plan (`fusionspec.conformance.generate.instance_plans`)
wired into a valid graph with small shapes, and that graph as a valid `Case`.

`build_instance(entry, plan)` lays the graph out this way:

- the main chain flows through port 0; a binary's other operand is a fresh input (or a
  Dequantize of one, where the pattern has a ``<t2`` side subgraph);
- ``<t1`` side subgraphs (the weights path, a Dequantize-fed Add) are built and wired to the
  reading op's other input;
- dtypes follow the family: f32 for float patterns; u8/s8 in and out of quantized ones; SoftMax's
  TypeCast goes to bf16;
- each op with attribute variants (`UNARY_VARIANTS`, `REDUCTION_VARIANTS`) takes them in turn;
- laid out for the ambiguous-axes method (`ambiguous` = ``"defaults"`` or ``"written"``, see
  `fusionspec.conformance.generate.ambiguous_axes`): every data dim `AMBIGUOUS_SIZE` long (the
  kernels' too), every Quantize/Dequantize per channel, every binary operand per channel, and
  the attributes that pick an axis (`AXIS_ATTRS`) left to their schema defaults or written.

The partitioner's tests check that each such graph is exactly one partition of its pattern;
`instance_case` wraps one into a `Case` with the grammar features its match shows.
"""

from __future__ import annotations

import hashlib
import itertools
from collections.abc import Sequence
from typing import Literal

from fusionspec.spec.catalog import PatternEntry
from fusionspec.spec.categories import BINARY, REDUCTION, UNARY
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
    mark_sites,
    node_at,
)

from ..cases import Case, CaseKind
from .instance_plans import Plan

__all__ = ["UNARY_VARIANTS", "REDUCTION_VARIANTS", "VARIANTS", "UNARY_ATTRS", "ACT_BY_RANK",
           "ANY_RANK_HEADS", "InstanceBuilder", "build_instance", "instance_case",
           "grammar_features", "AXIS_ATTRS", "AMBIGUOUS_SIZE", "Ambiguous", "axis_attrs"]

F32, BF16, U8, S8 = DataType.f32, DataType.bf16, DataType.u8, DataType.s8

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
VARIANTS = {**UNARY_VARIANTS, **REDUCTION_VARIANTS}
#: The first variant of each (what a lone instance takes).
UNARY_ATTRS: dict[str, dict[str, AttrValue]] = {k: v[0] for k, v in UNARY_VARIANTS.items()}

_ACT = (1, 4, 6, 6)  # NCX activations
#: The activation of each rank the rank floor builds instances at (`rank_floor_cases`).
ACT_BY_RANK = {1: (6,), 2: (2, 6), 3: (1, 4, 6), 4: _ACT, 5: (1, 4, 3, 3, 2)}
#: Head kinds whose instance takes an activation of any rank (the others have shapes of
#: their own: a convolution's, a pool's, a MatMul's).
ANY_RANK_HEADS = frozenset({*UNARY, *BINARY, *REDUCTION, "Reciprocal", "Reorder",
                             "BatchNormInference"})
_VEC = (4,)
_CONV: dict[str, AttrValue] = {"strides": (1, 1), "pads_begin": (1, 1), "pads_end": (1, 1),
                               "dilations": (1, 1), "data_format": "NCX"}

#: Attributes whose value says which axis of a tensor plays which part (the channel, the
#: SoftMax's, the quantization's, the contracted one): where a schema gives one a default, a
#: backend assuming another default picks another axis.
AXIS_ATTRS = ("axis", "data_format", "weights_format", "transpose_a", "transpose_b")
#: The length of every dim of an ambiguous-axes instance: that of a 3x3 kernel too, so even
#: the weights' axes cannot be told apart by their lengths.
AMBIGUOUS_SIZE = 3
#: How an ambiguous-axes instance writes `AXIS_ATTRS`: left to the defaults, or written.
Ambiguous = Literal["defaults", "written"]
#: Per-channel scales and u8 zero points, differing between channels.
_CHANNEL_SCALES, _CHANNEL_ZPS = (0.5, 0.25, 1.0, 2.0), (2, 0, 5, 1)


def axis_attrs(kind: str) -> tuple[str, ...]:
    """The attributes of `AXIS_ATTRS` the schema of `kind` gives a default."""
    schema = SCHEMAS.get(kind)
    return tuple(a.name for a in schema.attrs if a.name in AXIS_ATTRS
                 and a.default is not None) if schema is not None else ()


class InstanceBuilder:
    """The ops and tensors of one instance graph as it is wired, tensor ids counted from 0."""

    def __init__(self, engine_kind: str, turns: dict[str, int] | None = None,
                 act: tuple[int, ...] = _ACT, ambiguous: Ambiguous | None = None) -> None:
        self.ambiguous = ambiguous
        self.act = (AMBIGUOUS_SIZE,) * len(act) if ambiguous else act
        #: the axis of the chain a per-channel operand runs along (ambiguous instances)
        self.channel = 1
        cube = (AMBIGUOUS_SIZE,) * 3
        #: a convolution's activation and weights; a MatMul's src, weights and dst
        self.conv_act, self.conv_w = ((*cube, AMBIGUOUS_SIZE), (*cube, 3)) if ambiguous else (
            _ACT, (4, 4, 3, 3))
        self.mm = (cube, cube[1:], cube) if ambiguous else ((4, 8), (8, 8), (4, 8))
        self.ops: list[Op] = []
        self.ids = itertools.count()
        self.engine_kind = engine_kind
        self.turns = turns

    def variant_attrs(self, kind: str) -> dict[str, AttrValue]:
        variants = VARIANTS.get(kind, ({},))
        if self.turns is None:
            return dict(variants[0])
        turn = self.turns.get(kind, 0)
        self.turns[kind] = turn + 1
        return dict(variants[turn % len(variants)])

    def tensor(self, shape: Sequence[int], dtype: DataType = F32) -> LogicalTensor:
        return LogicalTensor(next(self.ids), dtype, tuple(shape))

    def op(self, kind: str, inputs: Sequence[LogicalTensor], outputs: Sequence[LogicalTensor],
           attrs: dict[str, AttrValue] | None = None) -> LogicalTensor:
        attrs = dict(attrs or {})
        if self.ambiguous == "defaults":
            # The defaults take the place of the attributes that pick an axis (the shapes,
            # every dim alike, stay valid), save a quantization axis the default misses.
            attrs = {k: v for k, v in attrs.items() if k not in axis_attrs(kind)
                     or (k == "axis" and v != 1)}
        self.ops.append(Op(len(self.ops), kind, tuple(inputs), tuple(outputs), attrs))
        return outputs[0]

    def fmt(self, written: str = "NCX") -> str:
        """The data_format an op of the instance takes: `written`, or the default NXC where
        the instance leaves it to the default."""
        return "NXC" if self.ambiguous == "defaults" else written

    def qparams(self, shape: Sequence[int], zp: int, axis: int = 1) -> dict[str, AttrValue]:
        """Per-tensor scale 0.5 and zero point `zp`; in an ambiguous-axes instance, per
        channel along `axis` where it is longer than 1 (differing scales, and zero points
        where `zp` is not 0)."""
        if not self.ambiguous or len(shape) < 2 or shape[axis] < 2:
            return {"scales": (0.5,), "zps": (zp,)}
        n = shape[axis]
        return {"qtype": "per_channel", "axis": axis, "scales": _CHANNEL_SCALES[:n],
                "zps": _CHANNEL_ZPS[:n] if zp else (0,) * n}

    def dequantize(self, shape: Sequence[int], dtype: DataType = U8,
                   axis: int = 1) -> LogicalTensor:
        return self.op("Dequantize", [self.tensor(shape, dtype)], [self.tensor(shape)],
                       self.qparams(shape, 2 if dtype == U8 else 0, axis))

    def operand(self, shape: Sequence[int]) -> tuple[int, ...]:
        """The shape of a binary op's other operand: the chain's, or in an ambiguous-axes
        instance one along the chain's channel axis only."""
        if not self.ambiguous or len(shape) < 2:
            return tuple(shape)
        return tuple(d if i == self.channel % len(shape) else 1 for i, d in enumerate(shape))


def build_instance(entry: PatternEntry, plan: Plan, engine_kind: str = "cpu",
                   turns: dict[str, int] | None = None, rank: int = 4,
                   ambiguous: Ambiguous | None = None) -> Graph:
    """A valid graph holding exactly one instance of `entry` laid out as `plan`. Each unary op
    with attributes takes the next of its `UNARY_VARIANTS` by `turns` (its uses so far, counted
    there), or the first when `turns` is None. A head of `ANY_RANK_HEADS` reads an activation
    of `rank`. `ambiguous` lays it out for the ambiguous-axes method (module docstring)."""
    b = InstanceBuilder(engine_kind, turns, ACT_BY_RANK[rank], ambiguous)
    if ambiguous == "defaults" or (ambiguous and "MatMul" in plan.kinds):
        b.channel = -1  # NXC, and a MatMul's output channels
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
            shape = b.operand(cur.shape or ())
            other = b.dequantize(shape) if i in plan.dequantized else b.tensor(shape)
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


def _head(b: InstanceBuilder, kind: str, plan: Plan) -> LogicalTensor:
    act: tuple[int, ...] = b.conv_act
    if kind == "Dequantize":
        first = plan.kinds[1] if len(plan.kinds) > 1 else ""
        return b.dequantize(b.mm[0] if first == "MatMul" else act, U8)
    if kind == "Convolution":
        return b.op(kind, [b.tensor(act), b.tensor(b.conv_w)], [b.tensor(act)],
                    {**_CONV, "weights_format": "OIX"})
    if kind == "ConvTranspose":
        return b.op(kind, [b.tensor(act), b.tensor(b.conv_w)], [b.tensor(act)],
                    {**_CONV, "weights_format": "IOX"})
    if kind == "MatMul":
        src, weights, dst = b.mm
        attrs: dict[str, AttrValue] = {"transpose_a": False, "transpose_b": False} if (
            b.ambiguous) else {}
        return b.op(kind, [b.tensor(src), b.tensor(weights)], [b.tensor(dst)], attrs)
    if kind == "Interpolate":
        if b.ambiguous:  # upsampled twice over, the channels first or (NXC) last
            c = AMBIGUOUS_SIZE
            out = (c, c, 2 * c, 2 * c) if b.fmt() == "NCX" else (c, 2 * c, 2 * c, c)
            return b.op(kind, [b.tensor(act)], [b.tensor(out)],
                        {"mode": "nearest", "sizes": (2 * c, 2 * c), "data_format": "NCX"})
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
        shape = b.mm[0]
        return b.op(kind, [b.tensor(shape)], [b.tensor(shape)], {"axis": 1})
    if kind == "ConvolutionBackwardWeights":
        return b.op(kind, [b.tensor(act), b.tensor(act)], [b.tensor(b.conv_w)],
                    {**_CONV, "weights_format": "OIX", "weights_shape": b.conv_w})
    if kind == "ReLUBackward":
        return b.op(kind, [b.tensor(b.act), b.tensor(b.act)], [b.tensor(b.act)])
    if kind in BINARY:
        return b.op(kind, [b.tensor(b.act), b.tensor(b.operand(b.act))], [b.tensor(b.act)])
    return _follower(b, kind, b.tensor(b.act))


def _t1_op(b: InstanceBuilder, kind: str, cur: LogicalTensor, plan: Plan) -> LogicalTensor:
    """The op reading a ``<t1`` side subgraph: the base op's weights or an Add's operand."""
    shape = cur.shape or ()
    if kind in ("Convolution", "ConvTranspose", "MatMul"):
        wshape = b.mm[1] if kind == "MatMul" else b.conv_w
        # The output channels' axis of the weights (OIX, IOX; XIO, XOI left to the default).
        written = b.ambiguous != "defaults"
        oc = {"MatMul": 1, "Convolution": 0 if written else 3,
              "ConvTranspose": 1 if written else 2}[kind]
        if plan.weights_quantize:
            params: dict[str, AttrValue] = (b.qparams(wshape, 0, oc) if b.ambiguous
                                            else {"scales": (0.25,)})
            q = b.op("Quantize", [b.tensor(wshape)], [b.tensor(wshape, S8)], params)
            weights = b.op("Dequantize", [q], [b.tensor(wshape)], params)
        else:
            weights = b.dequantize(wshape, S8, oc)
        attrs: dict[str, AttrValue] = {}
        if kind != "MatMul":
            attrs = {**_CONV, "weights_format": "OIX" if kind == "Convolution" else "IOX"}
        elif b.ambiguous:
            attrs = {"transpose_a": False, "transpose_b": False}
        out_shape = b.mm[2] if kind == "MatMul" else b.conv_act
        return b.op(kind, [cur, weights], [b.tensor(out_shape)], attrs)
    return b.op(kind, [cur, b.dequantize(b.operand(shape), U8)], [b.tensor(shape)])


def _follower(b: InstanceBuilder, kind: str, cur: LogicalTensor) -> LogicalTensor:
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
        params = b.qparams(shape, 3)
        return b.op(kind, [cur], [b.tensor(shape, U8)], params)
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
        vec = channels if b.ambiguous else _VEC
        return b.op(kind, [cur, b.tensor(shape), *(b.tensor(vec) for _ in range(3))],
                    [out, b.tensor(vec), b.tensor(vec)],
                    {"epsilon": 1e-5, "data_format": "NCX"})
    if kind == "Multiply" or kind in BINARY:
        return b.op(kind, [cur, b.tensor(b.operand(shape))], [out])
    raise ValueError(f"no instance builder for {kind} after another op")


#: Unary ops that need no attribute value of the instance's choosing (Reciprocal is not in the
#: Unary category but takes the same place in the patterns that name it).
_UNARY_PLAIN = frozenset(k for k in (*UNARY, "Reciprocal") if k not in UNARY_ATTRS)


def instance_case(entry: PatternEntry, graph: Graph, description: str) -> Case:
    digest = hashlib.sha256(dumps(graph, indent=None).encode()).hexdigest()[:8]
    quantized = any(t.dtype in (U8, S8) for op in graph.ops for t in (*op.inputs, *op.outputs))
    features: dict[str, str | int] = {"source": "catalog instance",
                                      **grammar_features(entry, graph)}
    return Case(f"{entry.id}/valid/instance-{digest}", CaseKind.valid, entry.id, graph,
                dtype="int8" if quantized else "f32", features=features,
                description=description)


def grammar_features(entry: PatternEntry, graph: Graph) -> dict[str, str | int]:
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
