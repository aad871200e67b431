"""Per-element error bounds, computed alongside the reference: `error_bounds(graph, inputs)`.

For every tensor of a graph, the radius of the interval around the reference's value in which a
conforming backend's value must lie (`fusionspec.conformance.grade.tolerances` states the model
and each op's own accuracy). The walk follows the reference's execution exactly: partition by
partition, f32 inside a partition, each partition output rounded to its declared type. At each
op the radius is

- for **element-wise ops** (unary, binary, BiasAdd, the conversions, ReLUBackward): the op
  evaluated in float64 (`fusionspec.reference.dtypes.high_precision`) at every corner of its
  inputs' intervals (and at its interior extrema), each result rounded as the op's result is,
  the spread around the reference's value, plus the op's own allowance. This is exact interval
  propagation for functions monotone in each argument, and it captures conditioning whatever
  the function: a Round or Quantize whose interval holds a .5 tie, or a division by an interval
  holding zero (an *uncertain* element: radius inf);
- for **linear ops** (convolution, MatMul, pooling, Interpolate, sums): the same op applied to
  the radii and the absolute values (``conv(r_x, |w|) + conv(|x|, r_w) + conv(r_x, r_w)``),
  plus the accumulation error of a sum of n terms in any order, ``2*n*u*sum|terms|``, which is
  zero where every partial sum is exact in f32 (all terms multiples of a power of two G whose
  total stays below 2^24*G);
- for **SoftMax and batch normalization**: first-order propagation through their Jacobians,
  plus the rounding of each step (formulas below).

Roundings to a narrower type (a partition output in bf16, a TypeCast, a Quantize) round the
interval's ends: the result may be the reference's value's other neighbour only where the
interval holds the tie between them.
"""

from __future__ import annotations

import itertools
from collections.abc import Callable, Collection, Iterable, Mapping, Sequence
from typing import Any

import numpy as np

from fusionspec.reference.dtypes import cast_to, high_precision, is_float_dtype, widen
from fusionspec.reference.execute import partition_order, read_input, run_op
from fusionspec.reference.partitioner import partition
from fusionspec.spec.attrs import attr_value
from fusionspec.spec.categories import REDUCTION
from fusionspec.spec.dtypes import DataType
from fusionspec.spec.graph import Graph, Op, Partition
from fusionspec.spec.shapes import channel_axis
from fusionspec.spec.types import Array

from .op_runner import OpRunner
from .tolerances import U32, Bound, accuracy_of, chain_of

__all__ = ["error_bounds", "output_bounds", "op_bounds", "ulp32", "granularity",
           "round_radius"]

_F32_MAX = float(np.finfo(np.float32).max)
_F64_MAX = float(np.finfo(np.float64).max)
#: Partial sums of terms that are multiples of G stay exact in f32 below this many G.
_EXACT_RANGE = 2.0 ** 24

#: Interior extrema of non-monotone unary ops (besides 0, which every op is tried at): GELU's
#: minimum (erf and tanh forms agree to 4 digits; both points are tried) and HardSwish's.
_EXTREMA: Mapping[str, tuple[float, ...]] = {
    "GELU": (-0.7517916243, -0.7522),
    "HardSwish": (-1.5,),
}
#: Inputs at which an op has a pole: an interval holding 0 there makes the element uncertain.
_POLES: Mapping[str, int] = {"Divide": 1, "Reciprocal": 0}

_BILINEAR = frozenset({"Convolution", "ConvTranspose", "MatMul", "ConvolutionBackwardWeights"})
#: Linear ops with padding or inserted zeros.
_PADDED = frozenset({"Convolution", "ConvTranspose", "ConvolutionBackwardWeights"})
_SUMS = frozenset({"ReduceSum", "ReduceMean", "ReduceL1"})


def ulp32(y: Array) -> Array:
    """The spacing of f32 numbers at |y| (float64; 0 for non-finite y, 2^-149 at 0)."""
    a = np.abs(np.asarray(y, dtype=np.float64))
    with np.errstate(over="ignore", invalid="ignore"):
        spacing = np.spacing(a.astype(np.float32)).astype(np.float64)
    result: Array = np.where(np.isfinite(spacing), spacing, 0.0)
    return result


