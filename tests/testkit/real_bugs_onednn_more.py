"""More real bugs of oneDNN's Graph API implementation: its graph compiler backend's kernels,
its pattern matcher and its validation, each re-created as a broken backend of these
patterns (see tests/testkit/real_bugs_onednn.py for the first part and the conventions).
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence

import ml_dtypes
import numpy as np

from fusionspec.reference.execute import run_op
from fusionspec.reference.partitioner import external_tensors, partition
from fusionspec.spec.categories import BINARY, UNARY
from fusionspec.spec.dtypes import DataType
from fusionspec.spec.graph import Graph, Op, Partition
from fusionspec.spec.types import Array

from .real_bugs_kit import (
    OpKernels,
    accept_where,
    attr,
    attrs,
    f32,
    reference_groups,
    with_attrs,
)

POST_OPS = frozenset({*UNARY, *BINARY})


class ReduceProdStartsAtZero(OpKernels):
    """oneDNN a9bbd3bd14fc (graph compiler backend, first in v3.4). The vectorized horizontal
    reduction seeded a product with 0 instead of 1, so ReduceProd came out 0 (NaN where an
    operand was infinite)."""

    name = "real-reduce-prod-starts-at-zero"

    def kernel(self, op: Op, args: Sequence[Array], part: Partition,
               values: Mapping[int, Array]) -> list[Array] | None:
        if op.kind != "ReduceProd":
            return None
        return [f32(np.float32(0) * run_op(op, args)[0])]


class ExpOverflowBoundLow(OpKernels):
    """oneDNN a9bbd3bd14fc (graph compiler backend, first in v3.4). The Exp kernel switched
    to +inf above 88.7228, a little below the true f32 bound (88.72283935...), so the last
    finite results of exp came out infinite."""

    name = "real-exp-overflow-bound-low"

    def kernel(self, op: Op, args: Sequence[Array], part: Partition,
               values: Mapping[int, Array]) -> list[Array] | None:
        if op.kind != "Exp":
            return None
        x = np.asarray(args[0], dtype=np.float32)
        exact = run_op(op, args)[0]
        return [f32(np.where(x > np.float32(88.7228), np.inf, exact))]


class SoftMaxExpWrapsBelowUnderflow(OpKernels):
    """oneDNN d1e20da98474 (graph compiler backend, first in v3.3). SoftMax's exp was built
    without the underflow guard: below -87.33 the exponent built from bits wrapped around, so
    an element far below the row maximum got a huge weight instead of ~0."""

    name = "real-softmax-exp-wraps-below-underflow"

    def kernel(self, op: Op, args: Sequence[Array], part: Partition,
               values: Mapping[int, Array]) -> list[Array] | None:
        if op.kind != "SoftMax":
            return None
        reference = run_op(op, args)
        axis = int(attrs(op).get("axis", 1))
        x = np.asarray(args[0], dtype=np.float64)
        shifted = x - np.max(x, axis=axis, keepdims=True)
        wrapped = np.where(shifted < -87.33, shifted + 256 * math.log(2), shifted)
        e = np.exp(wrapped)
        dst = e / np.sum(e, axis=axis, keepdims=True)
        finite = np.all(np.isfinite(x), axis=axis, keepdims=True)
        return [f32(np.where(finite, dst, reference[0])), *reference[1:]]


class BroadcastAxisMatchedBySize(OpKernels):
    """oneDNN 13d4939376a4 (graph compiler backend, first in v3.2). A binary op found the
    axes of a broadcast operand by matching dimension sizes and skipped its 1s, so an operand
    such as 1x3x1 against 3x3x3 was laid along the last axis instead of the middle one."""

    name = "real-broadcast-axis-matched-by-size"

    def kernel(self, op: Op, args: Sequence[Array], part: Partition,
               values: Mapping[int, Array]) -> list[Array] | None:
        if op.kind not in BINARY:
            return None
        x, y = np.asarray(args[0]), np.asarray(args[1])
        if y.ndim != x.ndim or y.size <= 1 or 1 not in y.shape or y.shape == x.shape:
            return None
        sizes = [d for d in y.shape if d != 1]
        placed: list[int] = []
        want = len(sizes) - 1
        for axis in range(x.ndim - 1, -1, -1):  # the bug: matched from the right by size
            if want >= 0 and x.shape[axis] == sizes[want]:
                placed.insert(0, axis)
                want -= 1
        if want >= 0:
            return None
        shape = [1] * x.ndim
        for axis, size in zip(placed, sizes):
            shape[axis] = size
        return run_op(op, [args[0], y.reshape(shape)])


class ChannelAxisDefaultDropped(OpKernels):
    """oneDNN f623d0f305f5 (graph compiler backend, first in v3.3). The axis of a per-channel
    Quantize or Dequantize was passed on only when the graph wrote it; an op relying on the
    default axis 1 ran with the backend's own choice, the last axis."""

    name = "real-channel-axis-default-dropped"
    written: frozenset[int] = frozenset()

    def partition(self, graph: Graph) -> list[Partition]:
        # A partition holds the finalized ops, the default axis filled in: remember which ops
        # wrote theirs.
        self.written = frozenset(op.id for op in graph.ops if "axis" in op.attrs)
        return super().partition(graph)

    def kernel(self, op: Op, args: Sequence[Array], part: Partition,
               values: Mapping[int, Array]) -> list[Array] | None:
        if op.kind not in ("Quantize", "Dequantize") or op.id in self.written \
                or attr(op, "qtype") != "per_channel":
            return None
        x = np.asarray(args[0])
        if x.ndim < 2 or x.shape[-1] != len(list(attr(op, "scales", []))):
            return None
        return run_op(with_attrs(op, axis=-1), args)


