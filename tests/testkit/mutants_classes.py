"""Planted broken backends that only the coverage model's value classes catch.

Each is the reference with one bug in how it reads an attribute value class, an optional port
or a rank the schemas allow but plain cases rarely reach: a zero, negative or positive bound, a
zero epsilon, per-channel zero points that are not 0, SoftMax's stats output, the axes input of
a reduction, a 1-D MatMul src with a bias. tests/conformance/test_mutation.py runs them as
``testkit.mutants_classes:<Class>`` (the corners of the issue that drew them in are in
tests/testkit/mutants_corners.py).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import Any, ClassVar

import numpy as np

from fusionspec.reference.backend import ReferenceBackend
from fusionspec.reference.execute import single_op_partitions
from fusionspec.reference.partitioner import partition
from fusionspec.spec.graph import Graph, Partition
from fusionspec.spec.types import Array

from .mutants import Maker, _f32, _SwapsOps


def _dequantize_zps(change: Callable[[Sequence[int]], Sequence[int]]) -> Maker:
    def make(original: Callable[..., Any]) -> Callable[..., Any]:
        def dequantize(src: Array, *, qtype: str, axis: int, scales: Sequence[float] = (),
                       zps: Sequence[int] | None = None) -> Array:
            if qtype == "per_channel" and zps:
                zps = tuple(change(zps))
            result: Array = original(src, qtype=qtype, axis=axis, scales=scales, zps=zps)
            return result
        return dequantize
    return make


class PerChannelZeroPointAdded(_SwapsOps):
    """Per-channel Dequantize adds the zero points instead of subtracting them."""

    name = "per-channel-zero-point-added"
    swaps: ClassVar[Mapping[str, Maker]] = {
        "Dequantize": _dequantize_zps(lambda zps: [-z for z in zps])}


class PerChannelZeroPointIgnored(_SwapsOps):
    """Per-channel Dequantize takes every zero point for 0 (as oneDNN's CPU kernels demand)."""

    name = "per-channel-zero-point-ignored"
    swaps: ClassVar[Mapping[str, Maker]] = {
        "Dequantize": _dequantize_zps(lambda zps: [0] * len(zps))}


def _with_attr(kind_attr: str, change: Callable[[float], float]) -> Maker:
    """A swap that calls the original with one attribute changed by `change`."""
    def make(original: Callable[..., Any]) -> Callable[..., Any]:
        def op(src: Array, **attrs: Any) -> Array:
            attrs[kind_attr] = change(float(attrs[kind_attr]))
            result: Array = original(src, **attrs)
            return result
        return op
    return make


class SoftPlusAbsBeta(_SwapsOps):
    """SoftPlus uses |beta|: a negative beta is read as positive."""

    name = "softplus-abs-beta"
    swaps: ClassVar[Mapping[str, Maker]] = {"SoftPlus": _with_attr("beta", abs)}


class LeakyReLUAbsAlpha(_SwapsOps):
    """LeakyReLU uses |alpha|: a negative slope is read as positive."""

    name = "leaky-relu-abs-alpha"
    swaps: ClassVar[Mapping[str, Maker]] = {"LeakyReLU": _with_attr("alpha", abs)}


class LeakyReLUZeroAlphaAsDefault(_SwapsOps):
    """LeakyReLU takes alpha = 0 for "unset" and uses 0.01."""

    name = "leaky-relu-zero-alpha-as-default"
    swaps: ClassVar[Mapping[str, Maker]] = {
        "LeakyReLU": _with_attr("alpha", lambda a: a or 0.01)}


class EluAlphaClamped(_SwapsOps):
    """Elu clamps alpha to be non-negative (a negative alpha becomes 0)."""

    name = "elu-alpha-clamped"
    swaps: ClassVar[Mapping[str, Maker]] = {"Elu": _with_attr("alpha", lambda a: max(a, 0.0))}


def _epsilon_or_default(original: Callable[..., Any]) -> Callable[..., Any]:
    def batchnorm(*args: Array, epsilon: float, data_format: str) -> Array:
        result: Array = original(*args, epsilon=epsilon or 1e-5, data_format=data_format)
        return result
    return batchnorm


class BatchNormZeroEpsilonAsDefault(_SwapsOps):
    """BatchNormInference takes epsilon = 0 for "unset" and uses 1e-5."""

    name = "batchnorm-zero-epsilon-as-default"
    swaps: ClassVar[Mapping[str, Maker]] = {"BatchNormInference": _epsilon_or_default}


def _pow_loop(original: Callable[..., Any]) -> Callable[..., Any]:
    def power(src: Array, *, beta: float) -> Array:
        if beta >= 0 and float(beta).is_integer():
            # the bug: a product of beta copies, which leaves 1 for a negative exponent
            result = np.ones_like(np.asarray(src, dtype=np.float32))
            for _ in range(int(beta)):
                result = result * _f32(src)
            return _f32(result)
        if beta < 0:
            return _f32(np.ones_like(np.asarray(src, dtype=np.float32)))
        value: Array = original(src, beta=beta)
        return value
    return power


class PowIntegerLoop(_SwapsOps):
    """Pow as a loop of multiplications: a negative exponent runs it zero times (gives 1)."""

    name = "pow-integer-loop"
    swaps: ClassVar[Mapping[str, Maker]] = {"Pow": _pow_loop}


def _pow_zero_as_identity(original: Callable[..., Any]) -> Callable[..., Any]:
    def power(src: Array, *, beta: float) -> Array:
        if beta in (0.0, 1.0):  # the bug: the fast path meant for beta = 1 takes 0 too
            return _f32(src)
        result: Array = original(src, beta=beta)
        return result
    return power


class PowZeroExponentAsIdentity(_SwapsOps):
    """Pow's shortcut for beta = 1 (x itself) also fires for beta = 0, where x^0 = 1."""

    name = "pow-zero-exponent-as-identity"
    swaps: ClassVar[Mapping[str, Maker]] = {"Pow": _pow_zero_as_identity}


def _clamp_bounded_relu(original: Callable[..., Any]) -> Callable[..., Any]:
    def clamp(src: Array, *, min: float, max: float) -> Array:
        # the bug: a non-negative min maps to a bounded ReLU, whose lower bound is 0
        result: Array = original(src, min=0.0 if min >= 0 else min, max=max)
        return result
    return clamp


class ClampAsBoundedReLU(_SwapsOps):
    """Clamp with min >= 0 runs as a bounded ReLU: everything below max is clipped at 0."""

    name = "clamp-as-bounded-relu"
    swaps: ClassVar[Mapping[str, Maker]] = {"Clamp": _clamp_bounded_relu}


def _stats_log2(original: Callable[..., Any]) -> Callable[..., Any]:
    def softmax(src: Array, *, axis: int, mode: str) -> tuple[Array, Array]:
        dst, stats = original(src, axis=axis, mode=mode)
        return dst, _f32(np.asarray(stats, dtype=np.float64) / np.log(2.0))
    return softmax


class SoftMaxStatsInBase2(_SwapsOps):
    """SoftMax's stats output is the log-sum-exp in base 2 (an exp2 kernel's scale left in)."""

    name = "softmax-stats-in-base-2"
    swaps: ClassVar[Mapping[str, Maker]] = {"SoftMax": _stats_log2}


class StatsOutputBlocksFusion(ReferenceBackend):
    """Leaves a graph with a SoftMax whose stats output is requested unfused."""

    name = "stats-output-blocks-fusion"

    def partition(self, graph: Graph) -> list[Partition]:
        graph = graph.finalize()
        if any(op.kind == "SoftMax" and len(op.outputs) > 1 for op in graph.ops):
            return single_op_partitions(graph)
        return partition(graph)


def _mean_over_everything(original: Callable[..., Any]) -> Callable[..., Any]:
    def reduce_mean(src: Array, axes_input: Array | None = None, *, axes: Sequence[int],
                    keep_dims: bool) -> Array:
        result: Array = original(src, axes_input, axes=axes, keep_dims=keep_dims)
        if axes_input is None:
            return result
        # the bug: the axes-input path divides by every element, not by the reduced ones,
        # which divides the right mean once more by the number of output elements
        groups = max(np.asarray(result).size, 1)
        return _f32(np.asarray(result, dtype=np.float64) / groups)
    return reduce_mean


class ReduceMeanAxesInputCountsAll(_SwapsOps):
    """ReduceMean with its axes from the input divides by the element count of the whole src
    instead of the count of the reduced axes."""

    name = "reduce-mean-axes-input-counts-all"
    swaps: ClassVar[Mapping[str, Maker]] = {"ReduceMean": _mean_over_everything}


def _vector_drops_bias(original: Callable[..., Any]) -> Callable[..., Any]:
    def matmul(src: Array, weights: Array, bias: Array | None = None, /,
               **attrs: Any) -> Array:
        if np.asarray(src).ndim == 1:
            bias = None  # the bug: the vector-times-matrix path never adds the bias
        args = (src, weights) if bias is None else (src, weights, bias)
        result: Array = original(*args, **attrs)
        return result
    return matmul


class MatMulVectorDropsBias(_SwapsOps):
    """A MatMul with a 1-D src (vector times matrix) leaves out its bias input."""

    name = "matmul-vector-drops-bias"
    swaps: ClassVar[Mapping[str, Maker]] = {"MatMul": _vector_drops_bias}