def _rn32(values: Array) -> Array:
    """Round float64 values to the nearest f32 (overflow gives inf: callers ignore the
    warning), kept as float64."""
    result: Array = np.asarray(values, dtype=np.float64).astype(np.float32).astype(np.float64)
    return result


def granularity(values: Array) -> float:
    """The largest power of two of which every finite element of `values` is a multiple (inf
    when all are 0)."""
    v = np.abs(np.asarray(values, dtype=np.float64))
    v = v[np.isfinite(v) & (v != 0)]
    if not v.size:
        return float("inf")
    mantissa, exponent = np.frexp(v)
    ints = (mantissa * 2.0 ** 53).astype(np.int64)
    lowest = ints & -ints
    return float(np.min(lowest.astype(np.float64) * np.exp2(exponent - 53.0)))


def round_radius(y: Array, radius: Array, dtype: DataType) -> Array:
    """The radius of `y` +- `radius` (f32 values) after rounding to `dtype`, around the rounding
    of `y`: how far another value of the interval may land."""
    r = np.asarray(radius, dtype=np.float64)
    if not _narrows(dtype):
        return r
    y64 = np.asarray(y, dtype=np.float64)
    with np.errstate(invalid="ignore", over="ignore"):
        v = cast_to(y64, dtype).astype(np.float64)
        lo = cast_to(y64 - r, dtype).astype(np.float64)
        hi = cast_to(y64 + r, dtype).astype(np.float64)
        spread = np.maximum(v - lo, hi - v)
    return _settle(v, (lo, hi), spread, r)


def _settle(v: Array, ends: Sequence[Array], spread: Array, r_in: Array) -> Array:
    """The radius of a rounded value `v` whose interval's ends round to `ends`: `spread` where
    all is finite; 0 on a special value that every end shares (certain); inf (uncertain) where
    `r_in` is, or where the ends and the value disagree on being finite or on their special
    value."""
    special = ~np.isfinite(v)
    ends_finite = _all_of(np.isfinite(e) for e in ends)
    uncertain = np.isinf(r_in) | (~special & ~ends_finite)
    if _any(special):  # most values are finite: then no end need match a special one
        v_nan = np.isnan(v)
        same = _all_of((e == v) | (np.isnan(e) & v_nan) for e in ends)
        uncertain = uncertain | (special & ~same)
    result: Array = np.where(uncertain, np.inf, np.where(special, 0.0, _nan_to_zero(spread)))
    return result


def _any(flags: Array | float) -> bool:
    """np.any(flags), at a fraction of its cost on the small arrays of most cases."""
    return bool(np.count_nonzero(flags))


def _all_of(flags: Iterable[Array]) -> Array:
    """The element-wise AND of `flags` (all of the same shape)."""
    result: Array | None = None
    for f in flags:
        result = f if result is None else result & f
    assert result is not None, "at least one array of flags"
    return result


def _nan_to_zero(values: Array) -> Array:
    """np.nan_to_num(values, nan=0.0) for float64 values (inf becomes the largest float64),
    without its overhead on small arrays."""
    clipped = np.minimum(np.maximum(values, -_F64_MAX), _F64_MAX)
    result: Array = np.where(np.isnan(values), 0.0, clipped)
    return result


def _either(y: Array, r: Array, dtype: DataType, *, rounded: bool) -> Array:
    """The radius of a tensor that one side rounds to `dtype` and the other does not
    (partitions that differ from the reference's): around the reference's value (rounded when
    `rounded`), both the rounded and the unrounded interval."""
    if dtype is DataType.f32 or not _narrows(dtype):
        return r
    y64 = np.asarray(y, dtype=np.float64)
    with np.errstate(invalid="ignore", over="ignore"):
        cast = cast_to(y64, dtype).astype(np.float64)
        # A finite value that overflows the narrow type: one side has inf, the other not.
        gap = np.where(np.isfinite(cast) & np.isfinite(y64), np.abs(cast - y64),
                       np.where(np.isfinite(y64), np.inf, 0.0))
    r_cast = round_radius(y, r, dtype)
    result: Array = np.maximum(r_cast, gap + r) if rounded else np.maximum(r, gap + r_cast)
    return result


