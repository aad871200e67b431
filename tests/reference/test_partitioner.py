"""The reference partitioner: catalog instances, near misses, tie-breaking, determinism."""

from __future__ import annotations

import random
import warnings
from collections.abc import Sequence

import pytest

from fusionspec.conformance.generate.instance_build import build_instance
from fusionspec.conformance.generate.instance_plans import instance_plans
from fusionspec.conformance.generate.strategies import accepted_patterns
from fusionspec.reference.explain import explain
from fusionspec.reference.partitioner import partition
from fusionspec.spec.catalog import CATALOG, PatternEntry
from fusionspec.spec.dtypes import DataType
from fusionspec.spec.graph import Graph, LogicalTensor, Op, Partition

F32, F16, U8, S8 = DataType.f32, DataType.f16, DataType.u8, DataType.s8
CONV = {"strides": (1, 1), "pads_begin": (1, 1), "pads_end": (1, 1), "dilations": (1, 1),
        "data_format": "NCX", "weights_format": "OIX"}


class G:
    """A tiny graph builder: every op gets fresh output tensors of the given shape."""

    def __init__(self) -> None:
        self.ops: list[Op] = []
        self.next_id = 0

    def t(self, shape: Sequence[int] = (2, 8), dtype: DataType = F32) -> LogicalTensor:
        self.next_id += 1
        return LogicalTensor(self.next_id, dtype, tuple(shape))

    def op(self, kind: str, *inputs: LogicalTensor, dtype: DataType = F32,
           shape: Sequence[int] | None = None, **attrs: object) -> LogicalTensor:
        out = self.t(shape if shape is not None else inputs[0].shape or (), dtype)
        self.ops.append(Op(len(self.ops), kind, inputs, (out,), attrs))  # type: ignore[arg-type]
        return out

    def graph(self) -> Graph:
        return Graph(self.ops)


def groups(parts: Sequence[Partition]) -> list[tuple[str | None, list[str]]]:
    return [(p.pattern, [f"{op.kind}{op.id}" for op in p.ops]) for p in parts]


def conv(g: G, x: LogicalTensor) -> LogicalTensor:
    return g.op("Convolution", x, g.t((4, 4, 3, 3)), **CONV)


# -- the examples of the module docstring --------------------------------------------------

def test_relu_add_add_is_one_unary_binary_partition() -> None:
    g = G()
    g.op("Add", g.op("Add", g.op("ReLU", g.t()), g.t()), g.t())
    got = groups(partition(g.graph()))
    assert got == [("fp.unary_binary", ["ReLU0", "Add1", "Add2"])], \
        f"ReLU->Add->Add must be one 'Unary + Binary^{{0-3}}' partition, got {got}"


def test_reciprocal_multiply_add_splits_after_multiply() -> None:
    g = G()
    g.op("Add", g.op("Multiply", g.op("Reciprocal", g.t()), g.t()), g.t())
    got = groups(partition(g.graph()))
    assert got == [("fp.reciprocal_multiply", ["Reciprocal0", "Multiply1"]),
                   ("fp.binary_post_ops", ["Add2"])], \
        f"equal-size matches: the upstream head (Reciprocal) wins, got {got}"


def test_conv_fan_out_leaves_conv_alone() -> None:
    g = G()
    c = conv(g, g.t((1, 4, 6, 6)))
    v = [g.t((4,)) for _ in range(4)]
    relu = g.op("ReLU", g.op("BatchNormInference", c, *v, epsilon=1e-5, data_format="NCX"))
    g.op("Add", relu, g.op("Sigmoid", c))
    got = sorted(groups(partition(g.graph())), key=lambda x: x[1])
    want = sorted([("fp.conv_post_ops", ["Convolution0"]),
                   ("fp.bn_relu", ["BatchNormInference1", "ReLU2"]),
                   ("fp.unary_binary", ["Sigmoid3", "Add4"])], key=lambda x: x[1])
    assert got == want, f"fan-out after Conv, then catalog order decides the Add: got {got}"


# -- every catalog pattern: each generated instance is exactly one partition ---------------

