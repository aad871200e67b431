"""Training (backward) ops: ReLUBackward, BatchNormTrainingBackward, BiasAddBackward.

- ReLUBackward: ``diff_src = diff_dst where v > 0 else 0``, with v the forward dst
  (``use_dst=True``, the default) or src, given on input 0.
- BatchNormTrainingBackward, per channel with M = elements per channel and
  s = sqrt(variance + epsilon):
  ``diff_beta = sum(dy)``, ``diff_gamma = sum(dy*(x - mean))/s`` and
  ``diff_src = gamma/s*(dy - diff_beta/M - (x - mean)*diff_gamma/(s*M))``, gamma = 1 when the
  optional input is absent. The function returns all three; the executor keeps the 1 or 3 the
  op declares.
- BiasAddBackward: ``diff_bias`` = diff_dst summed over every axis but the channel axis.

Sums accumulate in float64; results are rounded once to float32.
"""

from __future__ import annotations

import numpy as np

from fusionspec.spec.shapes import channel_axis
from fusionspec.spec.types import Array

from ..dtypes import to_compute
from ..errors import OpInputError
from .normalization import per_channel


def ReLUBackward(src: Array, diff_dst: Array, *, use_dst: bool) -> Array:
    v, dy = np.asarray(src), np.asarray(diff_dst)
    if v.shape != dy.shape:
        raise OpInputError(f"{'dst' if use_dst else 'src'} {list(v.shape)} and diff_dst "
                           f"{list(dy.shape)} differ in shape", op_kind="ReLUBackward")
    return to_compute(np.where(v > 0, dy, 0.0))


def BatchNormTrainingBackward(src: Array, diff_dst: Array, mean: Array, variance: Array,
                              gamma: Array | None = None, *, epsilon: float,
                              data_format: str) -> tuple[Array, Array, Array]:
    kind = "BatchNormTrainingBackward"
    x = np.asarray(src, dtype=np.float64)
    dy = np.asarray(diff_dst, dtype=np.float64)
    if x.shape != dy.shape:
        raise OpInputError(f"src {list(x.shape)} and diff_dst {list(dy.shape)} differ in shape",
                           op_kind=kind)
    params = {"mean": mean, "variance": variance}
    if gamma is not None:
        params["gamma"] = gamma
    axis, p = per_channel(kind, x, data_format, **params)
    scale = p.get("gamma", np.ones_like(p["mean"]))
    others = tuple(a for a in range(x.ndim) if a != axis)
    count = x.size // x.shape[axis] if x.shape[axis] else 0
    with np.errstate(invalid="ignore", divide="ignore"):
        sigma = np.sqrt(p["variance"] + float(np.float32(epsilon)))
        centered = x - p["mean"]
        diff_beta = np.sum(dy, axis=others, keepdims=True)
        diff_gamma = np.sum(dy * centered, axis=others, keepdims=True) / sigma
        diff_src = scale / sigma * (dy - diff_beta / count
                                    - centered * diff_gamma / (sigma * count))
    return (to_compute(diff_src), to_compute(diff_gamma.reshape(-1)),
            to_compute(diff_beta.reshape(-1)))


def BiasAddBackward(diff_dst: Array, *, data_format: str) -> Array:
    dy = np.asarray(diff_dst, dtype=np.float64)
    if dy.ndim < 2:
        raise OpInputError(f"diff_dst must have rank >= 2, got shape {list(dy.shape)}",
                           op_kind="BiasAddBackward")
    axis = channel_axis(data_format, dy.ndim)
    others = tuple(a for a in range(dy.ndim) if a != axis)
    return to_compute(np.sum(dy, axis=others))


#: The op implementations of this module (listed in `fusionspec.reference.ops`).
OPS = (ReLUBackward, BatchNormTrainingBackward, BiasAddBackward)
