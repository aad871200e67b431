"""Planted broken backends: each is the reference with one realistic bug, written as a backend
author might write it.

The mutation-score test (tests/conformance/test_mutation.py) runs the conformance suite (ci
profile) on each and checks that the suite catches the bug with the status it deserves. They
cover the classes of bugs a suite can miss: fusion and partitioning mistakes, formulas, overflow
(a SoftMax that skips the max subtraction, an Exp guard at the wrong bound), special values
(NaN dropped, a zero divisor guarded), rounding modes (truncation instead of round to nearest
even), approximation constants, axis and attribute conventions (negative axes, alpha > 1,
align_corners), dtype acceptance and subnormals. They are loaded by the runner as
``testkit.mutants:<Class>`` with this folder on the path.
"""

from __future__ import annotations

import importlib
from collections.abc import Callable, Iterator, Mapping, Sequence
from contextlib import ExitStack, contextmanager
from typing import Any, ClassVar

import ml_dtypes
import numpy as np

from fusionspec.backend import CompiledPartition, Departure, Device
from fusionspec.reference import execute
from fusionspec.reference.backend import ReferenceBackend
from fusionspec.reference.dtypes import cast_to
from fusionspec.reference.execute import single_op_partitions
from fusionspec.reference.partitioner import external_tensors, partition
from fusionspec.reference.registry import REGISTRY, OpImpl
from fusionspec.spec.categories import BINARY, UNARY
from fusionspec.spec.dtypes import DataType
from fusionspec.spec.errors import GraphError, GraphRule
from fusionspec.spec.graph import Graph, LogicalTensor, Op, Partition
from fusionspec.spec.types import Array


@contextmanager
def _swapped(kind: str, fn: Callable[..., Any]) -> Iterator[None]:
    """Run with the reference implementation of `kind` replaced by `fn`."""
    saved = REGISTRY[kind]
    REGISTRY[kind] = OpImpl(kind, fn, saved.wants_dst_dtype)
    try:
        yield
    finally:
        REGISTRY[kind] = saved


class _Compiled:
    def __init__(self, part: Partition, run: Callable[[Mapping[int, Array]], dict[int, Array]]
                 ) -> None:
        self.partition = part
        self.run = run

    def execute(self, inputs: Mapping[int, Array]) -> dict[int, Array]:
        return self.run(inputs)


class DropsLastPostOp(ReferenceBackend):
    """Partitions right, but the fused kernel forgets its last unary/binary post-op."""

    name = "drops-last-post-op"

    def compile(self, part: Partition, device: Device) -> CompiledPartition:
        last = part.ops[-1]
        if len(part.ops) < 2 or last.kind not in (*UNARY, *BINARY):
            return super().compile(part, device)
        rest = [op for op in part.ops if op is not last]
        before = last.inputs[0]

        def run(inputs: Mapping[int, Array]) -> dict[int, Array]:
            inner = Partition(part.id, rest, part.inputs, (before,))
            values = execute(inner, inputs)
            out = last.outputs[0]
            return {out.id: values[before.id].astype(execute_dtype(out.dtype.value))}
        return _Compiled(part, run)


def execute_dtype(name: str) -> Any:
    from fusionspec.reference.dtypes import numpy_dtype
    from fusionspec.spec.dtypes import DataType

    return numpy_dtype(DataType(name))


class NeverFuses(ReferenceBackend):
    """Every op in a partition of its own."""

    name = "never-fuses"

    def partition(self, graph: Graph) -> list[Partition]:
        return single_op_partitions(graph.finalize())