@pytest.mark.parametrize("entry", CATALOG, ids=lambda e: e.id)
def test_every_instance_of_a_pattern_is_one_partition(entry: PatternEntry) -> None:
    plans = instance_plans(entry)
    assert plans, f"no instance plans for {entry.id}"
    for plan in plans:
        graph = build_instance(entry, plan).finalize()
        parts = partition(graph)
        assert len(parts) == 1 and len(parts[0].ops) == len(graph.ops), \
            f"{entry.id} instance {plan.describe()} split into {groups(parts)}"
        part = parts[0]
        allowed = accepted_patterns(entry, part.ops)
        assert part.pattern in allowed, \
            f"{plan.describe()}: pattern {part.pattern}, expected one of {sorted(allowed)}"
        assert {t.id for t in part.inputs} == {t.id for t in graph.input_tensors}, \
            f"{entry.id}: partition inputs {[t.id for t in part.inputs]} are not the graph's"
        assert {t.id for t in part.outputs} == {t.id for t in graph.output_tensors}, \
            f"{entry.id}: partition outputs {[t.id for t in part.outputs]} are not the graph's"


def test_instances_reach_every_count_and_category_member() -> None:
    entry = next(e for e in CATALOG if e.id == "fp.conv_post_ops")
    plans = instance_plans(entry)
    post_counts = {len([k for k in p.kinds if k not in ("Convolution", "BiasAdd",
                                                        "BatchNormInference")]) for p in plans}
    assert post_counts == {0, 1, 2, 3}, f"post-op counts reached: {sorted(post_counts)}"
    kinds = {k for p in plans for k in p.kinds}
    from fusionspec.spec.categories import BINARY, UNARY
    missing = (set(UNARY) | set(BINARY)) - kinds
    assert not missing, f"category members never generated for fp.conv_post_ops: {missing}"


# -- near misses ----------------------------------------------------------------------------

def test_one_post_op_beyond_the_bound_starts_a_new_partition() -> None:
    g = G()
    y = conv(g, g.t((1, 4, 6, 6)))
    for kind in ("ReLU", "Tanh", "Abs", "Exp"):
        y = g.op(kind, y)
    graph = g.graph()
    got = groups(partition(graph))
    assert got == [("fp.conv_post_ops", ["Convolution0", "ReLU1", "Tanh2", "Abs3"]),
                   ("fp.unary_binary", ["Exp4"])], f"bound 0-3 must cut after 3: {got}"
    reasons = [(e.op_id, e.reason) for e in explain(graph)]
    assert (4, "bound") in reasons, f"explain must blame the bound for op 4: {reasons}"
    message = next(e.message for e in explain(graph) if e.op_id == 4)
    assert "the bound is 0-3" in message and "post-op 4" in message, message


def test_biasadd_after_a_post_op_is_not_fused() -> None:
    g = G()
    y = g.op("ReLU", conv(g, g.t((1, 4, 6, 6))))
    g.op("BiasAdd", y, g.t((4,)), data_format="NCX")
    got = groups(partition(g.graph()))
    assert got == [("fp.conv_post_ops", ["Convolution0", "ReLU1"]), (None, ["BiasAdd2"])], \
        f"BiasAdd must come first in the epilogue: {got}"


def test_fan_out_inside_the_chain_ends_it() -> None:
    g = G()
    relu = g.op("ReLU", g.op("MatMul", g.t(), g.t((8, 8))))
    g.op("Sigmoid", relu)
    g.op("Tanh", relu)
    graph = g.graph()
    got = groups(partition(graph))
    assert ("fp.matmul_post_ops", ["MatMul0", "ReLU1"]) in got, f"{got}"
    assert len(got) == 3, f"Sigmoid and Tanh stay apart after the fan-out: {got}"
    assert {e.reason for e in explain(graph)} == {"fan-out"}, \
        f"explain must name the fan-out: {[e.message for e in explain(graph)]}"


def test_chain_entering_subtract_on_src_1_does_not_fuse() -> None:
    g = G()
    mm = g.op("MatMul", g.t(), g.t((8, 8)))
    g.op("Subtract", g.t(), mm)
    graph = g.graph()
    got = groups(partition(graph))
    assert got == [("fp.matmul_post_ops", ["MatMul0"]), ("fp.binary_post_ops", ["Subtract1"])], \
        f"Subtract is not commutative: {got}"
    assert [e.reason for e in explain(graph)] == ["port"], "explain must name the port rule"


def test_chain_entering_add_on_src_1_fuses() -> None:
    g = G()
    mm = g.op("MatMul", g.t(), g.t((8, 8)))
    g.op("Add", g.t(), mm)
    got = groups(partition(g.graph()))
    assert got == [("fp.matmul_post_ops", ["MatMul0", "Add1"])], f"Add is commutative: {got}"


