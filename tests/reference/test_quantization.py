"""Quantize, Dequantize, TypeCast and Reorder: ties, saturation, zero points, per-channel
scales, f8, exact (not double-rounded) decisions near .5, and PyTorch's quantizer."""

from __future__ import annotations

import ml_dtypes
import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from testkit.reference import D, f32, need_torch, op_fn, run_one, same_bits

from fusionspec.reference.errors import OpInputError


def _q(x: list[float] | np.ndarray, dst: D, **attrs: object) -> np.ndarray:
    return np.asarray(op_fn("Quantize")(f32(x), dst_dtype=dst, **attrs))


def test_quantize_rounds_ties_to_even_and_saturates_u8() -> None:
    got = _q([0.5, 1.5, 2.5, -0.5, 300.0, -5.0, np.inf, -np.inf, np.nan], D.u8, scales=(1.0,))
    assert got.dtype == np.uint8, f"u8 Quantize returned {got.dtype}"
    assert got.tolist() == [0, 2, 2, 0, 255, 0, 255, 0, 0], \
        f"u8 Quantize gave {got.tolist()} (ties to even, saturate, NaN -> 0)"


def test_quantize_s8_ties_and_saturation() -> None:
    got = _q([-1.5, -2.5, 300.0, -300.0, 127.5, -128.5], D.s8, scales=(1.0,))
    assert got.dtype == np.int8, f"s8 Quantize returned {got.dtype}"
    assert got.tolist() == [-2, -2, 127, -128, 127, -128], f"s8 Quantize gave {got.tolist()}"
    assert _q([7.5], D.s8, scales=(3.0,)).tolist() == [2], "7.5/3 = 2.5 rounds to 2"


def test_zero_point_is_added_before_rounding() -> None:
    got = _q([0.5, 1.5, -0.5, 1.0], D.u8, scales=(0.5,), zps=(10,))
    # 0.5/0.5 + 10 = 11; 1.5/0.5 + 10 = 13; -0.5/0.5 + 10 = 9; 1/0.5 + 10 = 12
    assert got.tolist() == [11, 13, 9, 12], f"zero point 10 with scale 0.5 gave {got.tolist()}"
    ties = _q([0.5, 0.5], D.u8, scales=(1.0,), zps=(1,))
    assert ties.tolist() == [2, 2], f"0.5 + zp 1 = 1.5 is a tie that goes to 2, got {ties}"


def test_near_tie_is_not_rounded_onto_the_tie() -> None:
    below = float(np.nextafter(np.float32(0.5), np.float32(0)))
    # below + 201 is not representable in f32 and would round to the tie 201.5 (-> 202).
    got = _q([below], D.u8, scales=(1.0,), zps=(201,))
    assert got.tolist() == [201], f"{below!r} + 201 is below 201.5, must give 201, got {got}"


def test_per_channel_scales_follow_axis() -> None:
    x = f32(np.full((2, 3), 8.0))
    got = _q(x, D.u8, qtype="per_channel", axis=1, scales=(1.0, 2.0, 4.0))
    assert got.tolist() == [[8, 4, 2]] * 2, f"per-channel along axis 1 gave {got.tolist()}"
    neg = _q(x, D.u8, qtype="per_channel", axis=-1, scales=(1.0, 2.0, 4.0))
    assert np.array_equal(neg, got), "axis -1 is the same axis as 1 for rank 2"
    rows = _q(x, D.u8, qtype="per_channel", axis=0, scales=(1.0, 8.0))
    assert rows.tolist() == [[8, 8, 8], [1, 1, 1]], f"per-channel along axis 0 gave {rows}"
    with pytest.raises(OpInputError, match="3 channels"):
        _q(x, D.u8, qtype="per_channel", axis=1, scales=(1.0, 2.0))
    with pytest.raises(OpInputError, match="per_tensor takes 1 scale"):
        _q(x, D.u8, scales=(1.0, 2.0))


def test_dequantize_has_no_rounding() -> None:
    got = op_fn("Dequantize")(np.array([0, 3, 4, 255], np.uint8), scales=(0.5,), zps=(3,))
    assert same_bits(got, f32([-1.5, 0.0, 0.5, 126.0])), f"u8 Dequantize gave {got}"
    got = op_fn("Dequantize")(np.array([1, -3], np.int8), scales=(0.3,))
    want = f32([1.0, -3.0]) * np.float32(0.3)
    assert same_bits(got, want), f"(x - 0)*0.3 in f32 is {want}, not rounded; got {got}"
    per_ch = op_fn("Dequantize")(np.array([[2, 2]], np.int8), qtype="per_channel", axis=1,
                                 scales=(0.5, 4.0), zps=(1, 0))
    assert same_bits(per_ch, f32([[0.5, 8.0]])), f"per-channel Dequantize gave {per_ch}"


