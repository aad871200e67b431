"""SoftMax: ``exp(x - max)/sum(exp(x - max))`` along `axis` (default 1), plus its statistics.

The function returns ``(dst, stats)``; the executor keeps as many outputs as the op declares
(stats is the optional second output). ``stats = max + log(sum(exp(x - max)))``, the
log-sum-exp, with the reduced axis kept as size 1.

A row with no finite maximum (every element -inf) has no defined softmax: with ``mode="none"``
its dst and stats are NaN; with ``mode="inf_as_zero"`` its dst is 0 and its stats -inf (the
log-sum-exp of nothing but -inf). Computed in float64, rounded once to float32.
"""

from __future__ import annotations

import numpy as np

from fusionspec.spec.types import Array

from ..dtypes import compute_dtype
from ..errors import OpInputError

#: Rows are processed in blocks of about this many float64 elements, so the temporaries of a
#: large SoftMax stay around 100 MB whatever the input size.
BLOCK_ELEMENTS = 1 << 22


def SoftMax(src: Array, *, axis: int, mode: str) -> tuple[Array, Array]:
    x = np.asarray(src)
    if not -x.ndim <= axis < x.ndim:
        raise OpInputError(f"axis {axis} is out of range for rank {x.ndim}", op_kind="SoftMax")
    # Put the softmax axis last and walk over blocks of rows.
    moved = np.moveaxis(x, axis, -1)
    rows = moved.reshape(-1, moved.shape[-1]) if moved.size else moved.reshape(0, x.shape[axis])
    dst = np.empty(rows.shape, dtype=compute_dtype())
    stats = np.empty((rows.shape[0], 1), dtype=compute_dtype())
    step = max(1, BLOCK_ELEMENTS // max(rows.shape[1], 1))
    for start in range(0, rows.shape[0], step):
        block = slice(start, start + step)
        dst[block], stats[block] = _softmax_rows(rows[block], mode)
    dst_full = np.moveaxis(dst.reshape(moved.shape), -1, axis)
    stats_full = np.moveaxis(stats.reshape((*moved.shape[:-1], 1)), -1, axis)
    return np.ascontiguousarray(dst_full), np.ascontiguousarray(stats_full)


def _softmax_rows(rows: Array, mode: str) -> tuple[Array, Array]:
    """Softmax of each row of a 2-D block, in float64, rounded once to float32."""
    x = rows.astype(np.float64)
    with np.errstate(invalid="ignore", divide="ignore", over="ignore"):
        peak = np.max(x, axis=1, keepdims=True)
        x -= peak
        np.exp(x, out=x)
        total = np.sum(x, axis=1, keepdims=True)
        x /= total
        stats = peak + np.log(total)
    if mode == "inf_as_zero":
        empty = np.isneginf(peak)
        x = np.where(empty, 0.0, x)
        stats = np.where(empty, -np.inf, stats)
    return x.astype(compute_dtype()), stats.astype(compute_dtype())


#: The op implementations of this module (listed in `fusionspec.reference.ops`).
OPS = (SoftMax,)
