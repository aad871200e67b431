"""Quantize, Dequantize, TypeCast and Reorder.

- Quantize: ``saturate(round_half_even(x/scale + zp))`` for u8/s8 destinations, where
  ``x/scale + zp`` is the exact real value (rounded once, so a value a hair below .5 never
  becomes a tie). For f8 destinations (no zero points) the exact ``x/scale`` is rounded once to
  the f8 type, to nearest even, and returned as float32 (floats travel as float32 between ops).
- Dequantize: ``(x - zp)*scale`` in f32, with no rounding to integers.
- ``per_tensor`` uses the single scale (and zero point); ``per_channel`` lays ``scales[i]`` and
  ``zps[i]`` along ``axis`` (negative allowed). Absent or empty ``zps`` mean 0.
- TypeCast: rounds to the destination type (nearest even) and returns the rounded values as
  float32, so a TypeCast inside a fused partition still rounds.
- Reorder: a layout change; the values are unchanged.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from fusionspec.spec.dtypes import DataType
from fusionspec.spec.types import Array

from ..dtypes import cast_to, compute_dtype, to_compute
from ..errors import OpInputError


def _params(kind: str, src: Array, qtype: str, axis: int, scales: Sequence[float],
            zps: Sequence[int] | None) -> tuple[Array, Array]:
    """Scales and zero points as float32 arrays that broadcast against `src`."""
    scale = np.asarray(scales, dtype=np.float32)
    zp = np.asarray(zps if zps else [0] * len(scales), dtype=np.float32)
    if scale.ndim != 1 or scale.size == 0:
        raise OpInputError(f"scales must be a non-empty list, got {list(scales)}",
                           op_kind=kind)
    if zp.shape != scale.shape:
        raise OpInputError(f"{scale.size} scales but {zp.size} zero points", op_kind=kind)
    if qtype != "per_channel":
        if scale.size != 1:
            raise OpInputError(f"per_tensor takes 1 scale, got {scale.size}", op_kind=kind)
        return scale.reshape(()), zp.reshape(())
    rank = src.ndim
    if not -rank <= axis < rank:
        raise OpInputError(f"axis {axis} is out of range for rank {rank}", op_kind=kind)
    ax = axis % rank
    if src.shape[ax] != scale.size:
        raise OpInputError(f"{scale.size} scales for the {src.shape[ax]} channels of axis "
                           f"{axis} of src {list(src.shape)}", op_kind=kind)
    shape = [1] * rank
    shape[ax] = scale.size
    return scale.reshape(shape), zp.reshape(shape)


def _round_half_even_plus(a: Array, zp: Array) -> Array:
    """round_half_even(a + zp) for float64 `a` and integer-valued `zp`, without letting a large
    zero point round a's fraction away: the fraction is split off before zp is added."""
    whole = np.trunc(a)
    frac = a - whole  # exact
    base = whole + zp  # an exact integer
    # Only at an exact .5 does the parity of base + frac decide; base + frac is exact there.
    rounded = np.where(np.abs(frac) == 0.5, np.rint(base + frac), base + np.rint(frac))
    return np.where(np.isinf(a), a, rounded)


def _round_to_odd_f32(v: Array) -> Array:
    """float64 -> float32 rounding to odd: truncate, then set the last bit when inexact. A
    second rounding of the result to a type at least 2 bits narrower (f8) then equals one
    direct, correct rounding of `v`."""
    nearest = v.astype(np.float32)
    wide = nearest.astype(np.float64)
    inexact = np.isfinite(v) & (wide != v)
    toward_zero = np.where(inexact & (np.abs(wide) > np.abs(v)),
                           np.nextafter(nearest, np.float32(0.0)), nearest)
    bits = toward_zero.view(np.uint32)
    return np.where(inexact, bits | np.uint32(1), bits).astype(np.uint32).view(np.float32)


def Quantize(src: Array, *, qtype: str, axis: int,
             scales: Sequence[float] = (), zps: Sequence[int] | None = None,
             dst_dtype: DataType = DataType.u8) -> Array:
    """Round the exact value x/scale + zp once: to nearest even integer, then saturate (u8/s8),
    or to nearest even f8 value (f8 types, returned as float32)."""
    scale, zp = _params("Quantize", np.asarray(src), qtype, axis, scales, zps)
    x = np.asarray(src, dtype=np.float64)
    with np.errstate(divide="ignore", invalid="ignore", over="ignore"):
        # float64 holds x/scale closely enough that its distance to any integer or half-integer
        # is never misjudged for f32 x and scale: ties and near-ties are decided exactly.
        a = x / scale.astype(np.float64)
        if dst_dtype in (DataType.f8_e4m3, DataType.f8_e5m2):
            exact = _round_to_odd_f32(a + zp.astype(np.float64))
            return to_compute(cast_to(exact, dst_dtype))
        if dst_dtype not in (DataType.u8, DataType.s8, DataType.s32):
            raise OpInputError(f"cannot quantize to {dst_dtype}", op_kind="Quantize")
        q = _round_half_even_plus(a, zp.astype(np.float64))
    # cast_to saturates to the type's range (q is already integral); NaN becomes 0.
    return cast_to(q, dst_dtype)


def Dequantize(src: Array, *, qtype: str, axis: int,
               scales: Sequence[float] = (), zps: Sequence[int] | None = None) -> Array:
    scale, zp = _params("Dequantize", np.asarray(src), qtype, axis, scales, zps)
    x = to_compute(src)  # exact for u8, s8 and f8 values
    return ((x - zp) * scale).astype(compute_dtype())


def TypeCast(src: Array, *, dst_dtype: DataType = DataType.f32) -> Array:
    # Rounds even under high_precision: the conversion is what the op means.
    return to_compute(cast_to(np.asarray(src), dst_dtype))


def Reorder(src: Array) -> Array:
    return np.array(src, copy=True)


#: The op implementations of this module (listed in `fusionspec.reference.ops`).
OPS = (Quantize, Dequantize, TypeCast, Reorder)
