"""The tolerance table and `compare`: benchdnn's thresholds, the off-by-one rule at .5 ties,
NaN/inf agreement, dtype and shape checks, and the widening along a chain."""

from __future__ import annotations

import ml_dtypes
import numpy as np
import pytest

from fusionspec.conformance.grade.tolerances import (
    EPS,
    TOLERANCE_CLASSES,
    WORST_COUNT,
    ToleranceError,
    compare,
    tolerance_class_of,
    tolerance_for,
    tolerance_table,
)
from fusionspec.spec.dtypes import DataType
from fusionspec.spec.graph import LogicalTensor, Op
from fusionspec.spec.opschemas import SCHEMAS

D = DataType


def op(kind: str, out: DataType = D.f32, **attrs: object) -> Op:
    return Op(0, kind, (), (LogicalTensor(1, out, (4,)),), attrs)  # type: ignore[arg-type]


def quantize_tol(dtype: DataType) -> object:
    return tolerance_for([op("MatMul"), op("Quantize", dtype)], dtype)


# -- the table --------------------------------------------------------------------------------

def test_every_spec_op_has_a_family() -> None:
    for kind in SCHEMAS:
        family = tolerance_class_of(Op(0, kind, attrs={"mode": "nearest"}))
        assert kind in family.kinds, f"{kind} is classified as {family.name}, which omits it"


def test_unknown_kind_is_a_typed_error() -> None:
    with pytest.raises(ToleranceError, match="LayerNorm"):
        tolerance_class_of(Op(0, "LayerNorm"))


def test_benchdnn_thresholds_are_the_starting_point() -> None:
    by_name = {f.name: f for f in TOLERANCE_CLASSES}
    assert by_name["binary"].f32 == 2.0 ** -23, "binary is eps(f32), as benchdnn's binary driver"
    assert by_name["eltwise"].f32 == 4e-6, "eltwise f32 is 4e-6, as benchdnn's eltwise driver"
    assert by_name["eltwise-complex"].f32 == 4e-5, "tanh/elu/log... get benchdnn's 4e-5"
    assert by_name["softmax"].f32 == 10 * 2.0 ** -23, "softmax is 10*eps(f32) as in benchdnn"
    assert by_name["pool-max"].f32 == 0.0, "max pooling is exact, as in benchdnn"
    assert EPS[D.bf16] == 2.0 ** -7 and EPS[D.f16] == 2.0 ** -10, "benchdnn's eps for bf16/f16"


def test_interpolate_family_follows_its_mode() -> None:
    assert tolerance_class_of(op("Interpolate", mode="nearest")).name == "interpolate-nearest", \
        "nearest interpolation copies elements and must be its own family"
    assert tolerance_class_of(op("Interpolate", mode="bilinear")).name == "interpolate-linear", \
        "bilinear interpolation takes benchdnn's 7*eps threshold"


def test_table_rows_are_printable() -> None:
    rows = tolerance_table()
    assert [r["family"] for r in rows] == [f.name for f in TOLERANCE_CLASSES], \
        "the report table has one row per family, in table order"
    relu = next(r for r in rows if r["family"] == "eltwise")
    assert relu["s8"] == "exact+-1 at ties", f"s8 outputs are exact up to ties, got {relu['s8']}"
    assert float(relu["bf16"]) == pytest.approx(4e-6 + 2.0 ** -7), \
        f"a bf16 eltwise output gets its f32 budget plus one bf16 ulp, got {relu['bf16']}"


# -- widening along a chain -------------------------------------------------------------------

def test_budget_grows_with_chain_length() -> None:
    one = tolerance_for([op("MatMul"), op("Tanh")], D.f32)
    three = tolerance_for([op("MatMul"), op("Tanh"), op("Tanh"), op("Tanh")], D.f32)
    assert three.rtol == pytest.approx(one.rtol + 2 * 4e-5), \
        f"each extra Tanh adds 4e-5: {one.rtol} -> {three.rtol}"
    assert three.label == "MatMul->Tanh->Tanh->Tanh", f"chain label is {three.label}"


def test_exp_amplifies_the_error_before_it() -> None:
    plain = tolerance_for([op("MatMul"), op("Tanh"), op("ReLU")], D.f32)
    exp = tolerance_for([op("MatMul"), op("Tanh"), op("Exp")], D.f32)
    assert exp.rtol > 10 * plain.rtol, \
        f"Exp turns input error into relative output error: {exp.rtol} vs {plain.rtol}"
    assert any("amplifies" in line for line in exp.basis), f"basis says why: {exp.basis}"


