"""Per-channel ops (BiasAdd, BatchNormInference, per-channel Quantize/Dequantize), TypeCast and
Reorder, and tensor access: NumPy broadcasting both ways, strided flat buffers (transposed,
padded, zero strides), outputs smaller than the kernel's domain, rank-0 and empty tensors."""

from __future__ import annotations

import numpy as np
import pytest
from testkit.accel import OnDevice, requires_device

from fusionspec.accel.backend import AccelBackend
from fusionspec.reference.dtypes import cast_to
from fusionspec.spec.dtypes import DataType
from fusionspec.spec.graph import Graph, LogicalTensor, Op, Partition
from fusionspec.spec.types import Array

pytestmark = [requires_device, pytest.mark.filterwarnings("ignore::RuntimeWarning")]

F32, BF16, F16, S8, U8 = (DataType.f32, DataType.bf16, DataType.f16, DataType.s8,
                          DataType.u8)
RNG = np.random.default_rng(7)

def _values(shape: tuple[int, ...], scale: float = 4.0) -> Array:
    return np.asarray(RNG.standard_normal(shape) * scale, dtype=np.float32)


def _t(tid: int, dtype: DataType, shape: tuple[int, ...],
       strides: tuple[int, ...] | None = None) -> LogicalTensor:
    return LogicalTensor(tid, dtype, shape, strides)


@pytest.mark.parametrize("dtype", [F32, BF16])
@pytest.mark.parametrize(("data_format", "shape"), [("NXC", (2, 3, 5)), ("NCX", (2, 5, 3, 2)),
                                                    ("NXC", (4, 6))])
def test_bias_add(data_format: str, shape: tuple[int, ...], dtype: DataType) -> None:
    channels = shape[1] if data_format == "NCX" else shape[-1]
    graph = Graph([Op(0, "BiasAdd", inputs=(_t(0, dtype, shape), _t(1, dtype, (channels,))),
                      outputs=(_t(2, dtype, shape),), attrs={"data_format": data_format})])
    OnDevice(graph).check({0: cast_to(_values(shape), dtype),
                           1: cast_to(_values((channels,)), dtype)},
                          label=f"BiasAdd {data_format} {dtype}")


@pytest.mark.parametrize(("dtype", "param_dtype"), [(F32, F32), (BF16, BF16), (F16, F32)])
@pytest.mark.parametrize("data_format", ["NXC", "NCX"])
def test_batch_norm_relu(data_format: str, dtype: DataType, param_dtype: DataType) -> None:
    shape = (2, 4, 3, 5) if data_format == "NCX" else (2, 3, 5, 4)
    c = 4
    x, y, r = _t(0, dtype, shape), _t(5, dtype, shape), _t(6, dtype, shape)
    params = [_t(i, param_dtype, (c,)) for i in range(1, 5)]
    graph = Graph([Op(0, "BatchNormInference", inputs=(x, *params), outputs=(y,),
                      attrs={"epsilon": 1e-5, "data_format": data_format}),
                   Op(1, "ReLU", inputs=(y,), outputs=(r,))])
    on = OnDevice(graph)
    assert len(on.parts) == 1, "BatchNormInference + ReLU fuse (fp.bn_relu)"
    feeds = {0: cast_to(_values(shape), dtype), 1: cast_to(_values((c,)), param_dtype),
             2: cast_to(_values((c,)), param_dtype), 3: cast_to(_values((c,)), param_dtype),
             4: cast_to(np.abs(_values((c,))) + 0.5, param_dtype)}
    on.check(feeds, label=f"BN {data_format} {dtype}/{param_dtype}")


