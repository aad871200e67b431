"""Reductions against PyTorch float64 for random shapes, axes (negative included) and keep_dims;
empty axes, the axes input form, and bad axes."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from testkit.reference import D, assert_ulp, f32, need_torch, op_fn, run_one, same_bits

from fusionspec.reference.errors import OpInputError

KINDS = ("ReduceL1", "ReduceL2", "ReduceMax", "ReduceMean", "ReduceMin", "ReduceProd",
         "ReduceSum")


def _torch_reduce(kind: str, t: Any, axes: tuple[int, ...], keep: bool) -> Any:
    torch = need_torch()
    if kind == "ReduceProd":
        out = t
        for a in sorted((a % t.dim() for a in axes), reverse=True):
            out = torch.prod(out, dim=a, keepdim=keep)
        return out
    table = {
        "ReduceL1": lambda: torch.linalg.vector_norm(t, ord=1, dim=axes, keepdim=keep),
        "ReduceL2": lambda: torch.linalg.vector_norm(t, ord=2, dim=axes, keepdim=keep),
        "ReduceMax": lambda: torch.amax(t, dim=axes, keepdim=keep),
        "ReduceMin": lambda: torch.amin(t, dim=axes, keepdim=keep),
        "ReduceMean": lambda: torch.mean(t, dim=axes, keepdim=keep),
        "ReduceSum": lambda: torch.sum(t, dim=axes, keepdim=keep),
    }
    return table[kind]()


@st.composite
def _case(draw: st.DrawFn) -> tuple[tuple[int, ...], tuple[int, ...], bool, int]:
    shape = tuple(draw(st.lists(st.integers(1, 5), min_size=1, max_size=4)))
    chosen = draw(st.lists(st.integers(0, len(shape) - 1), min_size=1, unique=True))
    axes = tuple(a - len(shape) if draw(st.booleans()) else a for a in chosen)
    return shape, axes, draw(st.booleans()), draw(st.integers(0, 2**32 - 1))


@pytest.mark.parametrize("kind", KINDS)
@settings(max_examples=30)
@given(case=_case())
def test_reduction_matches_torch_float64(kind: str, case: Any) -> None:
    torch = need_torch()
    shape, axes, keep, seed = case
    rng = np.random.default_rng(seed)
    x = f32(rng.uniform(0.5, 1.5, size=shape) * rng.choice([-1, 1], size=shape))
    got = op_fn(kind)(x, axes=axes, keep_dims=keep)
    want = _torch_reduce(kind, torch.from_numpy(x.astype(np.float64)), axes, keep).numpy()
    assert got.dtype == np.float32, f"{kind} returned {got.dtype}"
    # float64 accumulation rounded once: only summation-order noise beyond half an ulp.
    assert_ulp(got, want, 0.51, f"{kind} axes={axes} keep_dims={keep} shape={shape}")


def test_l2_of_3_4_0_is_5_and_l1_sums_magnitudes() -> None:
    assert same_bits(op_fn("ReduceL2")(f32([3.0, 4.0, 0.0]), axes=(0,)), f32(5.0)), "L2"
    assert same_bits(op_fn("ReduceL1")(f32([3.0, -4.0, 0.5]), axes=(-1,)), f32(7.5)), "L1"


def test_empty_axes_reduce_over_nothing() -> None:
    x = f32([[1.0, -2.0], [3.5, -0.25]])
    for kind in ("ReduceSum", "ReduceMean", "ReduceMax", "ReduceMin", "ReduceProd"):
        got = op_fn(kind)(x, axes=())
        assert same_bits(got, x), f"{kind} with empty axes is the identity, got {got}"
    for kind in ("ReduceL1", "ReduceL2"):
        got = op_fn(kind)(x, axes=())
        assert same_bits(got, np.abs(x)), f"{kind} with empty axes is |x|, got {got}"


def test_axes_input_form_equals_the_attribute_form() -> None:
    x = f32(np.arange(24).reshape(2, 3, 4))
    by_input = op_fn("ReduceSum")(x, np.array([2, 0], dtype=np.int32), keep_dims=True)
    by_attr = op_fn("ReduceSum")(x, axes=(0, -1), keep_dims=True)
    assert same_bits(by_input, by_attr), "the s32 axes input reduces like the attribute"
    with pytest.raises(OpInputError, match="exactly one"):
        op_fn("ReduceSum")(x, np.array([0], dtype=np.int32), axes=(1,))


def test_bad_axes_raise_typed_errors() -> None:
    x = f32(np.zeros((2, 3)))
    with pytest.raises(OpInputError, match="out of range"):
        op_fn("ReduceMax")(x, axes=(2,))
    with pytest.raises(OpInputError, match="listed twice"):
        op_fn("ReduceMax")(x, axes=(1, -1))


def test_keep_dims_shape_through_executor() -> None:
    x = f32(np.ones((2, 3, 4)))
    (kept,) = run_one("ReduceMean", [x], [D.f32], axes=[1], keep_dims=True)
    (dropped,) = run_one("ReduceMean", [x], [D.f32], axes=[1, 2])
    assert kept.shape == (2, 1, 4), f"keep_dims=True keeps axis 1 as 1, got {kept.shape}"
    assert dropped.shape == (2,), f"keep_dims=False drops axes 1 and 2, got {dropped.shape}"
