"""Binary ops and BiasAdd: PyTorch float32 on random broadcast shapes (single IEEE operations,
so the results must be bit-identical), broadcasting rules, s32 saturation, mixed f32/bf16
inputs and IEEE specials."""

from __future__ import annotations

from typing import Any

import ml_dtypes
import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from hypothesis.extra import numpy as hnp
from testkit.reference import D, f32, need_torch, op_fn, run_one, same_bits

from fusionspec.reference.errors import OpInputError

KINDS = ("Add", "Subtract", "Multiply", "Divide", "Maximum", "Minimum")


@pytest.mark.parametrize("kind", KINDS)
@settings(max_examples=25)
@given(shapes=hnp.mutually_broadcastable_shapes(num_shapes=2, min_dims=0, max_dims=4,
                                                 max_side=5),
       seed=st.integers(0, 2**32 - 1))
def test_binary_matches_torch_float32_bit_for_bit(kind: str, shapes: Any, seed: int) -> None:
    torch = need_torch()
    rng = np.random.default_rng(seed)
    a = f32(rng.uniform(-100, 100, size=shapes.input_shapes[0]))
    b = f32(rng.uniform(-100, 100, size=shapes.input_shapes[1]))
    got = op_fn(kind)(a, b)
    fn = {"Add": torch.add, "Subtract": torch.sub, "Multiply": torch.mul, "Divide": torch.div,
          "Maximum": torch.maximum, "Minimum": torch.minimum}[kind]
    want = fn(torch.from_numpy(a), torch.from_numpy(b)).numpy()
    assert got.shape == shapes.result_shape, \
        f"{kind} shape {got.shape}, numpy broadcasting gives {shapes.result_shape}"
    assert same_bits(got, want), f"{kind} differs from torch float32 for {a!r} and {b!r}"


def test_two_way_broadcasting_and_rank_extension() -> None:
    got = op_fn("Subtract")(f32([[1.0], [2.0]]), f32([[10.0, 20.0, 30.0]]))
    want = f32([[-9.0, -19.0, -29.0], [-8.0, -18.0, -28.0]])
    assert same_bits(got, want), f"[2,1] - [1,3] gave {got}"
    got = op_fn("Divide")(f32([6.0]), f32([[1.0, 2.0, 3.0], [6.0, 12.0, 24.0]]))
    assert got.shape == (2, 3), f"[1] / [2,3] has shape {got.shape}, expected (2, 3)"


@pytest.mark.parametrize("kind", KINDS)
def test_auto_broadcast_none_requires_equal_shapes(kind: str) -> None:
    same = op_fn(kind)(f32([[1.0, 2.0]]), f32([[3.0, 4.0]]), auto_broadcast="none")
    assert same.shape == (1, 2), f"{kind} with equal shapes under 'none' gave {same.shape}"
    with pytest.raises(OpInputError, match="auto_broadcast is 'none'"):
        op_fn(kind)(f32([[1.0, 2.0]]), f32([1.0]), auto_broadcast="none")


def test_incompatible_shapes_raise_a_typed_error() -> None:
    with pytest.raises(OpInputError, match="do not broadcast"):
        op_fn("Add")(f32(np.zeros((2, 3))), f32(np.zeros((4,))))


def test_s32_add_and_subtract_saturate() -> None:
    big = np.array([2**31 - 1, -(2**31), 5], dtype=np.int32)
    one = np.array([1, 1, -7], dtype=np.int32)
    got = op_fn("Add")(big, one)
    assert got.dtype == np.int32, f"s32 Add returned {got.dtype}"
    assert got.tolist() == [2**31 - 1, -(2**31) + 1, -2], f"s32 Add saturates, got {got}"
    got = op_fn("Subtract")(big, one)
    assert got.tolist() == [2**31 - 2, -(2**31), 12], f"s32 Subtract saturates, got {got}"


def test_mixed_f32_and_bf16_inputs_give_f32_without_rounding_to_bf16() -> None:
    a = f32([1.0 + 2**-20, 3.0])
    b = f32([0.5, 0.25]).astype(ml_dtypes.bfloat16)
    (got,) = run_one("Add", [a, b], [D.f32])
    want = a + b.astype(np.float32)
    assert got.dtype == np.float32 and same_bits(got, want), \
        f"f32 + bf16 -> f32 should be the exact f32 sum {want}, got {got}"


def test_ieee_specials() -> None:
    got = op_fn("Divide")(f32([1.0, -1.0, 0.0]), f32([0.0, 0.0, 0.0]))
    assert same_bits(got, f32([np.inf, -np.inf, np.nan])), f"x/0 gave {got}"
    for kind in ("Maximum", "Minimum"):
        got = op_fn(kind)(f32([np.nan, 1.0]), f32([1.0, np.nan]))
        assert np.isnan(got).all(), f"{kind} propagates NaN from either side, got {got}"


def test_bias_add_uses_the_channel_axis_of_data_format() -> None:
    src = f32(np.arange(12).reshape(2, 3, 2))
    nxc = op_fn("BiasAdd")(src, f32([100.0, 200.0]), data_format="NXC")
    assert same_bits(nxc, src + f32([100.0, 200.0]).reshape(1, 1, 2)), \
        "NXC BiasAdd adds along the last axis"
    ncx = op_fn("BiasAdd")(src, f32([1.0, 2.0, 3.0]), data_format="NCX")
    assert same_bits(ncx, src + f32([1.0, 2.0, 3.0]).reshape(1, 3, 1)), \
        "NCX BiasAdd adds along axis 1"
    with pytest.raises(OpInputError, match="channels"):
        op_fn("BiasAdd")(src, f32([1.0, 2.0, 3.0]), data_format="NXC")
    with pytest.raises(OpInputError, match="rank >= 2"):
        op_fn("BiasAdd")(f32([1.0]), f32([1.0]))


def test_bias_add_matches_torch_conv_bias_layout() -> None:
    torch = need_torch()
    rng = np.random.default_rng(7)
    src = f32(rng.normal(size=(2, 4, 3, 3)))
    bias = f32(rng.normal(size=4))
    want = (torch.from_numpy(src) + torch.from_numpy(bias)[None, :, None, None]).numpy()
    assert same_bits(op_fn("BiasAdd")(src, bias, data_format="NCX"), want), \
        "NCX BiasAdd equals torch's per-channel bias broadcast"