def test_f8_quantize_rounds_to_nearest_even_and_dequantize_reads_f8() -> None:
    got = _q([0.3, 1.0625, 1.0625 + 2**-20, 448.0], D.f8_e4m3, scales=(1.0,))
    assert got.dtype == np.float32, "f8 Quantize results travel as float32 between ops"
    assert got.tolist() == [0.3125, 1.0, 1.125, 448.0], \
        f"e4m3 rounding of [0.3, tie 1.0625, above tie, max] gave {got.tolist()}"
    (out,) = run_one("Quantize", [f32([0.3, -2.5])], [D.f8_e5m2], scales=[0.5])
    assert out.dtype == np.dtype(ml_dtypes.float8_e5m2), f"f8 output stored as {out.dtype}"
    assert out.astype(np.float32).tolist() == [0.625, -5.0], f"e5m2 Quantize gave {out}"
    src = np.array([0.3125, -5.0], np.float32).astype(ml_dtypes.float8_e4m3fn)
    (deq,) = run_one("Dequantize", [src], [D.f32], scales=[2.0])
    assert same_bits(deq, f32([0.625, -10.0])), f"f8 Dequantize gave {deq}"


def test_quantize_dequantize_inside_one_graph_round_trips_exactly() -> None:
    x = f32([-1.0, 0.0, 0.25, 3.0])
    (q,) = run_one("Quantize", [x], [D.s8], scales=[0.25], zps=[2])
    assert q.tolist() == [-2, 2, 3, 14], f"Quantize scale 0.25 zp 2 gave {q.tolist()}"
    (back,) = run_one("Dequantize", [q], [D.f32], scales=[0.25], zps=[2])
    assert same_bits(back, x), f"Dequantize(Quantize(x)) gave {back}, expected {x}"


@pytest.mark.filterwarnings("ignore:torch.quantize_per_tensor:UserWarning")
@settings(max_examples=30)
@given(seed=st.integers(0, 2**32 - 1), exponent=st.integers(-4, 3), zp=st.integers(0, 40),
       signed=st.booleans())
def test_quantize_matches_torch_quantize_per_tensor(seed: int, exponent: int, zp: int,
                                                     signed: bool) -> None:
    torch = need_torch()
    rng = np.random.default_rng(seed)
    scale = 2.0**exponent  # a power of two: torch's x*(1/scale) is then exact, like x/scale
    # Ties included on purpose: torch rounds half to even as well.
    x = f32(rng.integers(-600, 600, size=64) / 4.0 * scale)
    dst, tdtype = (D.s8, torch.qint8) if signed else (D.u8, torch.quint8)
    zp = zp - 20 if signed else zp
    got = _q(x, dst, scales=(scale,), zps=(zp,))
    want = torch.quantize_per_tensor(torch.from_numpy(x), scale, zp, tdtype).int_repr()
    assert np.array_equal(got, want.numpy()), \
        f"Quantize {dst} scale {scale} zp {zp} differs from torch.quantize_per_tensor"


def test_typecast_rounds_to_nearest_even() -> None:
    tie_down = 1.0 + 2**-8  # halfway between bf16 1.0 and 1.0078125: even is 1.0
    tie_up = 1.0 + 3 * 2**-8  # halfway between 1.0078125 and 1.015625: even is 1.015625
    above = 1.0 + 2**-8 + 2**-20
    x = f32([tie_down, tie_up, above])
    (got,) = run_one("TypeCast", [x], [D.bf16])
    assert got.dtype == np.dtype(ml_dtypes.bfloat16), f"TypeCast output is {got.dtype}"
    assert got.astype(np.float32).tolist() == [1.0, 1.015625, 1.0078125], \
        f"bf16 RNE of ties and a near-tie gave {got.astype(np.float32).tolist()}"
    (half,) = run_one("TypeCast", [f32([1.0 + 2**-11, 70000.0])], [D.f16])
    assert half.tolist() == [1.0, np.inf], f"f16 RNE tie and overflow gave {half.tolist()}"
    (back,) = run_one("TypeCast", [got], [D.f32])
    assert same_bits(back, got.astype(np.float32)), "bf16 -> f32 is exact"
    inside = op_fn("TypeCast")(x, dst_dtype=D.bf16)
    assert inside.dtype == np.float32 and inside.tolist() == [1.0, 1.015625, 1.0078125], \
        "TypeCast's function already rounds (it is a cast point inside a partition too)"


def test_reorder_is_the_identity() -> None:
    x = f32([[1.5, -0.0], [np.nan, 3.0]])
    got = op_fn("Reorder")(x)
    assert same_bits(got, x) and got is not x, "Reorder copies its input unchanged"
