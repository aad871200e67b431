"""The dtype policy on the device: every store rounds and saturates exactly as the reference's
`cast_to`, loads widen exactly, and TypeCast's in-register rounding equals a store and a load.
Edge values: bf16/f16 ties (both parities), overflow, subnormals, NaN, infinities; s8/u8/s32
ties at .5, saturation and NaN -> 0."""

from __future__ import annotations

import numpy as np
import pytest
from testkit.accel import first_info, requires_device

from fusionspec.accel.codegen.source import Preamble
from fusionspec.accel.codegen.types import HOST, TypePolicy, c_float, from_host, to_host
from fusionspec.accel.runtime import runtime_for
from fusionspec.reference.dtypes import cast_to, numpy_dtype
from fusionspec.spec.dtypes import DataType
from fusionspec.spec.types import Array

pytestmark = [requires_device, pytest.mark.filterwarnings("ignore::RuntimeWarning")]


def _f32_bits(bits: list[int]) -> Array:
    return np.array(bits, dtype=np.uint32).view(np.float32)


#: bf16 ties: 0x3f808000 is 1 + 2^-8 exactly between two bf16 values (even below), 0x3f818000
#: the next tie (even above); +-1 ulp around them; the largest values below and at the
#: rounding to inf; subnormals; NaN with payloads.
BF16_EDGES = _f32_bits([0x3F808000, 0x3F818000, 0x3F807FFF, 0x3F808001, 0x3F818001,
                        0x7F7F7FFF, 0x7F7F8000, 0x7F7FFFFF, 0x00000001, 0x00008000,
                        0x00018000, 0x80008000, 0x7FC00000, 0xFFC00001, 0x7F800001,
                        0x7F800000, 0xFF800000, 0x00000000, 0x80000000])
#: f16 ties (1 + 2^-11, 1 + 3*2^-11), the overflow boundary (65520 rounds to inf), subnormal
#: f16 ties (2^-25 rounds to 0, 3*2^-25 to 2^-24*2), values far below f16's range.
F16_EDGES = np.array([1 + 2.0 ** -11, 1 + 3 * 2.0 ** -11, 65504.0, 65519.99, 65520.0, 70000.0,
                      -65520.0, 2.0 ** -25, 3 * 2.0 ** -25, 2.0 ** -24, 1e-10, -1e-10,
                      6.1e-5, np.nan, np.inf, -np.inf, 0.0, -0.0, 0.1, 1e8], dtype=np.float32)
INT_EDGES = np.array([0.5, 1.5, 2.5, -0.5, -1.5, -2.5, 126.5, 127.5, 128.0, -127.5, -128.5,
                      -129.0, 254.5, 255.5, 256.0, 1e10, -1e10, np.nan, np.inf, -np.inf, 0.0,
                      -0.0, 0.49999997, 2147483520.0, 2147483648.0, -2147483648.0,
                      -2147483904.0, 3.7, -3.7], dtype=np.float32)
EDGES = np.concatenate([BF16_EDGES, F16_EDGES, INT_EDGES])


def _run(body: str, params: str, policy: TypePolicy, preamble: Preamble,
         arrays: dict[str, Array], out_name: str, out: Array) -> Array:
    """Run a one-work-item-per-element kernel and return the buffer `out_name`."""
    import pyopencl as cl

    runtime = runtime_for(first_info())
    source = (f"{preamble.render()}\n__kernel void k({params}) {{\n"
              f"    const int i = get_global_id(0);\n    {body}\n}}\n")
    kernel = runtime.kernel(runtime.program(source), "k")
    ctx, queue = runtime.context, runtime.queue
    flags = cl.mem_flags.READ_WRITE | cl.mem_flags.COPY_HOST_PTR
    buffers = {name: cl.Buffer(ctx, flags, hostbuf=a) for name, a in arrays.items()}
    buffers[out_name] = cl.Buffer(ctx, flags, hostbuf=out)
    kernel(queue, (out.size,), None, *buffers.values())
    cl.enqueue_copy(queue, out, buffers[out_name])
    queue.finish()
    return out


def _store(dtype: DataType, values: Array, kind: str = "float") -> Array:
    policy = TypePolicy(native_fp16=first_info().fp16)
    preamble = Preamble(policy)
    preamble.uses(dtype)
    ctype = "float" if kind == "float" else "long"
    statement, helpers = policy.store(dtype, "dst", "i", "x", kind)  # type: ignore[arg-type]
    preamble.need(helpers)
    src_type = "float" if kind == "float" else "long"
    body = f"const {ctype} x = src[i];\n    {statement}"
    out = np.zeros(values.size, dtype=HOST[dtype])
    raw = _run(body, f"__global const {src_type}* src, __global {policy.storage(dtype)}* dst",
               policy, preamble, {"src": values}, "dst", out)
    return from_host(raw, dtype)


def _same(got: Array, want: Array) -> bool:
    """Bitwise equal, any NaN matching any NaN."""
    g, w = got.astype(np.float64), want.astype(np.float64)
    return bool(np.all((g == w) | (np.isnan(g) & np.isnan(w))) and
                np.all(np.signbit(g[g == 0]) == np.signbit(w[g == 0])))


