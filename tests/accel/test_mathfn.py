"""The arithmetic transcendental helpers (`fusionspec.accel.codegen.mathfn`) on the test device
against SciPy in float64: fs_erfc over the whole f32 range and its special values, fs_exp_hl
(scalar and vector forms) on non-positive arguments, the low part of the argument honoured,
and GELU built on fs_erfc within the suite's tolerance."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest
from scipy import special
from testkit.accel import first_info, requires_device

from fusionspec.accel.codegen.types import HELPERS, helper_closure
from fusionspec.accel.runtime import runtime_for

pytestmark = [requires_device, pytest.mark.filterwarnings("ignore::RuntimeWarning")]

_KERNELS = """
__kernel void t_erfc(__global const float* x, __global float* y) {
    const int i = get_global_id(0); y[i] = fs_erfc(x[i]); }
__kernel void t_exp(__global const float* x, __global const float* lo, __global float* y) {
    const int i = get_global_id(0); y[i] = fs_exp_hl(x[i], lo[i]); }
__kernel void t_exp8(__global const float* x, __global const float* lo, __global float* y) {
    const int i = get_global_id(0);
    const float8 v = (float8)(x[8*i], x[8*i+1], x[8*i+2], x[8*i+3], x[8*i+4], x[8*i+5],
                              x[8*i+6], x[8*i+7]);
    const float8 l = (float8)(lo[8*i], lo[8*i+1], lo[8*i+2], lo[8*i+3], lo[8*i+4], lo[8*i+5],
                              lo[8*i+6], lo[8*i+7]);
    const float8 e = fs_exp_hl8(v, l);
    y[8*i] = e.s0; y[8*i+1] = e.s1; y[8*i+2] = e.s2; y[8*i+3] = e.s3;
    y[8*i+4] = e.s4; y[8*i+5] = e.s5; y[8*i+6] = e.s6; y[8*i+7] = e.s7; }
"""


def _run(kernel: str, per_item: int, *arrays: Any) -> Any:
    import pyopencl as cl

    runtime = runtime_for(first_info())
    source = "\n\n".join(HELPERS[n] for n in helper_closure({"fs_erfc", "fs_exp_hl8"}))
    program = runtime.program(source + _KERNELS, kernels=["t_erfc", "t_exp", "t_exp8"])
    flags = cl.mem_flags
    ins = [cl.Buffer(runtime.context, flags.READ_ONLY | flags.COPY_HOST_PTR, hostbuf=a)
           for a in arrays]
    out = np.empty_like(arrays[0])
    dst = cl.Buffer(runtime.context, flags.WRITE_ONLY, size=out.nbytes)
    k = runtime.kernel(program, kernel)
    k.set_args(*ins, dst)
    cl.enqueue_nd_range_kernel(runtime.queue, k, (out.size // per_item,), None)
    cl.enqueue_copy(runtime.queue, out, dst)
    runtime.queue.finish()
    return out


def _rel(got: Any, want: Any) -> float:
    normal = np.isfinite(want) & (np.abs(want) >= np.finfo(np.float32).tiny)
    return float(np.max(np.abs(got[normal] - want[normal]) / np.abs(want[normal])))


def test_erfc_over_the_f32_range_and_special_values() -> None:
    x = np.concatenate([np.linspace(-12, 12, 400_001), np.linspace(-1, 1, 100_001),
                        [np.inf, -np.inf, np.nan, 0.0, -0.0, 0.5, -0.5, 10.0546875, 10.06,
                         -1e-30, 1e-30, 3.4e38, -3.4e38]]).astype(np.float32)
    got = _run("t_erfc", 1, x).astype(np.float64)
    want = special.erfc(x.astype(np.float64))
    assert _rel(got, want) < 4e-7, f"erfc within 4e-7 relative, got {_rel(got, want):.3g}"
    assert np.max(np.abs(got - want)[~np.isnan(want)]) < 2e-7, "erfc absolute error"
    assert np.array_equal(np.isnan(got), np.isnan(want)), "NaN exactly where erfc(NaN)"
    ends = x.size - 13
    assert list(got[ends:ends + 2]) == [0.0, 2.0], f"erfc(inf) = 0, erfc(-inf) = 2: {got[ends:]}"


@pytest.mark.parametrize("form", ["t_exp", "t_exp8"])
def test_exp_of_a_split_argument(form: str) -> None:
    rng = np.random.default_rng(0)
    hi = np.concatenate([-rng.uniform(0, 104, 200_000), -rng.uniform(0, 1, 50_000),
                         [0.0, -0.0, -np.inf, np.nan, -103.9, -104.0, -104.5, -200.0,
                          -87.3]]).astype(np.float32)
    hi = np.concatenate([hi, np.zeros(-hi.size % 8, np.float32)])
    lo = (rng.uniform(-0.5, 0.5, hi.size) * np.spacing(np.abs(hi))).astype(np.float32)
    lo[~np.isfinite(hi)] = 0.0
    got = _run(form, 8 if form == "t_exp8" else 1, hi, lo).astype(np.float64)
    want = np.exp(hi.astype(np.float64) + lo.astype(np.float64))
    assert _rel(got, want) < 1.2e-7, \
        f"exp(hi + lo) within 1 ulp on normal results, got {_rel(got, want):.3g}"
    assert np.array_equal(np.isnan(got), np.isnan(want)), "NaN in, NaN out"
    assert np.all(got[hi < -104.0] == 0.0), "0 below exp(-104)"


def test_gelu_from_erfc_within_tolerance() -> None:
    x = np.linspace(-20, 20, 400_001).astype(np.float32)
    z = (-x * np.float32(np.sqrt(0.5))).astype(np.float32)
    got = (np.float32(0.5) * x * _run("t_erfc", 1, z)).astype(np.float64)
    want = 0.5 * x.astype(np.float64) * special.erfc(-x.astype(np.float64) / np.sqrt(2.0))
    err = np.abs(got - want)
    assert np.all(err <= 4e-5 * np.abs(want) + 4e-5), \
        "GELU within the suite's eltwise-complex tolerance (4e-5 relative and absolute)"


_ROUNDING = """
__kernel void t_rint(__global const float* x, __global float* y) {
    const int i = get_global_id(0); y[i] = fs_rint(x[i]); }
