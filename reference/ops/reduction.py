"""Reductions: ReduceL1, ReduceL2, ReduceMax, ReduceMean, ReduceMin, ReduceProd, ReduceSum.

The axes come from the ``axes`` attribute or, when given, the optional second input (an s32
1-D tensor); they may be negative and must be unique and within [-rank, rank-1]. Empty axes
reduce over nothing, so every element is its own group: the spec's "identity operation" for
Sum, Mean, Max, Min and Prod, and |x| for L1 and L2.

Sums, means, norms and products accumulate in float64 and round once to float32, which is the
ideal the f32 reference stands for (a backend's f32 accumulation order may differ within the
reduction tolerance). Max and Min over an empty extent give -inf and +inf.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from fusionspec.spec.types import Array

from ..dtypes import to_compute
from ..errors import OpInputError


def _axes(kind: str, src: Array, attr_axes: Sequence[int], axes_input: Array | None
          ) -> tuple[int, ...]:
    if axes_input is not None:
        if len(attr_axes):
            raise OpInputError("both the axes attribute and the axes input are given; the "
                               "spec allows exactly one", op_kind=kind)
        given = [int(a) for a in np.asarray(axes_input).reshape(-1)]
    else:
        given = [int(a) for a in attr_axes]
    rank = src.ndim
    out: list[int] = []
    for a in given:
        if not -rank <= a < rank:
            raise OpInputError(f"axis {a} is out of range for rank {rank}", op_kind=kind)
        if a % rank in out:
            raise OpInputError(f"axis {a} is listed twice in axes {given}", op_kind=kind)
        out.append(a % rank)
    return tuple(sorted(out))


def _reduce(kind: str, src: Array, axes_input: Array | None, axes: Sequence[int],
            keep_dims: bool) -> Array:
    x = np.asarray(src, dtype=np.float64)
    ax = _axes(kind, x, axes, axes_input)
    with np.errstate(invalid="ignore", divide="ignore", over="ignore"):
        if kind == "ReduceL1":
            y = np.sum(np.abs(x), axis=ax, keepdims=keep_dims)
        elif kind == "ReduceL2":
            y = np.sqrt(np.sum(x * x, axis=ax, keepdims=keep_dims))
        elif kind == "ReduceMax":
            y = np.max(x, axis=ax, keepdims=keep_dims, initial=-np.inf)
        elif kind == "ReduceMin":
            y = np.min(x, axis=ax, keepdims=keep_dims, initial=np.inf)
        elif kind == "ReduceMean":
            count = int(np.prod([x.shape[a] for a in ax], dtype=np.int64))
            y = np.sum(x, axis=ax, keepdims=keep_dims) / count
        elif kind == "ReduceProd":
            y = np.prod(x, axis=ax, keepdims=keep_dims)
        else:
            y = np.sum(x, axis=ax, keepdims=keep_dims)
        return to_compute(y)


def ReduceL1(src: Array, axes_input: Array | None = None, *, axes: Sequence[int],
             keep_dims: bool) -> Array:
    return _reduce("ReduceL1", src, axes_input, axes, keep_dims)


def ReduceL2(src: Array, axes_input: Array | None = None, *, axes: Sequence[int],
             keep_dims: bool) -> Array:
    return _reduce("ReduceL2", src, axes_input, axes, keep_dims)


def ReduceMax(src: Array, axes_input: Array | None = None, *, axes: Sequence[int],
              keep_dims: bool) -> Array:
    return _reduce("ReduceMax", src, axes_input, axes, keep_dims)


def ReduceMean(src: Array, axes_input: Array | None = None, *, axes: Sequence[int],
               keep_dims: bool) -> Array:
    return _reduce("ReduceMean", src, axes_input, axes, keep_dims)


def ReduceMin(src: Array, axes_input: Array | None = None, *, axes: Sequence[int],
              keep_dims: bool) -> Array:
    return _reduce("ReduceMin", src, axes_input, axes, keep_dims)


def ReduceProd(src: Array, axes_input: Array | None = None, *, axes: Sequence[int],
               keep_dims: bool) -> Array:
    return _reduce("ReduceProd", src, axes_input, axes, keep_dims)


def ReduceSum(src: Array, axes_input: Array | None = None, *, axes: Sequence[int],
              keep_dims: bool) -> Array:
    return _reduce("ReduceSum", src, axes_input, axes, keep_dims)


#: The op implementations of this module (listed in `fusionspec.reference.ops`).
OPS = (ReduceL1, ReduceL2, ReduceMax, ReduceMean, ReduceMin, ReduceProd, ReduceSum)
