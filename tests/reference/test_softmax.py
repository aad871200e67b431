"""SoftMax against PyTorch float64 (dst and the log-sum-exp stats), the default axis, negative
axes, both modes on a row of -inf, and the optional stats output through the executor."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from testkit.reference import D, assert_ulp, f32, need_torch, op_fn, run_one, same_bits

from fusionspec.reference.errors import OpInputError


@st.composite
def _case(draw: st.DrawFn) -> tuple[tuple[int, ...], int, int]:
    shape = tuple(draw(st.lists(st.integers(1, 6), min_size=1, max_size=4)))
    axis = draw(st.integers(-len(shape), len(shape) - 1))
    return shape, axis, draw(st.integers(0, 2**32 - 1))


@settings(max_examples=40)
@given(case=_case())
def test_softmax_and_stats_match_torch_float64(case: Any) -> None:
    torch = need_torch()
    shape, axis, seed = case
    x = f32(np.random.default_rng(seed).uniform(-30, 30, size=shape))
    dst, stats = op_fn("SoftMax")(x, axis=axis)
    t = torch.from_numpy(x.astype(np.float64))
    assert_ulp(dst, torch.softmax(t, dim=axis).numpy(), 0.51, f"SoftMax axis={axis} {shape}")
    want_stats = torch.logsumexp(t, dim=axis, keepdim=True).numpy()
    assert_ulp(stats, want_stats, 0.51, f"SoftMax stats axis={axis} {shape}")


def test_default_axis_is_1_not_last() -> None:
    x = f32(np.arange(6).reshape(3, 2))
    dst, _ = op_fn("SoftMax")(x)
    assert np.allclose(dst.sum(axis=1), 1.0), f"rows (axis 1) sum to 1, got {dst.sum(axis=1)}"
    (via_graph,) = run_one("SoftMax", [f32(np.arange(24).reshape(2, 3, 4))], [D.f32])
    assert np.allclose(via_graph.sum(axis=1), 1.0), "the schema default axis=1 is filled in"


def test_row_of_minus_inf_is_nan_or_zero_by_mode() -> None:
    x = f32([[-np.inf, -np.inf, -np.inf], [0.0, -np.inf, 0.0]])
    dst, stats = op_fn("SoftMax")(x, axis=1, mode="none")
    assert np.isnan(dst[0]).all() and np.isnan(stats[0]).all(), \
        f"mode none: an all -inf row is NaN, got dst {dst[0]} stats {stats[0]}"
    assert same_bits(dst[1], f32([0.5, 0.0, 0.5])), f"-inf entries get 0, got {dst[1]}"
    dst, stats = op_fn("SoftMax")(x, axis=1, mode="inf_as_zero")
    assert same_bits(dst[0], f32([0.0, 0.0, 0.0])), f"inf_as_zero: the row is 0, got {dst[0]}"
    assert stats[0, 0] == -np.inf, f"inf_as_zero: the row's log-sum-exp is -inf, got {stats[0]}"
    assert same_bits(dst[1], f32([0.5, 0.0, 0.5])), "other rows are unaffected by the mode"


def test_large_values_do_not_overflow() -> None:
    dst, stats = op_fn("SoftMax")(f32([[1000.0, 1000.0]]), axis=-1)
    assert same_bits(dst, f32([[0.5, 0.5]])), f"max subtraction keeps exp finite, got {dst}"
    assert_ulp(stats, [[1000.0 + np.log(2.0)]], 0.5, "stats of [1000, 1000]")


def test_stats_output_is_optional_in_the_executor() -> None:
    x = f32(np.random.default_rng(0).normal(size=(2, 5)))
    (only_dst,) = run_one("SoftMax", [x], [D.f32], axis=-1)
    dst, stats = run_one("SoftMax", [x], [D.f32, D.f32], axis=-1)
    assert same_bits(only_dst, dst), "dst is the same with and without the stats output"
    assert stats.shape == (2, 1), f"stats keeps the softmax axis as 1, got {stats.shape}"


def test_axis_out_of_range_is_a_typed_error() -> None:
    with pytest.raises(OpInputError, match="out of range"):
        op_fn("SoftMax")(f32([[1.0]]), axis=2)
