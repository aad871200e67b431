"""The error bounds and `compare`: each op's accuracy, the interval model through chains, the
other neighbour only near a tie, conditioning, NaN/inf agreement, dtype and shape checks."""

from __future__ import annotations

import ml_dtypes
import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from fusionspec.conformance.grade.bounds import (
    error_bounds,
    granularity,
    op_bounds,
    output_bounds,
)
from fusionspec.conformance.grade.tolerances import (
    ACCURACY,
    WORST_COUNT,
    Bound,
    ToleranceError,
    accuracy_of,
    accuracy_table,
    compare,
    weak_elements,
)
from fusionspec.reference import execute
from fusionspec.reference.dtypes import cast_to
from fusionspec.spec.dtypes import DataType
from fusionspec.spec.graph import Graph, LogicalTensor, Op
from fusionspec.spec.opschemas import SCHEMAS
from fusionspec.spec.types import Array

D = DataType


def t(tid: int, dtype: DataType = D.f32, shape: tuple[int, ...] = (8,)) -> LogicalTensor:
    return LogicalTensor(tid, dtype, shape)


def chain(kinds: list[tuple[str, dict[str, object]]], dtype: DataType = D.f32,
          out: DataType | None = None, shape: tuple[int, ...] = (8,)) -> Graph:
    """A chain of element-wise ops on tensor 0 (binary ops take tensor 100+i as src_1)."""
    ops, cur = [], t(0, dtype, shape)
    for i, (kind, attrs) in enumerate(kinds):
        last = i == len(kinds) - 1
        nxt = t(i + 1, (out or dtype) if last else dtype, shape)
        ins = (cur, t(100 + i, dtype, shape)) if kind in (
            "Add", "Subtract", "Multiply", "Divide", "Maximum", "Minimum") else (cur,)
        ops.append(Op(i, kind, ins, (nxt,), attrs))  # type: ignore[arg-type]
        cur = nxt
    return Graph(ops).finalize()


def bound_of(graph: Graph, inputs: dict[int, Array]) -> tuple[Array, Bound]:
    out = graph.output_tensors[0]
    return execute(graph, inputs)[out.id], output_bounds(graph, inputs)[out.id]


# -- the accuracy table ------------------------------------------------------------------------

def test_every_spec_op_has_an_accuracy() -> None:
    for kind in SCHEMAS:
        assert kind in accuracy_of(kind).kinds, f"{kind} has no row of its own in ACCURACY"


def test_no_op_has_two_rows() -> None:
    kinds = [k for a in ACCURACY for k in a.kinds]
    twice = sorted({k for k in kinds if kinds.count(k) > 1})
    assert not twice, f"op kinds listed in two accuracy rows: {twice}"


def test_unknown_kind_is_a_typed_error() -> None:
    with pytest.raises(ToleranceError, match="LayerNorm"):
        accuracy_of("LayerNorm")


def test_transcendental_ops_get_opencl_ulps_and_exact_ops_none() -> None:
    assert accuracy_of("Exp").ulps == 3 and accuracy_of("Tanh").ulps == 5, \
        "Exp and Tanh get OpenCL C's single-precision limits (3 and 5 ulp)"
    assert accuracy_of("Add").ulps == 0 and accuracy_of("Sqrt").ulps == 0, \
        "IEEE's correctly rounded operations get nothing beyond correct rounding"
    rows = accuracy_table()
    assert all(row["source"] and row["rule"] for row in rows), \
        "every row of the table states its rule and its source"


# -- exactly rounded results: the other neighbour only near a tie ------------------------------

def test_truncation_to_bf16_is_caught_where_no_tie_is_near() -> None:
    graph = chain([("ReLU", {}), ("TypeCast", {})], D.f32, D.bf16)
    x = np.float32([1.0 + 3 * 2.0 ** -9, 2.0 + 2.0 ** -20, -1.0 - 3 * 2.0 ** -9])
    inputs = {0: np.resize(x, 8).astype(np.float32)}
    expected, bound = bound_of(graph, inputs)
    assert not np.any(bound.radius), "an exact chain leaves no room: RNE is the only answer"
    truncated = (np.resize(x, 8).view(np.uint32) & np.uint32(0xFFFF0000)).view(np.float32)
    got = truncated.astype(ml_dtypes.bfloat16)
    assert not compare(expected, got, bound).passed, \
        "rounding toward zero instead of to nearest even must fail away from ties"


