"""Cause signatures: which well-known mistake a backend's wrong values are the footprint of.

Backends get numbers wrong in a handful of recurring ways: a narrowing conversion that truncates
instead of rounding to nearest even, an f16 result that went through bf16 first, integer
rounding half away from zero, wrap-around where the spec saturates, subnormals flushed to zero,
NaN produced or dropped, intermediates of a fused chain rounded to their declared types. Each
shows in every op and pattern the backend runs, so one bug gives failures all over the suite;
naming the mistake is what lets the findings show it once.

`match_signature(graph, inputs, tensor, expected, actual, radius, partitions)` recomputes the
failing output the mistaken way, from the same inputs, in float64 (the reference's ops under
`high_precision`, with only the mistaken conversions substituted), and reports the first
signature that reproduces the backend's value on nearly all failing elements
(`MATCH_SHARE`). A mistaken recomputation that equals the spec's value cannot match a failing
element (those are further from the spec's value than the bound), so a signature never claims a
failure it does not explain.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass

import ml_dtypes
import numpy as np

from fusionspec.reference.dtypes import cast_to, integer_range, numpy_dtype, to_compute, widen
from fusionspec.reference.execute import execute_high_precision
from fusionspec.reference.registry import REGISTRY, substituted
from fusionspec.spec.dtypes import DataType
from fusionspec.spec.graph import Graph, Partition
from fusionspec.spec.types import Array

from .details import SignatureMatch

__all__ = ["Signature", "SIGNATURES", "match_signature", "MATCH_SHARE", "truncate_to",
           "round_half_away"]

#: The share of failing elements a signature must reproduce to be named.
MATCH_SHARE = 0.9

_NARROW_FLOATS = (DataType.bf16, DataType.f16)
_INTEGERS = (DataType.s8, DataType.u8)


@dataclass(frozen=True)
class Signature:
    """A mistake backends make: `id` (stable, what findings group by) and `statement`."""

    id: str
    statement: str


@dataclass(frozen=True)
class _Check:
    signature: Signature
    #: The mistaken value of the failing tensor (or bands of it, shape (k, 2, *tensor): each
    #: band's low and high), or None where the graph cannot show the mistake.
    evaluate: Callable[[Graph, Mapping[int, Array], int, Sequence[Partition]], Array | None]


def truncate_to(array: Array, dtype: DataType) -> Array:
    """`array` narrowed to bf16 or f16 by dropping bits (rounding toward zero)."""
    x = np.asarray(array, dtype=np.float64).astype(np.float32)
    target = numpy_dtype(dtype)
    with np.errstate(over="ignore", invalid="ignore"):
        nearest = x.astype(target)
    bits = nearest.view(np.uint16).copy()
    away = np.isfinite(x) & (np.abs(nearest.astype(np.float64)) > np.abs(x.astype(np.float64)))
    bits[away] -= 1  # sign and magnitude: one step down in the bits is one step toward zero
    return bits.view(target)


def round_half_away(array: Array) -> Array:
    """Round to the nearest integer, ties away from zero (the common mistake for half-even)."""
    x = np.asarray(array, dtype=np.float64)
    result: Array = np.sign(x) * np.floor(np.abs(x) + 0.5)
    return result


def _recompute(graph: Graph, inputs: Mapping[int, Array], parts: Sequence[Partition],
               cast: Callable[[Array, DataType], Array], tensor: int, *,
               single: bool = False, typecasts: bool = True) -> Array | None:
    """The failing tensor with every narrowing conversion of a partition output (and of
    TypeCast ops, with `typecasts`) done by `cast` instead of round-to-nearest-even, in f32
    arithmetic with `single`, in float64 otherwise. None where nothing narrows."""
    narrow = [t for p in parts for t in p.outputs if t.dtype in _NARROW_FLOATS]
    narrow += [t for op in graph.ops if op.kind == "TypeCast" for t in op.outputs
               if t.dtype in _NARROW_FLOATS]
    if not narrow:
        return None

    def typecast(src: Array, *, dst_dtype: DataType = DataType.f32) -> Array:
        if dst_dtype in _NARROW_FLOATS:
            return to_compute(cast(np.asarray(src), dst_dtype))
        return to_compute(cast_to(np.asarray(src), dst_dtype))

    swaps = {"TypeCast": typecast} if typecasts else {}
    with substituted(swaps), np.errstate(all="ignore"):
        values = execute_high_precision(graph, inputs, parts, cast=cast, single=single)
    return np.asarray(values[tensor], dtype=np.float64)


#: How far (relative) a backend's own value may lie from the float64 one before it is
#: narrowed: 2^-16 is a hundred or so f32 ulps, far below a bf16 or f16 step.
_BAND = 2.0**-16


def _narrowing(mistake: Callable[[Array, DataType], Array]) -> Callable[
        [Graph, Mapping[int, Array], int, Sequence[Partition]], Array | None]:
    """The mistaken narrowing as bands, one where TypeCast ops make the mistake too and one
    where only partition outputs do (a backend may convert the two ways). A value on a narrow
    type's step (0.875 computed as 0.87499994) narrows one step apart in a backend's f32
    arithmetic and in float64; so does a sum of narrowed terms of both signs. A band spans the
    mistake applied to the float64 values nudged by `_BAND` either way and to the f32 values:
    a backend making this mistake lands inside it. Returned with shape (2, 2, *tensor): per
    band, its low and high."""
    def evaluate(graph: Graph, inputs: Mapping[int, Array], tensor: int,
                 parts: Sequence[Partition]) -> Array | None:
        bands = []
        for typecasts in (True, False):
            candidates = []
            for shift, single in ((1.0 - _BAND, False), (1.0 + _BAND, False), (1.0, True)):
                def cast(array: Array, dtype: DataType, shift: float = shift) -> Array:
                    if dtype in _NARROW_FLOATS:
                        return mistake(np.asarray(array, dtype=np.float64) * shift, dtype)
                    return cast_to(array, dtype)
                value = _recompute(graph, inputs, parts, cast, tensor, single=single,
                                   typecasts=typecasts)
                if value is None:
                    return None
                candidates.append(value)
            stacked = np.stack(candidates)
            bands.append(np.stack([np.fmin.reduce(stacked, axis=0),
                                   np.fmax.reduce(stacked, axis=0)]))
        return np.stack(bands)
    return evaluate


def _through_bf16(array: Array, dtype: DataType) -> Array:
    if dtype is not DataType.f16:
        return cast_to(array, dtype)
    via = np.asarray(array, dtype=np.float64).astype(np.float32).astype(ml_dtypes.bfloat16)
    return via.astype(np.float32).astype(np.float16)


def _quantized(rounding: Callable[[Array], Array], saturate: bool) -> Callable[
        [Graph, Mapping[int, Array], int, Sequence[Partition]], Array | None]:
    """The graph with every integer Quantize rounding by `rounding`, and wrapping instead of
    saturating unless `saturate`: a quantizer's mistake shows wherever it quantizes (the
    weights path included), so the whole graph is recomputed with it."""
    spec_quantize = REGISTRY["Quantize"].fn

    def quantize(src: Array, *, qtype: str, axis: int, scales: Sequence[float] = (),
                 zps: Sequence[int] | None = None, dst_dtype: DataType = DataType.u8) -> Array:
        if dst_dtype not in _INTEGERS:
            result: Array = spec_quantize(src, qtype=qtype, axis=axis, scales=scales, zps=zps,
                                          dst_dtype=dst_dtype)
            return result
        x = np.asarray(src, dtype=np.float64)
        scale = np.asarray(scales or (1.0,), dtype=np.float64)
        zp = np.asarray(zps or (0,) * scale.size, dtype=np.float64)
        if qtype == "per_channel" and x.ndim:
            shape = [1] * x.ndim
            shape[axis % x.ndim] = scale.size
            scale, zp = scale.reshape(shape), zp.reshape(shape)
        lo, hi = integer_range(dst_dtype)
        # The usual form of wrapping: a saturating conversion to s32, then its low byte kept.
        floor, ceiling = (lo, hi) if saturate else (-2.0**31, 2.0**31 - 1)
        with np.errstate(all="ignore"):
            value = np.clip(rounding(np.nan_to_num(x / scale + zp, nan=0.0, posinf=ceiling,
                                                   neginf=floor)), floor, ceiling)
        if not saturate:
            value = np.mod(value - lo, hi - lo + 1) + lo
        return value.astype(numpy_dtype(dst_dtype))

    def evaluate(graph: Graph, inputs: Mapping[int, Array], tensor: int,
                 parts: Sequence[Partition]) -> Array | None:
        if not any(op.kind == "Quantize" and op.outputs[0].dtype in _INTEGERS
                   for op in graph.ops):
            return None
        with substituted({"Quantize": quantize}), np.errstate(all="ignore"):
            return np.asarray(execute_high_precision(graph, inputs, parts)[tensor],
                              dtype=np.float64)
    return evaluate


def _flushed(graph: Graph, inputs: Mapping[int, Array], tensor: int,
             parts: Sequence[Partition]) -> Array | None:
    """Subnormal inputs and results read as zero (a device in FTZ/DAZ mode): each op's result
    is flushed, as such a device flushes every instruction's."""
    def flush(array: Array) -> Array:
        arr = np.asarray(array)
        if arr.dtype.kind not in "fV" and arr.dtype != np.dtype(ml_dtypes.bfloat16):
            return arr
        wide = arr.astype(np.float64)
        tiny = np.finfo(np.float16 if arr.dtype == np.float16 else np.float32).tiny
        flat: Array = np.where(np.abs(wide) < tiny, 0.0, wide).astype(arr.dtype)
        return flat

    singles = [Partition(id=i, ops=(op,), inputs=op.inputs, outputs=op.outputs)
               for i, op in enumerate(graph.ops)]
    flushed = {k: flush(v) for k, v in inputs.items()}
    with np.errstate(all="ignore"):
        return np.asarray(execute_high_precision(
            graph, flushed, singles, cast=lambda a, d: flush(cast_to(a, d)))[tensor],
            dtype=np.float64)