class FusesOneTooMany(ReferenceBackend):
    """Takes the op after each fused chain into the chain too (and computes it right)."""

    name = "fuses-one-too-many"

    def partition(self, graph: Graph) -> list[Partition]:
        graph = graph.finalize()
        parts = partition(graph)
        owner = {op.id: p for p in parts for op in p.ops}
        merged: dict[int, list[Any]] = {p.id: list(p.ops) for p in parts}
        absorbed: set[int] = set()
        for p in parts:
            if p.pattern is None or p.id in absorbed or len(p.ops) < 2:
                continue
            users = graph.consumers.get(p.ops[-1].outputs[0].id, ())
            if len(users) == 1:
                nxt = owner[users[0][0].id]
                if nxt.id != p.id and len(nxt.ops) == 1 and nxt.id not in absorbed:
                    merged[p.id] += list(nxt.ops)
                    absorbed.add(nxt.id)
        result = []
        for p in parts:
            if p.id in absorbed:
                continue
            ins, outs = external_tensors(graph, merged[p.id])
            result.append(Partition(p.id, merged[p.id], ins, outs, p.pattern))
        return result


def _quantize_half_away(src: Array, *, scales: tuple[float, ...], zps: tuple[int, ...] = (),
                        qtype: str = "per_tensor", axis: int = 1, dst_dtype: Any = None,
                        ) -> Array:
    scale = np.asarray(scales, dtype=np.float64)
    zp = np.asarray(zps or (0,) * len(scales), dtype=np.float64)
    if qtype == "per_channel":
        shape = [1] * src.ndim
        shape[axis % src.ndim] = scale.size
        scale, zp = scale.reshape(shape), zp.reshape(shape)
    value = np.nan_to_num(src.astype(np.float64) / scale + zp, nan=0.0)
    rounded = np.sign(value) * np.floor(np.abs(value) + 0.5)  # half away from zero
    low, high = (0, 255) if str(dst_dtype) == "u8" else (-128, 127)
    return np.clip(rounded, low, high).astype(np.uint8 if str(dst_dtype) == "u8" else np.int8)


class RoundsQuantizeHalfAway(ReferenceBackend):
    """Quantize rounds half away from zero instead of half to even."""

    name = "rounds-quantize-half-away"

    def compile(self, part: Partition, device: Device) -> CompiledPartition:
        def run(inputs: Mapping[int, Array]) -> dict[int, Array]:
            with _swapped("Quantize", _quantize_half_away):
                return execute(part, inputs)
        return _Compiled(part, run)


def _bias_add_channels_last(src: Array, bias: Array, *, data_format: str = "NXC") -> Array:
    # The bug: data_format is ignored and the bias is indexed along the last axis (cycling
    # through it when the lengths differ, as an unchecked kernel would).
    index = np.arange(src.shape[-1]) % bias.shape[0]
    return (src + bias[index]).astype(np.float32)


class IgnoresBiasAddDataFormat(ReferenceBackend):
    """BiasAdd always adds along the last axis, as if every tensor were NXC."""

    name = "ignores-biasadd-data-format"

    def compile(self, part: Partition, device: Device) -> CompiledPartition:
        def run(inputs: Mapping[int, Array]) -> dict[int, Array]:
            with _swapped("BiasAdd", _bias_add_channels_last):
                return execute(part, inputs)
        return _Compiled(part, run)


class GeluTanhForErf(ReferenceBackend):
    """GELU always uses the tanh approximation, even when gelu_erf is asked."""

    name = "gelu-tanh-for-erf"

    def compile(self, part: Partition, device: Device) -> CompiledPartition:
        gelu = REGISTRY["GELU"].fn

        def tanh_gelu(src: Array, *, mode: str = "gelu_erf") -> Array:
            result: Array = gelu(src, mode="gelu_tanh")
            return result

        def run(inputs: Mapping[int, Array]) -> dict[int, Array]:
            with _swapped("GELU", tanh_gelu):
                return execute(part, inputs)
        return _Compiled(part, run)


class AcceptsIllFormed(ReferenceBackend):
    """Skips validation: an ill-formed graph is partitioned one op per partition."""

    name = "accepts-ill-formed"

    def partition(self, graph: Graph) -> list[Partition]:
        try:
            return partition(graph)
        except GraphError:
            return single_op_partitions(graph)


