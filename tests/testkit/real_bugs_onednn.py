"""Real bugs of oneDNN's Graph API implementation (its dnnl backend and its graph compiler
backend), each re-created as a broken backend of these patterns.

Every class is the reference with the one mistake the fix removed, written the way the kernel
or pass got it wrong. The docstring names the fixing commit and the first release holding it;
tests/testkit/real_bugs.py lists them with the patterns and status the suite must give, and
tests/conformance/test_real_bugs.py runs them.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence

import numpy as np

from fusionspec.reference.execute import run_op
from fusionspec.reference.ops import pool as pool_ops
from fusionspec.reference.ops._layout import at_spatial, tap_slices, taps
from fusionspec.reference.partitioner import external_tensors
from fusionspec.spec.categories import REDUCTION
from fusionspec.spec.dtypes import DataType
from fusionspec.spec.errors import GraphRule
from fusionspec.spec.graph import Graph, Op, Partition
from fusionspec.spec.shapes import spatial_dims
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

ONEDNN = "https://github.com/uxlfoundation/oneDNN/commit/"


def _produced_inside(part: Partition, tensor_id: int) -> bool:
    return any(t.id == tensor_id for op in part.ops for t in op.outputs)


def _consumer(part: Partition, tensor_id: int) -> tuple[Op, int] | None:
    for op in part.ops:
        for port, t in enumerate(op.inputs):
            if t.id == tensor_id:
                return op, port
    return None


class SubDivFusedOnSecondOperand(OpKernels):
    """oneDNN 8f143dc0a76e (first in v3.10). A Subtract or Divide whose second operand is
    the chain was still fused as a binary post-op; a post-op always puts the chain first, so
    the fused kernel computed chain - other (or chain / other) instead of other - chain."""

    name = "real-sub-div-on-second-operand"

    def partition(self, graph: Graph) -> list[Partition]:
        graph, parts, owner, merged = reference_groups(graph)
        absorbed: set[int] = set()
        for p in parts:
            if p.pattern is None or p.id in absorbed:
                continue
            users = graph.consumers.get(p.ops[-1].outputs[0].id, ())
            if len(users) != 1:
                continue
            user, port = users[0]
            nxt = owner[user.id]
            if user.kind in ("Subtract", "Divide") and port == 1 and len(nxt.ops) == 1 \
                    and nxt.id != p.id and nxt.id not in absorbed:
                merged[p.id].append(user)
                absorbed.add(nxt.id)
        result = []
        for p in parts:
            if p.id not in absorbed:
                ins, outs = external_tensors(graph, merged[p.id])
                result.append(Partition(p.id, merged[p.id], ins, outs, p.pattern))
        return result

    def kernel(self, op: Op, args: Sequence[Array], part: Partition,
               values: Mapping[int, Array]) -> list[Array] | None:
        if op.kind in ("Subtract", "Divide") and _produced_inside(part, op.inputs[1].id) \
                and not _produced_inside(part, op.inputs[0].id):
            swapped = Op(op.id, op.kind, (op.inputs[1], op.inputs[0]), op.outputs, op.attrs)
            return run_op(swapped, [args[1], args[0]])
        return None


class SoftPlusIntegerBeta(OpKernels):
    """oneDNN 30ed3a2af53c (first in v3.1). SoftPlus read its beta attribute as an integer,
    so a fractional beta was truncated toward zero before the kernel used it."""

    name = "real-softplus-integer-beta"

    def kernel(self, op: Op, args: Sequence[Array], part: Partition,
               values: Mapping[int, Array]) -> list[Array] | None:
        if op.kind != "SoftPlus":
            return None
        beta = float(int(float(attr(op, "beta", 1.0))))  # the bug: an int64 attribute
        x = np.asarray(args[0], dtype=np.float64)
        if beta == 0:
            return [f32(np.log1p(np.exp(0 * x)) / beta)]
        bound = 88.72283935546875
        return [f32(np.where(x * beta < bound,
                             np.log1p(np.exp(np.minimum(x * beta, bound))) / beta, x))]


class ReciprocalMultiplyAsDivide(OpKernels):
    """oneDNN 3cb934aea8d0 (first in v3.6). Reciprocal followed by Multiply was rewritten
    into one Divide; x / y rounds once where x * (1/y) rounds twice, and 1/y overflows for
    tiny y where x / y may not."""

    name = "real-reciprocal-multiply-as-divide"

    def kernel(self, op: Op, args: Sequence[Array], part: Partition,
               values: Mapping[int, Array]) -> list[Array] | None:
        if op.kind != "Multiply":
            return None
        recip = next((o for o in part.ops if o.kind == "Reciprocal"
                      and o.outputs[0].id in {t.id for t in op.inputs}), None)
        if recip is None:
            return None
        port = [t.id for t in op.inputs].index(recip.outputs[0].id)
        other = np.asarray(args[1 - port], dtype=np.float32)
        divisor = np.asarray(values[recip.inputs[0].id], dtype=np.float32)
        return [f32(other / divisor)]


class U8WeightsShiftedTheWrongWay(OpKernels):
    """oneDNN f7a56ef2c3da (first in v3.1). For a u8 x u8 MatMul the u8 weights were moved
    to s8 by subtracting 128, but the compensating zero point was written as +128 instead of
    -128, so every dequantized weight came out 256 steps too low."""

    name = "real-u8-weights-shifted-the-wrong-way"

    def kernel(self, op: Op, args: Sequence[Array], part: Partition,
               values: Mapping[int, Array]) -> list[Array] | None:
        if op.kind != "Dequantize" or op.inputs[0].dtype is not DataType.u8:
            return None
        user = _consumer(part, op.outputs[0].id)
        if user is None or user[0].kind != "MatMul" or user[1] != 1:
            return None
        scales = list(attr(op, "scales", [1.0]))
        zps = list(attr(op, "zps", [0] * len(scales)))
        return replaced_zps(op, args, [int(z) + 256 for z in zps])


def replaced_zps(op: Op, args: Sequence[Array], zps: list[int]) -> list[Array]:
    return run_op(with_attrs(op, zps=zps), args)


class GroupedConvWeightScalesMask(OpKernels):
    """oneDNN 4235c0a1ce0f (first in v3.1). For a grouped convolution the per-channel weight
    scales were given a mask on the wrong dimension of the grouped weights, so each group
    reused the first group's scales (and zero points)."""

    name = "real-grouped-conv-weight-scales-mask"

    def kernel(self, op: Op, args: Sequence[Array], part: Partition,
               values: Mapping[int, Array]) -> list[Array] | None:
        if op.kind != "Dequantize" or attr(op, "qtype") != "per_channel":
            return None
        user = _consumer(part, op.outputs[0].id)
        if user is None or user[0].kind not in ("Convolution", "ConvTranspose") or user[1] != 1:
            return None
        groups = int(attr(user[0], "groups", 1))
        scales = list(attr(op, "scales"))
        if groups <= 1 or len(scales) % groups:
            return None
        per_group = len(scales) // groups
        zps = list(attr(op, "zps", [0] * len(scales)))
        return run_op(with_attrs(op, scales=[scales[i % per_group] for i in range(len(scales))],
                                 zps=[zps[i % per_group] for i in range(len(zps))]), args)