def test_either_neighbour_passes_when_the_interval_holds_the_tie() -> None:
    graph = chain([("Tanh", {}), ("TypeCast", {})], D.f32, D.bf16)
    target = 0.5 + 2.0 ** -9  # a bf16 midpoint (between 0.5 and 0.5 + 2^-8)
    x = np.float32(np.arctanh(target))
    inputs = {0: np.full(8, x, dtype=np.float32)}
    expected, bound = bound_of(graph, inputs)
    low, high = np.float32(0.5), np.float32(0.5 + 2.0 ** -8)
    for value in (low, high):
        got = np.full(8, value, dtype=np.float32).astype(ml_dtypes.bfloat16)
        assert compare(expected, got, bound).passed, \
            f"tanh is within 5 ulp of the bf16 tie, so {value} (a neighbour) must pass"


def test_exact_quantize_ties_round_half_to_even() -> None:
    graph = chain([("Quantize", {"scales": [1.0], "zps": [0]})], D.f32, D.u8)
    inputs = {0: np.float32([0.5, 1.5, 2.5, 3.5, 4.5, 5.5, 6.5, 7.5])}
    expected, bound = bound_of(graph, inputs)
    assert list(expected) == [0, 2, 2, 4, 4, 6, 6, 8], "the reference rounds half to even"
    away = np.uint8([1, 2, 3, 4, 5, 6, 7, 8])
    assert not compare(expected, away, bound).passed, \
        "on exact inputs a tie is a true tie: half away from zero must fail"


def test_a_round_after_an_inexact_chain_accepts_both_sides_of_a_tie() -> None:
    graph = chain([("Exp", {}), ("Log", {}), ("Round", {})])
    inputs = {0: np.full(8, 2.5, dtype=np.float32)}
    expected, bound = bound_of(graph, inputs)
    assert np.all(bound.radius >= 1), \
        "log(exp(2.5)) may be a few ulp either side of 2.5, so Round may give 2 or 3"
    assert compare(expected, np.full(8, 3.0, dtype=np.float32), bound).passed, \
        "the other neighbour of an ill-conditioned tie must pass"


# -- approximation constants and special values -------------------------------------------------

def _gelu_tanh(x: Array, cubic: float) -> Array:
    u = np.float32(0.7978845834732056) * (x + np.float32(cubic) * x * x * x)
    return (np.float32(0.5) * x * (np.float32(1) + np.tanh(u))).astype(np.float32)


def test_gelu_tanh_naive_formula_passes_and_a_wrong_coefficient_fails() -> None:
    graph = chain([("GELU", {"mode": "gelu_tanh"})], shape=(64,))
    x = np.linspace(-5, 5, 64).astype(np.float32)
    expected, bound = bound_of(graph, {0: x})
    assert compare(expected, _gelu_tanh(x, 0.044715), bound).passed, \
        "0.5*x*(1 + tanh(u)) in f32 is a correct implementation despite its cancellation"
    result = compare(expected, _gelu_tanh(x, 0.0447), bound)
    assert not result.passed, \
        "a tanh coefficient off in its fourth digit (0.0447) must not pass"


def test_nan_and_inf_must_agree() -> None:
    graph = chain([("ReLU", {})])
    x = np.float32([np.nan, np.inf, -np.inf, 1, 2, 3, 4, 5])
    expected, bound = bound_of(graph, {0: x})
    got = expected.copy()
    got[0] = 0.0
    assert not compare(expected, got, bound).passed, "ReLU(NaN) is NaN, and 0 must fail"
    got = expected.copy()
    got[1] = np.float32(3e38)
    assert not compare(expected, got, bound).passed, "ReLU(inf) is inf, a finite value fails"
    assert compare(expected, expected.copy(), bound).passed, "the reference passes itself"


def test_sigmoid_of_nan_is_nan() -> None:
    graph = chain([("Sigmoid", {})])
    x = np.float32([np.nan, 0, 100, -100, 1, 2, 3, 4])
    out = execute(graph, {0: x})[1]
    assert np.isnan(out[0]), f"Sigmoid(NaN) must propagate NaN, got {out[0]}"
    assert out[3] == 0.0 and out[2] == 1.0, "the overflow guard still gives 0 and 1 at the ends"


# -- conditioning ------------------------------------------------------------------------------