def _narrows(dtype: DataType) -> bool:
    return dtype in (DataType.bf16, DataType.f16, DataType.f8_e4m3, DataType.f8_e5m2) \
        or dtype.is_integer


# -- the walk ---------------------------------------------------------------------------------

def error_bounds(graph: Graph, inputs: Mapping[int, Array],
                 partitions: Sequence[Partition] | None = None, *,
                 rounding_differs: Collection[int] = ()) -> dict[int, Array]:
    """The radius of every tensor of `graph` (keyed by tensor id; graph inputs have 0) when it
    is computed from `inputs` by the reference's `partitions` (default: the reference
    partitioner's). A tensor in `rounding_differs` is rounded to its declared type by one side
    only (the backend's partitions differ there): both values are accepted."""
    if not graph.finalized:
        graph = graph.finalize()
    parts = list(partitions) if partitions is not None else partition(graph)
    stored: dict[int, Array] = {t.id: read_input(t, inputs[t.id]) for t in graph.input_tensors}
    radius: dict[int, Array] = {t.id: np.zeros(np.shape(stored[t.id])) for t in
                                graph.input_tensors}
    differs = frozenset(rounding_differs)
    for part in in_order(parts)[0]:
        values: dict[int, Array] = {t.id: widen(stored[t.id]) for t in part.inputs}
        local: dict[int, Array] = {t.id: radius[t.id] for t in part.inputs}
        outputs = {t.id for t in part.outputs}
        for op in partition_order(part):
            inner = not any(t.id in outputs for t in op.outputs)
            results = op_bounds(op, [values[t.id] for t in op.inputs],
                                [local[t.id] for t in op.inputs], unrounded=inner)
            for tensor, (y, r) in zip(op.outputs, results):
                if tensor.id not in outputs and (tensor.id in differs or (_narrows(
                        tensor.dtype) and tensor.dtype.is_float)):
                    # Inside a partition the reference keeps f32, and a backend may also store
                    # an intermediate in its declared type, rounded to nearest even (oneDNN
                    # does when it cannot fuse a post-op): both values are accepted.
                    r = _either(y, r, tensor.dtype, rounded=False)
                values[tensor.id], local[tensor.id] = y, r
        for t in part.outputs:
            y, r = values[t.id], local[t.id]
            stored[t.id] = cast_to(y, t.dtype)
            radius[t.id] = (_either(y, r, t.dtype, rounded=True) if t.id in differs
                            else round_radius(y, r, t.dtype))
    return radius


def output_bounds(graph: Graph, inputs: Mapping[int, Array],
                  partitions: Sequence[Partition] | None = None) -> dict[int, Bound]:
    """The `Bound` of every graph output (see `error_bounds`), labelled with its op chain."""
    if not graph.finalized:
        graph = graph.finalize()
    radii = error_bounds(graph, inputs, partitions)
    bounds: dict[int, Bound] = {}
    for t in graph.output_tensors:
        bounds[t.id] = Bound(t.dtype, radii[t.id], chain_of(ancestors(graph, t.id)))
    return bounds


def ancestors(graph: Graph, tensor_id: int) -> list[Op]:
    """The ops `tensor_id` depends on, producers first (graph order is topological once
    finalized)."""
    wanted: set[int] = set()
    stack = [tensor_id]
    while stack:
        tid = stack.pop()
        if tid in graph.producers:
            op = graph.producers[tid][0]
            if op.id not in wanted:
                wanted.add(op.id)
                stack.extend(t.id for t in op.inputs)
    return [op for op in graph.ops if op.id in wanted]


def in_order(parts: Sequence[Partition]) -> tuple[list[Partition], bool]:
    """`parts` with every producer before its consumers, and whether that was possible (False:
    the partitions depend on each other in a cycle, broken at the first one still waiting)."""
    producer = {t.id: i for i, p in enumerate(parts) for t in p.outputs}
    needs = [{producer[t.id] for t in p.inputs if t.id in producer} - {i}
             for i, p in enumerate(parts)]
    order: list[int] = []
    pending = list(range(len(parts)))
    acyclic = True
    while pending:
        ready = [i for i in pending if needs[i] <= set(order)]
        if not ready:
            acyclic, ready = False, pending[:1]
        order.extend(ready)
        pending = [i for i in pending if i not in ready]
    return [parts[i] for i in order], acyclic