class ReductionOutputShapeUnchecked(OpKernels):
    """oneDNN d638c5d0c49a (first in v3.3). Shape inference of a reduction returned early
    when the output shape was already given, so a declared output shape that contradicts the
    reduction was accepted."""

    name = "real-reduction-output-shape-unchecked"
    def partition(self, graph: Graph) -> list[Partition]:
        return accept_where(graph, GraphRule.shape_output, frozenset(REDUCTION))


class GivenOutputShapeUnchecked(OpKernels):
    """oneDNN 7506c4d9d7be (first in v3.4). BiasAdd and Interpolate (among others) skipped
    shape inference whenever the graph already declared their output shape, so a wrong
    declared shape went through validation."""

    name = "real-given-output-shape-unchecked"
    def partition(self, graph: Graph) -> list[Partition]:
        return accept_where(graph, GraphRule.shape_output, frozenset({"BiasAdd", "Interpolate"}))


class MaxPoolZeroPadding(OpKernels):
    """oneDNN 77e6f99dabc1 (graph compiler backend, first in v3.4). The fused MaxPool kernel
    took the maximum with 0 over the padded border, as if the padding held zeros: a window of
    negative values that reaches the border gave 0."""

    name = "real-maxpool-zero-padding"

    def kernel(self, op: Op, args: Sequence[Array], part: Partition,
               values: Mapping[int, Array]) -> list[Array] | None:
        if op.kind != "MaxPool":
            return None
        given = attrs(op)
        kernel = tuple(int(k) for k in given["kernel"])
        dil = tuple(int(d) for d in given.get("dilations") or ()) or (1,) * len(kernel)
        if len(dil) != len(kernel):
            dil = (1,) * len(kernel)
        strides = tuple(int(s) for s in given["strides"])
        given["dilations"] = dil
        src = np.asarray(args[0], dtype=np.float32)
        xp, dst_shape, _ = pool_ops._padded("MaxPool", src, given, kernel, strides, dil, 0.0)
        fmt = str(given["data_format"])
        out_sp = spatial_dims(dst_shape, fmt)
        best = np.full(dst_shape, -np.inf, dtype=np.float32)
        for tap in taps(kernel):
            np.fmax(best, xp[at_spatial(fmt, xp.ndim, tap_slices(tap, out_sp, strides, dil))],
                    out=best)
        return [best]