def test_softmax_non_f32_dst_before_a_post_op_is_not_fused() -> None:
    g = G()
    g.op("ReLU", g.op("SoftMax", g.t(), dtype=F16, axis=1), dtype=F16)
    graph = g.graph()
    got = groups(partition(graph))
    assert got == [("softmax.post_ops", ["SoftMax0"]), ("fp.unary_binary", ["ReLU1"])], f"{got}"
    found = explain(graph)
    assert [e.reason for e in found] == ["softmax.f32_dst"], \
        f"explain must name rule softmax.f32_dst: {[e.message for e in found]}"


def _int8_convtranspose(weights: DataType) -> Graph:
    g = G()
    src = g.op("Dequantize", g.t((1, 4, 6, 6), U8), scales=(0.5,), zps=(1,))
    w = g.op("Dequantize", g.t((4, 4, 3, 3), weights), scales=(0.25,))
    y = g.op("ConvTranspose", src, w, **{**CONV, "weights_format": "IOX"})
    g.op("Quantize", g.op("ReLU", y), dtype=S8, scales=(1.0,))
    return g.graph()


def test_dtype_row_outside_the_convtranspose_table_is_not_fused() -> None:
    inside = groups(partition(_int8_convtranspose(S8)))
    assert len(inside) == 1, f"s8 weights are a row of the table: {inside}"
    outside = _int8_convtranspose(U8)
    got = groups(partition(outside))
    assert len(got) > 1, f"u8 weights are outside page 000's table, yet fused: {got}"
    reasons = {e.reason for e in explain(outside)}
    assert "convtranspose.int8.dtypes" in reasons, f"explain must name the table: {reasons}"


# -- graphs with several chains, diamonds and shared inputs ---------------------------------

def test_independent_chains_and_shared_inputs() -> None:
    g = G()
    x = g.t()
    a = g.op("Add", g.op("ReLU", x), g.t())
    b = g.op("Multiply", g.op("Tanh", x), g.t())
    g.op("Maximum", a, b)
    got = groups(partition(g.graph()))
    assert ("fp.unary_binary", ["ReLU0", "Add1", "Maximum4"]) in got, f"{got}"
    assert ("fp.unary_binary", ["Tanh2", "Multiply3"]) in got, f"{got}"


def test_diamond_is_partitioned_convexly() -> None:
    g = G()
    top = g.op("MatMul", g.t(), g.t((8, 8)))
    left = g.op("ReLU", top)
    right = g.op("Sigmoid", top)
    g.op("Add", left, right)
    parts = partition(g.graph())
    for p in parts:
        _assert_convex(g.graph().finalize(), p)
    assert len(parts) == 3, f"{groups(parts)}"


# -- determinism ----------------------------------------------------------------------------

def _signature(parts: Sequence[Partition]) -> list[tuple[str, tuple[str, ...]]]:
    """Partitions by pattern and by the tensors their ops produce: independent of op ids."""
    return sorted((p.pattern or "", tuple(sorted(f"{op.kind}->{op.outputs[0].id}" for op in p.ops)))
                  for p in parts)


def test_result_does_not_depend_on_op_ids_or_insertion_order() -> None:
    g = G()
    x = g.t()
    y = g.op("Add", g.op("ReLU", x), g.t())
    z = g.op("Multiply", g.op("Reciprocal", y), g.t())
    g.op("Subtract", g.op("Tanh", z), g.op("Exp", x))
    base = _signature(partition(g.graph()))
    rng = random.Random(7)
    for _ in range(5):
        ops = list(g.ops)
        rng.shuffle(ops)
        ids = rng.sample(range(100, 200), len(ops))
        shuffled = [Op(i, op.kind, op.inputs, op.outputs, op.attrs) for i, op in zip(ids, ops)]
        got = _signature(partition(Graph(shuffled)))
        assert got == base, f"renumbered/reordered graph partitions differently: {got}"


def _assert_convex(graph: Graph, p: Partition) -> None:
    inside = {op.id for op in p.ops}
    frontier = [c for op in p.ops for c in graph.successors(op) if c.id not in inside]
    seen: set[int] = set()
    while frontier:
        op = frontier.pop()
        if op.id in seen:
            continue
        seen.add(op.id)
        for succ in graph.successors(op):
            assert succ.id not in inside, \
                f"partition {p.id} {groups([p])} is not convex: a path leaves and re-enters"
            frontier.append(succ)


def test_unsupported_kind_is_an_unsupported_single_op_partition() -> None:
    g = G()
    y = g.op("ReLU", g.t())
    g.ops.append(Op(1, "StaticReshape", (y,), (g.t((16,)),),
                    {"shape": (16,), "special_zero": False}))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        parts = partition(g.graph())
    flags = [(p.pattern, p.supported) for p in parts]
    assert (None, False) in flags, f"StaticReshape is outside the spec: {flags}"
