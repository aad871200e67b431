"""Near misses: well-formed graphs that break exactly one rule of a pattern.

Each is a valid instance (drawn as `fusionspec.conformance.generate.strategies.valid_cases`
draws them) with one change, labelled with the rule it breaks (`Case.rule`): a catalog rule id
where the catalog states the rule, else one of `fusionspec.conformance.cases.STRUCTURAL_RULES`.

=================================  ===============================================================
label                              the change
=================================  ===============================================================
structure.bound (or the page's     one post-op more than the repetition's upper bound
``*.post_op_count`` rule)
structure.bias_first (or           a BiasAdd after a post-op, or a second BiasAdd
``convtranspose.int8.bias_first``)
structure.fan_out                  an intermediate of the chain also feeds a later binary's other
                                   operand (a diamond) or an op outside the instance
structure.port                     a post-op Subtract or Divide takes the chain on src_1
structure.kind                     right after the base op, an op of a kind that cannot follow it
                                   there (a unary after the pooling of ``Pool + Binary^{0-3}`` ...)
structure.convex                   the base op's optional second output (SoftMax's stats) feeds an
                                   op outside the instance whose result a later binary post-op
                                   reads: the whole chain is no longer convex
convtranspose.int8.dtypes          u8 weights, an f8 src or an f8 dst: outside page 000's table
convtranspose.int8.q2f_weights_    the src path starts with a Quantize (Quantize + Dequantize is
only                               a weights-only form)
convtranspose.int8.gpu_*           on a gpu engine: a Q2F/F2Q zero point that is not 0, or an F2Q
                                   Quantize whose scale is not 1
softmax.order                      a post-op, or a second TypeCast, after the F2F TypeCast
softmax.f32_dst                    SoftMax with a bf16/f16 dst followed by post-ops
softmax.f2f_target                 SoftMax with a bf16/f16 dst followed by a TypeCast to f32
softmax.f2q_target                 an F2Q Quantize to an f8 type
=================================  ===============================================================

No well-formed graph breaks softmax.f2f_target alone: unary and binary ops keep an f32 chain
f32, and a TypeCast from f32 can only go to bf16 or f16, so a TypeCast from anything but f32
needs a SoftMax dst that is not f32, which softmax.f32_dst forbids too. That near miss therefore
also breaks softmax.f32_dst, and `explain` may name either.

A near miss is never a graph the reference fuses whole as some other pattern (four plain
post-ops after a quantized ConvTranspose are page 000's pattern, not a near miss of page
001's row); such draws are rejected. A `NearMiss` also says which ops must not end up together
in one partition of the pattern (`apart`) and which `fusionspec.reference.explain` reasons name
the break (`reasons`; empty where `explain` cannot name it, as for a Quantize the notation has
no place for).
"""

from __future__ import annotations

from dataclasses import dataclass

from hypothesis import assume
from hypothesis import strategies as st

from fusionspec.reference.partitioner import partition
from fusionspec.spec.attrs import attr_value
from fusionspec.spec.catalog import PatternEntry
from fusionspec.spec.catalog import entry as catalog_entry
from fusionspec.spec.categories import BINARY
from fusionspec.spec.dtypes import DataType
from fusionspec.spec.graph import Graph, LogicalTensor, Op
from fusionspec.spec.match import Role
from fusionspec.spec.opschemas import SCHEMAS
from fusionspec.spec.pattern_tree import CategoryRef, Chain, Path, first_kinds, min_ops, walk

from ..cases import Case, CaseKind, StructuralRule
from .build import Built
from .dtypes import headline_dtype
from .ids import case_id, report_events
from .near_miss_rules import (
    CATALOG_MAKERS,
    Draft,
    Maker,
    built_with,
    fresh_ids,
    insert_step,
    optional_of,
    post_indices,
    repeat_high,
    role_index,
    set_step,
    short_prefix,
    with_op,
)
from .plan import Step, draw_skeleton, feature_keys, main_part, post_op_repeats
from .values import draw_values, with_values

__all__ = ["NearMiss", "near_misses", "near_miss_rules", "structure_items"]

#: Shape-preserving kinds a structure.kind near miss may put after the base op.
_INTRUDERS = ("Reciprocal", "Reorder", "ReLU", "Sigmoid", "Abs", "Tanh", "Add", "Multiply")
_BYSTANDERS = ("ReLU", "Abs", "Sigmoid", "Tanh")