class WrongOutputDtype(ReferenceBackend):
    """Computes right but hands every output back as float32, whatever its declared type."""

    name = "wrong-output-dtype"

    def compile(self, part: Partition, device: Device) -> CompiledPartition:
        def run(inputs: Mapping[int, Array]) -> dict[int, Array]:
            return {k: np.asarray(v, dtype=np.float64).astype(np.float32)
                    for k, v in execute(part, inputs).items()}
        return _Compiled(part, run)


# -- op implementations swapped for a buggy one ------------------------------------------------

Maker = Callable[[Callable[..., Any]], Callable[..., Any]]


class _SwapsOps(ReferenceBackend):
    """The reference with some op implementations replaced: `swaps` maps an op kind to a
    function of the original implementation that returns the buggy one."""

    swaps: ClassVar[Mapping[str, Maker]] = {}

    def compile(self, part: Partition, device: Device) -> CompiledPartition:
        def run(inputs: Mapping[int, Array]) -> dict[int, Array]:
            with ExitStack() as stack:
                for kind, make in self.swaps.items():
                    stack.enter_context(_swapped(kind, make(REGISTRY[kind].fn)))
                return execute(part, inputs)
        return _Compiled(part, run)


def _f32(values: Any) -> Array:
    return np.asarray(values).astype(np.float32)


def _softmax_unshifted(_: Callable[..., Any]) -> Callable[..., Any]:
    def softmax(src: Array, *, axis: int, mode: str) -> tuple[Array, Array]:
        with np.errstate(all="ignore"):
            e = np.exp(_f32(src))  # the bug: no max subtraction, so exp overflows past 88.7
            total = np.sum(e, axis=axis, keepdims=True)
            dst = e / total
            if mode == "inf_as_zero":
                dst = np.where(total == 0, np.float32(0), dst)
            return _f32(dst), _f32(np.log(total))
    return softmax


class SoftMaxWithoutMaxShift(_SwapsOps):
    """SoftMax as exp(x)/sum(exp(x)), without subtracting the row maximum first."""

    name = "softmax-without-max-shift"
    swaps: ClassVar[Mapping[str, Maker]] = {"SoftMax": _softmax_unshifted}


def _softplus_unguarded(_: Callable[..., Any]) -> Callable[..., Any]:
    def softplus(src: Array, *, beta: float) -> Array:
        b = np.float32(beta)
        with np.errstate(over="ignore"):
            # the bug: no switch to x once beta*x passes the exp overflow bound
            return _f32(np.log1p(np.exp(_f32(src) * b)) / b)
    return softplus


class SoftPlusOverflows(_SwapsOps):
    """SoftPlus as log1p(exp(beta*x))/beta everywhere: inf once exp overflows (past 88.72),
    where the function is x."""

    name = "softplus-overflows"
    swaps: ClassVar[Mapping[str, Maker]] = {"SoftPlus": _softplus_unguarded}


def _relu_fmax(_: Callable[..., Any]) -> Callable[..., Any]:
    def relu(src: Array) -> Array:
        return _f32(np.fmax(_f32(src), np.float32(0)))  # the bug: fmax drops NaN
    return relu


class ReLUDropsNaN(_SwapsOps):
    """ReLU as fmax(x, 0), which turns NaN into 0."""

    name = "relu-drops-nan"
    swaps: ClassVar[Mapping[str, Maker]] = {"ReLU": _relu_fmax}


def _sigmoid_unstable(_: Callable[..., Any]) -> Callable[..., Any]:
    def sigmoid(src: Array) -> Array:
        with np.errstate(all="ignore"):
            e = np.exp(_f32(src))
            return _f32(e / (np.float32(1) + e))  # inf/inf = NaN past x = 88.7
    return sigmoid


class SigmoidUnstable(_SwapsOps):
    """Sigmoid as exp(x)/(1 + exp(x)), which overflows to NaN for large x."""

    name = "sigmoid-unstable"
    swaps: ClassVar[Mapping[str, Maker]] = {"Sigmoid": _sigmoid_unstable}


