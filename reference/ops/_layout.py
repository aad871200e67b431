"""Layout, geometry and accumulation helpers shared by the convolution, pooling and resize ops.

Data stays in its own layout (NXC = channels last, oneDNN's default, or NCX): the helpers take
``data_format`` and work on the spatial axes in place, so no op pays for a transpose of its
input or output. Convolution weights are brought to one *grouped, tap-major* form,
``(G, taps, I/G, O/G)``: for Convolution ``I``/``O`` are its input/output channels, for
ConvTranspose its src/dst channels. Channel ``g*I/G + i`` (and ``g*O/G + o``) belongs to group
``g``, as oneDNN splits grouped weights group-major. Padding, output sizes and auto_pad come from
`fusionspec.spec.shapes`, so the reference and the spec's shape inference cannot disagree.

Accumulation (`dot`): products are summed in float32, as oneDNN does, but in blocks of at most
`EXACT_BLOCK` terms whose float32 results are then added in float64. Integer-valued data, such
as dequantized int8 (|q - zp| <= 255 times |w| <= 128: every product below 2^15) with a
power-of-two scale, therefore sums exactly for any reduction length: 512 such products stay
below 2^24, where float32 integers are exact. Plain float data gets float32 accuracy per block
and better across blocks, at float32 BLAS speed (float64 BLAS is 2-3x slower).
"""

from __future__ import annotations

import math
from collections.abc import Callable, Iterator, Mapping, Sequence

import numpy as np
from numpy.lib.stride_tricks import as_strided

from fusionspec.spec.graph import AttrValue, Op
from fusionspec.spec.schema import InferenceFailure, Shape
from fusionspec.spec.shapes import pads_for
from fusionspec.spec.types import Array

from ..dtypes import compute_dtype
from ..errors import OpInputError

__all__ = [
    "ACC",
    "EXACT_BLOCK",
    "CHUNK_BYTES",
    "Array",
    "check",
    "infer_shape",
    "resolve_pads",
    "spatial_axes",
    "at_spatial",
    "pad_spatial",
    "window_view",
    "taps",
    "tap_slices",
    "dot",
    "conv_weights_grouped",
    "conv_weights_ungrouped",
    "deconv_weights_grouped",
    "chunks",
]

#: Dtype of sums across blocks, kernel taps and chunks.
ACC = np.float64

#: Longest run of products summed in float32 (see the module docstring).
EXACT_BLOCK = 512

#: Largest temporary (im2col columns, per-chunk products) one chunk may allocate, in bytes.
#: 64 MiB keeps BLAS calls large enough to be efficient, while a big batch never needs more
#: than input + padded copy + output + one chunk (a few hundred MB at the very most).
CHUNK_BYTES = 64 << 20

InferFn = Callable[[Op, Sequence[Shape]], Sequence[Shape]]


def check(ok: bool, message: str, *, kind: str, where: str | None = None) -> None:
    """Raise the executor's typed error when inputs contradict the op (possible on direct
    calls; the executor itself runs validated graphs)."""
    if not ok:
        raise OpInputError(f"{where}: {message}" if where else message, op_kind=kind)


def infer_shape(kind: str, infer: InferFn, attrs: Mapping[str, AttrValue],
                shapes: Sequence[Shape]) -> tuple[int, ...]:
    """The output shape per the spec's shape inference; a failure is an `OpInputError`."""
    op = Op(0, kind, attrs=dict(attrs))
    try:
        out = infer(op, shapes)[0]
    except InferenceFailure as exc:
        check(False, str(exc), kind=kind, where=exc.where)
        raise  # unreachable: check raised
    assert out is not None and all(d >= 0 for d in out), "known inputs give a known output"
    return tuple(out)


def resolve_pads(kind: str, spatial: Sequence[int], kernel: Sequence[int],
                 strides: Sequence[int], dilations: Sequence[int],
                 attrs: Mapping[str, AttrValue], *, transposed: bool = False,
                 ) -> tuple[tuple[int, ...], tuple[int, ...]]:
    """pads_begin/pads_end after auto_pad, by the spec's own rule (`shapes.pads_for`)."""
    return pads_for(Op(0, kind, attrs=dict(attrs)), spatial, kernel, strides, dilations,
                    transposed=transposed)


def spatial_axes(data_format: str, ndim: int) -> range:
    return range(2, ndim) if data_format == "NCX" else range(1, ndim - 1)


def at_spatial(data_format: str, ndim: int, index: Sequence[slice]) -> tuple[slice, ...]:
    """An index applying `index` to the spatial axes and taking all of N and C."""
    full = [slice(None)] * ndim
    for axis, s in zip(spatial_axes(data_format, ndim), index):
        full[axis] = s
    return tuple(full)


def pad_spatial(x: Array, begin: Sequence[int], end: Sequence[int], value: float,
                data_format: str) -> Array:
    """Pad the spatial axes by `begin`/`end` with `value` (a negative `end` crops)."""
    axes = spatial_axes(data_format, x.ndim)
    x = x[at_spatial(data_format, x.ndim,
                     [slice(0, x.shape[a] + min(e, 0)) for a, e in zip(axes, end)])]
    widths = [(0, 0)] * x.ndim
    for a, b, e in zip(axes, begin, end):
        widths[a] = (b, max(e, 0))
    if not any(b or e for b, e in widths):
        return x
    return np.pad(x, widths, constant_values=value)


