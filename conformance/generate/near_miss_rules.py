"""Near misses of the catalog rules of pages 000 and 003, and the tools all near misses share.

`Draft` is what a near-miss maker returns; the helpers edit an instance shape (`Skeleton`)
before it is built, or the graph after. The makers here break one catalog rule each (see the
table in `fusionspec.conformance.generate.near_miss`): the quantized ConvTranspose dtype table,
its Q2F and GPU rules, and the Softmax order and dtype rules.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, replace

from hypothesis import strategies as st

from fusionspec.spec.catalog import PatternEntry
from fusionspec.spec.categories import UNARY
from fusionspec.spec.dtypes import DataType
from fusionspec.spec.graph import Graph, LogicalTensor, Op
from fusionspec.spec.match import Role
from fusionspec.spec.pattern_tree import Path, Repeat, node_at, op_kinds, walk

from .attrs import draw_qparams
from .build import Built, build
from .dtypes import DtypePlan, draw_dtype_plan
from .plan import Skeleton, Step, draw_skeleton, main_part, optional_path, post_op_repeats

__all__ = ["Draft", "Maker", "CATALOG_MAKERS", "role_index", "post_indices", "repeat_high",
           "insert_step", "set_step", "fresh_ids", "with_op", "built_with", "short_prefix"]

D = DataType
CT_DTYPES = "convtranspose.int8.dtypes"
CT_Q2F = "convtranspose.int8.q2f_weights_only"
CT_ZPS = "convtranspose.int8.gpu_zero_zps"
CT_F2Q = "convtranspose.int8.gpu_f2q_per_tensor"
SM_ORDER, SM_F32 = "softmax.order", "softmax.f32_dst"
SM_F2F, SM_F2Q = "softmax.f2f_target", "softmax.f2q_target"


@dataclass(frozen=True)
class Draft:
    """A near miss before it becomes a case: the instance it was built as, the graph after
    any edit, the ops that must not share a partition of the pattern (`apart`), the `explain`
    reasons that name the break, a sentence (`words`) and a short category (`variant`)."""

    built: Built
    graph: Graph
    apart: frozenset[int]
    reasons: frozenset[str]
    words: str
    variant: str


Maker = Callable[[st.DrawFn, PatternEntry, str], Draft]


# -- shared helpers ------------------------------------------------------------------------

def role_index(entry: PatternEntry, skel: Skeleton, role: Role) -> int:
    """The main-chain step playing `role` (the base op, its BiasAdd ...)."""
    return next(i for i, s in enumerate(skel.steps) if s.path is not None
                and entry.roles[s.path] is role)


def post_indices(skel: Skeleton, repeat: Path) -> list[int]:
    """The main-chain steps that are copies of the Repeat at `repeat`."""
    return [i for i, s in enumerate(skel.steps) if s.path is not None
            and s.path[:len(repeat)] == repeat]


def repeat_high(entry: PatternEntry, path: Path) -> int:
    node = node_at(entry.tree, path)
    assert isinstance(node, Repeat)
    return node.high


def insert_step(skel: Skeleton, index: int, step: Step) -> Skeleton:
    """`skel` with `step` put at main-chain position `index`."""
    steps = (*skel.steps[:index], step, *skel.steps[index:])
    sides = tuple(replace(s, reader=s.reader + 1) if s.reader >= index else s
                  for s in skel.sides)
    return replace(skel, steps=steps, sides=sides)


def set_step(skel: Skeleton, index: int, step: Step) -> Skeleton:
    """`skel` with main-chain step `index` replaced (its side subgraph kept if it reads one)."""
    steps = (*skel.steps[:index], step, *skel.steps[index + 1:])
    sides = tuple(s for s in skel.sides if s.reader != index or step.reads is not None)
    return replace(skel, steps=steps, sides=sides)


def fresh_ids(graph: Graph) -> tuple[int, int]:
    """An unused op id and an unused tensor id."""
    tensors = max(t.id for op in graph.ops for t in (*op.inputs, *op.outputs)) + 1
    return max(op.id for op in graph.ops) + 1, tensors


def with_op(graph: Graph, op: Op) -> Graph:
    """`graph` with `op` replacing the op of the same id, or added."""
    ops = [op if o.id == op.id else o for o in graph.ops]
    if all(o.id != op.id for o in graph.ops):
        ops.append(op)
    return graph.replace_ops(ops)


def built_with(draw: st.DrawFn, entry: PatternEntry, skel: Skeleton, *,
               gpu: bool | None = None, src: DataType | None = None,
               weights: DataType | None = None, quant_dst: DataType | None = None) -> Built:
    """Build `skel` with a drawn dtype plan, with the `DtypePlan` fields given here."""
    plan = draw_dtype_plan(draw, entry, skel.steps)
    if gpu is not None:
        plan = replace(plan, gpu=gpu)
    plan = replace(plan, src=src or plan.src, weights=weights or plan.weights,
                   quant_dst=quant_dst or plan.quant_dst)
    return build(draw, entry, skel, plan)


def short_prefix(entry: PatternEntry, skel: Skeleton, last: int) -> bool:
    """Whether the ops up to main-chain step `last` (with their side subgraphs) are too few
    for an instance of `entry`: `explain` then finds no pattern for the op at the break."""
    ops = last + 1 + sum(len(s.steps) for s in skel.sides if s.reader <= last)
    return ops < entry.min_ops


def _optional(entry: PatternEntry, kind: str, role: Role) -> Path:
    path = optional_path(entry, kind, role)
    assert path is not None, f"{entry.id} has no {kind}^? as {role}"
    return path


# -- quantized ConvTranspose (page 000) ----------------------------------------------------

def _ct_dtypes(draw: st.DrawFn, entry: PatternEntry, label: str) -> Draft:
    what = draw(st.sampled_from(("weights", "src", "dst")), label="column out of the table")
    f8 = draw(st.sampled_from((D.f8_e4m3, D.f8_e5m2)), label="f8 type")
    # u8 weights through the pattern's own Quantize are f32 weights, inside the table.
    bounds = {"weights": {_optional(entry, "Quantize", Role.weights_q2f): (0, 0)}, "src": {},
              "dst": {_optional(entry, "Quantize", Role.f2q): (1, 1)}}[what]
    skel = draw_skeleton(draw, entry, bounds)
    built = built_with(draw, entry, skel, gpu=False, weights=D.u8 if what == "weights" else None,
                       src=f8 if what == "src" else None, quant_dst=f8 if what == "dst" else None)
    base = built.step_ops[role_index(entry, skel, Role.base)]
    other = built.step_ops[-1] if what == "dst" else built.step_ops[0]
    variant = {"weights": "u8 weights", "src": "f8 src", "dst": "f8 dst"}[what]
    words = variant if what == "weights" else f"{f8} {what}"
    return Draft(built, built.graph, frozenset({base, other}), frozenset({label}), words,
                 variant)


def _ct_edit(draw: st.DrawFn, entry: PatternEntry, label: str) -> Draft:
    """q2f_weights_only and the two GPU rules: a valid instance, then one op edited."""
    bounds = {_optional(entry, "Quantize", Role.f2q): (1, 1)} if label == CT_F2Q else {}
    skel = draw_skeleton(draw, entry, bounds)
    built = built_with(draw, entry, skel, gpu=label != CT_Q2F)
    graph = built.graph
    base = built.step_ops[role_index(entry, skel, Role.base)]
    src_dq = graph.op_by_id[built.step_ops[0]]
    if label == CT_Q2F:
        op_id, tensor_id = fresh_ids(graph)
        x = src_dq.inputs[0]
        params = draw_qparams(draw, x.dtype.value)
        quantize = Op(op_id, "Quantize", (LogicalTensor(tensor_id, D.f32, x.shape),), (x,),
                      params)
        return Draft(built, with_op(graph, quantize), frozenset({op_id, base}), frozenset(),
                     "a Quantize before the src Dequantize", "Quantize on the src path")
    last = graph.op_by_id[built.step_ops[-1]]
    if label == CT_F2Q:
        target = last
        scale = draw(st.sampled_from((2.0, 0.5, 4.0)), label="scale")
        attrs = {**target.attrs, "scales": (scale,)}
        words, variant = f"F2Q Quantize scale {scale:g} on gpu", "F2Q scale not 1"
    else:
        choices = [src_dq] + ([last] if last.kind == "Quantize" else [])
        target = draw(st.sampled_from(choices), label="op with a zero point")
        zp = draw(st.integers(1, 4), label="zero point")
        zp = -zp if target.inputs[0].dtype is D.s8 else zp
        attrs = {**target.attrs, "zps": (zp,)}
        words = f"{target.kind} {target.id} zero point {zp} on gpu"
        variant = f"{'src Q2F' if target is src_dq else 'F2Q'} zero point"
    graph = with_op(graph, Op(target.id, target.kind, target.inputs, target.outputs, attrs))
    return Draft(built, graph, frozenset({base, target.id}), frozenset({label}), words, variant)


# -- Softmax (page 003) --------------------------------------------------------------------

def _softmax(draw: st.DrawFn, entry: PatternEntry, label: str) -> Draft:
    post = post_op_repeats(entry.id)[0]
    cast = _optional(entry, "TypeCast", Role.f2f)
    quant = _optional(entry, "Quantize", Role.f2q)
    low = draw(st.sampled_from((D.bf16, D.f16)), label="low type")
    start = draw(st.sampled_from((D.f32, low)), label="SoftMax src")
    into = f"{low}" if start is low else f"f32>{low}"
    if label == SM_ORDER:
        skel = draw_skeleton(draw, entry, {post: (0, 0), cast: (1, 1), quant: (0, 0)})
        second = draw(st.booleans(), label="second TypeCast")
        extra = "TypeCast" if second else draw(st.sampled_from(UNARY), label="post-op")
        skel = insert_step(skel, len(skel.steps), Step(extra, None))
        plan = DtypePlan(f"f32>{low}" + (">f32" if second else ""), cast=low)
        variant = "second TypeCast" if second else "post-op after F2F"
        words, reasons = f"{extra} after the F2F TypeCast", {"kind", "bound", label}
        other = len(skel.steps) - 1
    elif label == SM_F32:
        skel = draw_skeleton(draw, entry, {post: (1, repeat_high(entry, post)), cast: (0, 0),
                                           quant: (0, 0)})
        plan = DtypePlan(into, start=start, head_dst=low)
        words, variant, reasons, other = (f"SoftMax dst {low} before post-ops",
                                          "low SoftMax dst", {label}, 1)
    elif label == SM_F2F:
        skel = draw_skeleton(draw, entry, {post: (0, 0), cast: (1, 1), quant: (0, 0)})
        plan = DtypePlan(f"{into}>f32", start=start, head_dst=low)
        words, variant, reasons, other = (f"TypeCast from a {low} SoftMax dst to f32",
                                          "TypeCast to f32", {SM_F32, label}, 1)
    else:
        skel = draw_skeleton(draw, entry, {cast: (0, 0), quant: (1, 1)})
        f8 = draw(st.sampled_from((D.f8_e4m3, D.f8_e5m2)), label="f8 type")
        plan = DtypePlan(f"f32>{f8}", quant_dst=f8)
        words, variant, reasons, other = (f"F2Q Quantize to {f8}", "Quantize to f8", {label},
                                          len(skel.steps) - 1)
    built = build(draw, entry, skel, plan)
    return Draft(built, built.graph, frozenset({built.step_ops[0], built.step_ops[other]}),
                 frozenset(reasons), words, variant)


CATALOG_MAKERS: dict[str, Maker] = {
    CT_DTYPES: _ct_dtypes, CT_Q2F: _ct_edit, CT_ZPS: _ct_edit, CT_F2Q: _ct_edit,
    SM_ORDER: _softmax, SM_F32: _softmax, SM_F2F: _softmax, SM_F2Q: _softmax,
}


def optional_of(entry: PatternEntry, kind: str) -> Path | None:
    """The main chain's optional item made of `kind` ops (``BiasAdd^?``)."""
    main, prefix = main_part(entry)
    for path, node in walk(main, prefix):
        if isinstance(node, Repeat) and node.high == 1 and op_kinds(node) == {kind}:
            return path
    return None
