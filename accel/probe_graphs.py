"""The small graphs a device must build and run before it is trusted (`fusionspec.accel.probe`).

One graph per kernel family, and the dtype conversions every family shares (bf16 and f16
storage, s8/u8 quantization, per-channel tables), so a compiler that cannot digest some
construct of the generated code fails here, in a throw-away process, rather than in the
middle of a test session or a benchmark. `FEATURES_SOURCE` adds the hand-written constructs
outside the generators (the benchmark's vector copy).
"""

from __future__ import annotations

from collections.abc import Callable

from fusionspec.spec.dtypes import DataType
from fusionspec.spec.graph import AttrValue, Graph, LogicalTensor, Op

__all__ = ["PROBE_GRAPHS", "FEATURES_SOURCE", "FEATURE_KERNELS"]

F32, BF16, F16, S8, U8 = DataType.f32, DataType.bf16, DataType.f16, DataType.s8, DataType.u8

#: Vector loads and stores as the benchmark's copy kernel uses them (8 floats: 16-wide vectors
#: abort PoCL 3.0's LLVM on AVX-512 CPUs it does not know, BENCHMARKS.md).
FEATURES_SOURCE = """
__kernel void fs_probe_vector(__global const float *src, __global float *dst) {
    vstore8(vload8(get_global_id(0), src), get_global_id(0), dst);
}
"""
FEATURE_KERNELS = ("fs_probe_vector",)


def _t(tid: int, dtype: DataType, shape: tuple[int, ...] | None) -> LogicalTensor:
    return LogicalTensor(tid, dtype, shape)


def _op(oid: int, kind: str, ins: tuple[LogicalTensor, ...], out: LogicalTensor,
        **attrs: AttrValue) -> Op:
    return Op(oid, kind, inputs=ins, outputs=(out,), attrs=attrs)


def _elementwise() -> Graph:
    """ReLU -> Add (broadcast) -> TypeCast to bf16; f16 -> f32; int8 Dequantize/Quantize."""
    x, b, r, s, y = (_t(0, F32, (2, 3, 4)), _t(1, F32, (3, 1)), _t(2, F32, (2, 3, 4)),
                     _t(3, F32, (2, 3, 4)), _t(4, BF16, (2, 3, 4)))
    h, hf = _t(5, F16, (5,)), _t(6, F32, (5,))
    q, d, q2 = _t(7, U8, (2, 3)), _t(8, F32, (2, 3)), _t(9, S8, (2, 3))
    return Graph([
        _op(0, "ReLU", (x,), r), _op(1, "Add", (r, b), s), _op(2, "TypeCast", (s,), y),
        _op(3, "TypeCast", (h,), hf),
        _op(4, "Dequantize", (q,), d, qtype="per_channel", axis=1, scales=(0.5, 0.25, 2.0),
            zps=(0, 1, 2)),
        _op(5, "Quantize", (d,), q2, qtype="per_tensor", scales=(0.125,), zps=(-3,)),
    ])


def _matmul() -> Graph:
    a, w, m, bias, y, g = (_t(0, F32, (4, 8)), _t(1, F32, (8, 5)), _t(2, F32, (4, 5)),
                           _t(3, F32, (5,)), _t(4, F32, (4, 5)), _t(5, F32, (4, 5)))
    return Graph([_op(0, "MatMul", (a, w), m), _op(1, "BiasAdd", (m, bias), y),
                  _op(2, "GELU", (y,), g)])


def _convolution() -> Graph:
    x, w, c, r = (_t(0, F32, (1, 2, 5, 5)), _t(1, F32, (3, 2, 3, 3)), _t(2, F32, (1, 3, 5, 5)),
                  _t(3, F32, (1, 3, 5, 5)))
    return Graph([_op(0, "Convolution", (x, w), c, strides=(1, 1), pads_begin=(1, 1),
                      pads_end=(1, 1), dilations=(1, 1), data_format="NCX",
                      weights_format="OIX"),
                  _op(1, "ReLU", (c,), r)])


def _softmax() -> Graph:
    x, y = _t(0, F32, (3, 7)), _t(1, F32, (3, 7))
    return Graph([_op(0, "SoftMax", (x,), y, axis=-1)])


def _pool() -> Graph:
    x, p = _t(0, F32, (1, 2, 4, 4)), _t(1, F32, (1, 2, 2, 2))
    return Graph([_op(0, "AvgPool", (x,), p, strides=(2, 2), kernel=(2, 2), pads_begin=(0, 0),
                      pads_end=(0, 0), exclude_pad=False, data_format="NCX")])


def _reduction() -> Graph:
    x, r = _t(0, F32, (2, 3, 4)), _t(1, F32, (2, 1, 4))
    return Graph([_op(0, "ReduceSum", (x,), r, axes=(1,), keep_dims=True)])


def _interpolate() -> Graph:
    x, y = _t(0, F32, (1, 1, 3, 3)), _t(1, F32, (1, 1, 5, 5))
    return Graph([_op(0, "Interpolate", (x,), y, mode="linear", sizes=(5, 5),
                      data_format="NCX")])


def _training() -> Graph:
    v, dy, dx = _t(0, F32, (2, 3, 4)), _t(1, F32, (2, 3, 4)), _t(2, F32, (2, 3, 4))
    return Graph([_op(0, "ReLUBackward", (v, dy), dx, use_dst=True)])


#: Probe graphs by name (the name appears in a failed probe's reason).
PROBE_GRAPHS: dict[str, Callable[[], Graph]] = {
    "elementwise and dtype conversions": _elementwise,
    "MatMul + BiasAdd + GELU": _matmul,
    "Convolution + ReLU": _convolution,
    "SoftMax": _softmax,
    "AvgPool": _pool,
    "ReduceSum": _reduction,
    "Interpolate": _interpolate,
    "ReLUBackward": _training,
}