@pytest.mark.parametrize("dtype", [DataType.bf16, DataType.f16, DataType.s8, DataType.u8,
                                   DataType.s32, DataType.boolean, DataType.f32])
def test_store_rounds_like_cast_to(dtype: DataType) -> None:
    got = _store(dtype, EDGES)
    want = cast_to(EDGES, dtype)
    bad = [(float(x), got[i], want[i]) for i, x in enumerate(EDGES) if not _same(got[i:i + 1],
                                                                                 want[i:i + 1])]
    assert not bad, f"f32 -> {dtype} store differs from cast_to at (value, got, want): {bad}"


@pytest.mark.parametrize("dtype", [DataType.s8, DataType.u8, DataType.s32])
def test_store_from_integer_register_saturates(dtype: DataType) -> None:
    values = np.array([-(2 ** 40), -129, -128, -1, 0, 1, 127, 128, 255, 256, 2 ** 31,
                       2 ** 40], dtype=np.int64)
    got = _store(dtype, values, kind="int")
    want = cast_to(values, dtype)
    assert np.array_equal(got, want), f"int -> {dtype}: got {got}, cast_to gives {want}"


@pytest.mark.parametrize("dtype", [DataType.bf16, DataType.f16, DataType.s8, DataType.u8,
                                   DataType.s32])
def test_load_widens_exactly(dtype: DataType) -> None:
    policy = TypePolicy(native_fp16=first_info().fp16)
    preamble = Preamble(policy)
    preamble.uses(dtype)
    stored = cast_to(EDGES, dtype)
    expr, helpers = policy.load(dtype, "src", "i")
    preamble.need(helpers)
    value = policy.as_float(expr, policy.kind(dtype))
    out = np.zeros(stored.size, dtype=np.float32)
    got = _run(f"dst[i] = {value};", f"__global const {policy.storage(dtype)}* src, "
               "__global float* dst", policy, preamble, {"src": to_host(stored, dtype)},
               "dst", out)
    want = stored.astype(np.float32)
    assert _same(got, want), f"{dtype} -> f32 load is not exact: got {got}, want {want}"


@pytest.mark.parametrize("dtype", [DataType.bf16, DataType.f16])
def test_round_to_matches_a_store_and_load(dtype: DataType) -> None:
    """TypeCast inside a partition: round to bf16/f16 in a register, nearest even."""
    policy = TypePolicy(native_fp16=first_info().fp16)
    preamble = Preamble(policy)
    expr, helpers = policy.round_to(dtype, "src[i]")
    preamble.need(helpers)
    out = np.zeros(EDGES.size, dtype=np.float32)
    got = _run(f"dst[i] = {expr};", "__global const float* src, __global float* dst", policy,
               preamble, {"src": EDGES}, "dst", out)
    want = cast_to(EDGES, dtype).astype(np.float32)
    assert _same(got, want), f"round to {dtype}: got {got}, want {want}"


def test_native_and_emulated_f16_sources() -> None:
    """Both f16 paths generate the documented conversions (only one can run on a device)."""
    native, emulated = TypePolicy(native_fp16=True), TypePolicy(native_fp16=False)
    assert native.load(DataType.f16, "p", "i")[0] == "convert_float(p[i])", "native f16 load"
    assert emulated.load(DataType.f16, "p", "i")[0] == "vload_half(i, p)", "emulated f16 load"
    assert "convert_half_rte" in native.store(DataType.f16, "p", "i", "x", "float")[0], \
        "native f16 store rounds to nearest even"
    assert "vstore_half_rte" in emulated.store(DataType.f16, "p", "i", "x", "float")[0], \
        "emulated f16 store rounds to nearest even"
    assert native.pragmas({DataType.f16}) == ["#pragma OPENCL EXTENSION cl_khr_fp16 : enable"], \
        "native f16 enables cl_khr_fp16"
    assert emulated.pragmas({DataType.f16}) == [], "vload_half needs no extension"


def test_float_literals_are_exact() -> None:
    for value in (0.1, -0.7, 1e-45, 3.4e38, 88.72283172607421875, -0.0, 2.0 ** -149):
        text = c_float(value).strip("()")
        parsed = float.fromhex(text.rstrip("f"))
        assert parsed == float(np.float32(value)) and \
            np.signbit(parsed) == np.signbit(np.float32(value)), \
            f"literal {text} does not denote f32({value!r})"
    assert (c_float(float("nan")), c_float(float("inf")), c_float(float("-inf"))) == \
        ("NAN", "INFINITY", "(-INFINITY)"), "non-finite literals use the OpenCL macros"


def test_host_round_trip_keeps_bits() -> None:
    values = cast_to(EDGES, DataType.bf16)
    up = to_host(values, DataType.bf16)
    assert up.dtype == np.uint16, "bf16 travels as its 16-bit pattern"
    back = from_host(up, DataType.bf16)
    assert back.dtype == numpy_dtype(DataType.bf16) and \
        np.array_equal(back.view(np.uint16), values.view(np.uint16)), "bf16 bits survive"
    flags = np.array([True, False, True])
    assert np.array_equal(from_host(to_host(flags, DataType.boolean), DataType.boolean),
                          flags), "booleans survive as bytes"