def op_bounds(op: Op, xs: Sequence[Array], rs: Sequence[Array], *,
              unrounded: bool = False) -> list[tuple[Array, Array]]:
    """Each output of `op` (the reference's value, in the compute dtype) with its radius, from
    the op's input values `xs` and their radii `rs`. With `unrounded` (an element-wise op whose
    result stays inside its partition), a backend may also keep the result unrounded: it
    contracts a multiply and an add into one FMA, or computes Reciprocal -> Multiply as one
    division (oneDNN does), so the interval holds the op's unrounded values too. Where the
    result is exact in f32 this adds nothing (a tie stays a tie).

    Raises `ToleranceError` for an op kind without an accuracy rule (`tolerances.ACCURACY`):
    a bound is never guessed."""
    accuracy_of(op.kind)  # every op needs its accuracy rule, element-wise ones too
    radii = [np.asarray(r, dtype=np.float64) for r in rs]
    rule = _RULES.get(op.kind)
    if rule is not None:
        return rule(op, xs, radii)
    return _elementwise(op, xs, radii, unrounded=unrounded)


# -- element-wise ---------------------------------------------------------------------------

def _hp(x: Array) -> Array:
    return np.asarray(x, dtype=np.float64)


def _own(op: Op, x: Array, y: Array) -> Array | float:
    """The op's own allowance (`tolerances.ACCURACY`) for an element-wise op with input x."""
    acc = accuracy_of(op.kind)
    if not (acc.ulps or acc.ulps_per_x2 or acc.abs_x):
        return 0.0
    x64 = _hp(x)
    finite_x = np.where(np.isfinite(x64), np.abs(x64), 0.0)
    with np.errstate(invalid="ignore", over="ignore"):
        own: Array = acc.ulps * ulp32(y)
        if acc.ulps_per_x2:
            own = own + acc.ulps_per_x2 * finite_x * finite_x * ulp32(y)
        if acc.abs_x:
            own = own + acc.abs_x * U32 * finite_x
    return np.where(np.isfinite(own), own, 0.0)


def _elementwise(op: Op, xs: Sequence[Array], rs: Sequence[Array], *,
                 unrounded: bool = False) -> list[tuple[Array, Array]]:
    run = OpRunner(op)
    y = run(xs)[0]
    y64 = _hp(y)
    radii = list(rs)
    if op.kind == "Quantize":
        radii[0] = radii[0] + _reciprocal_scale_error(op, xs[0])
    active = [i for i, r in enumerate(radii) if _any(r > 0)]
    own = _own(op, xs[0], y) if len(xs) == 1 else 0.0
    float_out = is_float_dtype(y.dtype)
    if not active and not _any(own) and not (unrounded and float_out):
        return [(y, np.zeros(y64.shape))]
    with high_precision(), np.errstate(all="ignore"):
        base = [_hp(x) if is_float_dtype(np.asarray(x).dtype) else np.asarray(x) for x in xs]
        points = [run(base)[0]]
        corners = itertools.product((-1.0, 1.0), repeat=len(active)) if active else ()
        for signs in corners:  # without an active input, the only "corner" is the base point
            args = list(base)
            for i, sign in zip(active, signs):
                args[i] = _hp(base[i]) + sign * radii[i]
            points.append(run(args)[0])
        if active and len(xs) == 1:
            x, r = _hp(xs[0]), radii[0]
            for c in (0.0, *_EXTREMA.get(op.kind, ())):
                inside = np.abs(x - c) <= r
                if _any(inside):
                    points.append(run([np.where(inside, c, x)])[0])
        ends = [_rn32(p) if float_out else _hp(p) for p in points]
        if unrounded and float_out:
            ends += [_hp(p) for p in points]
        # the interval's ends: the smallest and largest of the values found (NaN where one is)
        lo = hi = y64
        for end in ends:
            lo, hi = np.minimum(lo, end), np.maximum(hi, end)
        spread = np.maximum(y64 - lo, hi - y64) + own
    result = _settle(y64, ends, spread, _pole_radius(op, xs, radii, y64.shape))
    return [(y, result)]