def test_division_by_an_interval_holding_zero_is_uncertain() -> None:
    graph = chain([("Exp", {}), ("Subtract", {}), ("Reciprocal", {})])
    x = np.zeros(8, dtype=np.float32)  # exp(0) - 1 = 0, known only to a few ulp
    inputs = {0: x, 101: np.ones(8, dtype=np.float32)}
    _, bound = bound_of(graph, inputs)
    assert np.all(np.isinf(bound.radius)), \
        "1/(exp(0) - 1) divides by a value that may be 0 or a few ulp: any result is accepted"
    assert bound.weak(np.ones(8)).all(), "an uncertain element carries weak signal"


def test_cancellation_widens_the_bound_in_proportion() -> None:
    graph = chain([("Exp", {}), ("Subtract", {}), ("Multiply", {})])
    x = np.full(8, 1.0, dtype=np.float32)
    inputs = {0: x, 101: np.full(8, np.float32(np.e)), 102: np.full(8, 1e6, np.float32)}
    expected, bound = bound_of(graph, inputs)
    assert np.all(bound.radius > 0.01), \
        "e - f32(e) is a rounding error; times 1e6 the bound must grow to match"
    assert weak_elements(expected, bound.radius, D.f32).all(), \
        "a result made of rounding errors carries weak signal"


def test_exact_convolution_sums_have_a_zero_bound() -> None:
    src, w, dst = t(0, shape=(1, 1, 6)), t(1, shape=(1, 1, 3)), t(2, shape=(1, 1, 4))
    attrs = {"strides": (1,), "pads_begin": (0,), "pads_end": (0,), "dilations": (1,),
             "data_format": "NCX", "weights_format": "OIX"}
    graph = Graph([Op(0, "Convolution", (src, w), (dst,), attrs)]).finalize()  # type: ignore
    grid = {0: np.float32([[[1, -2, 0.5, 4, 3, -1]]]), 1: np.float32([[[0.25, 2, -3]]])}
    assert not np.any(error_bounds(graph, grid)[2]), \
        "grid values sum exactly in any order: the bound is 0"
    rng = np.random.default_rng(0)
    dense = {0: rng.uniform(-4, 4, (1, 1, 6)).astype(np.float32),
             1: rng.uniform(-4, 4, (1, 1, 3)).astype(np.float32)}
    assert np.all(error_bounds(graph, dense)[2] > 0), \
        "inexact products allow for another summation order"


def test_granularity_is_the_largest_common_power_of_two() -> None:
    assert granularity(np.float32([0.5, 1.25, 3])) == 0.25, "0.25 divides 0.5, 1.25 and 3"
    assert granularity(np.zeros(3)) == float("inf"), "zeros are multiples of everything"


@settings(max_examples=60)
@given(st.lists(st.sampled_from(["Exp", "Tanh", "Sigmoid", "Square", "Abs", "GELU", "Log",
                                 "Sqrt", "Add", "Multiply", "Subtract"]), min_size=1,
                max_size=5),
       st.integers(0, 2 ** 16))
def test_bounds_contain_the_chain_on_perturbed_intermediates(kinds: list[str],
                                                             seed: int) -> None:
    """Soundness: redo the chain in f32 with every intermediate moved by up to one ulp (what
    another correct implementation may produce); the result stays within the bound."""
    graph = chain([(k, {}) for k in kinds], shape=(32,))
    rng = np.random.default_rng(seed)
    inputs = {0: rng.uniform(0.25, 2, 32).astype(np.float32)}
    for op in graph.ops:
        if len(op.inputs) == 2:
            inputs[op.inputs[1].id] = rng.uniform(0.25, 2, 32).astype(np.float32)
    expected, bound = bound_of(graph, inputs)
    values = dict(inputs)
    for op in graph.ops:
        value = execute(Graph([op]).finalize(), {i.id: values[i.id] for i in op.inputs})
        out = value[op.outputs[0].id]
        toward = np.choose(rng.integers(0, 3, out.shape), [-np.inf, out, np.inf])
        # An overflowed value stays inf: a few ulp do not bring e^1000 back into range.
        moved = np.where(np.isfinite(out), np.nextafter(out, toward.astype(np.float32)),
                         out).astype(np.float32)
        exact = op.kind in ("Abs", "Add", "Multiply", "Subtract", "Square", "Sqrt")
        values[op.outputs[0].id] = out if exact else moved
    got = values[graph.output_tensors[0].id]
    assert compare(expected, got, bound).passed, \
        f"{'->'.join(kinds)}: a one-ulp difference per transcendental step left the bound"


# -- compare -----------------------------------------------------------------------------------

def _flat(radius: float, n: int = 8, dtype: DataType = D.f32) -> Bound:
    return Bound(dtype, np.full(n, radius), ("Op",))