def _divide_guarded(original: Callable[..., Any]) -> Callable[..., Any]:
    def divide(src_0: Array, src_1: Array, *, auto_broadcast: str) -> Array:
        b = _f32(src_1)
        safe = np.where(b == 0, np.float32(1e-12), b)  # the bug: "avoid" division by zero
        result: Array = original(src_0, safe, auto_broadcast=auto_broadcast)
        return result
    return divide


class DivideGuardsZero(_SwapsOps):
    """Divide replaces a zero divisor by 1e-12: finite results where IEEE gives +-inf or NaN."""

    name = "divide-guards-zero"
    swaps: ClassVar[Mapping[str, Maker]] = {"Divide": _divide_guarded}


def _truncate(array: Array, dtype: DataType) -> Array:
    """Round toward zero to a narrow float type (the bug: no round to nearest even)."""
    x = np.asarray(array, dtype=np.float32)
    if dtype is DataType.bf16:
        bits = x.view(np.uint32) & np.uint32(0xFFFF0000)
        return bits.view(np.float32).astype(ml_dtypes.bfloat16)
    nearest = x.astype(np.float16)
    with np.errstate(invalid="ignore"):
        past = np.isfinite(x) & (np.abs(nearest.astype(np.float32)) > np.abs(x))
    return np.where(past, np.nextafter(nearest, np.float16(0)), nearest).astype(np.float16)


def _truncating_cast(array: Any, dtype: DataType) -> Array:
    if dtype in (DataType.bf16, DataType.f16):
        return _truncate(np.asarray(array, dtype=np.float32), dtype)
    return cast_to(array, dtype)


#: The executor's module (the package re-exports a function under the same name).
execute_module = importlib.import_module("fusionspec.reference.execute")


class TruncatesNarrowOutputs(ReferenceBackend):
    """bf16 and f16 partition outputs are rounded toward zero instead of to nearest even."""

    name = "truncates-narrow-outputs"

    def compile(self, part: Partition, device: Device) -> CompiledPartition:
        def run(inputs: Mapping[int, Array]) -> dict[int, Array]:
            saved = execute_module.cast_to
            execute_module.cast_to = _truncating_cast
            try:
                return execute(part, inputs)
            finally:
                execute_module.cast_to = saved
        return _Compiled(part, run)


def _typecast_truncating(_: Callable[..., Any]) -> Callable[..., Any]:
    def typecast(src: Array, *, dst_dtype: DataType = DataType.f32) -> Array:
        return _f32(_truncating_cast(_f32(src), dst_dtype))
    return typecast


class TypeCastTruncates(_SwapsOps):
    """TypeCast to bf16/f16 rounds toward zero."""

    name = "typecast-truncates"
    swaps: ClassVar[Mapping[str, Maker]] = {"TypeCast": _typecast_truncating}


def _gelu_coefficient(original: Callable[..., Any]) -> Callable[..., Any]:
    def gelu(src: Array, *, mode: str) -> Array:
        if mode != "gelu_tanh":
            result: Array = original(src, mode=mode)
            return result
        x = np.asarray(src, dtype=np.float64)
        u = np.sqrt(2 / np.pi) * (x + 0.0446 * x ** 3)  # the bug: 0.0446 for 0.044715
        with np.errstate(over="ignore"):
            return _f32(x / (1 + np.exp(-2 * u)))
    return gelu


class GeluTanhCoefficient(_SwapsOps):
    """GELU's tanh form with its cubic coefficient off in the third digit (0.0446)."""

    name = "gelu-tanh-coefficient"
    swaps: ClassVar[Mapping[str, Maker]] = {"GELU": _gelu_coefficient}


