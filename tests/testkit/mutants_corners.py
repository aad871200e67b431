"""Planted broken backends that only the corners of the spec space catch.

Each is the reference with one bug that shows only where the generator draws a corner the
schemas allow but a plain case never reaches: a convexity cut the partitioner must make,
SoftMax's optional stats output, 1-D MatMul operands, per-channel zero points that are
non-zero and differ between channels, SoftPlus with a negative beta, and a bf16/f16 ReduceProd
whose products are not exact in that type. tests/conformance/test_mutation.py runs them as
``testkit.mutants_corners:<Class>`` (see tests/testkit/mutants.py for the others).
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from typing import Any, ClassVar

import ml_dtypes
import numpy as np

from fusionspec.backend import CompiledPartition, Device
from fusionspec.reference import execute
from fusionspec.reference.backend import ReferenceBackend
from fusionspec.reference.matcher import Matcher
from fusionspec.reference.partitioner import external_tensors, plan_partitions
from fusionspec.spec.dtypes import DataType
from fusionspec.spec.graph import Graph, Partition
from fusionspec.spec.types import Array

from .mutants import Maker, _Compiled, _f32, _swapped, _SwapsOps


@contextmanager
def _convexity_ignored() -> Iterator[None]:
    saved = Matcher._convex
    Matcher._convex = lambda self, ids: True  # type: ignore[method-assign]
    try:
        yield
    finally:
        Matcher._convex = saved  # type: ignore[method-assign]


class IgnoresConvexity(ReferenceBackend):
    """Matches patterns without the convexity check: a chain whose base op's second output
    leaves it and comes back through another op is fused whole (the partitions then depend on
    each other in a cycle)."""

    name = "ignores-convexity"

    def partition(self, graph: Graph) -> list[Partition]:
        graph = graph.finalize()
        with _convexity_ignored():
            plan = plan_partitions(graph)
        result = []
        for index, (group, cand) in enumerate(zip(plan.groups, plan.chosen)):
            ins, outs = external_tensors(graph, group)
            result.append(Partition(index, group, ins, outs,
                                    cand.entry.id if cand is not None else None))
        return result


def _stats_without_max(original: Callable[..., Any]) -> Callable[..., Any]:
    def softmax(src: Array, *, axis: int, mode: str) -> tuple[Array, Array]:
        dst, stats = original(src, axis=axis, mode=mode)
        x = np.asarray(src, dtype=np.float64)
        with np.errstate(all="ignore"):
            peak = np.max(x, axis=axis, keepdims=True)
        # the bug: the shifted log-sum-exp is returned, without adding the maximum back
        return dst, _f32(np.asarray(stats, dtype=np.float64) - peak)
    return softmax


class SoftMaxStatsWithoutMax(_SwapsOps):
    """SoftMax's stats output is log(sum(exp(x - max))), the maximum never added back."""

    name = "softmax-stats-without-max"
    swaps: ClassVar[Mapping[str, Maker]] = {"SoftMax": _stats_without_max}


def _first_matrix(array: Array) -> Array:
    """`array` with every matrix of its batch replaced by the first one."""
    first = array[(0,) * (array.ndim - 2)]
    return np.broadcast_to(first, array.shape).copy()


def _vector_path_ignores_batch(original: Callable[..., Any]) -> Callable[..., Any]:
    def matmul(src: Array, weights: Array, bias: Array | None = None, /,
               **attrs: Any) -> Array:
        a, b = np.asarray(src), np.asarray(weights)
        # the bug: the matrix-vector path reads the first matrix of a batch for every batch
        if a.ndim == 1 and b.ndim > 2:
            b = _first_matrix(b)
        elif b.ndim == 1 and a.ndim > 2:
            a = _first_matrix(a)
        args = (a, b) if bias is None else (a, b, bias)
        result: Array = original(*args, **attrs)
        return result
    return matmul


class MatMulVectorIgnoresBatch(_SwapsOps):
    """A 1-D MatMul operand against a batched matrix uses the batch's first matrix only."""

    name = "matmul-vector-ignores-batch"
    swaps: ClassVar[Mapping[str, Maker]] = {"MatMul": _vector_path_ignores_batch}


def _first_zero_point(original: Callable[..., Any]) -> Callable[..., Any]:
    def quant(src: Array, *, qtype: str, axis: int, scales: Sequence[float] = (),
              zps: Sequence[int] | None = None, **rest: Any) -> Array:
        if qtype == "per_channel" and zps:
            zps = (zps[0],) * len(zps)  # the bug: one zero point read for every channel
        result: Array = original(src, qtype=qtype, axis=axis, scales=scales, zps=zps, **rest)
        return result
    return quant