def test_wrong_dtype_and_shape_are_reported() -> None:
    expected = np.zeros(8, dtype=np.float32)
    assert "dst dtype f16" in compare(expected, expected.astype(np.float16), _flat(1)).reason, \
        "an f16 array for an f32 output names both types"
    assert "dst shape [4]" in compare(expected, np.zeros(4, np.float32), _flat(1)).reason, \
        "a wrong shape names the shapes"
    assert "not a NumPy array" in compare(expected, [0.0] * 8, _flat(1)).reason, \
        "a list is not an array"


def test_worst_elements_carry_their_bound() -> None:
    expected = np.arange(8, dtype=np.float32)
    got = expected + np.float32(1)
    result = compare(expected, got, _flat(0.5))
    assert not result.passed and result.mismatches == 8, "every element is 1 off, bound 0.5"
    assert len(result.worst) == min(WORST_COUNT, 8), "the report keeps the worst few"
    assert all(w.bound == 0.5 for w in result.worst), "each worst element shows its bound"
    assert "2 x its bound" in result.reason, f"the reason says how far past: {result.reason}"


def test_uncertain_elements_accept_anything() -> None:
    expected = np.zeros(8, dtype=np.float32)
    got = np.full(8, np.nan, dtype=np.float32)
    assert compare(expected, got, _flat(np.inf)).passed, \
        "an element with an infinite bound (its interval crossed a pole) accepts NaN too"


def test_integer_outputs_compare_in_integer_steps() -> None:
    expected = cast_to(np.float32([1, 2, 3, 4, 5, 6, 7, 8]), D.u8)
    got = expected.copy()
    got[0] = 2
    assert not compare(expected, got, _flat(0.0, dtype=D.u8)).passed, "exact means exact"
    assert compare(expected, got, _flat(1.0, dtype=D.u8)).passed, \
        "a radius of one step accepts the neighbour"


# -- intermediates a fused kernel keeps unrounded --------------------------------------------

def test_a_fused_reciprocal_multiply_may_be_computed_as_one_division() -> None:
    graph = chain([("Reciprocal", {}), ("Multiply", {})], shape=(64,))
    x = np.linspace(0.3, 7.9, 64).astype(np.float32)
    b = np.linspace(-3.1, 3.3, 64).astype(np.float32)
    inputs = {0: x, 101: b}
    expected, bound = bound_of(graph, inputs)
    one_division = (b / x).astype(np.float32)
    assert np.any(one_division != expected), \
        "the test needs inputs where b*(1/x) and b/x round differently"
    assert compare(expected, one_division, bound).passed, \
        "b/x (one rounding, as oneDNN fuses Reciprocal -> Multiply) must pass: the spec's " \
        "value rounds 1/x inside the partition only as the reference's choice"
    off = (one_division.astype(np.float64) * (1 + 8 * 2.0 ** -24)).astype(np.float32)
    assert not compare(expected, off, bound).passed, \
        "8 ulp off the quotient is past any rounding choice and must fail"


def test_an_unrounded_intermediate_adds_nothing_where_the_result_is_exact() -> None:
    op = Op(0, "Multiply", (t(0, shape=(4,)), t(1, shape=(4,))), (t(2, shape=(4,)),),
            {"auto_broadcast": "numpy"})
    exact = [np.float32([1.5, 3.0, -0.25, 6.0]), np.float32([2.0, 0.5, 4.0, 1.5])]
    zero = [np.zeros(4), np.zeros(4)]
    (_, r), = op_bounds(op, exact, zero, unrounded=True)
    assert np.all(r == 0), f"exact products keep a zero radius when unrounded, got {r}"
    inexact = [np.float32([0.1, 1 / 3, 0.7, 1.1]), np.float32([0.3, 0.3, 0.9, 1.3])]
    (_, r), = op_bounds(op, inexact, zero, unrounded=True)
    assert np.all(r > 0), f"an inexact product may be kept unrounded: radius > 0, got {r}"
    (_, r), = op_bounds(op, inexact, zero, unrounded=False)
    assert np.all(r == 0), f"a partition output is rounded as the spec says, got {r}"


def test_a_miss_against_a_zero_bound_reads_as_a_sentence() -> None:
    expected = np.arange(8, dtype=np.float32)
    result = compare(expected, expected + np.float32(1), _flat(0.0))
    assert not result.passed, "any error is too much against a zero bound"
    assert "with a zero bound its bound" not in result.reason and \
        "where the bound is zero" in result.reason, f"the reason reads: {result.reason}"