@pytest.mark.parametrize("dst", [S8, U8])
@pytest.mark.parametrize(("qtype", "axis", "scales", "zps"), [
    ("per_tensor", 1, [0.25], [3]), ("per_tensor", 1, [0.3], [-5]),
    ("per_tensor", 1, [1.0], [128]), ("per_channel", 1, [0.5, 0.1, 2.0], [0, 0, 0]),
    ("per_channel", -1, [0.7, 1.0, 0.125, 4.0], [0, 0, 0, 0]),
])
def test_dequantize_reorder_quantize(qtype: str, axis: int, scales: list[float],
                                     zps: list[int], dst: DataType) -> None:
    """int8.reorder: Dequantize + Reorder + Quantize in one kernel; ties round half to even
    and values saturate (the src values include exact .5 ties and out-of-range values)."""
    shape = (2, 3, 4)
    attrs = {"qtype": qtype, "axis": axis, "scales": scales, "zps": zps}
    q, f, g, out = _t(0, dst, shape), _t(1, F32, shape), _t(2, F32, shape), _t(3, dst, shape)
    graph = Graph([Op(0, "Dequantize", inputs=(q,), outputs=(f,), attrs=attrs),
                   Op(1, "Reorder", inputs=(f,), outputs=(g,)),
                   Op(2, "Quantize", inputs=(g,), outputs=(out,), attrs=attrs)])
    on = OnDevice(graph)
    assert [p.pattern for p in on.parts] == ["int8.reorder"], "one int8.reorder partition"
    lo, hi = (-128, 127) if dst is S8 else (0, 255)
    src = RNG.integers(lo, hi, size=shape, endpoint=True).astype(cast_to(0, dst).dtype)
    on.check({0: src}, label=f"int8.reorder {qtype} {dst}")
    # Quantize alone on f32 values with ties and saturation, in the table form (what the
    # backend runs at this size) and the specialised kernel (its arithmetic rounding and the
    # clamp that saturates an 8-bit result).
    x, y = _t(0, F32, shape), _t(1, dst, shape)
    values = np.array([0.5, 1.5, 2.5, -0.5, -1.5, 300.0, -300.0, np.nan, np.inf, -np.inf,
                       0.3, 7.5, 0.75, -0.75, 1e9, 63.5, 64.5, -64.5, 0.125, 0.375, 100.5,
                       -100.5, 127.5, 255.5], dtype=np.float32).reshape(shape)
    values = values * np.float32(scales[0])  # ties stay ties for the first scale
    for form in (None, "specialised"):
        alone = OnDevice(Graph([Op(0, "Quantize", inputs=(x,), outputs=(y,), attrs=attrs)]),
                         form=form)
        alone.check({0: values}, label=f"Quantize {qtype} {dst} [{form or 'default'}]")


@pytest.mark.parametrize("dtype", [BF16, F16])
def test_typecast_rounds_in_registers(dtype: DataType) -> None:
    """f32 -> TypeCast(dtype) -> TypeCast(f32) compiled as one kernel equals rounding to dtype:
    the intermediate never exists in memory, yet TypeCast rounds, as the reference says."""
    shape = (64,)
    x, n, y = _t(0, F32, shape), _t(1, dtype, shape), _t(2, F32, shape)
    graph = Graph([Op(0, "TypeCast", inputs=(x,), outputs=(n,)),
                   Op(1, "TypeCast", inputs=(n,), outputs=(y,))])
    on = OnDevice(graph, whole=True, form="specialised")
    assert len(on.plans_of(0)) == 1 and "global" not in on.compiled[0].kernel_source.split(
        "fs_elementwise")[1].split("{")[0].replace("__global const float", "").replace(
        "__global float", ""), "one kernel with only the f32 input and output in memory"
    values = np.concatenate([_values((60,), 1000.0), [65520.0, 1 + 2.0 ** -11, 1.00390625,
                                                      np.nan]]).astype(np.float32)
    got = on.run({0: values})[2]
    want = cast_to(values, dtype).astype(np.float32)
    assert np.array_equal(got, want, equal_nan=True), \
        f"TypeCast to {dtype} inside a kernel differs from cast_to: {got} vs {want}"


