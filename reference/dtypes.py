"""NumPy storage and compute types for the graph's data types, and the casts between them.

Storage: each `DataType` is held in one NumPy dtype (`numpy_dtype`): bf16 and the f8 types come
from ml_dtypes (``bfloat16``, ``float8_e4m3fn``, ``float8_e5m2``), boolean is ``bool_``.

Compute: the reference computes every floating-point value in float32 (`widen` turns bf16, f16
and f8 into float32, exactly); integer data keeps its own dtype. Under `high_precision()` the
same op functions compute in float64 instead and skip the f32 roundings between operations
(`compute_dtype`, `to_compute`): a third opinion, closer to the exact value, for judging who is
right when a backend and the reference disagree, and for evaluating an op at the edges of an
error interval without rounding them away.

Casts (`cast_to`) happen only where the spec converts: at partition outputs, in TypeCast and in
Quantize. Floating-point targets round to nearest, ties to even (overflow gives inf, or NaN for
f8_e4m3, which has no inf, as in IEEE-style conversion); integer targets round half to even and
saturate to the target's range, NaN becoming 0.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from contextvars import ContextVar
from typing import Any

import ml_dtypes
import numpy as np
import numpy.typing as npt

from fusionspec.spec.dtypes import DataType

__all__ = [
    "numpy_dtype",
    "data_type_of",
    "widen",
    "cast_to",
    "is_float_dtype",
    "integer_range",
    "high_precision",
    "compute_dtype",
    "to_compute",
]

_NUMPY: dict[DataType, np.dtype[Any]] = {
    DataType.f32: np.dtype(np.float32),
    DataType.bf16: np.dtype(ml_dtypes.bfloat16),
    DataType.f16: np.dtype(np.float16),
    DataType.s8: np.dtype(np.int8),
    DataType.u8: np.dtype(np.uint8),
    DataType.s32: np.dtype(np.int32),
    DataType.boolean: np.dtype(np.bool_),
    DataType.f8_e4m3: np.dtype(ml_dtypes.float8_e4m3fn),
    DataType.f8_e5m2: np.dtype(ml_dtypes.float8_e5m2),
    DataType.s64: np.dtype(np.int64),
    DataType.s4: np.dtype(ml_dtypes.int4),
    DataType.u4: np.dtype(ml_dtypes.uint4),
}
_BY_NUMPY: dict[np.dtype[Any], DataType] = {v: k for k, v in _NUMPY.items()}

_FLOAT_NUMPY = frozenset(np.dtype(t) for t in (
    np.float16, np.float32, np.float64, ml_dtypes.bfloat16, ml_dtypes.float8_e4m3fn,
    ml_dtypes.float8_e5m2))


_HIGH_PRECISION: ContextVar[bool] = ContextVar("fusionspec_high_precision", default=False)
_F32 = np.dtype(np.float32)
_F64 = np.dtype(np.float64)


@contextmanager
def high_precision() -> Iterator[None]:
    """Within this block the op functions compute in float64 and return float64 results (the
    roundings the spec defines as conversions, TypeCast and Quantize, still happen)."""
    token = _HIGH_PRECISION.set(True)
    try:
        yield
    finally:
        _HIGH_PRECISION.reset(token)


def compute_dtype() -> np.dtype[Any]:
    """float32, or float64 inside `high_precision()`."""
    return _F64 if _HIGH_PRECISION.get() else _F32


def to_compute(array: npt.ArrayLike) -> np.ndarray[Any, np.dtype[Any]]:
    """`array` as a floating-point array of the compute dtype (see `compute_dtype`); a float64
    value beyond the f32 range becomes +-inf, the f32 result."""
    with np.errstate(over="ignore"):
        return np.asarray(array).astype(compute_dtype())


def numpy_dtype(dtype: DataType) -> np.dtype[Any]:
    """The NumPy dtype that stores `dtype` (``undef`` has none: ValueError)."""
    try:
        return _NUMPY[dtype]
    except KeyError:
        raise ValueError(f"data type {dtype} has no NumPy storage type") from None


def data_type_of(dtype: npt.DTypeLike) -> DataType:
    """The `DataType` stored as NumPy `dtype` (ValueError for a dtype no DataType uses)."""
    key = np.dtype(dtype)
    try:
        return _BY_NUMPY[key]
    except KeyError:
        raise ValueError(f"NumPy dtype {key} stores no graph data type") from None


def is_float_dtype(dtype: npt.DTypeLike) -> bool:
    """Whether a NumPy dtype is floating point, ml_dtypes' types included."""
    return np.dtype(dtype) in _FLOAT_NUMPY


def integer_range(dtype: DataType) -> tuple[int, int]:
    """The [lowest, highest] values of an integer data type."""
    info = np.iinfo(numpy_dtype(dtype))
    return int(info.min), int(info.max)


def widen(array: npt.ArrayLike) -> np.ndarray[Any, np.dtype[Any]]:
    """The compute form of `array`: float32 for every floating-point type (exact for bf16, f16
    and f8; float64 is rounded to float32; float64 everywhere inside `high_precision()`),
    integers and booleans unchanged."""
    arr = np.asarray(array)
    if is_float_dtype(arr.dtype):
        return arr.astype(compute_dtype())
    return arr


def cast_to(array: npt.ArrayLike, dtype: DataType) -> np.ndarray[Any, np.dtype[Any]]:
    """Convert `array` to the storage type of `dtype` the way the spec converts.

    A float64 `array` is first rounded to float32: the spec's intermediate values are f32, so
    rounding float64 straight to bf16 would skip a rounding the spec performs.
    """
    arr = np.asarray(array)
    target = numpy_dtype(dtype)
    if arr.dtype == target:
        return arr.copy()
    if dtype is DataType.boolean:
        return np.asarray(arr != 0)
    if is_float_dtype(target):
        if arr.dtype == np.float64:
            arr = arr.astype(np.float32)
        # ml_dtypes and NumPy both round to nearest even when narrowing; overflow gives inf.
        with np.errstate(over="ignore"):
            return arr.astype(target)
    lo, hi = integer_range(dtype)
    if is_float_dtype(arr.dtype):
        wide = arr.astype(np.float64)  # exact for every float32 value
        with np.errstate(invalid="ignore"):
            rounded = np.rint(np.nan_to_num(wide, nan=0.0, posinf=hi, neginf=lo))
        return np.clip(rounded, lo, hi).astype(target)
    return np.clip(arr.astype(np.int64), lo, hi).astype(target)
