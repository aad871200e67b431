"""Reference Convolution, ConvTranspose and ConvolutionBackwardWeights.

Semantics (docs/semantics.md, Convolution and ConvTranspose; Training ops): cross-correlation
without kernel flip, graph-style dilations (1 = none, effective kernel (K-1)*D+1), zero padding,
groups split group-major, auto_pad resolved by the spec's `pads_for`. ConvTranspose is the
gradient of Convolution with respect to its src:
``dst[n, g*OCg+o, i*S + k*D - PL] += src[n, g*ICg+c, i] * w[g*ICg+c, o, k]``.

Method: im2col for the forward convolution and the weight gradient (a strided window view,
copied into a column matrix unless it already is one, as for a 1x1 stride-1 kernel; then one
BLAS product per chunk, batched over groups), col2im for ConvTranspose (one product per chunk,
then one strided add per kernel tap). Both data formats are computed in place: NCX as
W (OC, taps*IC) x cols (taps*IC, positions), NXC as cols (positions, taps*IC) x W. Chunks stay
under `_layout.CHUNK_BYTES`; precision as in `_layout.dot`.
"""

from __future__ import annotations

import math

import numpy as np

from fusionspec.spec.graph import AttrValue
from fusionspec.spec.shapes import infer_conv, infer_conv_transpose, spatial_dims

from ..dtypes import compute_dtype, to_compute
from ._layout import (
    ACC,
    CHUNK_BYTES,
    Array,
    check,
    chunks,
    conv_weights_grouped,
    conv_weights_ungrouped,
    deconv_weights_grouped,
    dot,
    infer_shape,
    pad_spatial,
    resolve_pads,
    tap_slices,
    taps,
    window_view,
)

__all__ = ["Convolution", "ConvTranspose", "ConvolutionBackwardWeights"]

_F32 = np.dtype(np.float32).itemsize