@pytest.mark.parametrize(("a_shape", "b_shape"), [
    ((3, 1, 5), (4, 1)), ((1,), (2, 3)), ((2, 3), ()), ((), ()), ((4, 1, 1), (1, 3, 2)),
    ((0, 3), (1, 3)),
])
def test_broadcasting(a_shape: tuple[int, ...], b_shape: tuple[int, ...]) -> None:
    out_shape = np.broadcast_shapes(a_shape, b_shape)
    a, b = _t(0, F32, a_shape), _t(1, BF16, b_shape)
    s, y = _t(2, F32, out_shape), _t(3, F32, out_shape)
    graph = Graph([Op(0, "Subtract", inputs=(a, b), outputs=(s,)),
                   Op(1, "Tanh", inputs=(s,), outputs=(y,))])
    on = OnDevice(graph)
    got = on.run({0: _values(a_shape), 1: cast_to(_values(b_shape), BF16)})[3]
    assert got.shape == out_shape, f"output shape {got.shape}, want {out_shape}"
    on.check({0: _values(a_shape), 1: cast_to(_values(b_shape), BF16)},
             label=f"{a_shape} - {b_shape}")


@pytest.mark.parametrize(("shape", "strides", "length"), [
    ((3, 4), (1, 3), 12),        # column-major
    ((3, 4), (8, 1), 24),        # padded rows
    ((3, 4), (0, 1), 4),         # every row the same memory
    ((2, 3, 2), (1, 0, 2), 4),   # a zero stride inside
    ((4,), (3,), 10),            # every third element
])
def test_strided_flat_buffers(shape: tuple[int, ...], strides: tuple[int, ...],
                              length: int) -> None:
    """A flat buffer of a tensor with logical strides is uploaded as is and read through the
    strides by the kernel; the same kernel takes an array of the tensor's shape."""
    x, r = _t(0, F32, shape, strides), _t(1, F32, shape)
    b, y = _t(2, F32, shape), _t(3, F32, shape)
    graph = Graph([Op(0, "Reorder", inputs=(x,), outputs=(r,)),
                   Op(1, "Add", inputs=(r, b), outputs=(y,), attrs={"auto_broadcast": "none"})])
    on = OnDevice(graph)
    assert [p.pattern for p in on.parts] == ["fp.reorder_add"], "Reorder + Add fuse"
    flat = _values((length,))
    other = _values(shape)
    on.check({0: flat, 2: other}, label=f"strides {strides}")
    view = np.lib.stride_tricks.as_strided(flat, shape, tuple(s * 4 for s in strides))
    on.check({0: np.array(view), 2: other}, label=f"shape-array for strides {strides}")
    assert np.array_equal(on.run({0: flat, 2: other})[3], on.run({0: np.array(view),
                                                                  2: other})[3]), \
        "a flat strided buffer and the equal shaped array give the same result"


def test_output_smaller_than_domain_is_written_once() -> None:
    """A Dequantize of a broadcast operand that is also a partition output: the kernel's domain
    is the Add's shape, the smaller outputs are stored once per element."""
    q, d = _t(0, U8, (1, 5)), _t(1, F32, (1, 5))
    x, y, r = _t(2, F32, (3, 5)), _t(3, F32, (3, 5)), _t(4, F32, (1, 5))
    attrs = {"qtype": "per_tensor", "scales": [0.5], "zps": [2]}
    ops = (Op(0, "Dequantize", inputs=(q,), outputs=(d,), attrs=attrs),
           Op(1, "Add", inputs=(x, d), outputs=(y,)),
           Op(2, "ReLU", inputs=(d,), outputs=(r,)))
    part = Partition(0, ops, (q, x), (d, y, r))
    backend = AccelBackend(form="specialised")
    compiled = backend.compile(part, backend.devices()[0])
    assert "if (idx0 == 0)" in compiled.kernel_source, "smaller outputs are guarded"
    other = _values((3, 5))
    got = compiled.execute({0: np.arange(5, dtype=np.uint8).reshape(1, 5), 2: other})
    want = (np.arange(5, dtype=np.float32) - 2) * np.float32(0.5)
    assert np.array_equal(got[1][0], want), f"intermediate output {got[1]}, want {want}"
    assert np.array_equal(got[4][0], np.where(want > 0, want, want * 0)), f"ReLU {got[4]}"
    assert np.array_equal(got[3], other + want), f"Add output {got[3]}"