def _pole_radius(op: Op, xs: Sequence[Array], rs: Sequence[Array],
                 shape: tuple[int, ...]) -> Array:
    """inf where an input interval holds a pole of the op (a division by an interval holding
    0; Pow with a negative exponent at a base interval holding 0), else 0."""
    port = _POLES.get(op.kind)
    if op.kind == "Pow" and float(attr_value(op, "beta")) < 0:  # type: ignore[arg-type]
        port = 0
    if port is None or port >= len(xs):
        return np.zeros(shape)
    x, r = _hp(xs[port]), rs[port]
    with np.errstate(invalid="ignore"):
        holds = (r > 0) & (np.abs(x) <= r)
    return np.broadcast_to(np.where(holds, np.inf, 0.0), shape)


def _reciprocal_scale_error(op: Op, x: Array) -> Array | float:
    """A backend may quantize as x*(1/scale); where 1/scale is inexact that product is off by
    a relative u, which widens the exact value's interval (in input units: 2u|x|)."""
    scales = np.asarray(attr_value(op, "scales"), dtype=np.float64)
    mantissa, _ = np.frexp(scales)
    if np.all(mantissa == 0.5):
        return 0.0
    result: Array = 2 * U32 * np.abs(np.nan_to_num(_hp(x), posinf=0.0, neginf=0.0))
    return result


# -- linear ops -----------------------------------------------------------------------------

def _finish(y: Array, prop: Array | float, own: Array | float,
            certain_special: Array | None = None, overflow: Array | None = None) -> Array:
    """prop + own where y is finite; 0 on non-finite y (certain), unless `certain_special` says
    otherwise; inf (uncertain) wherever an f32 intermediate of the computation may overflow
    (`overflow`: a sum or product whose magnitude passes the f32 range in some order, which
    the reference, summing in float64, does not see)."""
    y64 = _hp(y)
    with np.errstate(invalid="ignore", over="ignore"):
        r = np.asarray(prop + own, dtype=np.float64)
    r = np.where(np.isfinite(y64), np.where(np.isnan(r), np.inf, r), 0.0)
    if certain_special is not None:
        r = np.where(~np.isfinite(y64) & ~certain_special, np.inf, r)
    if overflow is not None:
        r = np.where(overflow, np.inf, r)
    result: Array = np.broadcast_to(r, y64.shape).copy()
    return result


def _past_f32(*magnitudes: Array | float) -> Array:
    """Where any of `magnitudes` (float64) passes the largest f32 value."""
    with np.errstate(invalid="ignore"):
        flags: Array = np.logical_or.reduce(np.broadcast_arrays(
            *(np.asarray(m) > _F32_MAX for m in magnitudes)))
    return flags


def _with(op: Op, kind: str | None = None, **attrs: Any) -> Op:
    return Op(op.id, kind or op.kind, op.inputs, op.outputs, {**op.attrs, **attrs}, op.name)


