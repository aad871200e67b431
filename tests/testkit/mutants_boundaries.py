"""Planted broken backends that only the value boundaries catch
(`fusionspec.conformance.generate.boundaries`).

Each is the reference with one bug that sits exactly where an op's definition changes
behaviour, at a point the suite's other floors and draws never put a value:

- `ExpOverflowsAt88`: an Exp guarded with a rounded constant, infinite from 88.0 on instead of
  past 88.72 (the ``large`` corner spreads its values over [60, 2048] and almost never lands in
  the 0.72 between; the ``overflow-edge`` domain puts half its values within 1 of the edge);
- `ExpF16OverflowsAt11`: the same guard in an f16 Exp, at 11.0 instead of ln 65504 = 11.09:
  the catalog's f16 Exps read values within [-4, 4] or past 60;
- `RoundByAddingTwoPow23`: a Round computed as ``copysign((|x| + 2^23) - 2^23, x)`` in f32
  (ties to even for free) without the guard that passes |x| >= 2^23 through: odd integers past
  2^23 come back off by one. The corners reach magnitudes below 2048 and above 10^36, never the
  2^23 to 2^25 between (the ``integer-edge`` domain);
- `EpilogueMaxDropsUpstreamNaN`: a fused Maximum or Minimum whose running value comes from an
  earlier op in the chain, computed ``acc > b ? acc : b``, so that a NaN arriving from upstream
  is dropped (the NaN corners of the other floors go into the op that reads a graph input);
- `TypeCastTiesAwayFromZero`: a TypeCast to f16 (a software conversion that adds half an ulp
  and truncates) that rounds exact ties away from zero: no other case brings a TypeCast an
  exact f16 tie, since it only ever reads a computed value;
- `TypeCastOverflowsBeforeRounding`: a TypeCast to bf16/f16 that checks the range before it
  rounds, so values within half an ulp past the largest finite value give +inf instead of that
  value: no other case brings a TypeCast a value near 65504 or 3.39e38;
- `MatMulNarrowPartials`: a bf16/f16 MatMul that splits K into chunks of 256 and keeps each
  chunk's sum in the narrow type (a split-K workspace of the dst type): the catalog's MatMuls
  sum at most a few dozen products, all in one chunk.

Each passes the ci profile as it was before the value boundaries (the floor of
`boundary_cases` left out) on the patterns listed for it in tests/conformance/test_mutation.py,
and fails one of the boundary cases there. (`EpilogueMaxDropsUpstreamNaN` is listed on the
four patterns where nothing else sends a NaN down to a Maximum or Minimum: in fp.unary_binary,
fp.pool_binary and softmax.post_ops a Divide, Log or Sqrt before it already makes one from
the clean values.)
The test runs them as ``testkit.mutants_boundaries:<Class>``.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any, ClassVar

import ml_dtypes
import numpy as np

from fusionspec.backend import CompiledPartition, Device
from fusionspec.reference import execute
from fusionspec.reference.backend import ReferenceBackend
from fusionspec.reference.dtypes import cast_to
from fusionspec.reference.registry import REGISTRY
from fusionspec.spec.dtypes import DataType
from fusionspec.spec.graph import Partition
from fusionspec.spec.types import Array

from .mutants import Maker, _Compiled, _f32, _swapped, _SwapsOps
from .mutants_corners import _NARROW

__all__ = ["ExpOverflowsAt88", "ExpF16OverflowsAt11", "RoundByAddingTwoPow23",
           "EpilogueMaxDropsUpstreamNaN", "TypeCastTiesAwayFromZero",
           "TypeCastOverflowsBeforeRounding", "MatMulNarrowPartials"]


def _exp_guarded_at_88(original: Callable[..., Any]) -> Callable[..., Any]:
    def exp(src: Array) -> Array:
        x = np.asarray(src, dtype=np.float32)
        result: Array = original(src)
        # the bug: the overflow guard's constant is rounded down from 88.7228 to 88
        return _f32(np.where(x > 88.0, np.float32(np.inf), result))
    return exp


class ExpOverflowsAt88(_SwapsOps):
    """Exp returns +inf for every argument above 88.0 instead of above 88.72."""

    name = "exp-overflows-at-88"
    swaps: ClassVar[Mapping[str, Maker]] = {"Exp": _exp_guarded_at_88}


def _exp_guarded_at_11(original: Callable[..., Any]) -> Callable[..., Any]:
    def exp(src: Array) -> Array:
        x = np.asarray(src, dtype=np.float32)
        result: Array = original(src)
        # the bug: the f16 guard's constant is rounded down from 11.09 to 11
        return _f32(np.where(x > 11.0, np.float32(np.inf), result))
    return exp


class ExpF16OverflowsAt11(ReferenceBackend):
    """An Exp whose output is f16 returns +inf for every argument above 11.0 instead of where
    its value passes the largest f16 (ln 65504 = 11.09)."""

    name = "exp-f16-overflows-at-11"

    def compile(self, part: Partition, device: Device) -> CompiledPartition:
        if not any(op.kind == "Exp" and op.outputs[0].dtype is DataType.f16
                   for op in part.ops):
            return super().compile(part, device)

        def run(inputs: Mapping[int, Array]) -> dict[int, Array]:
            with _swapped("Exp", _exp_guarded_at_11(REGISTRY["Exp"].fn)):
                return execute(part, inputs)
        return _Compiled(part, run)


def _round_by_adding_two_pow_23(original: Callable[..., Any]) -> Callable[..., Any]:
    def round_(src: Array) -> Array:
        x = np.asarray(src, dtype=np.float32)
        magic = np.float32(2.0 ** 23)
        with np.errstate(invalid="ignore"):
            # the bug: no `|x| < 2^23` guard, so past it the sum rounds odd integers to even
            shifted = (np.abs(x) + magic).astype(np.float32) - magic
        return _f32(np.copysign(shifted, x))
    return round_


class RoundByAddingTwoPow23(_SwapsOps):
    """Round adds and subtracts 2^23 in f32 at every magnitude, which is exact only below
    2^23."""

    name = "round-by-adding-two-pow-23"
    swaps: ClassVar[Mapping[str, Maker]] = {"Round": _round_by_adding_two_pow_23}


def _select_keeping_first(kind: str) -> Callable[..., Any]:
    pick = np.greater if kind == "Maximum" else np.less

    def select(src_0: Array, src_1: Array, *, auto_broadcast: str) -> Array:
        a = np.asarray(src_0, dtype=np.float32)
        b = np.asarray(src_1, dtype=np.float32)
        # the bug: `acc > b ? acc : b`, false for a NaN acc, which then gives b
        with np.errstate(invalid="ignore"):
            return _f32(np.where(pick(a, b), a, b))
    return select


class EpilogueMaxDropsUpstreamNaN(ReferenceBackend):
    """In a partition whose Maximum and Minimum ops all take their src_0 from an earlier op of
    the partition (a fused post-op), those ops compute ``acc > b ? acc : b``: a NaN coming down
    the chain is replaced by the other operand. Where one of them reads a graph input on src_0
    the partition is computed right (that case is `MaximumDropsFirstNaN`'s)."""

    name = "epilogue-max-drops-upstream-nan"

    def compile(self, part: Partition, device: Device) -> CompiledPartition:
        made = {t.id for op in part.ops for t in op.outputs}
        selects = [op for op in part.ops if op.kind in ("Maximum", "Minimum")]
        if not selects or any(op.inputs[0].id not in made for op in selects):
            return super().compile(part, device)

        def run(inputs: Mapping[int, Array]) -> dict[int, Array]:
            with _swapped("Maximum", _select_keeping_first("Maximum")), \
                    _swapped("Minimum", _select_keeping_first("Minimum")):
                return execute(part, inputs)
        return _Compiled(part, run)


def _ties_away(original: Callable[..., Any]) -> Callable[..., Any]:
    def typecast(src: Array, *, dst_dtype: DataType = DataType.f32) -> Array:
        result: Array = original(src, dst_dtype=dst_dtype)
        if dst_dtype is not DataType.f16:
            return result
        x = np.asarray(src, dtype=np.float64)
        even = np.asarray(cast_to(np.asarray(src, dtype=np.float32), dst_dtype))
        with np.errstate(invalid="ignore", over="ignore"):
            other = np.nextafter(even, np.where(x > even.astype(np.float64), np.inf, -np.inf)
                                 .astype(even.dtype))
            tie = (x - even.astype(np.float64)) == (other.astype(np.float64) - x)
            away = np.abs(other.astype(np.float64)) > np.abs(even.astype(np.float64))
        # the bug: an exact tie goes to the neighbour of larger magnitude, not the even one
        return _f32(np.where(tie & away & np.isfinite(x), other.astype(np.float32), result))
    return typecast


class TypeCastTiesAwayFromZero(_SwapsOps):
    """TypeCast to bf16 or f16 rounds exact ties away from zero instead of to even."""

    name = "typecast-ties-away-from-zero"
    swaps: ClassVar[Mapping[str, Maker]] = {"TypeCast": _ties_away}


def _range_checked_first(original: Callable[..., Any]) -> Callable[..., Any]:
    def typecast(src: Array, *, dst_dtype: DataType = DataType.f32) -> Array:
        result: Array = original(src, dst_dtype=dst_dtype)
        if dst_dtype not in _NARROW:
            return result
        x = np.asarray(src, dtype=np.float32)
        top = float(ml_dtypes.finfo(_NARROW[dst_dtype]).max)
        # the bug: anything beyond the largest finite value overflows, before rounding
        return _f32(np.where(np.abs(x) > top, np.copysign(np.float32(np.inf), x), result))
    return typecast


class TypeCastOverflowsBeforeRounding(_SwapsOps):
    """TypeCast to bf16 or f16 gives +-inf for every magnitude beyond the type's largest
    finite value, where the values up to half an ulp past it round down to it."""

    name = "typecast-overflows-before-rounding"
    swaps: ClassVar[Mapping[str, Maker]] = {"TypeCast": _range_checked_first}


#: Products a chunk of `MatMulNarrowPartials` sums before its partial goes to the narrow type.
CHUNK = 256


def _narrow_partials(narrow: Any, original: Callable[..., Any]) -> Callable[..., Any]:
    def matmul(src: Array, weights: Array, bias: Array | None = None, /, *,
               transpose_a: bool, transpose_b: bool, accumulation_mode: str) -> Array:
        a = np.asarray(src, dtype=np.float32)
        b = np.asarray(weights, dtype=np.float32)
        a = a[None, :] if a.ndim == 1 else np.swapaxes(a, -1, -2) if transpose_a else a
        b = b[:, None] if b.ndim == 1 else np.swapaxes(b, -1, -2) if transpose_b else b
        if a.shape[-1] <= CHUNK:  # one chunk: no partials, computed right
            result: Array = original(src, weights, bias, transpose_a=transpose_a,
                                     transpose_b=transpose_b,
                                     accumulation_mode=accumulation_mode)
            return result
        total = np.float32(0) * np.matmul(a[..., :0], b[..., :0, :])
        for start in range(0, a.shape[-1], CHUNK):
            part = np.matmul(a[..., start:start + CHUNK], b[..., start:start + CHUNK, :])
            # the bug: each chunk's partial sum is stored in the narrow type
            total = total + part.astype(narrow).astype(np.float32)
        if np.asarray(src).ndim == 1:
            total = total[..., 0, :]
        if np.asarray(weights).ndim == 1:
            total = total[..., 0]
        if bias is not None:
            total = total + np.asarray(bias, dtype=np.float32)
        return _f32(total)
    return matmul


class MatMulNarrowPartials(ReferenceBackend):
    """A bf16/f16 MatMul sums K in chunks of `CHUNK` products and rounds each chunk's sum to
    the input type before adding it to the others (in f32)."""

    name = "matmul-narrow-partials"

    def compile(self, part: Partition, device: Device) -> CompiledPartition:
        narrow = next((_NARROW[op.inputs[0].dtype] for op in part.ops
                       if op.kind == "MatMul" and op.inputs[0].dtype in _NARROW), None)
        if narrow is None:
            return super().compile(part, device)

        def run(inputs: Mapping[int, Array]) -> dict[int, Array]:
            with _swapped("MatMul", _narrow_partials(narrow, REGISTRY["MatMul"].fn)):
                return execute(part, inputs)
        return _Compiled(part, run)
