"""The implicit GEMM of a MatMul, Convolution, ConvTranspose or ConvolutionBackwardWeights as
index maps (NumPy).

The table form of the GEMM family (`fusionspec.accel.families.gemm_table`) reads its operands
through maps computed here on the host rather than through index code compiled into the
program (`fusionspec.accel.families.gemm_geometry`), so one program serves every main op,
rank, layout, transpose and convolution geometry. The maps follow the geometry module's
definitions exactly (`fusionspec.accel.families.gemm_backward` for the weight gradient):

- ``a[z, m, k]``: the row-major linear index, in src's logical shape, of element (m, k) of
  product z's left operand, or -1 where it lies in a convolution's zero padding (or, for a
  ConvTranspose, where no input position maps to the output position);
- ``b[z, k, n]``: the same in the weights;
- ``d[z, m, n]``: the linear index in dst of result (m, n) of product z.

A map holds one int32 per element of its matrix, so the maps are made only for small problems
(the table form's limit), where they cost a few milliseconds to compute and upload once.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from fusionspec.spec.graph import Op
from fusionspec.spec.types import Array

from ..codegen.access import broadcast_domain, known_shape
from ..codegen.opctx import attr_of
from ..errors import UnsupportedPartitionError
from .gemm_geometry import backward_dims, conv_dims

__all__ = ["IndexMaps", "index_maps"]


@dataclass(frozen=True)
class IndexMaps:
    """A main op as ``z`` products of ``m x k`` by ``k x n`` (see the module docstring)."""

    z: int
    m: int
    n: int
    k: int
    a: Array
    b: Array
    d: Array


def index_maps(op: Op) -> IndexMaps:
    """The index maps of a MatMul, Convolution, ConvTranspose or ConvolutionBackwardWeights
    (shapes known)."""
    shapes = [known_shape(t) for t in (*op.inputs[:2], op.outputs[0])]
    if op.kind == "MatMul":
        return _matmul(op, *shapes)
    if op.kind in ("Convolution", "ConvTranspose"):
        return _conv(op, *shapes)
    if op.kind == "ConvolutionBackwardWeights":
        return _conv_backward_weights(op, *shapes)
    raise UnsupportedPartitionError(f"op {op.id} ({op.kind}) is not a GEMM main op")


def _linear(shape: tuple[int, ...]) -> Array:
    return np.arange(math.prod(shape), dtype=np.int64).reshape(shape)


def _matmul(op: Op, sa: tuple[int, ...], sb: tuple[int, ...], sd: tuple[int, ...]
            ) -> IndexMaps:
    ta = bool(attr_of(op, "transpose_a")) and len(sa) >= 2
    tb = bool(attr_of(op, "transpose_b")) and len(sb) >= 2
    a2 = sa if len(sa) >= 2 else (1, *sa)
    b2 = sb if len(sb) >= 2 else (*sb, 1)
    a = _linear(a2)
    b = _linear(b2)
    if ta:
        a = np.swapaxes(a, -1, -2)
    if tb:
        b = np.swapaxes(b, -1, -2)
    (m, k), (kb, n) = a.shape[-2:], b.shape[-2:]
    if k != kb:
        raise UnsupportedPartitionError(f"MatMul op {op.id}: src {list(sa)} and weights "
                                        f"{list(sb)} disagree on K ({k} vs {kb})")
    batch = broadcast_domain([a2[:-2], b2[:-2]])
    z = math.prod(batch)
    if z * m * n != math.prod(sd):
        raise UnsupportedPartitionError(f"MatMul op {op.id}: dst {list(sd)} is not the "
                                        f"product of src {list(sa)} and weights {list(sb)}")
    a_map = np.broadcast_to(a, (*batch, m, k)).reshape(z, m, k)
    b_map = np.broadcast_to(b, (*batch, k, n)).reshape(z, k, n)
    return IndexMaps(z, m, n, k, a_map, b_map, _linear(sd).reshape(z, m, n))


def _conv(op: Op, src: tuple[int, ...], wei: tuple[int, ...], dst: tuple[int, ...]
          ) -> IndexMaps:
    transposed = op.kind == "ConvTranspose"
    c = conv_dims(op, src, wei, dst)
    fmt, wfmt, groups, nsp, batch = c.fmt, c.wfmt, c.groups, c.nsp, c.batch
    in_sp, out_sp, kernel, icg, ocg = c.in_sp, c.out_sp, c.kernel, c.icg, c.ocg
    strides, dilations, begin = c.strides, c.dilations, c.begin
    # Axes of the broadcast grid: group, batch item, output positions, taps, channel.
    axes = 2 + 2 * nsp + 1

    def grid(extent: int, axis: int) -> Array:
        shape = [1] * axes
        shape[axis] = extent
        return np.arange(extent, dtype=np.int64).reshape(shape)

    g, item = grid(groups, 0), grid(batch, 1)
    outs = [grid(out_sp[d], 2 + d) for d in range(nsp)]
    taps = [grid(kernel[d], 2 + nsp + d) for d in range(nsp)]
    chan = grid(icg, axes - 1)
    valid: Array = np.ones([1] * axes, dtype=bool)
    positions: list[Array] = []
    for d in range(nsp):
        if not transposed:
            pos = outs[d] * strides[d] + taps[d] * dilations[d] - begin[d]
            valid = valid & (pos >= 0) & (pos < in_sp[d])
        else:
            u = outs[d] + begin[d] - taps[d] * dilations[d]
            pos = np.floor_divide(u, strides[d])
            valid = valid & (u >= 0) & (u % strides[d] == 0) & (pos < in_sp[d])
        positions.append(np.clip(pos, 0, in_sp[d] - 1))
    cin = g * icg + chan
    coords = [item, cin, *positions] if fmt == "NCX" else [item, *positions, cin]
    full = (groups, batch, *out_sp, *kernel, icg)
    a_lin = np.ravel_multi_index([np.broadcast_to(c, full) for c in coords], src)
    a_map = np.where(np.broadcast_to(valid, full), a_lin, -1)
    z, m, k = groups, batch * math.prod(out_sp), math.prod(kernel) * icg
    a_map = a_map.reshape(z, m, k)

    # The weights over (group, taps, channel of the group, output channel of the group).
    wg = np.arange(groups).reshape(groups, *([1] * nsp), 1, 1)
    wt = [np.arange(kernel[d]).reshape(1, *[kernel[d] if e == d else 1 for e in range(nsp)],
                                        1, 1) for d in range(nsp)]
    wc = np.arange(icg).reshape(1, *([1] * nsp), icg, 1)
    wn = np.arange(ocg).reshape(1, *([1] * nsp), 1, ocg)
    if transposed:  # IOX (IC, OC/G, K...), XOI (K..., OC/G, IC)
        wic = wg * icg + wc
        w_coords = [wic, wn, *wt] if wfmt == "IOX" else [*wt, wn, wic]
    else:  # OIX (OC, IC/G, K...), XIO (K..., IC/G, OC)
        woc = wg * ocg + wn
        w_coords = [woc, wc, *wt] if wfmt == "OIX" else [*wt, wc, woc]
    w_full = (groups, *kernel, icg, ocg)
    b_map = np.ravel_multi_index([np.broadcast_to(c, w_full) for c in w_coords], wei)
    b_map = b_map.reshape(z, k, ocg)

    d_map = _output_grid(groups, batch, out_sp, ocg, fmt, dst)
    return IndexMaps(z, m, ocg, k, a_map, b_map, d_map.reshape(z, m, ocg))


def _output_grid(groups: int, batch: int, out_sp: tuple[int, ...], ocg: int, fmt: str,
                 shape: tuple[int, ...]) -> Array:
    """The flat index into an activation of `shape` (a convolution's dst, or the diff_dst of
    its weights' gradient) over (group, batch item, output positions, channel of the group)."""
    nsp = len(out_sp)
    g = np.arange(groups).reshape(groups, 1, *([1] * nsp), 1)
    i = np.arange(batch).reshape(1, batch, *([1] * nsp), 1)
    o = [np.arange(out_sp[d]).reshape(1, 1, *[out_sp[d] if e == d else 1
                                               for e in range(nsp)], 1) for d in range(nsp)]
    c = g * ocg + np.arange(ocg).reshape(1, 1, *([1] * nsp), ocg)
    coords = [i, c, *o] if fmt == "NCX" else [i, *o, c]
    full = (groups, batch, *out_sp, ocg)
    return np.ravel_multi_index([np.broadcast_to(x, full) for x in coords], shape)


def _conv_backward_weights(op: Op, src: tuple[int, ...], dy: tuple[int, ...],
                           wshape: tuple[int, ...]) -> IndexMaps:
    """Per group: diff_weights (taps x IC/G by OC/G) = src windows (taps x IC/G by batch x
    positions) x diff_dst (batch x positions by OC/G)."""
    c = backward_dims(op, src, dy, wshape)
    fmt, wfmt, groups, nsp, icg, ocg = c.fmt, c.wfmt, c.groups, c.nsp, c.icg, c.ocg
    in_sp, out_sp, kernel = c.in_sp, c.out_sp, c.kernel
    strides, dilations, begin = c.strides, c.dilations, c.begin
    batch = c.batch
    # A over (group, taps, channel of the group, batch item, output positions).
    axes = 1 + nsp + 1 + 1 + nsp

    def grid(extent: int, axis: int) -> Array:
        shape = [1] * axes
        shape[axis] = extent
        return np.arange(extent, dtype=np.int64).reshape(shape)

    g = grid(groups, 0)
    taps = [grid(kernel[d], 1 + d) for d in range(nsp)]
    chan = grid(icg, 1 + nsp)
    item = grid(batch, 2 + nsp)
    outs = [grid(out_sp[d], 3 + nsp + d) for d in range(nsp)]
    valid: Array = np.ones([1] * axes, dtype=bool)
    positions: list[Array] = []
    for d in range(nsp):
        pos = outs[d] * strides[d] + taps[d] * dilations[d] - begin[d]
        valid = valid & (pos >= 0) & (pos < in_sp[d])
        positions.append(np.clip(pos, 0, in_sp[d] - 1))
    cin = g * icg + chan
    coords = [item, cin, *positions] if fmt == "NCX" else [item, *positions, cin]
    full = (groups, *kernel, icg, batch, *out_sp)
    a_lin = np.ravel_multi_index([np.broadcast_to(c, full) for c in coords], src)
    z, m, k = groups, math.prod(kernel) * icg, batch * math.prod(out_sp)
    a_map = np.where(np.broadcast_to(valid, full), a_lin, -1).reshape(z, m, k)

    # diff_dst over (group, batch item, output positions, output channel of the group).
    b_map = _output_grid(groups, batch, out_sp, ocg, fmt, dy)

    # diff_weights over (group, taps, channel of the group, output channel of the group).
    dg = np.arange(groups).reshape(groups, *([1] * nsp), 1, 1)
    dt = [np.arange(kernel[d]).reshape(1, *[kernel[d] if e == d else 1 for e in range(nsp)],
                                        1, 1) for d in range(nsp)]
    dc = np.arange(icg).reshape(1, *([1] * nsp), icg, 1)
    dn = np.arange(ocg).reshape(1, *([1] * nsp), 1, ocg)
    woc = dg * ocg + dn
    d_coords = [woc, dc, *dt] if wfmt == "OIX" else [*dt, dc, woc]
    d_full = (groups, *kernel, icg, ocg)
    d_map = np.ravel_multi_index([np.broadcast_to(c, d_full) for c in d_coords], wshape)
    return IndexMaps(z, m, ocg, k, a_map, b_map.reshape(z, k, ocg), d_map.reshape(z, m, ocg))
