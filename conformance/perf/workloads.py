"""The performance workloads: per catalog pattern, layers of the networks the pages name.

A `Workload` is data: the pattern it instantiates, the network layer it stands for (`source`),
a head builder and post-op words (`fusionspec.conformance.perf.graphs`), and sizes at two
scales. ``full`` is the layer as the network has it (batch 1 for inference, as a latency-bound
service runs it; the training pairs at a small training batch); ``small`` keeps the layer's
structure (kernel, stride, groups, the ratio of channels) with fewer channels and positions,
so that the whole catalog runs in minutes on two CPU cores, reference included.

Every catalog pattern has at least one workload (the tests hold it), and every workload's graph
is partitioned by the reference into one partition of its pattern.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field

from fusionspec.spec.errors import FusionspecError
from fusionspec.spec.graph import Graph

from .graphs import build_graph

__all__ = ["Workload", "WORKLOADS", "SIZES", "workload", "UnknownWorkloadError"]

#: The two scales of every workload.
SIZES = ("small", "full")


class UnknownWorkloadError(FusionspecError):
    """A workload id or size that is not in the table."""


@dataclass(frozen=True)
class Workload:
    """One layer of a network as a pattern instance (see the module docstring). `id` is
    ``<pattern>/<name>``; `dtype` is the headline data type (``f32`` or ``int8``)."""

    name: str
    pattern: str
    source: str
    head: str
    post_ops: tuple[str, ...]
    small: Mapping[str, int]
    full: Mapping[str, int]
    dtype: str = "f32"
    quantized: bool = field(default=False)

    @property
    def id(self) -> str:
        return f"{self.pattern}/{self.name}"

    def sizes(self, size: str) -> Mapping[str, int]:
        if size not in SIZES:
            raise UnknownWorkloadError(f"no workload size {size!r}; choose {' or '.join(SIZES)}")
        return self.small if size == "small" else self.full

    def graph(self, size: str) -> Graph:
        """The finalized graph at `size` (``small`` or ``full``)."""
        return build_graph(self.head, self.sizes(size), self.post_ops, self.quantized)

    def tensor_dtypes(self, size: str) -> frozenset[str]:
        """The data types of the graph's tensors at `size`: what the ``tensor_dtypes`` globs
        of a backend's declared limitation are matched against."""
        return frozenset(t.dtype.value for op in self.graph(size).ops
                         for t in (*op.inputs, *op.outputs))


def _w(name: str, pattern: str, source: str, head: str, post_ops: str,
       small: Mapping[str, int], full: Mapping[str, int], int8: bool = False) -> Workload:
    return Workload(name, pattern, source, head, tuple(post_ops.split()), small, full,
                    "int8" if int8 else "f32", int8)


def _nchw(n: int, c: int, hw: int, **more: int) -> dict[str, int]:
    return {"n": n, "c": c, "h": hw, "w": hw, **more}


_RESNET = "ResNet-50 (He et al., 2016)"
_BERT = "BERT-base (Devlin et al., 2019), sequence 128"

