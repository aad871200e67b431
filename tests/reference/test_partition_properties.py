"""Invariants of the reference partitioner on random graphs (hypothesis).

Random DAGs of shape-preserving ops of the pages (every Unary and Binary kind, Reciprocal,
Reorder, SoftMax, BiasAdd, MatMul with square weights), whose inputs are drawn from earlier
tensors, so fan-outs, diamonds, shared inputs and chains all occur. For every graph:
partitions are disjoint and cover every op, each is convex, its inputs are exactly the tensors
its ops read from outside, its outputs exactly the tensors that leave it, partitions come in
dependency order, and the result does not depend on op ids or insertion order.
"""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from fusionspec.reference.partitioner import partition
from fusionspec.spec.categories import BINARY, UNARY
from fusionspec.spec.dtypes import DataType
from fusionspec.spec.graph import AttrValue, Graph, LogicalTensor, Op, Partition

SHAPE = (2, 8)
F32 = DataType.f32
_ATTRS: dict[str, dict[str, AttrValue]] = {
    "Clamp": {"min": -1.0, "max": 1.0}, "Elu": {"alpha": 0.5}, "LeakyReLU": {"alpha": 0.1},
    "Pow": {"beta": 2.0}, "SoftMax": {"axis": 1}, "BiasAdd": {"data_format": "NXC"},
}
ONE_INPUT = (*UNARY, "Reciprocal", "Reorder", "SoftMax")
TWO_INPUTS = (*BINARY,)
WITH_PARAM = ("BiasAdd", "MatMul")


@st.composite
def random_graphs(draw: st.DrawFn) -> Graph:
    n_ops = draw(st.integers(1, 14), label="ops")
    tensors: list[LogicalTensor] = []
    next_id = 0

    def fresh(shape: tuple[int, ...] = SHAPE) -> LogicalTensor:
        nonlocal next_id
        next_id += 1
        return LogicalTensor(next_id, F32, shape)

    def pick() -> LogicalTensor:
        if not tensors or draw(st.integers(0, 4), label="new input") == 0:
            t = fresh()
            tensors.append(t)
            return t
        return tensors[draw(st.integers(0, len(tensors) - 1), label="operand")]

    ops: list[Op] = []
    for i in range(n_ops):
        kind = draw(st.sampled_from(ONE_INPUT + TWO_INPUTS + WITH_PARAM), label="kind")
        if kind in TWO_INPUTS:
            inputs = [pick(), pick()]
        elif kind == "BiasAdd":
            inputs = [pick(), fresh((SHAPE[1],))]
        elif kind == "MatMul":
            inputs = [pick(), fresh((SHAPE[1], SHAPE[1]))]
        else:
            inputs = [pick()]
        out = fresh()
        ops.append(Op(i, kind, tuple(inputs), (out,), _ATTRS.get(kind, {})))
        tensors.append(out)
    return Graph(ops)


def _reachable(graph: Graph, start: Op, avoid: set[int]) -> set[int]:
    """Ops reachable from `start` through ops outside `avoid`."""
    seen: set[int] = set()
    stack = [s for s in graph.successors(start) if s.id not in avoid]
    while stack:
        op = stack.pop()
        if op.id in seen:
            continue
        seen.add(op.id)
        stack.extend(s for s in graph.successors(op) if s.id not in avoid)
    return seen


def _check_partitions(graph: Graph, parts: list[Partition]) -> None:
    owner: dict[int, int] = {}
    for p in parts:
        for op in p.ops:
            assert op.id not in owner, f"op {op.id} is in partitions {owner[op.id]} and {p.id}"
            owner[op.id] = p.id
    assert set(owner) == {op.id for op in graph.ops}, \
        f"ops {sorted({op.id for op in graph.ops} - set(owner))} are in no partition"
    for p in parts:
        inside = {op.id for op in p.ops}
        leaving = {s.id for op in p.ops for s in graph.successors(op) if s.id not in inside}
        outside_reach = set(leaving)
        for op_id in leaving:
            outside_reach |= _reachable(graph, graph.op_by_id[op_id], inside)
        reentry = [o for o in outside_reach
                   if any(s.id in inside for s in graph.successors(graph.op_by_id[o]))]
        assert not reentry, \
            f"partition {p.id} ({[o.kind for o in p.ops]}) is not convex: ops {reentry} " \
            "lie on a path that leaves it and comes back"
        produced = {t.id for op in p.ops for t in op.outputs}
        want_in = {t.id for op in p.ops for t in op.inputs if t.id not in produced}
        assert {t.id for t in p.inputs} == want_in, \
            f"partition {p.id}: inputs {[t.id for t in p.inputs]}, expected {sorted(want_in)}"
        want_out = {t.id for op in p.ops for t in op.outputs
                    if not graph.consumers.get(t.id)
                    or any(c.id not in inside for c, _ in graph.consumers[t.id])}
        assert {t.id for t in p.outputs} == want_out, \
            f"partition {p.id}: outputs {[t.id for t in p.outputs]}, expected {sorted(want_out)}"
    done: set[int] = set()
    for p in parts:
        for t in p.inputs:
            if t.id in graph.producers:
                producer = graph.producers[t.id][0]
                assert owner[producer.id] in done, \
                    f"partition {p.id} reads tensor {t.id} before partition " \
                    f"{owner[producer.id]} produces it"
        done.add(p.id)


@settings(max_examples=150)
@given(random_graphs())
def test_partitions_are_disjoint_covering_convex_with_exact_io(graph: Graph) -> None:
    final = graph.finalize()
    _check_partitions(final, partition(final))


@settings(max_examples=60)
@given(random_graphs(), st.randoms(use_true_random=False))
def test_partitions_do_not_depend_on_op_ids_or_order(graph: Graph, rnd: object) -> None:
    import random

    assert isinstance(rnd, random.Random)
    ops = list(graph.ops)
    rnd.shuffle(ops)
    ids = rnd.sample(range(1000, 2000), len(ops))
    renumbered = Graph([Op(i, op.kind, op.inputs, op.outputs, op.attrs)
                        for i, op in zip(ids, ops)])

    def signature(g: Graph) -> list[tuple[str, tuple[int, ...], tuple[int, ...]]]:
        # Ops are identified by the tensors they produce, which renumbering keeps.
        return [(p.pattern or "", tuple(op.outputs[0].id for op in p.ops),
                 tuple(t.id for t in p.inputs)) for p in partition(g)]

    assert signature(graph) == signature(renumbered), \
        "partitions (their order, ops and input order) changed when ops were renumbered " \
        "and reordered"
