"""Graphs of the performance workloads, built from a workload's numbers.

A workload (`fusionspec.conformance.perf.workloads`) names a head builder (`HEADS`: the op or
side subgraphs that start the pattern, such as a convolution with its Dequantize inputs) with
its sizes, and a list of post-op words (`POST_OPS`) appended after the head, each consuming the
previous op's output. Output shapes come from the op schemas' shape inference (the graph is
finalized after each op), so a workload's numbers only have to say what the network says: the
input sizes, the kernel, the stride.

Quantized inputs are Dequantize ops reading u8 activations and s8 weights with per-tensor
scales; a ``Quantize`` word writes u8. Binary operands are fresh graph inputs of the full shape
(``Add``) or broadcast per channel (``AddC``, ``MultiplyC``), the way a residual connection
and a per-channel scale read.
"""

from __future__ import annotations

import itertools
from collections.abc import Callable, Mapping, Sequence

from fusionspec.spec.dtypes import DataType
from fusionspec.spec.errors import FusionspecError
from fusionspec.spec.graph import AttrValue, Graph, LogicalTensor, Op

__all__ = ["WorkloadGraphError", "build_graph", "HEADS", "POST_OPS"]

F32, U8, S8, BF16 = DataType.f32, DataType.u8, DataType.s8, DataType.bf16
Sizes = Mapping[str, int]


class WorkloadGraphError(FusionspecError):
    """A workload whose numbers or words do not make a graph (the message says which)."""


class _Builder:
    """Ops in order, each output's shape read back from the schemas' inference."""

    def __init__(self) -> None:
        self.ops: list[Op] = []
        self.ids = itertools.count()
        self.shapes: dict[int, tuple[int, ...]] = {}

    def tensor(self, shape: Sequence[int] | None, dtype: DataType = F32) -> LogicalTensor:
        t = LogicalTensor(next(self.ids), dtype, None if shape is None else tuple(shape))
        if shape is not None:
            self.shapes[t.id] = tuple(shape)
        return t

    def op(self, kind: str, inputs: Sequence[LogicalTensor], out_dtype: DataType = F32,
           attrs: Mapping[str, AttrValue] | None = None, outputs: int = 1) -> LogicalTensor:
        outs = tuple(self.tensor(None, out_dtype) for _ in range(outputs))
        self.ops.append(Op(len(self.ops), kind, tuple(inputs), outs, dict(attrs or {})))
        graph = Graph(self.ops).finalize()
        for op in graph.ops:
            for t in op.outputs:
                self.shapes[t.id] = tuple(t.shape or ())
        return outs[0]

    def shape(self, t: LogicalTensor) -> tuple[int, ...]:
        return self.shapes[t.id]

    def dequantize(self, shape: Sequence[int], dtype: DataType = U8) -> LogicalTensor:
        zps = (8,) if dtype == U8 else (0,)
        return self.op("Dequantize", [self.tensor(shape, dtype)],
                       attrs={"qtype": "per_tensor", "scales": (0.05,), "zps": zps})

    def operand(self, shape: Sequence[int], quantized: bool) -> LogicalTensor:
        return self.dequantize(shape) if quantized else self.tensor(shape)


def _window(s: Sizes, key: str = "k") -> dict[str, AttrValue]:
    k, stride, pad = s[key], s.get("s", 1), s.get("pad", 0)
    return {"strides": (stride, stride), "pads_begin": (pad, pad), "pads_end": (pad, pad),
            "data_format": "NCX", **({"kernel": (k, k)} if key == "pool" else {})}


def _conv_attrs(s: Sizes, weights_format: str) -> dict[str, AttrValue]:
    return {**_window(s), "dilations": (1, 1), "groups": s.get("groups", 1),
            "weights_format": weights_format}


