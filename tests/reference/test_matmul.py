"""MatMul against PyTorch (float64 oracle): 1-D operands, batch broadcasting, transposes
(ignored below rank 2), bias broadcasting; the worked examples of docs/semantics.md; exact sums of
integer data past float32's 2^24; typed errors on contradicting shapes."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from testkit.reference import D, assert_dot_bound, call, f32, need_torch, op_fn, run_one

from fusionspec.reference.errors import OpInputError
from fusionspec.spec.types import Array


@st.composite
def matmul_cases(draw: st.DrawFn) -> dict[str, Any]:
    m, k, n = (draw(st.integers(1, 7)) for _ in range(3))
    rank_a, rank_b = draw(st.integers(1, 4)), draw(st.integers(1, 4))
    batch = [draw(st.integers(1, 3)) for _ in range(max(rank_a, rank_b) - 2)]

    def batch_of(rank: int) -> list[int]:
        own = batch[len(batch) - (rank - 2):] if rank > 2 else []
        return [1 if draw(st.booleans()) else d for d in own]  # 1s broadcast

    ta, tb = draw(st.booleans()), draw(st.booleans())
    a = [k] if rank_a == 1 else [*batch_of(rank_a), *((k, m) if ta else (m, k))]
    b = [k] if rank_b == 1 else [*batch_of(rank_b), *((n, k) if tb else (k, n))]
    return dict(a=a, b=b, ta=ta, tb=tb, bias=draw(st.sampled_from(
        ["none", "n", "1n", "full", "scalar", "m1"])), seed=draw(st.integers(0, 2**31 - 1)))


def torch_matmul(torch: Any, a: Array, b: Array, ta: bool, tb: bool) -> Array:
    at, bt = torch.from_numpy(a).double(), torch.from_numpy(b).double()
    if ta and at.dim() >= 2:
        at = at.transpose(-1, -2)
    if tb and bt.dim() >= 2:
        bt = bt.transpose(-1, -2)
    return np.asarray(torch.matmul(at, bt).numpy())


def bias_shape(kind: str, dst: tuple[int, ...]) -> tuple[int, ...] | None:
    if kind == "none" or (kind in ("1n", "m1") and len(dst) < 2) or not dst:
        return None
    if kind == "m1":
        return (dst[-2], 1)
    return {"n": dst[-1:], "1n": (1, dst[-1]), "full": dst, "scalar": (1,)}[kind]


@settings(max_examples=50)
@given(matmul_cases())
def test_matmul_matches_torch(c: dict[str, Any]) -> None:
    torch = need_torch()
    rng = np.random.default_rng(c["seed"])
    a = rng.standard_normal(c["a"]).astype(np.float32)
    b = rng.standard_normal(c["b"]).astype(np.float32)
    want = torch_matmul(torch, a, b, c["ta"], c["tb"])
    scale = torch_matmul(torch, np.abs(a), np.abs(b), c["ta"], c["tb"])
    shape = bias_shape(c["bias"], want.shape)
    args = [a, b]
    if shape is not None:
        bias = rng.standard_normal(shape).astype(np.float32)
        want, scale = want + bias, scale + np.abs(bias)
        args.append(bias)
    got = call("MatMul", *args, transpose_a=c["ta"], transpose_b=c["tb"])
    k = c["a"][-2] if c["ta"] and len(c["a"]) >= 2 else c["a"][-1]
    assert_dot_bound(got, np.asarray(want), np.asarray(scale), k, f"MatMul {c}")


def test_vector_times_matrix_drops_the_row() -> None:
    # docs/semantics.md, MatMul: [3] x [3, 2] gives [2].
    got = call("MatMul", f32([1, 2, 3]), f32([[1, 10], [100, 1000], [1e4, 1e5]]))
    assert got.tolist() == [30201, 302010], f"[3] x [3,2] gave {got.tolist()}"


def test_matrix_times_vector_and_vector_dot() -> None:
    mv = call("MatMul", f32([[1, 2], [3, 4], [5, 6]]), f32([10, 100]))
    vv = call("MatMul", f32([1, 2]), f32([10, 100]))
    assert mv.tolist() == [210, 430, 650], f"[3,2] x [2] gave {mv.tolist()}"
    assert vv.shape == () and float(vv) == 210, f"[2] x [2] gave {vv!r}, expected scalar 210"


def test_bias_broadcasts_over_rows() -> None:
    # docs/semantics.md, MatMul: [2,3] x [3,2] + [100, 200].
    got = call("MatMul", f32([[1, 2, 3], [4, 5, 6]]), f32([[1, 0], [0, 1], [1, 1]]),
               f32([100, 200]))
    assert got.tolist() == [[104, 205], [110, 211]], f"MatMul + bias gave {got.tolist()}"


def test_transpose_is_ignored_for_1d_operands() -> None:
    got = call("MatMul", f32([1, 2]), f32([[1, 2], [3, 4]]), transpose_a=True)
    assert got.tolist() == [7, 10], f"transpose_a on a 1-D src gave {got.tolist()}"


def test_batch_broadcasts_both_ways() -> None:
    a = np.arange(6, dtype=np.float32).reshape(2, 1, 1, 3)
    b = np.arange(9, dtype=np.float32).reshape(3, 3, 1)
    got = call("MatMul", a, b)
    want = np.matmul(a.astype(np.float64), b.astype(np.float64))
    assert got.shape == (2, 3, 1, 1), f"[2,1,1,3] x [3,3,1] has shape {got.shape}"
    assert np.array_equal(got, want), "integer batch-broadcast product is not exact"


def test_integer_data_is_exact_beyond_f32_running_sums() -> None:
    # 2000 products of 255 * 127 sum to 64.77M, past 2^24: a plain float32 running sum rounds.
    a = np.full((1, 2000), 255, dtype=np.float32)
    b = np.full((2000, 2), 127, dtype=np.float32)
    b[1::2, 1] = -128
    got = call("MatMul", a, b)
    exact = [2000 * 255 * 127, 1000 * 255 * 127 - 1000 * 255 * 128]
    assert got.reshape(-1).tolist() == [float(np.float32(v)) for v in exact], (
        f"integer MatMul gave {got.reshape(-1).tolist()}, exact sums are {exact}")


def test_inner_dim_mismatch_is_a_typed_error() -> None:
    with pytest.raises(OpInputError, match="inner dims"):
        op_fn("MatMul")(f32([[1, 2, 3]]), f32([[1, 2]]))


def test_bias_that_grows_dst_is_a_typed_error() -> None:
    with pytest.raises(OpInputError, match="bias"):
        op_fn("MatMul")(f32([[1, 2]]), f32([[1], [2]]), f32([1, 2, 3]))


def test_runs_through_the_executor() -> None:
    (got,) = run_one("MatMul", [f32([[1, 2], [3, 4]]), f32([[1, 0], [0, 1]])], [D.f32],
                     transpose_b=True)
    assert got.tolist() == [[1, 2], [3, 4]], f"executor MatMul gave {got.tolist()}"