def test_intermediate_bf16_rounding_widens() -> None:
    chain = [op("SoftMax"), op("TypeCast", D.bf16), op("Add", D.bf16)]
    tol = tolerance_for(chain, D.bf16)
    assert tol.rtol >= 2 * EPS[D.bf16], \
        f"a bf16 intermediate and a bf16 output each may round once: rtol {tol.rtol}"


# -- comparisons --------------------------------------------------------------------------------

def test_off_by_one_at_a_tie_is_accepted_for_int8() -> None:
    for dtype, np_type in ((D.u8, np.uint8), (D.s8, np.int8)):
        tol = quantize_tol(dtype)
        exact = np.array([2.5, 3.0, 7.5])
        expected = np.array([2, 3, 8], dtype=np_type)  # round half to even
        actual = np.array([3, 3, 7], dtype=np_type)   # the other neighbour at both ties
        result = compare(expected, actual, tol, exact=exact)  # type: ignore[arg-type]
        assert result.passed, f"{dtype}: off by one at a .5 tie must pass: {result.reason}"


def test_off_by_one_away_from_a_tie_fails() -> None:
    tol = quantize_tol(D.u8)
    exact = np.array([2.3])
    result = compare(np.array([2], np.uint8), np.array([3], np.uint8), tol,  # type: ignore[arg-type]
                     exact=exact)
    assert not result.passed, "u8 off by one where the exact value is 2.3 must fail"
    assert result.worst[0].index == (0,), f"the worst element is listed: {result.worst}"


def test_off_by_two_at_a_tie_fails() -> None:
    tol = quantize_tol(D.u8)
    result = compare(np.array([2], np.uint8), np.array([4], np.uint8), tol,  # type: ignore[arg-type]
                     exact=np.array([2.5]))
    assert not result.passed, "a tie allows the two neighbours only, not a value 2 away"


def test_off_by_one_needs_the_exact_value() -> None:
    tol = quantize_tol(D.u8)
    result = compare(np.array([2], np.uint8), np.array([3], np.uint8), tol)  # type: ignore[arg-type]
    assert not result.passed, "without the pre-rounding value no off-by-one can be excused"


def test_off_by_one_is_not_accepted_for_f32() -> None:
    tol = tolerance_for([op("MatMul")], D.f32)
    result = compare(np.array([2.0], np.float32), np.array([3.0], np.float32), tol,
                     exact=np.array([2.5]))
    assert not result.passed, "an f32 output off by one is a plain error, tie or not"


def test_bf16_within_eps_passes_and_beyond_fails() -> None:
    tol = tolerance_for([op("Add", D.bf16)], D.bf16)
    expected = np.array([1.0, 3.0, -8.0], dtype=ml_dtypes.bfloat16)
    one_ulp = np.array([1.0078125, 3.015625, -8.0625], dtype=ml_dtypes.bfloat16)
    assert compare(expected, one_ulp, tol).passed, \
        f"one bf16 ulp (eps 2^-7) must pass: {compare(expected, one_ulp, tol).reason}"
    four_ulp = np.array([1.03125, 3.0, -8.0], dtype=ml_dtypes.bfloat16)
    result = compare(expected, four_ulp, tol)
    assert not result.passed, "four bf16 ulps (rel 3%) must fail"
    assert result.mismatches == 1, f"only the first element is off: {result.mismatches}"


def test_f32_tolerance_is_tight() -> None:
    tol = tolerance_for([op("MatMul"), op("ReLU")], D.f32)
    expected = np.array([10.0, -3.0], np.float32)
    assert compare(expected, expected * np.float32(1 + 2e-6), tol).passed, \
        "a relative error of 2e-6 is within MatMul->ReLU's budget"
    assert not compare(expected, expected * np.float32(1 + 1e-4), tol).passed, \
        "a relative error of 1e-4 is far beyond MatMul->ReLU's budget"