def _columns(win: Array, groups: int, data_format: str) -> Array:
    """im2col of a window view: NCX (n, C, *out, *k) -> (n, G, taps*C/G, positions);
    NXC (n, *out, *k, C) -> (G, n*positions, taps*C/G). Copies only when it must."""
    nsp = (win.ndim - 2) // 2
    if data_format == "NCX":
        n, c = win.shape[:2]
        split = win.reshape(n, groups, c // groups, *win.shape[2:])
        order = (0, 1, *range(3 + nsp, 3 + 2 * nsp), 2, *range(3, 3 + nsp))
        return split.transpose(order).reshape(n, groups, -1, math.prod(win.shape[2:2 + nsp]))
    c = win.shape[-1]
    split = win.reshape(*win.shape[:-1], groups, c // groups)
    rows = math.prod(win.shape[:1 + nsp])
    return np.moveaxis(split, -2, 0).reshape(groups, rows, -1)


def _conv_setup(src: Array, kernel: tuple[int, ...], strides: tuple[int, ...],
                dilations: tuple[int, ...], data_format: str, attrs: dict[str, AttrValue],
                dst_shape: tuple[int, ...]) -> tuple[Array, tuple[int, ...]]:
    """(window view of the zero-padded src, output spatial size)."""
    sp = spatial_dims(src.shape, data_format)
    pb, pe = resolve_pads("Convolution", sp, kernel, strides, dilations, attrs)
    xp = pad_spatial(src, pb, pe, 0.0, data_format)
    out_sp = spatial_dims(dst_shape, data_format)
    return window_view(xp, out_sp, kernel, strides, dilations, data_format), out_sp


def _kernel(wshape: tuple[int, ...], weights_format: str) -> tuple[int, ...]:
    return wshape[2:] if weights_format == "OIX" else wshape[:-2]


def Convolution(src: Array, weights: Array, bias: Array | None = None, /, *,
                strides: tuple[int, ...], pads_begin: tuple[int, ...],
                pads_end: tuple[int, ...], dilations: tuple[int, ...], auto_pad: str,
                groups: int, data_format: str, weights_format: str,
                ) -> Array:
    """N-d grouped, dilated, strided cross-correlation plus optional bias."""
    attrs: dict[str, AttrValue] = dict(
        strides=strides, pads_begin=pads_begin, pads_end=pads_end, dilations=dilations,
        auto_pad=auto_pad, groups=groups, data_format=data_format,
        weights_format=weights_format)
    shapes = [src.shape, weights.shape] + ([bias.shape] if bias is not None else [])
    dst_shape = infer_shape("Convolution", infer_conv, attrs, shapes)
    win, out_sp = _conv_setup(src, _kernel(weights.shape, weights_format), strides, dilations,
                              data_format, attrs, dst_shape)
    wg = conv_weights_grouped(weights, weights_format, groups)
    g, kvol, icg, ocg = wg.shape
    wmat = wg.reshape(g, kvol * icg, ocg)
    n = src.shape[0]
    row_bytes = math.prod(out_sp[1:]) * g * (kvol * icg + 2 * ocg) * _F32
    if data_format == "NCX":
        out = np.empty((n, g, ocg, *out_sp), dtype=compute_dtype())
        wt = wmat.transpose(0, 2, 1)  # (G, OC/G, taps*IC/G)
        b = None if bias is None else bias.reshape(g, ocg, 1)
        for nb, rb in chunks(n, out_sp[0], row_bytes):
            part = win[nb, :, rb]
            res = dot(wt, _columns(part, g, data_format))  # (n, G, OC/G, positions)
            if b is not None:
                res += b
            out[nb, :, :, rb] = res.reshape(*res.shape[:3], *part.shape[2:2 + len(out_sp)])
        return out.reshape(dst_shape)
    out = np.empty((n, *out_sp, g, ocg), dtype=compute_dtype())
    b = None if bias is None else bias.reshape(g, 1, ocg)
    for nb, rb in chunks(n, out_sp[0], row_bytes):
        part = win[nb, rb]
        res = dot(_columns(part, g, data_format), wmat)  # (G, n*positions, OC/G)
        if b is not None:
            res += b
        out[nb, rb] = np.moveaxis(res.reshape(g, *part.shape[:1 + len(out_sp)], ocg), 0, -2)
    return out.reshape(dst_shape)


def ConvTranspose(src: Array, weights: Array, bias: Array | None = None, /, *,
                  strides: tuple[int, ...], pads_begin: tuple[int, ...],
                  pads_end: tuple[int, ...], dilations: tuple[int, ...],
                  auto_pad: str, groups: int, data_format: str,
                  weights_format: str, output_padding: tuple[int, ...],
                  ) -> Array:
    """Transposed convolution (the gradient of Convolution w.r.t. src), plus optional bias."""
    attrs: dict[str, AttrValue] = dict(
        strides=strides, pads_begin=pads_begin, pads_end=pads_end, dilations=dilations,
        auto_pad=auto_pad, groups=groups, data_format=data_format,
        weights_format=weights_format, output_padding=output_padding)
    shapes = [src.shape, weights.shape] + ([bias.shape] if bias is not None else [])
    dst_shape = infer_shape("ConvTranspose", infer_conv_transpose, attrs, shapes)
    kernel = tuple(weights.shape[2:] if weights_format == "IOX" else weights.shape[:-2])
    in_sp = spatial_dims(src.shape, data_format)
    out_sp = spatial_dims(dst_shape, data_format)
    pb, _ = resolve_pads("ConvTranspose", in_sp, kernel, strides, dilations, attrs,
                         transposed=True)
    wg = deconv_weights_grouped(weights, weights_format, groups)
    n, ncx = src.shape[0], data_format == "NCX"
    out = np.empty(dst_shape, dtype=compute_dtype())
    # The float64 canvas of one batch item is as big as its output (plus the reach of the taps);
    # batch items are grouped so that one canvas stays under the chunk budget.
    per_item = 2 * math.prod(dst_shape[1:]) * np.dtype(ACC).itemsize
    step = max(CHUNK_BYTES // max(per_item, 1), 1)
    for n0 in range(0, n, step):
        block = slice(n0, min(n0 + step, n))
        dst = _deconv_block(src[block], wg, kernel, strides, dilations, pb, out_sp, ncx)
        if bias is not None:  # added to the float64 sums, so dst is rounded once
            dst += bias.reshape(-1, *(1,) * len(out_sp)) if ncx else bias
        out[block] = dst
    return out


def _deconv_block(src: Array, wg: Array, kernel: tuple[int, ...], strides: tuple[int, ...],
                  dilations: tuple[int, ...], pb: tuple[int, ...], out_sp: tuple[int, ...],
                  ncx: bool) -> Array:
    """col2im of a block of batch items: one product per chunk of input rows gives every
    tap's contribution, added into a float64 canvas with one strided add per tap."""
    g, kvol, icg, ocg = wg.shape
    in_sp = src.shape[2:] if ncx else src.shape[1:-1]
    # The canvas holds every position a tap reaches plus the output_padding tail; dst is its
    # window [pads_begin, pads_begin + out).
    full = [s * (i - 1) + (k - 1) * d + 1 for s, i, k, d in zip(strides, in_sp, kernel, dilations)]
    canvas_sp = [max(f, p + o) for f, p, o in zip(full, pb, out_sp)]
    n = src.shape[0]
    canvas = np.zeros((n, g, ocg, *canvas_sp) if ncx else (n, *canvas_sp, g, ocg), dtype=ACC)
    row_bytes = math.prod(in_sp[1:]) * g * (icg + 2 * kvol * ocg) * _F32
    for nb, rb in chunks(n, in_sp[0], row_bytes):
        part = src[nb, :, rb] if ncx else src[nb, rb]
        lead = part.shape[2:] if ncx else part.shape[1:-1]  # this chunk's input positions
        if ncx:  # (G, taps*OC/G, IC/G) x (n, G, IC/G, positions)
            wt = wg.transpose(0, 1, 3, 2).reshape(g, kvol * ocg, icg)
            res = dot(wt, part.reshape(part.shape[0], g, icg, -1))
            res = res.reshape(part.shape[0], g, kvol, ocg, *lead)
        else:  # (G, n*positions, IC/G) x (G, IC/G, taps*OC/G)
            a = np.moveaxis(part.reshape(-1, g, icg), 1, 0)
            res = dot(a, wg.transpose(0, 2, 1, 3).reshape(g, icg, kvol * ocg))
            res = res.reshape(g, part.shape[0], *lead, kvol, ocg)
        offset = (rb.start * strides[0], *(0 for _ in in_sp[1:]))
        for t, tap in enumerate(taps(kernel)):
            where = tap_slices(tap, lead, strides, dilations, offset)
            if ncx:
                canvas[(nb, slice(None), slice(None), *where)] += res[:, :, t]
            else:
                canvas[(nb, *where)] += np.moveaxis(res[..., t, :], 0, -2)
    crop = [slice(p, p + o) for p, o in zip(pb, out_sp)]
    everything = slice(None)
    dst = canvas[(everything, everything, everything, *crop) if ncx else (everything, *crop)]
    shape = (n, g * ocg, *out_sp) if ncx else (n, *out_sp, g * ocg)
    return np.ascontiguousarray(dst).reshape(shape)


def ConvolutionBackwardWeights(src: Array, diff_dst: Array, shape_input: Array | None = None,
                               /, *, strides: tuple[int, ...], pads_begin: tuple[int, ...],
                               pads_end: tuple[int, ...], dilations: tuple[int, ...],
                               auto_pad: str, groups: int,
                               data_format: str, weights_format: str,
                               weights_shape: tuple[int, ...]) -> Array:
    """diff_weights[oc, ic, k] = sum over n and o of diff_dst[n, oc, o] *
    src[n, g*ICg + ic, o*S + k*D - PL], in `weights_format`; the weights shape comes from the
    optional s32 input, else from the `weights_shape` attribute."""
    kind = "ConvolutionBackwardWeights"
    wshape = (tuple(int(v) for v in shape_input.reshape(-1)) if shape_input is not None
              else tuple(weights_shape))
    check(len(wshape) == src.ndim and all(d > 0 for d in wshape),
          f"weights shape {list(wshape)} must have {src.ndim} positive dims like src "
          f"{list(src.shape)}", kind=kind,
          where="input 2 (weights_shape)" if shape_input is not None else "attribute "
          "weights_shape")
    attrs: dict[str, AttrValue] = dict(
        strides=strides, pads_begin=pads_begin, pads_end=pads_end, dilations=dilations,
        auto_pad=auto_pad, groups=groups, data_format=data_format,
        weights_format=weights_format)
    dst_shape = infer_shape(kind, infer_conv, attrs, [src.shape, wshape])
    check(dst_shape == diff_dst.shape, f"diff_dst {list(diff_dst.shape)} is not the "
          f"{list(dst_shape)} a convolution of src {list(src.shape)} with weights "
          f"{list(wshape)} produces", kind=kind, where="input 1 (diff_dst)")
    kernel = _kernel(wshape, weights_format)
    win, out_sp = _conv_setup(src, kernel, strides, dilations, data_format, attrs, dst_shape)
    oc, kvol = diff_dst.shape[1 if data_format == "NCX" else -1], math.prod(kernel)
    ocg, icg = oc // groups, wshape[1] if weights_format == "OIX" else wshape[-2]
    grad = np.zeros((groups, ocg, kvol * icg) if data_format == "NCX"
                    else (groups, kvol * icg, ocg), dtype=ACC)
    row_bytes = math.prod(out_sp[1:]) * groups * (kvol * icg + ocg) * _F32
    for nb, rb in chunks(src.shape[0], out_sp[0], row_bytes):
        if data_format == "NCX":  # per batch item: dy (G, OC/G, pos) x cols^T (G, pos, ...)
            cols = _columns(win[nb, :, rb], groups, data_format)
            dy: Array = diff_dst[nb, :, rb].reshape(cols.shape[0], groups, ocg, -1)
            for item in range(cols.shape[0]):
                grad += dot(dy[item], cols[item].transpose(0, 2, 1))
        else:  # cols^T (G, taps*IC/G, rows) x dy (G, rows, OC/G)
            cols = _columns(win[nb, rb], groups, data_format)
            dy = np.moveaxis(diff_dst[nb, rb].reshape(-1, groups, ocg), 1, 0)
            grad += dot(cols.transpose(0, 2, 1), dy)
    if data_format == "NCX":
        wg = grad.reshape(groups, ocg, kvol, icg).transpose(0, 2, 3, 1)
    else:
        wg = grad.reshape(groups, kvol, icg, ocg)
    return to_compute(conv_weights_ungrouped(wg, weights_format, kernel))


#: The op implementations of this module (listed in `fusionspec.reference.ops`).
OPS = (Convolution, ConvTranspose, ConvolutionBackwardWeights)