def _leaky_relu_max(_: Callable[..., Any]) -> Callable[..., Any]:
    def leaky_relu(src: Array, *, alpha: float) -> Array:
        x = _f32(src)
        return _f32(np.maximum(x, x * np.float32(alpha)))  # right only for alpha <= 1
    return leaky_relu


class LeakyReLUAsMaximum(_SwapsOps):
    """LeakyReLU as max(x, alpha*x), which is wrong once alpha > 1."""

    name = "leaky-relu-as-maximum"
    swaps: ClassVar[Mapping[str, Maker]] = {"LeakyReLU": _leaky_relu_max}


def _interpolate_half_pixel(original: Callable[..., Any]) -> Callable[..., Any]:
    def interpolate(*args: Any, **attrs: Any) -> Array:
        attrs["coordinate_transformation_mode"] = "half_pixel"  # the bug: mode ignored
        result: Array = original(*args, **attrs)
        return result
    return interpolate


class IgnoresAlignCorners(_SwapsOps):
    """Interpolate ignores coordinate_transformation_mode (always half_pixel)."""

    name = "ignores-align-corners"
    swaps: ClassVar[Mapping[str, Maker]] = {"Interpolate": _interpolate_half_pixel}


def _softmax_mode_none(original: Callable[..., Any]) -> Callable[..., Any]:
    def softmax(src: Array, *, axis: int, mode: str) -> tuple[Array, Array]:
        result: tuple[Array, Array] = original(src, axis=axis, mode="none")
        return result
    return softmax


class IgnoresInfAsZero(_SwapsOps):
    """SoftMax ignores mode="inf_as_zero": a row all -inf gives NaN instead of 0."""

    name = "ignores-inf-as-zero"
    swaps: ClassVar[Mapping[str, Maker]] = {"SoftMax": _softmax_mode_none}


def _axis_off_by_one(original: Callable[..., Any]) -> Callable[..., Any]:
    def quant(src: Array, *, qtype: str, axis: int, scales: Sequence[float] = (),
              zps: Sequence[int] | None = None, **rest: Any) -> Array:
        x = np.asarray(src)
        if qtype == "per_channel" and axis < 0 and x.ndim:
            wrong = (axis + x.ndim - 1) % x.ndim  # the bug: axis += ndims - 1
            if x.shape[wrong] == len(scales):
                axis = wrong
            else:
                qtype, scales, zps = "per_tensor", scales[:1], (zps or [0])[:1]
        result: Array = original(src, qtype=qtype, axis=axis, scales=scales, zps=zps, **rest)
        return result
    return quant


class NegativeQuantAxisOffByOne(_SwapsOps):
    """Per-channel Quantize/Dequantize normalize a negative axis with rank - 1 instead of
    rank (the channel lands on the wrong axis)."""

    name = "negative-quant-axis-off-by-one"
    swaps: ClassVar[Mapping[str, Maker]] = {"Quantize": _axis_off_by_one,
                                            "Dequantize": _axis_off_by_one}


class AcceptsS8Binary(ReferenceBackend):
    """Binary ops take s8 operands (a signed int8 path meant for quantized binaries), so a
    float Multiply with an s8 operand is accepted instead of rejected."""

    name = "accepts-s8-binary"

    def partition(self, graph: Graph) -> list[Partition]:
        try:
            return partition(graph)
        except GraphError as exc:
            if exc.rule != GraphRule.dtype_port or not _only_s8_binaries(graph):
                raise
            return single_op_partitions(graph)


def _only_s8_binaries(graph: Graph) -> bool:
    """Whether `graph` is valid once the s8 operands of its binary ops are read as f32."""
    def retyped(t: LogicalTensor) -> LogicalTensor:
        return LogicalTensor(t.id, DataType.f32, t.shape, t.strides, t.layout_type,
                             t.property_type) if t.dtype is DataType.s8 else t
    ops = [Op(op.id, op.kind, tuple(retyped(t) for t in op.inputs), op.outputs, op.attrs,
              op.name) if op.kind in BINARY else op for op in graph.ops]
    if ops == list(graph.ops):
        return False
    try:
        Graph(ops, graph.engine_kind, graph.fpmath_mode).finalize()
    except GraphError:
        return False
    return True


