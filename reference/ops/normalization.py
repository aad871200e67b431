"""BatchNormInference: ``gamma*(x - mean)/sqrt(variance + epsilon) + beta`` per channel.

The channel axis is the last one for ``data_format="NXC"`` (the default) and axis 1 for "NCX".
gamma, beta, mean and variance are 1-D with one value per channel. Computed in float64 and
rounded once to float32.
"""

from __future__ import annotations

import numpy as np

from fusionspec.spec.shapes import channel_axis
from fusionspec.spec.types import Array

from ..dtypes import to_compute
from ..errors import OpInputError


def per_channel(kind: str, src: Array, data_format: str, **params: Array
                ) -> tuple[int, dict[str, Array]]:
    """The channel axis of `src` and each 1-D parameter reshaped to broadcast along it (float64).

    Raises `OpInputError` when src has rank < 2 or a parameter is not one value per channel.
    """
    if src.ndim < 2:
        raise OpInputError(f"src must have rank >= 2, got shape {list(src.shape)}",
                           op_kind=kind)
    axis = channel_axis(data_format, src.ndim)
    channels = src.shape[axis]
    shape = [1] * src.ndim
    shape[axis] = channels
    out: dict[str, Array] = {}
    for name, value in params.items():
        arr = np.asarray(value, dtype=np.float64)
        if arr.shape != (channels,):
            raise OpInputError(f"{name} has shape {list(arr.shape)}, expected [{channels}] "
                               f"(the channels of src {list(src.shape)}, axis {axis})",
                               op_kind=kind)
        out[name] = arr.reshape(shape)
    return axis, out


def BatchNormInference(src: Array, gamma: Array, beta: Array, mean: Array, variance: Array,
                       *, epsilon: float, data_format: str) -> Array:
    x = np.asarray(src, dtype=np.float64)
    _, p = per_channel("BatchNormInference", x, data_format, gamma=gamma, beta=beta, mean=mean,
                       variance=variance)
    with np.errstate(invalid="ignore", divide="ignore"):
        sigma = np.sqrt(p["variance"] + float(np.float32(epsilon)))  # epsilon is an f32 attribute
        y = p["gamma"] * (x - p["mean"]) / sigma + p["beta"]
    return to_compute(y)


#: The op implementations of this module (listed in `fusionspec.reference.ops`).
OPS = (BatchNormInference,)
