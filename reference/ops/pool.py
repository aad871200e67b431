"""Reference AvgPool and MaxPool (docs/semantics.md, Pooling).

Both slide a window over the spatial dims; the result is built with one strided slice per
kernel tap (a view, no copy), so memory stays at the size of the padded input plus the output.

AvgPool: ``exclude_pad=true`` divides by the number of in-bounds elements of each window,
``exclude_pad=false`` by the kernel volume (padded zeros count). With ``rounding_type="ceil"``
oneDNN re-derives pads_end as (out-1)*S + K - in - PL and always averages over in-bounds
elements only, whatever ``exclude_pad`` says. A window with no in-bounds element gives 0/0 = NaN,
as oneDNN's reference does. Sums run in float64 (`_layout.ACC`).

MaxPool: graph-style dilations (1 = none; the default () or oneDNN's twelve 1s mean all 1s).
Padding never wins: the maximum starts at the lowest finite value of the dst type, and only
in-bounds elements greater than it replace it, as in oneDNN's reference kernel. So a window
with no in-bounds element (or only -inf/NaN ones) gives that lowest value.
"""

from __future__ import annotations

import math
from collections.abc import Sequence

import numpy as np

from fusionspec.spec.dtypes import DataType
from fusionspec.spec.graph import AttrValue
from fusionspec.spec.shapes import filled_default, infer_pool, spatial_dims

from ..dtypes import compute_dtype, to_compute
from ._layout import (
    ACC,
    Array,
    at_spatial,
    infer_shape,
    pad_spatial,
    resolve_pads,
    spatial_axes,
    tap_slices,
    taps,
)

__all__ = ["AvgPool", "MaxPool"]

#: The lowest finite value of each floating dst type (MaxPool's starting value).
_LOWEST: dict[DataType, float] = {
    DataType.f32: -float.fromhex("0x1.fffffep127"),
    DataType.bf16: -float.fromhex("0x1.fep127"),
    DataType.f16: -65504.0,
}


def _padded(kind: str, src: Array, attrs: dict[str, AttrValue], kernel: Sequence[int],
            strides: Sequence[int], dilations: Sequence[int], fill: float,
            ) -> tuple[Array, tuple[int, ...], tuple[int, ...]]:
    """(padded src, dst shape, explicit pads_begin). The end is padded as far as the last
    window reaches, which ceil rounding may put past pads_end."""
    fmt = str(attrs["data_format"])
    dst_shape = infer_shape(kind, infer_pool, attrs, [src.shape])
    in_sp = spatial_dims(src.shape, fmt)
    out_sp = spatial_dims(dst_shape, fmt)
    pb, _ = resolve_pads(kind, in_sp, kernel, strides, dilations, attrs)
    end = [(o - 1) * s + (k - 1) * d + 1 - i - p
           for o, s, k, d, i, p in zip(out_sp, strides, kernel, dilations, in_sp, pb)]
    return pad_spatial(src, pb, end, fill, fmt), dst_shape, pb


def _in_bounds_count(in_sp: Sequence[int], out_sp: Sequence[int], kernel: Sequence[int],
                     strides: Sequence[int], pads_begin: Sequence[int], data_format: str,
                     ) -> Array:
    """Number of in-bounds elements of every window, shaped to broadcast against dst. It is
    a product over the spatial axes, so it is built from one small table per axis."""
    ndim = len(out_sp) + 2
    count = np.ones((1,) * ndim, dtype=ACC)
    for axis, i, o, k, s, p in zip(spatial_axes(data_format, ndim), in_sp, out_sp, kernel,
                                   strides, pads_begin):
        pos = np.arange(o)[:, None] * s + np.arange(k)[None, :] - p
        per_axis = ((pos >= 0) & (pos < i)).sum(axis=1).astype(ACC)
        shape = [1] * ndim
        shape[axis] = o
        count = count * per_axis.reshape(shape)
    return count


def AvgPool(src: Array, /, *, strides: tuple[int, ...], pads_begin: tuple[int, ...],
            pads_end: tuple[int, ...], kernel: tuple[int, ...], exclude_pad: bool,
            data_format: str, rounding_type: str,
            auto_pad: str) -> Array:
    """Window average; see the module docstring for the divisor rules."""
    attrs: dict[str, AttrValue] = dict(strides=strides, pads_begin=pads_begin, pads_end=pads_end,
                                    kernel=kernel, exclude_pad=exclude_pad,
                                    data_format=data_format, rounding_type=rounding_type,
                                    auto_pad=auto_pad)
    ones = (1,) * len(kernel)
    xp, dst_shape, pb = _padded("AvgPool", src, attrs, kernel, strides, ones, 0.0)
    out_sp = spatial_dims(dst_shape, data_format)
    total = np.zeros(dst_shape, dtype=ACC)
    for tap in taps(kernel):
        total += xp[at_spatial(data_format, xp.ndim, tap_slices(tap, out_sp, strides, ones))]
    if exclude_pad or rounding_type == "ceil":
        in_sp = spatial_dims(src.shape, data_format)
        divisor = _in_bounds_count(in_sp, out_sp, kernel, strides, pb, data_format)
    else:
        divisor = np.asarray(math.prod(kernel), dtype=ACC)
    with np.errstate(invalid="ignore", divide="ignore"):
        mean = total / divisor
    return to_compute(mean)


def MaxPool(src: Array, /, *, strides: tuple[int, ...], pads_begin: tuple[int, ...],
            pads_end: tuple[int, ...], kernel: tuple[int, ...], data_format: str,
            rounding_type: str, auto_pad: str,
            dilations: tuple[int, ...], dst_dtype: DataType | None = None) -> Array:
    """Window maximum with dilations; padding never wins (see the module docstring)."""
    dil = filled_default(tuple(dilations), 1, len(kernel)) or (1,) * len(kernel)
    attrs: dict[str, AttrValue] = dict(strides=strides, pads_begin=pads_begin, pads_end=pads_end,
                                    kernel=kernel, data_format=data_format,
                                    rounding_type=rounding_type, auto_pad=auto_pad,
                                    dilations=dil)
    xp, dst_shape, _ = _padded("MaxPool", src, attrs, kernel, strides, dil, -np.inf)
    out_sp = spatial_dims(dst_shape, data_format)
    lowest = _LOWEST.get(dst_dtype or DataType.f32, _LOWEST[DataType.f32])
    best = np.full(dst_shape, lowest, dtype=compute_dtype())
    for tap in taps(kernel):
        # fmax skips NaN, as the kernel's "greater than" test does.
        np.fmax(best, xp[at_spatial(data_format, xp.ndim, tap_slices(tap, out_sp, strides, dil))],
                out=best)
    return best


#: The op implementations of this module (listed in `fusionspec.reference.ops`).
OPS = (AvgPool, MaxPool)