def _conv(b: _Builder, s: Sizes, q: bool) -> LogicalTensor:
    """Convolution, NCX activations and OIX weights (groups from ``groups``)."""
    src = b.operand((s["n"], s["c"], s["h"], s["w"]), q)
    wei = b.dequantize((s["oc"], s["c"] // s.get("groups", 1), s["k"], s["k"]), S8) if q \
        else b.tensor((s["oc"], s["c"] // s.get("groups", 1), s["k"], s["k"]))
    return b.op("Convolution", [src, wei], attrs=_conv_attrs(s, "OIX"))


def _deconv(b: _Builder, s: Sizes, q: bool) -> LogicalTensor:
    """ConvTranspose, NCX activations and IOX weights."""
    src = b.operand((s["n"], s["c"], s["h"], s["w"]), q)
    shape = (s["c"], s["oc"], s["k"], s["k"])
    wei = b.dequantize(shape, S8) if q else b.tensor(shape)
    return b.op("ConvTranspose", [src, wei], attrs=_conv_attrs(s, "IOX"))


def _matmul(b: _Builder, s: Sizes, q: bool) -> LogicalTensor:
    """MatMul of an m x k activation by k x n weights."""
    src = b.operand((s["m"], s["k"]), q)
    wei = b.dequantize((s["k"], s["n"]), S8) if q else b.tensor((s["k"], s["n"]))
    return b.op("MatMul", [src, wei])


def _nchw(b: _Builder, s: Sizes, q: bool) -> LogicalTensor:
    return b.operand((s["n"], s["c"], s["h"], s["w"]), q)


def _interpolate(b: _Builder, s: Sizes, q: bool) -> LogicalTensor:
    f = s["scale"]
    return b.op("Interpolate", [_nchw(b, s, q)],
                attrs={"mode": "bilinear" if s.get("linear") else "nearest",
                       "sizes": (s["h"] * f, s["w"] * f), "data_format": "NCX"})


def _reduce(b: _Builder, s: Sizes, q: bool) -> LogicalTensor:
    return b.op("ReduceMean", [_nchw(b, s, q)], attrs={"axes": (2, 3), "keep_dims": True})


def _pool(kind: str) -> Callable[[_Builder, Sizes, bool], LogicalTensor]:
    def head(b: _Builder, s: Sizes, q: bool) -> LogicalTensor:
        attrs = _window(s, "pool")
        if kind == "AvgPool":
            attrs["exclude_pad"] = False
        return b.op(kind, [_nchw(b, s, q)], attrs=attrs)
    return head


def _elementwise(kind: str) -> Callable[[_Builder, Sizes, bool], LogicalTensor]:
    """A unary op or a binary op (second operand of the full shape) on an n x c x h x w
    tensor, or Reorder; with sizes ``m`` and ``k``, an ``m x k`` tensor (``m x 1`` for a
    Reciprocal: a per-row factor)."""
    def head(b: _Builder, s: Sizes, q: bool) -> LogicalTensor:
        if "m" in s:
            src = b.operand((s["m"], 1 if kind == "Reciprocal" else s["k"]), q)
        else:
            src = _nchw(b, s, q)
        if kind in ("Add", "Multiply"):
            return b.op(kind, [src, b.operand(b.shape(src), q)])
        return b.op(kind, [src])
    return head


def _batchnorm(b: _Builder, s: Sizes, q: bool) -> LogicalTensor:
    src = _nchw(b, s, q)
    params = [b.tensor((s["c"],)) for _ in range(4)]
    return b.op("BatchNormInference", [src, *params], attrs={"epsilon": 1e-5,
                                                             "data_format": "NCX"})


def _softmax(b: _Builder, s: Sizes, q: bool) -> LogicalTensor:
    src = b.tensor((s["n"], s["heads"], s["seq"], s["seq"]))
    return b.op("SoftMax", [src], attrs={"axis": -1})


def _conv_bwd_weights(b: _Builder, s: Sizes, q: bool) -> LogicalTensor:
    src = _nchw(b, s, False)
    oh = (s["h"] + 2 * s.get("pad", 0) - s["k"]) // s.get("s", 1) + 1
    diff_dst = b.tensor((s["n"], s["oc"], oh, oh))
    return b.op("ConvolutionBackwardWeights", [src, diff_dst],
                attrs={**_conv_attrs(s, "OIX"),
                       "weights_shape": (s["oc"], s["c"], s["k"], s["k"])})


def _relu_bwd(b: _Builder, s: Sizes, q: bool) -> LogicalTensor:
    shape = (s["n"], s["c"], s["h"], s["w"])
    return b.op("ReLUBackward", [b.tensor(shape), b.tensor(shape)])


#: Head builders by name: each takes the workload's sizes and whether its inputs are
#: quantized (Dequantize ops reading u8 or s8).
HEADS: dict[str, Callable[[_Builder, Sizes, bool], LogicalTensor]] = {
    "conv": _conv, "convtranspose": _deconv, "matmul": _matmul, "interpolate": _interpolate,
    "reduce": _reduce, "maxpool": _pool("MaxPool"), "avgpool": _pool("AvgPool"),
    "sigmoid": _elementwise("Sigmoid"), "add": _elementwise("Add"),
    "reciprocal": _elementwise("Reciprocal"), "reorder": _elementwise("Reorder"),
    "dequantize": _nchw, "batchnorm": _batchnorm, "softmax": _softmax,
    "conv_bwd_weights": _conv_bwd_weights, "relu_bwd": _relu_bwd,
}


def _channels(shape: Sequence[int]) -> tuple[int, ...]:
    """A per-channel operand broadcasting to `shape` (NCX: axis 1; 2-D: the last axis)."""
    if len(shape) == 2:
        return (shape[1],)
    return (1, shape[1], *(1 for _ in shape[2:]))


def _post(b: _Builder, word: str, cur: LogicalTensor, q: bool, s: Sizes) -> LogicalTensor:
    shape = b.shape(cur)
    fmt: dict[str, AttrValue] = {"data_format": "NCX" if len(shape) > 2 else "NXC"}
    unary: dict[str, dict[str, AttrValue]] = {
        "ReLU": {}, "GELU": {}, "Sigmoid": {}, "Tanh": {}, "Clamp6": {"min": 0.0, "max": 6.0}}
    if word in unary:
        return b.op("Clamp" if word == "Clamp6" else word, [cur], attrs=unary[word])
    if word == "BiasAdd":
        size = shape[1] if len(shape) > 2 else shape[-1]
        return b.op("BiasAdd", [cur, b.tensor((size,))], attrs=fmt)
    if word in ("Add", "Multiply"):
        return b.op(word, [cur, b.operand(shape, q)])
    if word in ("AddC", "MultiplyC"):
        return b.op(word[:-1], [cur, b.tensor(_channels(shape))])
    if word == "MultiplyRow":  # a per-row m x 1 factor times the m x k tensor
        return b.op("Multiply", [cur, b.tensor((shape[0], s["k"]))])
    if word == "Quantize":
        return b.op("Quantize", [cur], U8, {"qtype": "per_tensor", "scales": (0.05,),
                                            "zps": (8,)})
    if word == "TypeCast":
        return b.op("TypeCast", [cur], BF16)
    if word == "Reorder":
        return b.op("Reorder", [cur])
    if word == "BatchNormInference":
        params = [b.tensor((shape[1],)) for _ in range(4)]
        return b.op(word, [cur, *params], attrs={"epsilon": 1e-5, **fmt})
    if word == "BiasAddBackward":
        return b.op(word, [cur], attrs=fmt)
    if word == "BatchNormTrainingBackward":
        extra = [b.tensor(shape), *(b.tensor((shape[1],)) for _ in range(3))]
        return b.op(word, [cur, *extra], attrs={"epsilon": 1e-5, **fmt}, outputs=3)
    raise WorkloadGraphError(f"no post-op {word!r}; known: BiasAdd, ReLU, GELU, Sigmoid, Tanh, "
                             "Clamp6, Add, Multiply, AddC, MultiplyC, MultiplyRow, Quantize, "
                             "TypeCast, Reorder, BatchNormInference, BiasAddBackward, "
                             "BatchNormTrainingBackward")


#: The post-op words `build_graph` knows (see `_post`).
POST_OPS = ("BiasAdd", "ReLU", "GELU", "Sigmoid", "Tanh", "Clamp6", "Add", "Multiply", "AddC",
            "MultiplyC", "MultiplyRow", "Quantize", "TypeCast", "Reorder", "BatchNormInference",
            "BiasAddBackward", "BatchNormTrainingBackward")


def build_graph(head: str, sizes: Sizes, post_ops: Sequence[str], quantized: bool = False
                ) -> Graph:
    """The finalized graph of `head` (a key of `HEADS`) with `sizes`, then `post_ops`;
    `WorkloadGraphError` for an unknown name or sizes the schemas reject."""
    if head not in HEADS:
        raise WorkloadGraphError(f"no workload head {head!r}; known: {', '.join(HEADS)}")
    b = _Builder()
    try:
        cur = HEADS[head](b, sizes, quantized)
        for word in post_ops:
            cur = _post(b, word, cur, quantized, sizes)
        return Graph(b.ops).finalize()
    except KeyError as exc:
        raise WorkloadGraphError(f"workload head {head!r} needs the size {exc}") from None
    except WorkloadGraphError:
        raise
    except FusionspecError as exc:
        raise WorkloadGraphError(f"{head} + {' + '.join(post_ops)}: {exc}") from exc