def _flush(array: Array) -> Array:
    if not np.issubdtype(np.asarray(array).dtype, np.floating) and \
            array.dtype not in (ml_dtypes.bfloat16,):
        return array
    wide = np.asarray(array, dtype=np.float32)
    tiny = np.finfo(np.float16).tiny if array.dtype == np.float16 else np.finfo(np.float32).tiny
    flushed = np.where(np.abs(wide) < tiny, np.copysign(np.float32(0), wide), wide)
    return flushed.astype(array.dtype)


class FlushesSubnormals(ReferenceBackend):
    """Flushes subnormal inputs and outputs to zero (a device running with FTZ/DAZ)."""

    name = "flushes-subnormals"

    def compile(self, part: Partition, device: Device) -> CompiledPartition:
        def run(inputs: Mapping[int, Array]) -> dict[int, Array]:
            flushed = {k: _flush(v) for k, v in inputs.items()}
            return {k: _flush(v) for k, v in execute(part, flushed).items()}
        return _Compiled(part, run)


def _clamp_clip(_: Callable[..., Any]) -> Callable[..., Any]:
    def clamp(src: Array, *, min: float, max: float) -> Array:
        return _f32(np.clip(_f32(src), np.float32(min), np.float32(max)))  # NaN stays NaN
    return clamp


class ClampKeepsNaN(_SwapsOps):
    """Clamp as clip(x, min, max): NaN stays NaN, where the spec maps it to min."""

    name = "clamp-keeps-nan"
    swaps: ClassVar[Mapping[str, Maker]] = {"Clamp": _clamp_clip}


def _select_max(_: Callable[..., Any]) -> Callable[..., Any]:
    def maximum(src_0: Array, src_1: Array, *, auto_broadcast: str) -> Array:
        a, b = _f32(src_0), _f32(src_1)
        return _f32(np.where(a > b, a, b))  # the bug: a NaN on src_0 is dropped
    return maximum


def _select_min(_: Callable[..., Any]) -> Callable[..., Any]:
    def minimum(src_0: Array, src_1: Array, *, auto_broadcast: str) -> Array:
        a, b = _f32(src_0), _f32(src_1)
        return _f32(np.where(a < b, a, b))
    return minimum


class MaximumDropsFirstNaN(_SwapsOps):
    """Maximum and Minimum as a comparison and a select, which drop a NaN on src_0."""

    name = "maximum-drops-first-nan"
    swaps: ClassVar[Mapping[str, Maker]] = {"Maximum": _select_max, "Minimum": _select_min}


class MaximumDropsFirstNaNDeclared(MaximumDropsFirstNaN):
    """The same, declaring it as a known departure (the suite evaluates the named substitute
    and names the departure where it reproduces the values)."""

    name = "maximum-drops-first-nan-declared"
    departures = (Departure("nan-select-max", "Maximum and Minimum compare and select, so a "
                            "NaN on src_0 is dropped", "this backend's Maximum kernel",
                            statuses=("numeric-mismatch",), substitute="select-max"),)


def _quantize_wrapping(original: Callable[..., Any]) -> Callable[..., Any]:
    def quantize(src: Array, **attrs: Any) -> Array:
        dst = attrs.get("dst_dtype", DataType.u8)
        if dst not in (DataType.u8, DataType.s8):
            result: Array = original(src, **attrs)
            return result
        wide = original(src, **{**attrs, "dst_dtype": DataType.s32}).astype(np.int64)
        if dst is DataType.u8:
            return (wide % 256).astype(np.uint8)  # the bug: wraps instead of saturating
        return ((wide + 128) % 256 - 128).astype(np.int8)
    return quantize