@dataclass(frozen=True)
class NearMiss:
    case: Case
    built: Built
    #: op ids that no partition of the pattern may hold all together
    apart: frozenset[int]
    #: `explain` reasons naming the break (any one of them); empty: explain cannot name it
    reasons: frozenset[str]


def _bound(draw: st.DrawFn, entry: PatternEntry, label: str) -> Draft:
    path = post_op_repeats(entry.id)[0]
    high = repeat_high(entry, path)
    skel = draw_skeleton(draw, entry, {path: (high + 1, high + 1)})
    built = built_with(draw, entry, skel)
    base = role_index(entry, skel, Role.base)
    last = post_indices(skel, path)[-1]
    # "overlap": a pattern with a larger bound took part of the chain; "no-pattern": then a
    # binary's Dequantize that pattern cannot take is left alone.
    reasons = {"bound", "overlap", label}
    if Role.binary_q2f in entry.roles.values():
        reasons.add("no-pattern")
    return Draft(built, built.graph, frozenset({built.step_ops[base], built.step_ops[last]}),
                 frozenset(reasons), f"{high + 1} post-ops, the bound is {high}",
                 f"{high + 1} post-ops")


def _bias(draw: st.DrawFn, entry: PatternEntry, label: str) -> Draft:
    bias_path = optional_of(entry, "BiasAdd")
    assert bias_path is not None
    posts = post_op_repeats(entry.id)
    twice = not posts or draw(st.booleans(), label="BiasAdd twice")
    if twice:
        skel = draw_skeleton(draw, entry, {bias_path: (1, 1)})
        where = role_index(entry, skel, Role.bias) + 1
        words = "a second BiasAdd"
    else:
        skel = draw_skeleton(draw, entry, {bias_path: (0, 0),
                                           posts[0]: (1, repeat_high(entry, posts[0]))})
        where = draw(st.sampled_from(post_indices(skel, posts[0])), label="after post-op") + 1
        words = "BiasAdd after a post-op"
    skel = insert_step(skel, where, Step("BiasAdd", None))
    built = built_with(draw, entry, skel)
    base = role_index(entry, skel, Role.base)
    return Draft(built, built.graph, frozenset({built.step_ops[base], built.step_ops[where]}),
                 frozenset({"kind", "bound", label}), words, words)


def _fan_out(draw: st.DrawFn, entry: PatternEntry, label: str) -> Draft:
    at_least_one = {p: (1, repeat_high(entry, p)) for p in post_op_repeats(entry.id)}
    skel = draw_skeleton(draw, entry, at_least_one)
    assert len(skel.steps) >= 2, f"{entry.id}: no intermediate to fan out"
    built = built_with(draw, entry, skel)
    graph = built.graph
    i = draw(st.sampled_from(range(len(skel.steps) - 1)), label="fanned-out step")
    producer = graph.op_by_id[built.step_ops[i]]
    t = producer.outputs[0]
    diamonds: list[tuple[Op, int]] = []
    for j in range(i + 2, len(skel.steps)):
        op = graph.op_by_id[built.step_ops[j]]
        if op.kind in BINARY and skel.side_of(j) is None:
            chain = graph.op_by_id[built.step_ops[j - 1]].outputs[0].id
            port = 1 if op.inputs[0].id == chain else 0
            if (op.inputs[port].dtype, op.inputs[port].shape) == (t.dtype, t.shape):
                diamonds.append((op, port))
    diamond = draw(st.booleans(), label="diamond") if diamonds else False
    if diamond:
        op, port = draw(st.sampled_from(diamonds), label="second consumer")
        inputs = list(op.inputs)
        inputs[port] = t
        graph = with_op(graph, Op(op.id, op.kind, tuple(inputs), op.outputs, op.attrs))
        words = f"{producer.kind} {producer.id}'s output also feeds {op.kind} {op.id}"
    else:
        kind = draw(st.sampled_from(_BYSTANDERS), label="bystander")
        op_id, tensor_id = fresh_ids(graph)
        graph = with_op(graph, Op(op_id, kind, (t,), (LogicalTensor(tensor_id, t.dtype,
                                                                     t.shape),)))
        words = f"{producer.kind} {producer.id}'s output also feeds a {kind} outside the chain"
    reasons = {"fan-out", "no-pattern"} if short_prefix(entry, skel, i) else {"fan-out"}
    return Draft(built, graph, frozenset({producer.id, built.step_ops[i + 1]}),
                 frozenset(reasons), words,
                 "diamond" if diamond else "consumer outside the instance")


