"""Element-wise binary ops (Add, Divide, Maximum, Minimum, Multiply, Subtract) and BiasAdd.

Broadcasting is NumPy's (right-aligned, two-way) under ``auto_broadcast="numpy"``; under
``"none"`` the two shapes must be equal. Floating-point inputs arrive as float32 (a bf16 or f16
operand is widened exactly), so mixed f32/bf16 inputs need nothing special, and each result is
one correctly rounded f32 operation. Maximum and Minimum propagate NaN from either side.

s32 Add/Subtract is computed exactly in int64 and saturated to the s32 range.
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np

from fusionspec.spec.shapes import channel_axis
from fusionspec.spec.types import Array

from ..dtypes import compute_dtype
from ..errors import OpInputError

_S32_MIN, _S32_MAX = np.iinfo(np.int32).min, np.iinfo(np.int32).max


def _operands(kind: str, a: Array, b: Array, auto_broadcast: str) -> tuple[Array, Array]:
    a, b = np.asarray(a), np.asarray(b)
    if auto_broadcast == "none":
        if a.shape != b.shape:
            raise OpInputError(f"shapes {list(a.shape)} and {list(b.shape)} differ and "
                               "auto_broadcast is 'none'", op_kind=kind)
    else:
        try:
            np.broadcast_shapes(a.shape, b.shape)
        except ValueError:
            raise OpInputError(f"shapes {list(a.shape)} and {list(b.shape)} do not broadcast "
                               "(numpy rules)", op_kind=kind) from None
    return a, b


def _apply(kind: str, fn: Callable[[Array, Array], Array], a: Array, b: Array,
           auto_broadcast: str) -> Array:
    a, b = _operands(kind, a, b, auto_broadcast)
    if np.issubdtype(a.dtype, np.integer) and np.issubdtype(b.dtype, np.integer):
        exact = fn(a.astype(np.int64), b.astype(np.int64))
        return np.clip(exact, _S32_MIN, _S32_MAX).astype(np.int32)
    with np.errstate(divide="ignore", invalid="ignore", over="ignore"):
        wide = compute_dtype()
        return np.asarray(fn(a.astype(wide), b.astype(wide))).astype(wide)


def Add(src_0: Array, src_1: Array, *, auto_broadcast: str) -> Array:
    return _apply("Add", np.add, src_0, src_1, auto_broadcast)


def Subtract(src_0: Array, src_1: Array, *, auto_broadcast: str) -> Array:
    return _apply("Subtract", np.subtract, src_0, src_1, auto_broadcast)


def Multiply(src_0: Array, src_1: Array, *, auto_broadcast: str) -> Array:
    return _apply("Multiply", np.multiply, src_0, src_1, auto_broadcast)


def Divide(src_0: Array, src_1: Array, *, auto_broadcast: str) -> Array:
    # IEEE division: x/0 is +-inf, 0/0 is NaN.
    return _apply("Divide", np.divide, src_0, src_1, auto_broadcast)


def Maximum(src_0: Array, src_1: Array, *, auto_broadcast: str) -> Array:
    return _apply("Maximum", np.maximum, src_0, src_1, auto_broadcast)


def Minimum(src_0: Array, src_1: Array, *, auto_broadcast: str) -> Array:
    return _apply("Minimum", np.minimum, src_0, src_1, auto_broadcast)


def BiasAdd(src: Array, bias: Array, *, data_format: str) -> Array:
    """src + bias, with the 1-D bias laid along the channel axis (last for NXC, 1 for NCX)."""
    src, bias = np.asarray(src), np.asarray(bias)
    if src.ndim < 2:
        raise OpInputError(f"src must have rank >= 2, got shape {list(src.shape)}",
                           op_kind="BiasAdd")
    axis = channel_axis(data_format, src.ndim)
    if bias.ndim != 1 or bias.shape[0] != src.shape[axis]:
        raise OpInputError(f"bias of shape {list(bias.shape)} does not match the "
                           f"{src.shape[axis]} channels (axis {axis}) of src {list(src.shape)}",
                           op_kind="BiasAdd")
    shape = [1] * src.ndim
    shape[axis] = bias.shape[0]
    wide = compute_dtype()
    result: Array = (src.astype(wide) + bias.astype(wide).reshape(shape)).astype(wide)
    return result


#: The op implementations of this module (listed in `fusionspec.reference.ops`).
OPS = (Add, Subtract, Multiply, Divide, Maximum, Minimum, BiasAdd)