def _bf16(values: Array) -> Array:
    return np.asarray(values, dtype=np.float32).astype(ml_dtypes.bfloat16).astype(np.float32)


class Bf16SoftMaxInBf16(OpKernels):
    """oneDNN 6ad295da6923 (graph compiler backend, first in v3.4). A bf16 SoftMax ran its
    max, subtract, exp, sum and divide in bf16, rounding after every step (and accumulating
    the row sum in bf16), instead of in f32."""

    name = "real-bf16-softmax-in-bf16"

    def kernel(self, op: Op, args: Sequence[Array], part: Partition,
               values: Mapping[int, Array]) -> list[Array] | None:
        if op.kind != "SoftMax" or op.inputs[0].dtype is not DataType.bf16:
            return None
        reference = run_op(op, args)
        axis = int(attrs(op).get("axis", 1))
        x = np.moveaxis(_bf16(args[0]), axis, -1)
        peak = np.max(x, axis=-1, keepdims=True)
        e = _bf16(np.exp(_bf16(x - peak)))
        total = np.zeros((*e.shape[:-1], 1), dtype=np.float32)
        for i in range(e.shape[-1]):
            total = _bf16(total + e[..., i:i + 1])
        dst = np.moveaxis(_bf16(e / total), -1, axis)
        finite = np.isfinite(reference[0])
        return [f32(np.where(finite, dst, reference[0])), *reference[1:]]


class Bf16TanhLosesSign(OpKernels):
    """oneDNN e77b160a290b (graph compiler backend, first in v3.2). Tanh computed on |x| and
    restored the sign with a mask meant for f32 lanes; on bf16 input the sign was lost, so
    negative inputs gave positive results."""

    name = "real-bf16-tanh-loses-sign"

    def kernel(self, op: Op, args: Sequence[Array], part: Partition,
               values: Mapping[int, Array]) -> list[Array] | None:
        if op.kind != "Tanh" or op.inputs[0].dtype is not DataType.bf16:
            return None
        return [f32(np.tanh(np.abs(np.asarray(args[0], dtype=np.float64))))]


class ReduceNormIgnoresAxesInput(OpKernels):
    """oneDNN 4e2c08aced06 (graph compiler backend, first in v3.4). ReduceL1, ReduceL2 and
    the sums built from them handed every op input to the inner reduction, the axes tensor
    included, so axes given as an input were not the ones reduced (here: every axis is)."""

    name = "real-reduce-norm-ignores-axes-input"

    def kernel(self, op: Op, args: Sequence[Array], part: Partition,
               values: Mapping[int, Array]) -> list[Array] | None:
        if op.kind not in ("ReduceL1", "ReduceL2") or len(args) < 2:
            return None
        x = np.asarray(args[0], dtype=np.float64)
        keep = bool(attrs(op).get("keep_dims", False))
        norm = np.sum(np.abs(x)) if op.kind == "ReduceL1" else np.sqrt(np.sum(x * x))
        shape = op.outputs[0].shape
        out = np.full(tuple(shape) if shape is not None else
                      ((1,) * x.ndim if keep else ()), norm)
        return [f32(out)]


class MatMulWeightScalesOnLastAxis(OpKernels):
    """oneDNN b2d9f924aa03 (first in v3.5). The int8 MatMul kernel applied per-channel weight
    scales along the last dimension whatever axis the weights' Dequantize named; the fix
    refuses the other axes."""

    name = "real-matmul-weight-scales-on-last-axis"

    def kernel(self, op: Op, args: Sequence[Array], part: Partition,
               values: Mapping[int, Array]) -> list[Array] | None:
        if op.kind != "Dequantize" or attr(op, "qtype") != "per_channel":
            return None
        users = [(o, p) for o in part.ops for p, t in enumerate(o.inputs)
                 if t.id == op.outputs[0].id]
        if not any(o.kind == "MatMul" and p == 1 for o, p in users):
            return None
        full = attrs(op)
        x = np.asarray(args[0], dtype=np.float64)
        if x.ndim < 2 or int(full["axis"]) % x.ndim == x.ndim - 1:
            return None
        scales = np.asarray(full["scales"], dtype=np.float64)
        zps = np.asarray(full.get("zps") or [0] * scales.size, dtype=np.float64)
        index = np.arange(x.shape[-1]) % scales.size
        return [f32((x - zps[index]) * scales[index])]