def _binary_leaf(entry: PatternEntry) -> Path | None:
    for path, node in walk(entry.tree):
        if isinstance(node, CategoryRef) and node.name == "Binary" and (
                entry.roles[path] is Role.post_op):
            return path
    return None


def _port(draw: st.DrawFn, entry: PatternEntry, label: str) -> Draft:
    leaf = _binary_leaf(entry)
    assert leaf is not None
    repeat = next(p for p in post_op_repeats(entry.id) if leaf[:len(p)] == p)
    skel = draw_skeleton(draw, entry, {repeat: (1, repeat_high(entry, repeat))})
    k = draw(st.sampled_from(post_indices(skel, repeat)), label="post-op entered on src_1")
    kind = draw(st.sampled_from(("Subtract", "Divide")), label="kind")
    old = skel.steps[k]
    skel = set_step(skel, k, Step(kind, leaf, old.reads if old.kind in BINARY else None, 1))
    built = built_with(draw, entry, skel)
    return Draft(built, built.graph, frozenset(built.step_ops[k - 1:k + 1]),
                 frozenset({"port"}), f"the chain enters {kind} on src_1", f"{kind} on src_1")


def _after_base(entry: PatternEntry) -> frozenset[str]:
    """The op kinds that can follow the base op in an instance of `entry`."""
    main, prefix = main_part(entry)
    items = main.items if isinstance(main, Chain) else (main,)
    base = next(i for i, _ in enumerate(items)
                if any(entry.roles.get(p) is Role.base for p, _ in walk(items[i], (*prefix, i))))
    found: set[str] = set()
    for item in items[base + 1:]:
        found |= first_kinds(item)
        if min_ops(item) > 0:
            break
    return frozenset(found)


def _kind(draw: st.DrawFn, entry: PatternEntry, label: str) -> Draft:
    allowed = _after_base(entry)
    kind = draw(st.sampled_from([k for k in _INTRUDERS if k not in allowed]), label="intruder")
    skel = draw_skeleton(draw, entry)
    where = role_index(entry, skel, Role.base) + 1
    skel = insert_step(skel, where, Step(kind, None))
    built = built_with(draw, entry, skel)
    reasons = {"kind", "no-pattern"} if short_prefix(entry, skel, where - 1) else {"kind"}
    return Draft(built, built.graph,
                 frozenset({built.step_ops[where - 1], built.step_ops[where]}),
                 frozenset(reasons), f"{kind} right after the base op", f"{kind} after base")


def _second_output(entry: PatternEntry) -> bool:
    """Whether the base op of `entry` has an optional second output and a binary post-op
    can follow it (the only way out of a chain whose intermediates have one consumer each)."""
    main, _ = main_part(entry)
    items = main.items if isinstance(main, Chain) else (main,)
    head = first_kinds(items[0])
    return _binary_leaf(entry) is not None and any(
        len(SCHEMAS[kind].outputs) > 1 and SCHEMAS[kind].outputs[1].optional for kind in head)


