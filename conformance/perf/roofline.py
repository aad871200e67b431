"""FLOPs and bytes of a partition, computed from its graph, for the roofline figures.

FLOPs count what the op must compute, not what a kernel happens to do: a multiply-add is two
(MatMul, the convolutions and their weight gradient); pooling does one per window element of
each output; SoftMax five per element (max, subtract, exp, sum, divide); batch norm four per
element forward and eight backward; Interpolate four per output for linear modes and none for
nearest; every other op one per output element (a Reorder, a TypeCast and the quantization
ops included: they read, convert and write).

Bytes are the least traffic the partition needs: every external input read once and every
external output written once (`partition_bytes`). Op by op, each op also writes its
intermediates and the next op reads them back (`opbyop_bytes`), which is the traffic fusion
saves. The achieved rates divide these by the measured time.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Sequence

from fusionspec.spec.attrs import attr_value
from fusionspec.spec.dtypes import DataType
from fusionspec.spec.graph import LogicalTensor, Op, Partition

__all__ = ["op_flops", "partition_flops", "tensor_bytes", "partition_bytes", "opbyop_bytes",
           "rate"]


def _elements(t: LogicalTensor) -> int:
    return math.prod(t.shape or ())


def tensor_bytes(t: LogicalTensor) -> int:
    """Bytes of a dense tensor of `t`'s shape and dtype."""
    return _elements(t) * _itemsize(t.dtype)


def _itemsize(dtype: DataType) -> int:
    name = dtype.value
    if name in ("u8", "s8", "boolean") or name.startswith("f8"):
        return 1
    if name in ("f16", "bf16"):
        return 2
    return 4


def _conv_macs(op: Op) -> int:
    """Multiply-adds of a (transposed) convolution or its weight gradient: each weight element
    meets every spatial position of the larger activation once per batch item (the output of
    a Convolution, the input of a ConvTranspose, the output gradient of the weight gradient);
    groups are already in the weights' shape."""
    if op.kind == "ConvolutionBackwardWeights":
        weights, big = op.outputs[0], op.inputs[1]
    else:
        weights = op.inputs[1]
        big = op.outputs[0] if op.kind == "Convolution" else op.inputs[0]
    shape = big.shape or (1, 1)
    channel_axis = 1 if attr_value(op, "data_format") == "NCX" else len(shape) - 1
    return _elements(weights) * (_elements(big) // max(shape[channel_axis], 1))


def op_flops(op: Op) -> int:
    """Floating-point operations of `op` (see the module docstring)."""
    out = _elements(op.outputs[0]) if op.outputs else 0
    if op.kind == "MatMul":
        a = op.inputs[0].shape or (1,)
        k = a[-2] if op.attrs.get("transpose_a") and len(a) > 1 else a[-1]
        return 2 * out * k
    if op.kind in ("Convolution", "ConvTranspose", "ConvolutionBackwardWeights"):
        return 2 * _conv_macs(op)
    if op.kind in ("AvgPool", "MaxPool"):
        kernel = attr_value(op, "kernel")
        window = [int(k) for k in kernel] if isinstance(kernel, list | tuple) else []
        return out * math.prod(window)
    if op.kind == "SoftMax":
        return 5 * out
    if op.kind == "BatchNormInference":
        return 4 * out
    if op.kind == "BatchNormTrainingBackward":
        return 8 * out
    if op.kind == "Interpolate":
        return 0 if op.attrs.get("mode") == "nearest" else 4 * out
    if op.kind.startswith("Reduce") or op.kind == "BiasAddBackward":
        return _elements(op.inputs[0])
    return out


def partition_flops(ops: Iterable[Op]) -> int:
    return sum(op_flops(op) for op in ops)


def partition_bytes(partition: Partition) -> int:
    """Bytes a fused kernel must move at least: inputs read once, outputs written once."""
    return sum(tensor_bytes(t) for t in (*partition.inputs, *partition.outputs))


def opbyop_bytes(ops: Sequence[Op]) -> int:
    """Bytes moved running `ops` one by one: each op reads all its inputs and writes all its
    outputs, intermediates included."""
    return sum(tensor_bytes(t) for op in ops for t in (*op.inputs, *op.outputs))


def rate(amount: int, seconds: float) -> float:
    """`amount` per second in units of 1e9 (GFLOP/s, GB/s); 0 for a time of 0."""
    return amount / seconds / 1e9 if seconds > 0 else 0.0