def _merged(graph: Graph, parts: list[Partition], groups: dict[int, list[Op]],
            absorbed: set[int], drop: set[int] | None = None) -> list[Partition]:
    result = []
    for p in parts:
        if p.id in absorbed:
            continue
        ins, outs = external_tensors(graph, groups[p.id])
        outs = tuple(t for t in outs if t.id not in (drop or set()))
        result.append(Partition(p.id, groups[p.id], ins, outs, p.pattern))
    return result


class RepetitionThroughFanOut(OpKernels):
    """oneDNN 12f8e572fdd8 (first in v3.1). The matcher extended a post-op repetition past an
    op whose output had other consumers outside the pattern, and the fused partition did not
    hand that intermediate out, so its other readers lost their input."""

    name = "real-repetition-through-fan-out"

    def partition(self, graph: Graph) -> list[Partition]:
        graph, parts, owner, groups = reference_groups(graph)
        absorbed: set[int] = set()
        dropped: set[int] = set()
        for p in parts:
            if p.pattern is None or p.id in absorbed:
                continue
            out = groups[p.id][-1].outputs[0]
            users = graph.consumers.get(out.id, ())
            if len(users) < 2:
                continue
            nxt = next((owner[u.id] for u, _ in users if u.kind in POST_OPS
                        and len(owner[u.id].ops) == 1 and owner[u.id].id not in absorbed
                        and owner[u.id].id != p.id), None)
            if nxt is not None:
                groups[p.id] += list(nxt.ops)
                absorbed.add(nxt.id)
                dropped.add(out.id)
        return _merged(graph, parts, groups, absorbed, dropped)


class SoftMaxPostOpsOnNarrowOutput(OpKernels):
    """oneDNN 1999f88fdf05 (first in v3.11). SoftMax was fused with its unary/binary
    post-ops even when its output was bf16 or f16, which the pattern forbids; the fused kernel
    then skipped the rounding of the SoftMax result to that type."""

    name = "real-softmax-post-ops-on-narrow-output"

    def partition(self, graph: Graph) -> list[Partition]:
        graph, parts, owner, groups = reference_groups(graph)
        absorbed: set[int] = set()
        for p in parts:
            head = groups[p.id][0]
            if head.kind != "SoftMax" or head.outputs[0].dtype is DataType.f32 \
                    or len(groups[p.id]) != 1:
                continue
            while True:
                users = graph.consumers.get(groups[p.id][-1].outputs[0].id, ())
                if len(users) != 1 or users[0][0].kind not in POST_OPS:
                    break
                nxt = owner[users[0][0].id]
                if len(nxt.ops) != 1 or nxt.id in absorbed or nxt.id == p.id:
                    break
                groups[p.id] += list(nxt.ops)
                absorbed.add(nxt.id)
        return _merged(graph, parts, groups, absorbed)


class ConvTransposeOutputQuantizeUnmatched(OpKernels):
    """oneDNN 5a0b2347b475 (first in v3.4). The int8 ConvTranspose pattern appended its
    optional output Quantize to the wrong sub-pattern, so that Quantize never joined the
    partition and ran on its own."""

    name = "real-convtranspose-output-quantize-unmatched"

    def partition(self, graph: Graph) -> list[Partition]:
        graph = graph.finalize()
        result: list[Partition] = []
        for p in partition(graph):
            ops = list(p.ops)
            if len(ops) > 1 and ops[-1].kind == "Quantize" and any(
                    o.kind == "ConvTranspose" for o in ops):
                rest = ops[:-1]
                ins, outs = external_tensors(graph, rest)
                result.append(Partition(p.id, rest, ins, outs, p.pattern))
                q = ops[-1]
                qin, qout = external_tensors(graph, [q])
                result.append(Partition(p.id + 100000, [q], qin, qout))
            else:
                result.append(p)
        return result


def _negative_pads(graph: Graph, op: Op) -> bool:
    return any(int(v) < 0 for key in ("pads_begin", "pads_end") for v in attr(op, key, ()))


class NegativePadsAccepted(OpKernels):
    """oneDNN 8e874fe6f8d7 (first in v3.4). Convolution and pooling ops took pads_begin and
    pads_end without checking them, so negative padding was accepted."""

    name = "real-negative-pads-accepted"
    def partition(self, graph: Graph) -> list[Partition]:
        return accept_where(graph, None, frozenset({"Convolution", "ConvTranspose", "AvgPool",
                                           "MaxPool"}), _negative_pads)


def _dilations_length(graph: Graph, op: Op) -> bool:
    dil = attr(op, "dilations")
    return isinstance(dil, (list, tuple)) and len(dil) != len(attr(op, "kernel", ()))


class MaxPoolDilationsLengthUnchecked(OpKernels):
    """oneDNN 561d996658ea (first in v3.5). MaxPool did not check that its dilations list is
    as long as its kernel list, so a graph with a dilation per missing or extra axis was
    accepted."""

    name = "real-maxpool-dilations-length-unchecked"
    def partition(self, graph: Graph) -> list[Partition]:
        return accept_where(graph, None, frozenset({"MaxPool"}), _dilations_length)