def _bilinear(op: Op, xs: Sequence[Array], rs: Sequence[Array]) -> list[tuple[Array, Array]]:
    run = OpRunner(op)
    y = run(xs)[0]
    x, w = _hp(xs[0]), _hp(xs[1])
    rest = list(xs[2:])
    bias = op.kind != "ConvolutionBackwardWeights" and bool(rest)
    with high_precision(), np.errstate(all="ignore"):
        tail = [np.abs(_hp(rest[0]))] if bias else [np.asarray(r) for r in rest]
        zero_tail = [np.zeros_like(_hp(rest[0]))] if bias else tail
        total = run([np.abs(x), np.abs(w), *tail])[0]
        prop = np.zeros(np.shape(total))
        rx, rw = rs[0], rs[1]
        if np.any(rx > 0):
            prop = prop + run([rx, np.abs(w), *zero_tail])[0]
        if np.any(rw > 0):
            prop = prop + run([np.abs(x), rw, *zero_tail])[0]
            if np.any(rx > 0):
                prop = prop + run([rx, rw, *zero_tail])[0]
        if bias and np.any(rs[2] > 0):
            prop = prop + run([np.zeros_like(x), np.zeros_like(w), rs[2]])[0]
    grain = granularity(x) * granularity(w)
    if bias:
        grain = min(grain, granularity(rest[0]))
    exact = total < _EXACT_RANGE * grain
    # The count of terms matters only where a sum may be inexact, and the exact value only at
    # a non-finite result (is its overflow certain?): most results need neither evaluation.
    special = _any(~np.isfinite(y))
    with high_precision(), np.errstate(all="ignore"):
        count = run([(x != 0).astype(np.float64), (w != 0).astype(np.float64),
                     *([(_hp(rest[0]) != 0).astype(np.float64)] if bias else tail)])[0] \
            if special or _any(~exact) else None
        exact_value = run([x, w, *([_hp(rest[0])] if bias else tail)])[0] if special else None
    certain = None
    with np.errstate(invalid="ignore", over="ignore"):
        own = np.zeros(np.shape(exact)) if count is None else np.where(
            exact, 0.0, 2 * np.maximum(count, 1) * U32 * total + ulp32(y))
        if count is not None and exact_value is not None:
            # A non-finite result from finite terms is an overflow: certain only well past
            # the top.
            certain = ~np.isfinite(total) | (
                np.abs(exact_value) > _F32_MAX * (1 + 4 * count * U32))
    overflow = np.isfinite(total) & _past_f32(total)
    if op.kind in _PADDED and not (np.all(np.isfinite(x)) and np.all(np.isfinite(w))):
        # Whether padding (or the zeros a transposed convolution inserts) is multiplied by the
        # other operand is the implementation's choice: 0*inf = NaN where the definition adds
        # nothing. With an inf or NaN among the operands no element is certain.
        overflow = np.ones(np.shape(total), dtype=bool)
    return [(y, _finish(y, prop, own, certain, overflow))]


def _pool(op: Op, xs: Sequence[Array], rs: Sequence[Array]) -> list[tuple[Array, Array]]:
    run = OpRunner(op)
    y = run(xs)[0]
    x, r = _hp(xs[0]), rs[0]
    with high_precision(), np.errstate(all="ignore"):
        prop = np.maximum(run([r])[0], 0.0) if np.any(r > 0) else 0.0
        if op.kind == "MaxPool":
            return [(y, _finish(y, prop, np.zeros(np.shape(y))))]
        mean_abs = run([np.abs(x)])[0]
    kernel = [int(k) for k in attr_value(op, "kernel")]  # type: ignore[union-attr]
    volume = int(np.prod(kernel)) if kernel else 1
    exact = mean_abs * volume < _EXACT_RANGE * granularity(x)
    plain = op.attrs.get("exclude_pad") is False and attr_value(
        op, "rounding_type") != "ceil" and _power_of_two(volume)
    own = np.where(exact, 0.0, 2 * volume * U32 * mean_abs + ulp32(y)) + (
        np.where(exact, 0.0, ulp32(y)) if plain else ulp32(y))
    return [(y, _finish(y, prop, own, overflow=_past_f32(mean_abs * volume)))]


def _power_of_two(n: int) -> bool:
    return n > 0 and n & (n - 1) == 0


def _interpolate(op: Op, xs: Sequence[Array], rs: Sequence[Array]) -> list[tuple[Array, Array]]:
    run = OpRunner(op)
    y = run(xs)[0]
    x, r = _hp(xs[0]), rs[0]
    with high_precision(), np.errstate(all="ignore"):
        prop = np.maximum(run([r, *xs[1:]])[0], 0.0) if np.any(r > 0) else 0.0
    if op.attrs.get("mode") == "nearest":
        return [(y, _finish(y, prop, np.zeros(np.shape(y))))]
    spatial = [d for i, d in enumerate(x.shape)
               if i != 0 and i != channel_axis(str(attr_value(op, "data_format")), x.ndim)]
    finite = np.abs(x[np.isfinite(x)])
    largest = float(finite.max()) if finite.size else 0.0
    dims = max(len(spatial), 1)
    own = 2 * dims * ulp32(y) + 4 * dims * U32 * max(spatial or [1]) * largest
    return [(y, _finish(y, prop, own))]