def _intermediates_rounded(graph: Graph, inputs: Mapping[int, Array], tensor: int,
                           parts: Sequence[Partition]) -> Array | None:
    """Every tensor rounded to its declared type, as if each op were its own partition."""
    inside = [t for p in parts if len(p.ops) > 1 for op in p.ops for t in op.outputs
              if t.dtype in _NARROW_FLOATS and t not in p.outputs]
    if not inside:
        return None
    singles = [Partition(id=i, ops=(op,), inputs=op.inputs, outputs=op.outputs)
               for i, op in enumerate(graph.ops)]
    with np.errstate(all="ignore"):
        return np.asarray(execute_high_precision(graph, inputs, singles)[tensor],
                          dtype=np.float64)


_CHECKS: tuple[_Check, ...] = (
    _Check(Signature("truncated-narrowing", "bf16/f16 values truncated, not rounded to nearest "
                     "even"), _narrowing(truncate_to)),
    _Check(Signature("f16-through-bf16", "f16 values rounded through bf16 first"),
           _narrowing(_through_bf16)),
    _Check(Signature("round-half-away", "integer quantization rounds ties away from zero, not "
                     "to even"), _quantized(round_half_away, saturate=True)),
    _Check(Signature("wrap-not-saturate", "integer results wrap around instead of saturating"),
           _quantized(np.rint, saturate=False)),
    _Check(Signature("flushed-subnormals", "subnormal values flushed to zero"), _flushed),
    _Check(Signature("intermediates-rounded", "intermediates of a fused chain rounded to their "
                     "declared bf16/f16 types"), _intermediates_rounded),
)