__kernel void t_trunc(__global const float* x, __global float* y) {
    const int i = get_global_id(0); y[i] = fs_trunc(x[i]); }
"""


@pytest.mark.parametrize(("kernel", "want"), [("t_rint", np.rint), ("t_trunc", np.trunc)])
def test_arithmetic_rounding_is_bit_exact(kernel: str, want: Any) -> None:
    """fs_rint and fs_trunc (the arithmetic forms Quantize rounds with) give NumPy's rint and
    trunc bit for bit: halves to even, signed zeros, whole values from 2**23 up, infinities and
    NaN, and a random sample of every f32 bit pattern."""
    import pyopencl as cl

    runtime = runtime_for(first_info())
    source = "\n\n".join(HELPERS[n] for n in helper_closure({"fs_rint", "fs_trunc"}))
    program = runtime.program(source + _ROUNDING, kernels=["t_rint", "t_trunc"])
    halves = np.arange(-40, 40, dtype=np.float32) + np.float32(0.5)
    edges = np.array([0.0, -0.0, 0.3, -0.3, 0.49999997, -0.49999997, 1.5, -2.5, 8388607.5,
                      -8388607.5, 8388608.0, 8388609.0, 16777215.0, 3.4e38, -3.4e38, 1e-45,
                      -1e-45, np.inf, -np.inf, np.nan], dtype=np.float32)
    bits = np.random.default_rng(0).integers(0, 2 ** 32, 200_000, dtype=np.uint32)
    x = np.concatenate([halves, edges, bits.view(np.float32)])
    flags = cl.mem_flags
    src = cl.Buffer(runtime.context, flags.READ_ONLY | flags.COPY_HOST_PTR, hostbuf=x)
    out = np.empty_like(x)
    dst = cl.Buffer(runtime.context, flags.WRITE_ONLY, size=out.nbytes)
    k = runtime.kernel(program, kernel)
    k.set_args(src, dst)
    cl.enqueue_nd_range_kernel(runtime.queue, k, (x.size,), None)
    cl.enqueue_copy(runtime.queue, out, dst)
    runtime.queue.finish()
    expected = want(x)
    same = (out.view(np.uint32) == expected.view(np.uint32)) | (np.isnan(out) & np.isnan(expected))
    bad = np.flatnonzero(~same)
    assert bad.size == 0, (f"{kernel} differs from numpy at {bad.size} values, e.g. "
                           f"{x[bad[:5]]} -> {out[bad[:5]]}, want {expected[bad[:5]]}")