def _reduce(op: Op, xs: Sequence[Array], rs: Sequence[Array]) -> list[tuple[Array, Array]]:
    run = OpRunner(op)
    y = run(xs)[0]
    x, r = _hp(xs[0]), rs[0]
    rest = list(xs[1:])
    kind = op.kind
    with high_precision(), np.errstate(all="ignore"):
        summed = OpRunner(_with(op, "ReduceSum")) if kind != "BiasAddBackward" else run
        count = summed([np.ones_like(x), *rest])[0]
        if kind in ("ReduceMax", "ReduceMin"):
            prop = OpRunner(_with(op, "ReduceMax"))([r, *rest])[0]
            return [(y, _finish(y, prop, np.zeros(np.shape(y))))]
        if kind == "ReduceL2":
            prop = run([r, *rest])[0]
            own = (2 * count + 4) * U32 * np.abs(_hp(y)) + 2 * ulp32(y)
            squares = summed([x * x, *rest])[0]
            return [(y, _finish(y, prop, own, overflow=_past_f32(squares)))]
        if kind == "ReduceProd":
            top = run([np.abs(x) + r, *rest])[0]
            prop = top - np.abs(run([np.abs(x), *rest])[0])
            # a partial product can pass the f32 range only if the product of the
            # magnitudes above 1 does
            big = run([np.maximum(np.abs(x), 1.0), *rest])[0]
            return [(y, _finish(y, prop, 2 * count * U32 * np.abs(top) + 2 * ulp32(y),
                                overflow=_past_f32(big)))]
        prop = summed([r, *rest])[0]
        total = summed([np.abs(x), *rest])[0]
    exact = total < _EXACT_RANGE * granularity(x)
    own = np.where(exact, 0.0, 2 * count * U32 * total + ulp32(y))
    if kind == "ReduceMean":
        prop, own = prop / count, own / count + ulp32(y)
    return [(y, _finish(y, prop, own, overflow=_past_f32(total)))]


# -- SoftMax and batch normalization --------------------------------------------------------

def _softmax(op: Op, xs: Sequence[Array], rs: Sequence[Array]) -> list[tuple[Array, Array]]:
    outs = run_op(op, xs)
    x, r = _hp(xs[0]), rs[0]
    axis = int(attr_value(op, "axis")) % max(x.ndim, 1)  # type: ignore[arg-type]
    y = _hp(outs[0])
    n = x.shape[axis] if x.ndim else 1
    with np.errstate(all="ignore"):
        finite = np.isfinite(x)
        peak = np.max(np.where(finite, x, -np.inf), axis=axis, keepdims=True)
        gap = np.where(finite & np.isfinite(peak), np.abs(x - peak), 0.0)
        spread = np.max(gap, axis=axis, keepdims=True)
        weighted = np.sum(np.where(np.isfinite(y), y, 0.0) * r, axis=axis, keepdims=True)
        prop = y * (r + weighted)
        own = U32 * y * (8 + 2 * n + 2 * gap + 2 * spread) + 4 * ulp32(y)
        results = [(outs[0], _finish(outs[0], prop, own))]
        if len(op.outputs) > 1:
            stats = _hp(outs[1])
            prop_s = np.max(r, axis=axis, keepdims=True) if r.size else 0.0
            own_s = 2 * U32 * (np.where(np.isfinite(peak), np.abs(peak), 0.0) + n + spread) \
                + 4 * ulp32(stats)
            results.append((outs[1], _finish(outs[1], prop_s, own_s)))
    return results


def _channel_params(op: Op, x: Array, params: Sequence[Array]) -> list[Array]:
    axis = channel_axis(str(attr_value(op, "data_format")), x.ndim)
    shape = [1] * x.ndim
    shape[axis] = x.shape[axis]
    return [_hp(p).reshape(shape) for p in params]


