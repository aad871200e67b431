"""Synthetic graphs for benchmarks: ResNet-like convolution blocks and attention-like blocks.

`resnet_like(n_ops)` chains blocks of Convolution + BiasAdd + BatchNormInference + ReLU with a
residual Add every second block, and every tenth block a MatMul + BiasAdd + GELU and a SoftMax +
Multiply, until the graph holds at least `n_ops` ops. Shapes are small (the partitioner only
looks at structure) but valid, so the graphs finalize.
"""

from __future__ import annotations

import itertools

from fusionspec.spec.dtypes import DataType
from fusionspec.spec.graph import Graph, LogicalTensor, Op

__all__ = ["resnet_like"]

F32 = DataType.f32
CONV = {"strides": [1, 1], "pads_begin": [1, 1], "pads_end": [1, 1], "dilations": [1, 1],
        "data_format": "NCX", "weights_format": "OIX"}


def resnet_like(n_ops: int, channels: int = 8, size: int = 8) -> Graph:
    ids = itertools.count()
    ops: list[Op] = []
    act = (1, channels, size, size)
    vec = (channels,)

    def tensor(shape: tuple[int, ...]) -> LogicalTensor:
        return LogicalTensor(next(ids), F32, shape)

    def op(kind: str, inputs: list[LogicalTensor], shape: tuple[int, ...],
           attrs: dict[str, object] | None = None) -> LogicalTensor:
        out = tensor(shape)
        ops.append(Op(len(ops), kind, tuple(inputs), (out,), attrs or {}))
        return out

    x = tensor(act)
    block = 0
    while len(ops) < n_ops:
        skip = x
        y = op("Convolution", [x, tensor((channels, channels, 3, 3))], act, CONV)
        y = op("BiasAdd", [y, tensor(vec)], act, {"data_format": "NCX"})
        y = op("BatchNormInference", [y, *(tensor(vec) for _ in range(4))], act,
               {"epsilon": 1e-5, "data_format": "NCX"})
        y = op("ReLU", [y], act)
        if block % 2 == 1:
            y = op("Add", [y, skip], act)
        if block % 10 == 9:
            flat = (channels * size, size)
            m = op("MatMul", [tensor(flat), tensor((size, size))], flat)
            m = op("BiasAdd", [m, tensor((size,))], flat)
            m = op("GELU", [m], flat)
            s = op("SoftMax", [m], flat, {"axis": 1})
            op("Multiply", [s, tensor(flat)], flat)
        x = y
        block += 1
    return Graph(ops)