#: The table, in catalog order.
WORKLOADS: tuple[Workload, ...] = (
    _w("resnet50-conv3-3x3", "fp.conv_post_ops",
       f"{_RESNET}, conv3_x bottleneck 3x3 convolution, 128 channels at 28x28", "conv",
       "BiasAdd ReLU", _nchw(1, 32, 14, oc=32, k=3, pad=1), _nchw(1, 128, 28, oc=128, k=3, pad=1)),
    _w("resnet50-conv2-1x1-residual", "fp.conv_post_ops",
       f"{_RESNET}, conv2_x bottleneck expansion 1x1 convolution 64 -> 256 at 56x56 with the "
       "residual Add", "conv", "BiasAdd Add ReLU",
       _nchw(1, 16, 14, oc=64, k=1), _nchw(1, 64, 56, oc=256, k=1)),
    _w("resnext50-conv3-grouped", "fp.conv_post_ops",
       "ResNeXt-50 32x4d (Xie et al., 2017), conv3 stage grouped 3x3 convolution, 256 "
       "channels in 32 groups at 28x28", "conv", "BiasAdd ReLU",
       _nchw(1, 64, 14, oc=64, k=3, pad=1, groups=16),
       _nchw(1, 256, 28, oc=256, k=3, pad=1, groups=32)),
    _w("mobilenetv2-depthwise", "fp.conv_post_ops",
       "MobileNetV2 (Sandler et al., 2018), block 2 depthwise 3x3 convolution, 144 channels at "
       "56x56, batch norm folded in, ReLU6", "conv", "BiasAdd Clamp6",
       _nchw(1, 32, 28, oc=32, k=3, pad=1, groups=32),
       _nchw(1, 144, 56, oc=144, k=3, pad=1, groups=144)),
    _w("dcgan-generator-deconv", "fp.convtranspose_post_ops",
       "DCGAN generator (Radford et al., 2016), 4x4 stride-2 transposed convolution "
       "512 -> 256 channels, 8x8 -> 16x16", "convtranspose", "BiasAdd ReLU",
       _nchw(1, 64, 8, oc=32, k=4, s=2, pad=1), _nchw(1, 512, 8, oc=256, k=4, s=2, pad=1)),
    _w("fpn-topdown-upsample", "fp.interpolate_post_ops",
       "Feature Pyramid Network (Lin et al., 2017) top-down path: nearest 2x upsampling of a "
       "256-channel map and the lateral Add", "interpolate", "Add",
       _nchw(1, 64, 14, scale=2), _nchw(1, 256, 28, scale=2)),
    _w("image-bilinear-upsample", "fp.interpolate_post_ops",
       "Image resizing as in U-Net-style decoders (Ronneberger et al., 2015): bilinear 2x "
       "upsampling of a 64-channel map, then ReLU", "interpolate", "ReLU",
       _nchw(1, 16, 28, scale=2, linear=1), _nchw(1, 64, 112, scale=2, linear=1)),
    _w("bert-ffn-gelu", "fp.matmul_post_ops",
       f"{_BERT}, feed-forward intermediate MatMul 768 -> 3072 with bias and GELU", "matmul",
       "BiasAdd GELU", {"m": 32, "k": 192, "n": 768}, {"m": 128, "k": 768, "n": 3072}),
    _w("dlrm-top-mlp", "fp.matmul_post_ops",
       "DLRM (Naumov et al., 2019), MLPerf top MLP layer 512 -> 256 at batch 2048, bias and "
       "ReLU", "matmul", "BiasAdd ReLU",
       {"m": 256, "k": 128, "n": 64}, {"m": 2048, "k": 512, "n": 256}),
    _w("senet-squeeze", "fp.reduction_post_ops",
       "Squeeze-and-Excitation (Hu et al., 2018) on ResNet-50 conv2_x: global average pooling "
       "as ReduceMean over 56x56 of 256 channels, then a per-channel scale", "reduce",
       "MultiplyC", _nchw(1, 64, 28), _nchw(1, 256, 56)),
    _w("efficientnet-swish", "fp.unary_binary",
       "EfficientNet-B0 (Tan and Le, 2019), swish gate of a 144-channel 56x56 map as Sigmoid "
       "times a second operand", "sigmoid", "Multiply", _nchw(1, 32, 28), _nchw(1, 144, 56)),
    _w("resnet50-residual-add-relu", "fp.binary_post_ops",
       f"{_RESNET}, conv2_x block output: residual Add and ReLU, 256 channels at 56x56", "add",
       "ReLU", _nchw(1, 64, 28), _nchw(1, 256, 56)),
    _w("resnet50-stem-maxpool", "fp.pool_binary",
       f"{_RESNET}, stem 3x3 stride-2 max pooling of 64 channels at 112x112, then a "
       "per-channel Add", "maxpool", "AddC",
       _nchw(1, 16, 56, pool=3, s=2, pad=1), _nchw(1, 64, 112, pool=3, s=2, pad=1)),
    _w("resnet50-stem-bn-relu", "fp.bn_relu",
       f"{_RESNET}, stem batch norm and ReLU, 64 channels at 112x112", "batchnorm", "ReLU",
       _nchw(1, 16, 56), _nchw(1, 64, 112)),
    _w("bert-layernorm-scale", "fp.reciprocal_multiply",
       f"{_BERT}, layer norm's division by the per-token deviation as Reciprocal and "
       "Multiply over 768 features", "reciprocal", "MultiplyRow",
       {"m": 32, "k": 192}, {"m": 128, "k": 768}),
    _w("resnet50-reorder-add", "fp.reorder_add",
       f"{_RESNET}, a layout change of the conv2_x shortcut joined to the residual Add, 256 "
       "channels at 56x56", "reorder", "Add", _nchw(1, 64, 28), _nchw(1, 256, 56)),
    _w("resnet50-int8-conv4-3x3", "int8.conv_post_ops",
       f"{_RESNET} int8, conv4_x 3x3 convolution, 256 channels at 14x14, requantized to u8",
       "conv", "BiasAdd ReLU Quantize",
       _nchw(1, 64, 7, oc=64, k=3, pad=1), _nchw(1, 256, 14, oc=256, k=3, pad=1), int8=True),
    _w("dcgan-int8-deconv", "int8.convtranspose_post_ops",
       "DCGAN generator int8: the 4x4 stride-2 transposed convolution 512 -> 256 of the float "
       "workload on u8 activations and s8 weights", "convtranspose", "BiasAdd ReLU Quantize",
       _nchw(1, 64, 8, oc=32, k=4, s=2, pad=1), _nchw(1, 512, 8, oc=256, k=4, s=2, pad=1),
       int8=True),
    _w("bert-int8-qkv", "int8.matmul_post_ops",
       f"{_BERT} int8, a query/key/value projection MatMul 768 -> 768 with bias, requantized",
       "matmul", "BiasAdd Quantize",
       {"m": 32, "k": 192, "n": 192}, {"m": 128, "k": 768, "n": 768}, int8=True),
    _w("resnet50-int8-stem-maxpool", "int8.pool",
       f"{_RESNET} int8, stem 3x3 stride-2 max pooling of 64 channels at 112x112",
       "maxpool", "Quantize", _nchw(1, 16, 56, pool=3, s=2, pad=1),
       _nchw(1, 64, 112, pool=3, s=2, pad=1), int8=True),
    _w("inception-int8-avgpool-add", "int8.pool_add",
       "Inception-v3 (Szegedy et al., 2016) int8, Mixed_5b pool branch: 3x3 stride-1 average "
       "pooling of 192 channels at 35x35, joined by an Add", "avgpool", "Add Quantize",
       _nchw(1, 48, 17, pool=3, pad=1), _nchw(1, 192, 35, pool=3, pad=1), int8=True),
    _w("resnet50-int8-requantize", "int8.reorder",
       f"{_RESNET} int8, requantizing a conv2_x activation (256 channels at 56x56) between "
       "layouts", "dequantize", "Reorder Quantize", _nchw(1, 64, 28), _nchw(1, 256, 56),
       int8=True),
    _w("resnet50-int8-reorder-add", "int8.reorder_add",
       f"{_RESNET} int8, the conv2_x shortcut's layout change joined to the residual Add",
       "dequantize", "Reorder Add Quantize", _nchw(1, 64, 28), _nchw(1, 256, 56), int8=True),
    _w("resnet50-train-conv3-wgrad", "train.conv_bwd_weights_bias_bwd",
       f"{_RESNET} training, conv3_x 3x3 weight gradient (128 channels at 28x28, batch 8) and "
       "the bias gradient", "conv_bwd_weights", "BiasAddBackward",
       _nchw(2, 16, 14, oc=16, k=3, pad=1), _nchw(8, 128, 28, oc=128, k=3, pad=1)),
    _w("resnet50-train-relu-bn-bwd", "train.relu_bwd_bn_bwd",
       f"{_RESNET} training, conv2_x ReLU and batch norm backward, 64 channels at 56x56, "
       "batch 8", "relu_bwd", "BatchNormTrainingBackward", _nchw(2, 16, 28), _nchw(8, 64, 56)),
    _w("dcgan-int8-deconv-4-post-ops", "convtranspose.int8",
       "DCGAN generator int8 as the quantized ConvTranspose page has it: bias, ReLU, a "
       "per-channel scale and shift and ReLU6 (four post-ops), requantized", "convtranspose",
       "BiasAdd ReLU MultiplyC AddC Clamp6 Quantize",
       _nchw(1, 64, 8, oc=32, k=4, s=2, pad=1), _nchw(1, 512, 8, oc=256, k=4, s=2, pad=1),
       int8=True),
    _w("bert-attention-softmax-bf16", "softmax.post_ops",
       f"{_BERT}, attention probabilities: SoftMax over 12 heads of 128 x 128 scores, a "
       "Multiply (the attention mask's scale) and the cast to bf16 for the next MatMul",
       "softmax", "Multiply TypeCast", {"n": 1, "heads": 4, "seq": 32},
       {"n": 1, "heads": 12, "seq": 128}),
    _w("bert-int8-attention-softmax", "softmax.post_ops",
       f"{_BERT} int8, attention probabilities quantized to u8 for the int8 MatMul",
       "softmax", "Quantize", {"n": 1, "heads": 4, "seq": 32},
       {"n": 1, "heads": 12, "seq": 128}, int8=True),
)


def workload(workload_id: str) -> Workload:
    for w in WORKLOADS:
        if w.id == workload_id:
            return w
    raise UnknownWorkloadError(f"no workload {workload_id!r}; known: "
                               f"{', '.join(w.id for w in WORKLOADS)}")