#: Every signature, in the order they are tried (NaN first: it is read off the values alone).
SIGNATURES: tuple[Signature, ...] = (
    Signature("nan-produced", "NaN produced where the spec gives a number"),
    Signature("nan-dropped", "NaN dropped where the spec gives NaN"),
    *(check.signature for check in _CHECKS),
)


def _failing(expected: Array, actual: Array, radius: Array) -> Array:
    e, a = widen(expected).astype(np.float64), widen(actual).astype(np.float64)
    r = np.broadcast_to(np.asarray(radius, dtype=np.float64), e.shape)
    with np.errstate(invalid="ignore"):
        ok = (np.abs(a - e) <= r) | (np.isnan(e) & np.isnan(a)) | (e == a) | np.isinf(r)
    flags: Array = ~ok
    return flags


def _share(flags: Array) -> float:
    return float(flags.mean()) if flags.size else 0.0


def match_signature(graph: Graph, inputs: Mapping[int, Array], tensor: int, expected: Array,
                    actual: Array, radius: Array,
                    partitions: Sequence[Partition]) -> SignatureMatch | None:
    """The first signature that reproduces the backend's values on at least `MATCH_SHARE` of
    the failing elements of `tensor`: its id, statement and how many elements it explains."""
    bad = _failing(expected, actual, radius)
    count = int(bad.sum())
    if count == 0:
        return None
    e = widen(expected).astype(np.float64)[bad]
    a = widen(actual).astype(np.float64)[bad]
    nans = {"nan-produced": np.isnan(a) & ~np.isnan(e), "nan-dropped": ~np.isnan(a) & np.isnan(e)}
    for sig in SIGNATURES[:2]:
        if _share(nans[sig.id]) >= MATCH_SHARE:
            return _found(sig, int(nans[sig.id].sum()), count)
    if not graph.finalized:
        graph = graph.finalize()
    r = np.broadcast_to(np.asarray(radius, dtype=np.float64), bad.shape)[bad]
    for check in _CHECKS:
        mistaken = check.evaluate(graph, inputs, tensor, partitions)
        if mistaken is None:
            continue
        m = np.asarray(mistaken, dtype=np.float64)
        if m.shape == bad.shape:  # one value per element
            bands = [(m[bad], m[bad])]
        elif m.shape[1:] == (2, *bad.shape):  # bands: the mistake anywhere from low to high
            bands = [(band[0][bad], band[1][bad]) for band in m]
        else:
            continue
        hits = np.zeros(a.shape, dtype=bool)
        with np.errstate(invalid="ignore"):
            for low, high in bands:
                hits |= ((low - r <= a) & (a <= high + r)) | (a == low) | (a == high) | \
                    (np.isnan(a) & (np.isnan(low) | np.isnan(high)))
        if _share(hits) >= MATCH_SHARE:
            return _found(check.signature, int(hits.sum()), count)
    return None


def _found(sig: Signature, matched: int, failing: int) -> SignatureMatch:
    return SignatureMatch(id=sig.id, statement=sig.statement, matched=matched, failing=failing)