def window_view(xp: Array, out_sp: Sequence[int], kernel: Sequence[int],
                strides: Sequence[int], dilations: Sequence[int], data_format: str) -> Array:
    """Read-only view of padded data, (N, *out, *kernel, C) for NXC and (N, C, *out, *kernel)
    for NCX: the element at out position o and tap k is xp at spatial o*S + k*D."""
    st = xp.strides
    axes = list(spatial_axes(data_format, xp.ndim))
    pos = [st[a] * s for a, s in zip(axes, strides)]
    tap = [st[a] * d for a, d in zip(axes, dilations)]
    n, c = xp.shape[0], xp.shape[1 if data_format == "NCX" else -1]
    sn, sc = st[0], st[1 if data_format == "NCX" else -1]
    if data_format == "NCX":
        shape, strides_b = (n, c, *out_sp, *kernel), (sn, sc, *pos, *tap)
    else:
        shape, strides_b = (n, *out_sp, *kernel, c), (sn, *pos, *tap, sc)
    return as_strided(xp, shape=shape, strides=strides_b, writeable=False)


def taps(kernel: Sequence[int]) -> Iterator[tuple[int, ...]]:
    """Every kernel tap as a multi-index, in row-major order (the order of the tap axis)."""
    yield from np.ndindex(*kernel)


def tap_slices(tap: Sequence[int], count: Sequence[int], strides: Sequence[int],
               dilations: Sequence[int], offset: Sequence[int] | None = None,
               ) -> list[slice]:
    """Per spatial axis, the slice picking position o*S + tap*D (+offset), o < count."""
    off = offset if offset is not None else (0,) * len(tap)
    return [slice(t * d + f, t * d + f + (n - 1) * s + 1, s)
            for t, n, s, d, f in zip(tap, count, strides, dilations, off)]


def dot(a: Array, b: Array) -> Array:
    """np.matmul of float32 operands (rank >= 2, batch dims broadcast), summed in float32 over
    blocks of at most EXACT_BLOCK and across blocks in float64 (see the module docstring).
    The result is float32 when one block suffices, float64 otherwise."""
    with np.errstate(over="ignore", invalid="ignore"):  # inf and NaN are results here
        return _dot(a, b)


def _dot(a: Array, b: Array) -> Array:
    wide = compute_dtype()
    a, b = a.astype(wide, copy=False), b.astype(wide, copy=False)
    if wide != np.float32:  # high_precision: one float64 product, no blocks
        exact: Array = np.matmul(a, b)
        return exact
    k = a.shape[-1]
    blocks = max(math.ceil(k / EXACT_BLOCK), 1)
    if blocks == 1:
        single: Array = np.matmul(a, b)
        return single
    step = math.ceil(k / blocks)
    total: Array | None = None
    for start in range(0, k, step):
        part = np.matmul(a[..., start:start + step], b[..., start:start + step, :])
        total = part.astype(ACC) if total is None else np.add(total, part, out=total)
    assert total is not None
    return total


def conv_weights_grouped(w: Array, weights_format: str, groups: int) -> Array:
    """Convolution weights (OIX = (OC, IC/G, K...), XIO = (K..., IC/G, OC)) as
    (G, taps, IC/G, OC/G)."""
    if weights_format == "OIX":
        oc, icg, kernel = w.shape[0], w.shape[1], w.shape[2:]
        g = w.reshape(groups, oc // groups, icg, math.prod(kernel))
        return g.transpose(0, 3, 2, 1)
    kernel, icg, oc = w.shape[:-2], w.shape[-2], w.shape[-1]
    return w.reshape(math.prod(kernel), icg, groups, oc // groups).transpose(2, 0, 1, 3)


def conv_weights_ungrouped(wg: Array, weights_format: str, kernel: Sequence[int]) -> Array:
    """The inverse of `conv_weights_grouped`: (G, taps, IC/G, OC/G) to OIX or XIO."""
    groups, _, icg, ocg = wg.shape
    if weights_format == "OIX":
        return np.ascontiguousarray(
            wg.transpose(0, 3, 2, 1).reshape(groups * ocg, icg, *kernel))
    return np.ascontiguousarray(wg.transpose(1, 2, 0, 3).reshape(*kernel, icg, groups * ocg))


def deconv_weights_grouped(w: Array, weights_format: str, groups: int) -> Array:
    """ConvTranspose weights (IOX = (IC, OC/G, K...), XOI = (K..., OC/G, IC)) as
    (G, taps, IC/G, OC/G): group g reads the src channels and weight rows of group g."""
    if weights_format == "IOX":
        ic, ocg, kernel = w.shape[0], w.shape[1], w.shape[2:]
        return w.reshape(groups, ic // groups, ocg, math.prod(kernel)).transpose(0, 3, 1, 2)
    kernel, ocg, ic = w.shape[:-2], w.shape[-2], w.shape[-1]
    return w.reshape(math.prod(kernel), ocg, groups, ic // groups).transpose(2, 0, 3, 1)


def chunks(batch: int, rows: int, row_bytes: int,
           budget: int = CHUNK_BYTES) -> Iterator[tuple[slice, slice]]:
    """Split (batch, rows) into blocks whose temporaries stay under `budget` bytes, given the
    bytes one row of one batch item needs: whole items when they fit, else runs of rows."""
    item = max(rows * row_bytes, 1)
    if item <= budget:
        step = max(budget // item, 1)
        for n in range(0, batch, step):
            yield slice(n, min(n + step, batch)), slice(0, rows)
        return
    step = max(budget // max(row_bytes, 1), 1)
    for n in range(batch):
        for r in range(0, rows, step):
            yield slice(n, n + 1), slice(r, min(r + step, rows))
