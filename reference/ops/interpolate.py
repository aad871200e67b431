"""Reference Interpolate (docs/semantics.md, Interpolate).

The output spatial size is the optional s32 `sizes` input, else the `sizes` attribute, else
floor(f32(in) * f32(scale)) as oneDNN computes it. The source coordinate of output index o
uses the sizes, never the scale value, and is computed in float32 in oneDNN's order:

- half_pixel:    s = (o + 0.5) * in / out - 0.5
- align_corners: s = o * (in - 1) / (out - 1), and 0 when out = 1 (documented only).

"nearest" takes x[roundf(s)] (round half away from zero). Every other mode ("linear",
"bilinear", "trilinear" alike) is separable linear interpolation over all spatial dims:
l = max(trunc(s), 0), r = min(ceil(s), in - 1), w = |s - l|, y = (1 - w) x[l] + w x[r], with the
f32 weights of oneDNN's reference and the sums in float64 (`_layout.ACC`).
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from fusionspec.spec.graph import AttrValue
from fusionspec.spec.shapes import infer_interpolate, spatial_dims

from ..dtypes import compute_dtype, to_compute
from ._layout import ACC, Array, check, infer_shape, spatial_axes

__all__ = ["Interpolate"]

def source_coords(out: int, size_in: int, mode: str) -> Array:
    """The float32 source coordinate of every output index along one axis (float64 under
    `high_precision`)."""
    ft = compute_dtype().type
    o = np.arange(out, dtype=ft)
    if mode == "align_corners":
        if out == 1:
            return np.zeros(1, dtype=ft)
        coords: Array = o * ft(size_in - 1) / ft(out - 1)
        return coords
    coords = (o + ft(0.5)) * ft(size_in) / ft(out) - ft(0.5)
    return coords


def nearest_index(s: Array, size_in: int) -> Array:
    """roundf(s): half away from zero; clipped so that f32 rounding can never leave the axis."""
    r = np.sign(s) * np.floor(np.abs(s.astype(np.float64)) + 0.5)
    idx: Array = np.clip(r, 0, size_in - 1).astype(np.intp)
    return idx


def linear_taps(s: Array, size_in: int) -> tuple[Array, Array, Array, Array]:
    """Left and right indices and their f32 weights (1 - w, w) for coordinates `s`."""
    left = np.maximum(np.trunc(s), 0).astype(np.intp)
    right = np.minimum(np.ceil(np.maximum(s, 0)), size_in - 1).astype(np.intp)
    w = np.abs(s - left.astype(s.dtype))
    return left, right, s.dtype.type(1) - w, w


def _out_sizes(src: Array, sizes_input: Array | None, attrs: dict[str, AttrValue],
               in_sp: Sequence[int]) -> tuple[int, ...]:
    if sizes_input is not None:
        sizes = tuple(int(v) for v in sizes_input.reshape(-1))
        check(len(sizes) == len(in_sp) and all(v > 0 for v in sizes),
              f"sizes {list(sizes)} must hold {len(in_sp)} positive values, one per spatial "
              "dim", kind="Interpolate", where="input 1 (sizes)")
        return sizes
    dst_shape = infer_shape("Interpolate", infer_interpolate, attrs, [src.shape])
    out = spatial_dims(dst_shape, str(attrs["data_format"]))
    check(all(v > 0 for v in out), f"output spatial size {list(out)} is empty",
          kind="Interpolate", where="attribute scales")
    return out


def Interpolate(src: Array, sizes_input: Array | None = None, /, *, mode: str,
                sizes: tuple[int, ...] = (), scales: tuple[float, ...] = (),
                coordinate_transformation_mode: str,
                data_format: str) -> Array:
    """Resize the spatial dims by nearest or (multi)linear interpolation."""
    attrs: dict[str, AttrValue] = {"mode": mode, "sizes": sizes, "scales": scales,
                                   "coordinate_transformation_mode":
                                       coordinate_transformation_mode,
                                   "data_format": data_format}
    in_sp = spatial_dims(src.shape, data_format)
    out_sp = _out_sizes(src, sizes_input, attrs, in_sp)
    axes = spatial_axes(data_format, src.ndim)
    if mode == "nearest":
        y: Array = src
        for axis, i, o in zip(axes, in_sp, out_sp):
            idx = nearest_index(source_coords(o, i, coordinate_transformation_mode), i)
            y = np.take(y, idx, axis=axis)
        return to_compute(y)
    y = src.astype(ACC)
    for axis, i, o in zip(axes, in_sp, out_sp):
        left, right, w_left, w_right = linear_taps(
            source_coords(o, i, coordinate_transformation_mode), i)
        shape = [1] * y.ndim
        shape[axis] = o
        y = (np.take(y, left, axis=axis) * w_left.astype(ACC).reshape(shape)
             + np.take(y, right, axis=axis) * w_right.astype(ACC).reshape(shape))
    return to_compute(y)


#: The op implementations of this module (listed in `fusionspec.reference.ops`).
OPS = (Interpolate,)