class LogOfNaNIsFinite(OpKernels):
    """oneDNN c4256398748f (graph compiler backend, first in v3.2). The vectorized Log split
    its input into exponent and mantissa without a NaN check, so a quiet NaN came out as a
    finite number (its all-ones exponent read as 2^128)."""

    name = "real-log-of-nan-is-finite"

    def kernel(self, op: Op, args: Sequence[Array], part: Partition,
               values: Mapping[int, Array]) -> list[Array] | None:
        if op.kind != "Log":
            return None
        x = np.asarray(args[0], dtype=np.float64)
        garbage = 128 * math.log(2) + math.log(1.5)
        return [f32(np.where(np.isnan(x), garbage, np.log(x)))]


class SaturateCastThroughInt32(OpKernels):
    """oneDNN 905af9cb0ff5 (graph compiler backend, first in v3.4). The f32 to u8/s8 cast
    rounded to s32 first and saturated afterwards; a value past the s32 range (or NaN) became
    INT_MIN there, so it saturated to the wrong end (-128 for s8, 0 for u8)."""

    name = "real-saturate-cast-through-int32"

    def kernel(self, op: Op, args: Sequence[Array], part: Partition,
               values: Mapping[int, Array]) -> list[Array] | None:
        dst = op.outputs[0].dtype
        if op.kind != "Quantize" or dst not in (DataType.u8, DataType.s8):
            return None
        x = np.asarray(args[0], dtype=np.float64)
        full = attrs(op)
        scale = np.asarray(full["scales"], dtype=np.float64)
        zp = np.asarray(full.get("zps") or [0] * scale.size, dtype=np.float64)
        if full.get("qtype") == "per_channel":
            shape = [1] * x.ndim
            shape[int(full["axis"]) % x.ndim] = scale.size
            scale, zp = scale.reshape(shape), zp.reshape(shape)
        a = x / scale + zp
        if dst is DataType.u8:
            a = np.where(np.isnan(a), a, np.maximum(a, 0.0))
        overflow = ~np.isfinite(a) | (np.abs(np.rint(a)) >= 2.0 ** 31)
        low, high = (0, 255) if dst is DataType.u8 else (-128, 127)
        out = np.where(overflow, low, np.clip(np.rint(a), low, high))
        return [out.astype(np.float32)]


def _zero_groups(graph: Graph, op: Op) -> bool:
    return bool(attr(op, "groups") == 0)


class ZeroGroupsAccepted(OpKernels):
    """oneDNN 48f6d31bc027 (first in v3.4). A convolution with groups = 0 passed validation
    and then divided by zero while its shapes were worked out; the fix rejects it."""

    name = "real-zero-groups-accepted"
    def partition(self, graph: Graph) -> list[Partition]:
        return accept_where(graph, None, frozenset({"Convolution", "ConvTranspose"}), _zero_groups)