def test_nan_positions_must_match() -> None:
    tol = tolerance_for([op("Log")], D.f32)
    expected = np.array([np.nan, 1.0, -np.inf], np.float32)
    assert compare(expected, expected.copy(), tol).passed, "identical NaN/inf must pass"
    finite = np.array([0.0, 1.0, -np.inf], np.float32)
    result = compare(expected, finite, tol)
    assert not result.passed and "NaN/inf" in result.reason, \
        f"a finite value where the reference has NaN must fail: {result.reason}"
    extra_nan = np.array([np.nan, np.nan, -np.inf], np.float32)
    assert not compare(expected, extra_nan, tol).passed, \
        "a NaN where the reference is finite must fail"
    wrong_inf = np.array([np.nan, 1.0, np.inf], np.float32)
    assert not compare(expected, wrong_inf, tol).passed, "+inf where the reference has -inf"


def test_wrong_dtype_is_a_mismatch_with_a_reason() -> None:
    tol = tolerance_for([op("SoftMax"), op("Add")], D.f32)
    expected = np.zeros((2, 3), np.float32)
    result = compare(expected, expected.astype(np.float16), tol)
    assert not result.passed, "an f16 array for an f32 tensor must fail"
    assert result.reason == "dst dtype f16, spec requires f32 [SoftMax->Add]", \
        f"reason names both types and the chain: {result.reason!r}"
    bf16 = compare(expected, expected.astype(ml_dtypes.bfloat16), tol)
    assert "dst dtype bf16" in bf16.reason, f"bfloat16 is spelled bf16: {bf16.reason!r}"


def test_wrong_shape_and_non_array_fail() -> None:
    tol = tolerance_for([op("ReLU")], D.f32)
    expected = np.zeros((2, 3), np.float32)
    assert "shape" in compare(expected, np.zeros((3, 2), np.float32), tol).reason, \
        "a transposed result must be reported as a shape mismatch"
    assert "list" in compare(expected, [[0.0] * 3] * 2, tol).reason, \
        "a list instead of an array must be reported with its type"


def test_cancellation_near_zero_uses_the_tensor_magnitude() -> None:
    tol = tolerance_for([op("MatMul"), op("Tanh"), op("Subtract")], D.f32)
    expected = np.array([100.0, 1e-7], np.float32)
    actual = np.array([100.0, 1e-7 + 1e-5], np.float32)
    assert compare(expected, actual, tol).passed, \
        "an absolute error of 1e-5 near zero, in a tensor of magnitude 100, is within budget"


def test_worst_elements_are_few_and_ordered() -> None:
    tol = tolerance_for([op("ReLU")], D.f32)
    expected = np.zeros(20, np.float32)
    actual = np.arange(20, dtype=np.float32)
    result = compare(expected, actual, tol)
    assert len(result.worst) == WORST_COUNT, f"keeps {WORST_COUNT} worst, got {len(result.worst)}"
    assert [w.actual for w in result.worst] == [19.0, 18.0, 17.0, 16.0, 15.0], \
        f"worst first: {[w.actual for w in result.worst]}"
    assert result.mismatches == 19 and result.max_abs_error == 19.0, \
        f"19 elements off, max error 19: {result.mismatches}, {result.max_abs_error}"
    as_dict = result.to_dict()
    assert as_dict["worst"][0] == {"index": [19], "expected": 0.0, "actual": 19.0}, \
        f"worst elements are JSON-ready: {as_dict['worst'][0]}"


def test_boolean_outputs_are_exact() -> None:
    tol = tolerance_for([op("ReLU", D.boolean)], D.boolean)
    assert not compare(np.array([True]), np.array([False]), tol).passed, \
        "booleans have no off-by-one"


def test_tie_window_widens_with_the_chain() -> None:
    near_tie = np.array([2.50005])  # 5e-5 above the tie: outside benchdnn's 9e-6 window
    expected, actual = np.array([3], np.uint8), np.array([2], np.uint8)
    short = tolerance_for([op("MatMul"), op("Quantize", D.u8)], D.u8)
    assert not compare(expected, actual, short, exact=near_tie).passed, \
        "MatMul->Quantize is nearly exact: 5e-5 from a tie is not a tie"
    long = tolerance_for([op("MatMul"), op("Tanh"), op("Tanh"), op("Quantize", D.u8)], D.u8)
    result = compare(expected, actual, long, exact=near_tie)
    assert result.passed, f"two Tanh (4e-5 each) may move a tie by 5e-5: {result.reason}"