class QuantizeWraps(_SwapsOps):
    """Quantize wraps around out-of-range values instead of saturating them."""

    name = "quantize-wraps"
    swaps: ClassVar[Mapping[str, Maker]] = {"Quantize": _quantize_wrapping}


def _elu_exp_minus_one(_: Callable[..., Any]) -> Callable[..., Any]:
    def elu(src: Array, *, alpha: float) -> Array:
        x = _f32(src)
        with np.errstate(over="ignore"):
            # the bug: exp(x) - 1 in f32 cancels near 0, where expm1 does not
            negative = np.float32(alpha) * (np.exp(np.minimum(x, 0)) - np.float32(1))
        return _f32(np.where(x > 0, x, negative))
    return elu


class EluWithoutExpm1(_SwapsOps):
    """Elu as alpha*(exp(x) - 1) in f32: no accuracy left for small |x|."""

    name = "elu-without-expm1"
    swaps: ClassVar[Mapping[str, Maker]] = {"Elu": _elu_exp_minus_one}


def _avg_include_pad(original: Callable[..., Any]) -> Callable[..., Any]:
    def avg_pool(src: Array, **attrs: Any) -> Array:
        attrs["exclude_pad"] = False  # the bug: the padded zeros always count
        result: Array = original(src, **attrs)
        return result
    return avg_pool


class AvgPoolIgnoresExcludePad(_SwapsOps):
    """AvgPool always divides by the kernel volume (exclude_pad ignored)."""

    name = "avgpool-ignores-exclude-pad"
    swaps: ClassVar[Mapping[str, Maker]] = {"AvgPool": _avg_include_pad}


def _max_pool_zero_pad(original: Callable[..., Any]) -> Callable[..., Any]:
    def max_pool(src: Array, **attrs: Any) -> Array:
        result: Array = original(src, **attrs)
        padded = any(attrs.get("pads_begin", ())) or any(attrs.get("pads_end", ())) or \
            attrs.get("auto_pad", "None") in ("SAME_UPPER", "SAME_LOWER")
        # the bug: padding holds zeros, so it wins over an all-negative window at the border
        return _f32(np.maximum(result, np.float32(0))) if padded else result
    return max_pool


class MaxPoolPadsWithZero(_SwapsOps):
    """MaxPool pads with 0 instead of -inf (here: any padded pooling clips at 0 from below,
    which is what a zero pad does to windows that reach it, and more)."""

    name = "maxpool-pads-with-zero"
    swaps: ClassVar[Mapping[str, Maker]] = {"MaxPool": _max_pool_zero_pad}


class DropsFanOutOutput(ReferenceBackend):
    """Partitions as the reference, but leaves out of a partition's outputs an intermediate
    that fans out to several consumers (the partition keeps it for itself; the other
    consumers read a tensor that no partition outputs)."""

    name = "drops-fan-out-output"

    def partition(self, graph: Graph) -> list[Partition]:
        graph = graph.finalize()
        parts = partition(graph)
        result = []
        for p in parts:
            inside = {op.id for op in p.ops}
            kept = tuple(t for t in p.outputs if len(graph.consumers.get(t.id, ())) < 2
                         or all(user.id in inside for user, _ in graph.consumers[t.id]))
            result.append(Partition(p.id, p.ops, p.inputs, kept, p.pattern, p.supported))
        return result


def _softmax_axis_default(original: Callable[..., Any]) -> Callable[..., Any]:
    def softmax(src: Array, *, axis: int, mode: str) -> tuple[Array, Array]:
        result: tuple[Array, Array] = original(src, axis=1 if axis < 0 else axis, mode=mode)
        return result  # the bug: a negative axis falls back to the default, 1
    return softmax


class SoftMaxNegativeAxisAsDefault(_SwapsOps):
    """SoftMax takes a negative axis for "unset" and normalizes over axis 1, the default."""

    name = "softmax-negative-axis-as-default"
    swaps: ClassVar[Mapping[str, Maker]] = {"SoftMax": _softmax_axis_default}