def _batchnorm(op: Op, xs: Sequence[Array], rs: Sequence[Array]) -> list[tuple[Array, Array]]:
    y = run_op(op, xs)[0]
    x = _hp(xs[0])
    gamma, beta, mean, var = _channel_params(op, x, xs[1:5])
    rg, rb, rm, rv = _channel_params(op, x, rs[1:5])
    eps = float(np.float32(attr_value(op, "epsilon")))  # type: ignore[arg-type]
    with np.errstate(all="ignore"):
        sigma = np.sqrt(var + eps)
        scale = np.abs(gamma) / sigma
        centered = np.abs(x - mean)
        prop = scale * rs[0] + centered / sigma * rg + rb + scale * rm \
            + np.abs(gamma) * centered / (2 * sigma ** 3) * rv
        own = 4 * U32 * (scale * (np.abs(x) + np.abs(mean)) + np.abs(beta)) + 2 * ulp32(y)
        # x - mean, gamma*(x - mean) and the sum with beta are f32 values in a backend
        steps = (np.abs(x) + np.abs(mean), np.abs(gamma) * (np.abs(x) + np.abs(mean)),
                 scale * (np.abs(x) + np.abs(mean)) + np.abs(beta))
    return [(y, _finish(y, prop, own, overflow=_past_f32(*steps)))]


def _batchnorm_backward(op: Op, xs: Sequence[Array], rs: Sequence[Array],
                        ) -> list[tuple[Array, Array]]:
    outs = run_op(op, xs)
    x, dy = _hp(xs[0]), _hp(xs[1])
    rx, rdy = rs[0], rs[1]
    axis = channel_axis(str(attr_value(op, "data_format")), x.ndim)
    others = tuple(a for a in range(x.ndim) if a != axis)
    mean, var = _channel_params(op, x, xs[2:4])
    gamma = _channel_params(op, x, xs[4:5])[0] if len(xs) > 4 else np.ones_like(mean)
    eps = float(np.float32(attr_value(op, "epsilon")))  # type: ignore[arg-type]
    m = max(x.size // max(x.shape[axis], 1), 1)
    with np.errstate(all="ignore"):
        sigma = np.sqrt(var + eps)
        c = x - mean
        g = np.abs(gamma) / sigma

        def total(a: Array) -> Array:
            summed: Array = np.sum(a, axis=others, keepdims=True)
            return summed

        db, dg = total(dy), total(dy * c) / sigma
        r_db = total(rdy) + 2 * m * U32 * total(np.abs(dy))
        r_dg = total(rdy * np.abs(c) + np.abs(dy) * rx) / sigma \
            + 2 * (m + 2) * U32 * total(np.abs(dy * c)) / sigma
        sm = sigma * m
        r_ds = g * (rdy + r_db / m + rx * np.abs(dg) / sm + np.abs(c) * r_dg / sm) \
            + 4 * U32 * g * (np.abs(dy) + np.abs(db) / m + np.abs(c) * np.abs(dg) / sm)
        sums = total(np.abs(dy) * (1 + np.abs(c)))
        past = _past_f32(sums, g * (np.abs(dy) + np.abs(c) * sums / sm))
    results = [(outs[0], _finish(outs[0], r_ds, 2 * ulp32(outs[0]), overflow=past))]
    if len(op.outputs) == 3:
        per = np.broadcast_to(_past_f32(sums), np.shape(r_dg)).reshape(-1)
        results.append((outs[1], _finish(outs[1], r_dg.reshape(-1), 2 * ulp32(outs[1]),
                                         overflow=per)))
        results.append((outs[2], _finish(outs[2], r_db.reshape(-1), ulp32(outs[2]),
                                         overflow=per)))
    return results


_Rule = Callable[[Op, Sequence[Array], Sequence[Array]], list[tuple[Array, Array]]]
_RULES: dict[str, _Rule] = {
    **{kind: _bilinear for kind in _BILINEAR},
    "AvgPool": _pool, "MaxPool": _pool, "Interpolate": _interpolate,
    **{kind: _reduce for kind in (*REDUCTION, "BiasAddBackward")},
    "SoftMax": _softmax, "BatchNormInference": _batchnorm,
    "BatchNormTrainingBackward": _batchnorm_backward,
}