def _convex(draw: st.DrawFn, entry: PatternEntry, label: str) -> Draft:
    leaf = _binary_leaf(entry)
    assert leaf is not None
    repeat = next(p for p in post_op_repeats(entry.id) if leaf[:len(p)] == p)
    skel = draw_skeleton(draw, entry, {repeat: (1, min(3, repeat_high(entry, repeat)))})
    k = draw(st.sampled_from(post_indices(skel, repeat)), label="re-entering post-op")
    kind = draw(st.sampled_from(sorted(BINARY)), label="kind")
    skel = set_step(skel, k, Step(kind, leaf, None, 0))
    built = built_with(draw, entry, skel)
    graph = built.graph
    base = role_index(entry, skel, Role.base)
    head = graph.op_by_id[built.step_ops[base]]
    op_id, tensor_id = fresh_ids(graph)
    src = head.inputs[0].shape or ()
    axis = attr_value(head, "axis")
    assert isinstance(axis, int)
    if len(head.outputs) < 2:
        stats = LogicalTensor(tensor_id, DataType.f32, tuple(
            1 if i == axis % len(src) else d for i, d in enumerate(src)))
        tensor_id += 1
        head = Op(head.id, head.kind, head.inputs, (*head.outputs, stats), head.attrs)
        graph = with_op(graph, head)
    stats = head.outputs[1]
    outside = draw(st.sampled_from(_BYSTANDERS), label="outside op")
    away = LogicalTensor(tensor_id, stats.dtype, stats.shape)
    graph = with_op(graph, Op(op_id, outside, (stats,), (away,)))
    reader = graph.op_by_id[built.step_ops[k]]
    attrs = {name: value for name, value in reader.attrs.items() if name != "auto_broadcast"}
    graph = with_op(graph, Op(reader.id, reader.kind, (reader.inputs[0], away), reader.outputs,
                              attrs))
    words = (f"{head.kind} {head.id}'s {SCHEMAS[head.kind].outputs[1].name} feeds a {outside} "
             f"outside the chain, read back by {kind} {reader.id}")
    # explain names no reason for a convexity cut (every op of the chain has one consumer).
    return Draft(built, graph, frozenset({head.id, reader.id}), frozenset(), words,
                 "second output re-enters")


def _makers(entry: PatternEntry) -> dict[str, Maker]:
    found: dict[str, Maker] = {}
    rule_ids = entry.rule_ids
    if post_op_repeats(entry.id):
        own = [r for r in rule_ids if r.endswith(".post_op_count")]
        found[own[0] if own else StructuralRule.bound] = _bound
    if optional_of(entry, "BiasAdd") is not None:
        own = [r for r in rule_ids if r.endswith(".bias_first")]
        found[own[0] if own else StructuralRule.bias_first] = _bias
    found[StructuralRule.fan_out] = _fan_out
    if _binary_leaf(entry) is not None:
        found[StructuralRule.port] = _port
    found[StructuralRule.kind] = _kind
    if _second_output(entry):
        found[StructuralRule.convex] = _convex
    found.update({r: CATALOG_MAKERS[r] for r in rule_ids if r in CATALOG_MAKERS})
    return found


def near_miss_rules(entry: PatternEntry) -> tuple[str, ...]:
    """The labels of the near misses `entry` has (see the module docstring)."""
    return tuple(_makers(entry))


def structure_items(entry: PatternEntry) -> tuple[tuple[str, str], ...]:
    """The structural situations the rules of `entry` speak of, as coverage items: ``rule``
    -> each label a near miss of `entry` breaks (a fan-out inside the chain, a convexity
    cut, a chain entering Subtract or Divide on src_1 ...), as its cases record it."""
    return tuple(("rule", label) for label in near_miss_rules(entry))


def near_misses(entry: PatternEntry, rule: str | None = None) -> st.SearchStrategy[NearMiss]:
    """Near misses of `entry`: of any of its rules, or only of `rule`."""
    if rule is not None and rule not in _makers(entry):
        raise ValueError(f"{entry.id} has no near miss {rule!r}; it has "
                         f"{', '.join(near_miss_rules(entry))}")
    return _near_misses(entry.id, rule)


def _fused_whole(graph: Graph) -> bool:
    return len(partition(graph.finalize())) == 1


@st.composite
def _near_misses(draw: st.DrawFn, pattern: str, rule: str | None) -> NearMiss:
    # Takes the pattern id, not the entry, so that failures print a readable call.
    entry = catalog_entry(pattern)
    makers = _makers(entry)
    label = rule or draw(st.sampled_from(sorted(makers)), label="rule")
    draft = makers[label](draw, entry, label)
    assume(not _fused_whole(draft.graph))
    grammar = set(feature_keys(pattern).values())
    features = {k: v for k, v in draft.built.features.items() if k not in grammar}
    features.update(rule=label, variant=draft.variant)
    report_events(pattern, CaseKind.near_miss, features, label)
    case = Case(case_id(pattern, CaseKind.near_miss, draft.graph, label), CaseKind.near_miss,
                pattern, draft.graph, label, headline_dtype(draft.graph), features,
                f"near miss [{label}]: {draft.words}; {draft.built.describe()}")
    case = with_values(case, draw(draw_values(draft.graph), label="values"))
    return NearMiss(case, draft.built, draft.apart, draft.reasons)
