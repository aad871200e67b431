"""Real bugs of other graph compilers and runtimes that fuse or lower the same ops (OpenVINO,
TVM, Burn, tinygrad, Core AI's PyTorch converter), each re-created as a broken backend of
these patterns (conventions as in tests/testkit/real_bugs_onednn.py).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

import numpy as np

from fusionspec.reference.execute import run_op
from fusionspec.reference.ops._layout import resolve_pads
from fusionspec.reference.partitioner import partition
from fusionspec.spec.categories import BINARY
from fusionspec.spec.errors import GraphError, GraphRule
from fusionspec.spec.graph import Graph, Op, Partition
from fusionspec.spec.shapes import spatial_dims
from fusionspec.spec.types import Array

from .real_bugs_kit import OpKernels, attr, attrs, with_attrs


class MatMulPostOpChannelAtAxisOne(OpKernels):
    """OpenVINO pull 13502 (2022.3). Fusing a per-channel binary op into a MatMul assumed the
    channel is dimension 1, as for a convolution; for a MatMul output the channel is the last
    dimension, so the per-channel operand was laid along the wrong axis."""

    name = "real-matmul-post-op-channel-at-axis-one"

    def kernel(self, op: Op, args: Sequence[Array], part: Partition,
               values: Mapping[int, Array]) -> list[Array] | None:
        if op.kind not in BINARY or not any(o.kind == "MatMul" for o in part.ops):
            return None
        x, y = np.asarray(args[0]), np.asarray(args[1])
        if x.ndim < 3 or y.size <= 1 or y.size != y.shape[-1] or x.shape[-1] != y.size:
            return None
        if x.shape[1] != y.size:
            return None
        shape = [1] * x.ndim
        shape[1] = y.size  # the bug: the channel taken as dimension 1
        return run_op(op, [args[0], y.reshape(shape)])


class NegativeQuantAxisOneEarly(OpKernels):
    """Core AI PyTorch converter pull 24 (2026). Lowering per-channel quantize/dequantize
    turned a negative axis into axis + rank - 1, one dimension too early; where the two
    dimensions had the same size nothing failed and the wrong channel was scaled."""

    name = "real-negative-quant-axis-one-early"

    def kernel(self, op: Op, args: Sequence[Array], part: Partition,
               values: Mapping[int, Array]) -> list[Array] | None:
        if op.kind not in ("Quantize", "Dequantize"):
            return None
        full = attrs(op)
        axis = int(full.get("axis", 1))
        x = np.asarray(args[0])
        if full.get("qtype") != "per_channel" or axis >= 0 or x.ndim < 2:
            return None
        return run_op(with_attrs(op, axis=axis + x.ndim - 1), args)


class AvgPoolAsymmetricPadsCounted(OpKernels):
    """Burn issue 5450 (fixed in 2026). Average pooling honoured "do not count the padding"
    only for symmetric padding; with more padding at one end than the other (an odd SAME
    padding included) the padded cells were counted in the divisor."""

    name = "real-avgpool-asymmetric-pads-counted"

    def kernel(self, op: Op, args: Sequence[Array], part: Partition,
               values: Mapping[int, Array]) -> list[Array] | None:
        if op.kind != "AvgPool":
            return None
        given = attrs(op)
        if not given.get("exclude_pad"):
            return None
        kernel = [int(k) for k in given["kernel"]]
        strides = [int(s) for s in given["strides"]]
        spatial = spatial_dims(np.asarray(args[0]).shape, str(given["data_format"]))
        begin, end = resolve_pads("AvgPool", spatial, kernel, strides, [1] * len(kernel),
                                  given)
        if tuple(begin) == tuple(end):
            return None
        return run_op(with_attrs(op, exclude_pad=False), args)


class AvgPoolAlwaysCountsPadding(OpKernels):
    """tinygrad pull 605 (February 2023). Average pooling divided every window by the full
    kernel size, padding included, so models that exclude padding got smaller values at the
    borders."""

    name = "real-avgpool-always-counts-padding"

    def kernel(self, op: Op, args: Sequence[Array], part: Partition,
               values: Mapping[int, Array]) -> list[Array] | None:
        if op.kind != "AvgPool" or not attrs(op).get("exclude_pad"):
            return None
        return run_op(with_attrs(op, exclude_pad=False), args)


class Rank1DequantizeRejected(OpKernels):
    """TVM pull 10880 (v0.9). Type checking of qnn.dequantize took any input of rank 1 or more
    as per-channel and required one scale per element of the axis, so a per-tensor
    Dequantize of a 1-D tensor was rejected."""

    name = "real-rank1-dequantize-rejected"

    def partition(self, graph: Graph) -> list[Partition]:
        for op in graph.ops:
            if op.kind in ("Dequantize", "Quantize") and attr(op, "qtype", "per_tensor") \
                    == "per_tensor" and op.inputs[0].shape is not None \
                    and len(op.inputs[0].shape) == 1 and op.inputs[0].shape[0] != 1:
                raise GraphError(f"{op.kind} {op.id}: 1 scale for {op.inputs[0].shape[0]} "
                                 "channels", rule=GraphRule.shape_infer, op_id=op.id,
                                 op_kind=op.kind)
        return partition(graph)