class PerChannelZeroPointOnce(_SwapsOps):
    """Per-channel Quantize/Dequantize apply the first channel's zero point to all channels."""

    name = "per-channel-zero-point-once"
    swaps: ClassVar[Mapping[str, Maker]] = {"Quantize": _first_zero_point,
                                            "Dequantize": _first_zero_point}


#: The f32 exp overflow bound (as in the reference's SoftPlus).
_BOUND = 88.72283172607421875


def _softplus_guard_by_division(original: Callable[..., Any]) -> Callable[..., Any]:
    def softplus(src: Array, *, beta: float) -> Array:
        if beta > 0:
            result: Array = original(src, beta=beta)
            return result
        x = np.asarray(src, dtype=np.float64)
        with np.errstate(over="ignore"):
            smooth = np.log1p(np.exp(np.minimum(x * beta, _BOUND))) / beta
        # the bug: the guard, written x > bound/beta, flips with a negative beta
        return _f32(np.where(x > _BOUND / beta, x, smooth))
    return softplus


class SoftPlusGuardFlipsForNegativeBeta(_SwapsOps):
    """SoftPlus switches to x where x > bound/beta: right for beta > 0, but for a negative
    beta nearly every input takes the linear branch."""

    name = "softplus-guard-flips-for-negative-beta"
    swaps: ClassVar[Mapping[str, Maker]] = {"SoftPlus": _softplus_guard_by_division}


_NARROW = {DataType.f16: np.float16, DataType.bf16: ml_dtypes.bfloat16}


def narrow_fold(narrow: Any, start: float,
                step: Callable[[Array, Array], Array],
                finish: Callable[[Array], Array] = _f32) -> Callable[..., Any]:
    """A reduction whose running value is held in `narrow` (the bug the narrow-accumulator
    mutants share): it starts at `start`, takes ``step(accumulator as f32, next f32 element)``
    rounded to `narrow` for each reduced element, and ends with `finish` of the f32 value."""
    def reduce(src: Array, axes_input: Array | None = None, *, axes: Sequence[int],
               keep_dims: bool) -> Array:
        x = np.asarray(src, dtype=np.float32)
        given = [int(a) for a in (np.asarray(axes_input).reshape(-1) if axes_input is not None
                                  else axes)]
        reduced = sorted({a % x.ndim for a in given})
        kept = [a for a in range(x.ndim) if a not in reduced]
        rows = np.transpose(x, (*kept, *reduced)).reshape(*[x.shape[a] for a in kept], -1)
        acc = np.full(rows.shape[:-1], start, dtype=narrow)
        for i in range(rows.shape[-1]):
            acc = step(acc.astype(np.float32), rows[..., i]).astype(narrow)
        out = finish(acc.astype(np.float32))
        if keep_dims:
            out = out.reshape([1 if a in reduced else d for a, d in enumerate(x.shape)])
        return _f32(out)
    return reduce


def _narrow_product(narrow: Any) -> Callable[..., Any]:
    # the bug: the running product is held in the narrow type, rounded at every step
    return narrow_fold(narrow, 1.0, lambda acc, x: acc * x)


class NarrowReduction(ReferenceBackend):
    """The reference with one reduction (`kind`) swapped for `narrow_fn(narrow type)` wherever
    its input is bf16 or f16: the base of the mutants that accumulate in the narrow type."""

    kind = ""

    def narrow_fn(self, narrow: Any) -> Callable[..., Any]:
        raise NotImplementedError  # each mutant names its narrow computation

    def compile(self, part: Partition, device: Device) -> CompiledPartition:
        narrow = next((_NARROW[op.inputs[0].dtype] for op in part.ops
                       if op.kind == self.kind and op.inputs[0].dtype in _NARROW), None)
        if narrow is None:
            return super().compile(part, device)

        def run(inputs: Mapping[int, Array]) -> dict[int, Array]:
            with _swapped(self.kind, self.narrow_fn(narrow)):
                return execute(part, inputs)
        return _Compiled(part, run)


class ReduceProdNarrowAccumulator(NarrowReduction):
    """A bf16/f16 ReduceProd keeps its running product in bf16/f16 instead of f32."""

    name = "reduce-prod-narrow-accumulator"
    kind = "ReduceProd"

    def narrow_fn(self, narrow: Any) -> Callable[..., Any]:
        return _narrow_product(narrow)
