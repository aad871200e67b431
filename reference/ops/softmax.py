"""SoftMax: ``exp(x - max)/sum(exp(x - max))`` along `axis` (default 1), plus its statistics.

The function returns ``(dst, stats)``; the executor keeps as many outputs as the op declares
(stats is the optional second output). ``stats = max + log(sum(exp(x - max)))``, the
log-sum-exp, with the reduced axis kept as size 1.

A row with no finite maximum (every element -inf) has no defined softmax: with ``mode="none"``
its dst and stats are NaN; with ``mode="inf_as_zero"`` its dst is 0 and its stats -inf (the
log-sum-exp of nothing but -inf). Computed in float64, rounded once to float32.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from ..errors import OpInputError
from ..registry import register

Array = np.ndarray[Any, np.dtype[Any]]


@register
def SoftMax(src: Array, *, axis: int = 1, mode: str = "none") -> tuple[Array, Array]:
    x = np.asarray(src, dtype=np.float64)
    if not -x.ndim <= axis < x.ndim:
        raise OpInputError(f"axis {axis} is out of range for rank {x.ndim}", op_kind="SoftMax")
    with np.errstate(invalid="ignore", divide="ignore", over="ignore"):
        peak = np.max(x, axis=axis, keepdims=True)
        shifted = np.exp(x - peak)
        total = np.sum(shifted, axis=axis, keepdims=True)
        dst = shifted / total
        stats = peak + np.log(total)
    if mode == "inf_as_zero":
        empty = np.isneginf(peak)
        dst = np.where(empty, 0.0, dst)
        stats = np.where(empty, -np.inf, stats)
    return dst.astype(np.float32), stats.astype(np.float32)
