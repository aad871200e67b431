"""The table form of the pool, reduction, interpolate and softmax families: each output
reduces a run of gathered source values, in the gathering program every small problem shares.

A pool window, the reduced extent of a reduction and the taps of an interpolation are all "the
source elements output o combines": an index map of ``outputs x span`` linear indices into the
source's logical shape (-1: padding), computed here on the host with NumPy, with, for an
interpolation, the weight of each tap. The plan gathers the source through its instruction
table (a load in its dtype, or the Dequantize folded into an int8 pool) with ``fs_tgather``,
then ``fs_twindow`` reduces each output's run in the family's mode and runs the post-ops'
table at dst's coordinates (`fusionspec.accel.families.table_gather`). Semantics are the
specialised kernels': the same compensated sums and products, NaN handling, pool starting
value and divisors, the same interpolation coordinates (the reference's functions).

SoftMax (`softmax_plan`) gathers its rows the same way (one row per work item of
``fs_tsoftmax``: the maximum, the compensated sum of exponentials, then each element through
the post-ops' table).

The family builders call `window_plan` and `softmax_plan` after validating the partition, as
their table builder for `fusionspec.accel.families.forms.build_in_form`, which has already
held the index map within `fusionspec.accel.families.forms.MAP_LIMIT`; None (the chain does
not fit the interpreter) makes it build the specialised plan.
"""

from __future__ import annotations

import itertools
import math
from collections.abc import Sequence

import numpy as np

from fusionspec.reference.ops.interpolate import linear_taps, nearest_index, source_coords
from fusionspec.spec.graph import Op, Partition
from fusionspec.spec.types import Array

from ..codegen.access import known_shape
from ..codegen.opctx import attr_of
from ..codegen.table_translate import translate_operand, translate_ops
from ..plan import BufferArg, KernelPlan, Launch, ScalarArg, Scratch, ScratchArg, TableArg
from .base import BuildContext
from .table_gather import (
    MODES,
    SOFTMAX,
    SOFTMAX_KERNEL,
    WINDOW,
    WINDOW_KERNEL,
    NoFit,
    gather_launch,
    int_table,
    launch_1d,
    params,
    source,
    table_bindings,
)

__all__ = ["window_plan", "softmax_plan", "reduction_map", "pool_map", "interpolate_map"]


def _grid(shape: Sequence[int], axis: int, rank: int) -> Array:
    """0..shape[axis]-1 along `axis` of a `rank`-dim broadcast grid."""
    dims = [1] * rank
    dims[axis] = shape[axis]
    return np.arange(shape[axis], dtype=np.int64).reshape(dims)


def reduction_map(in_shape: tuple[int, ...], axes: Sequence[int]) -> Array:
    """Per dst element (row-major: the kept axes in order), the linear indices of the source
    elements it reduces."""
    kept = [k for k in range(len(in_shape)) if k not in axes]
    linear = np.arange(math.prod(in_shape), dtype=np.int64).reshape(in_shape)
    outputs = math.prod(in_shape[k] for k in kept)
    return linear.transpose([*kept, *axes]).reshape(outputs, -1) if outputs else \
        np.zeros((0, 0), dtype=np.int64)


def pool_map(in_shape: tuple[int, ...], out_shape: tuple[int, ...], axes: Sequence[int],
             kernel: Sequence[int], strides: Sequence[int], dilations: Sequence[int],
             begin: Sequence[int]) -> Array:
    """Per dst element, the linear source index of each window tap (-1 outside the
    source)."""
    rank, nsp = len(out_shape), len(axes)
    full = (*out_shape, *kernel)
    coords: list[Array] = [_grid(full, a, rank + nsp) for a in range(rank)]
    valid = np.ones([1] * (rank + nsp), dtype=bool)
    for n, a in enumerate(axes):
        pos = coords[a] * strides[n] + _grid(full, rank + n, rank + nsp) * dilations[n] \
            - begin[n]
        valid = valid & (pos >= 0) & (pos < in_shape[a])
        coords[a] = np.clip(pos, 0, in_shape[a] - 1)
    linear = np.ravel_multi_index([np.broadcast_to(c, full) for c in coords], in_shape)
    where = np.where(np.broadcast_to(valid, full), linear, -1)
    return where.reshape(math.prod(out_shape), math.prod(kernel))


def interpolate_map(main: Op, in_shape: tuple[int, ...], out_shape: tuple[int, ...],
                    axes: Sequence[int]) -> tuple[Array, Array | None]:
    """Per dst element, the linear source index of each tap and, for linear modes, its weight
    (the product of the per-axis weights); nearest has one tap and no weights."""
    mode = str(attr_of(main, "mode"))
    ctm = str(attr_of(main, "coordinate_transformation_mode"))
    rank = len(out_shape)
    per_axis: list[list[tuple[Array, Array]]] = []
    for a in axes:
        position = source_coords(out_shape[a], in_shape[a], ctm)
        if mode == "nearest":
            index = np.asarray(nearest_index(position, in_shape[a]), dtype=np.int64)
            per_axis.append([(index, np.ones(out_shape[a], dtype=np.float32))])
            continue
        left, right, w_left, w_right = linear_taps(position, in_shape[a])
        per_axis.append([(np.asarray(left, dtype=np.int64), np.asarray(w_left, np.float32)),
                         (np.asarray(right, dtype=np.int64),
                          np.asarray(w_right, np.float32))])
    shape = (*out_shape,)
    maps: list[Array] = []
    weights: list[Array] = []
    for choice in itertools.product(*per_axis):
        coords = [_grid(shape, d, rank) for d in range(rank)]
        weight = np.ones([1] * rank, dtype=np.float32)
        for n, a in enumerate(axes):
            index, w = choice[n]
            dims = [1] * rank
            dims[a] = out_shape[a]
            coords[a] = index.reshape(dims)
            weight = weight * w.reshape(dims)
        maps.append(np.ravel_multi_index([np.broadcast_to(c, shape) for c in coords],
                                          in_shape).reshape(-1))
        weights.append(np.broadcast_to(weight, shape).reshape(-1))
    where = np.stack(maps, axis=1)
    return where, (None if mode == "nearest" else np.stack(weights, axis=1))


def window_plan(partition: Partition, family: str, main: Op, feeder: Sequence[Op],
                post: Sequence[Op], where: Array, weights: Array | None, mode: str,
                ctx: BuildContext, *, lowest: float = 0.0, divisor: float = -1.0
                ) -> KernelPlan | None:
    """The table-form plan of a pool, reduction or interpolation whose dst element o combines
    the source elements ``where[o]`` (see the module docstring), or None when it does not fit
    the interpreter. `feeder`: a Dequantize folded into the source;
    `divisor`: the mean's count or an average pool's volume (negative: the in-bounds count)."""
    src, dst = main.inputs[0], main.outputs[0]
    dst_shape = known_shape(dst)
    operand = translate_operand(feeder, src)
    epilogue = translate_ops(post, partition.outputs, dst_shape, given=dst.id)
    if operand is None or epilogue is None:
        return None
    outputs = math.prod(dst_shape)
    span = int(where.shape[1]) if where.ndim == 2 else 0
    scratch = Scratch("table_x", max(int(where.size), 1) * 4)
    where_arg = int_table(where)
    weights_arg = where_arg if weights is None else \
        TableArg(tuple(np.asarray(weights, dtype=np.float32).ravel().tolist()))
    launches: list[Launch] = []
    try:
        if outputs and where.size:
            launches.append(gather_launch(ctx, scratch.name, where_arg, operand,
                                          known_shape(src)))
        if outputs:
            bindings = [ScratchArg(scratch.name), where_arg, weights_arg,
                        ScalarArg("long", outputs), ScalarArg("long", span),
                        ScalarArg("int", MODES[mode]), ScalarArg("float", lowest),
                        ScalarArg("float", divisor), *table_bindings(epilogue, dst_shape)]
            launches.append(launch_1d(ctx, WINDOW_KERNEL, params(WINDOW, bindings), outputs))
    except NoFit:
        return None
    return KernelPlan(family, source(ctx), tuple(launches), reads=tuple(partition.inputs),
                      writes=tuple(partition.outputs), scratch=(scratch,))


def softmax_plan(partition: Partition, main: Op, post: Sequence[Op], axis: int,
                 ctx: BuildContext) -> KernelPlan | None:
    """The table-form plan of a SoftMax along `axis` and its `post` ops, or None when it does
    not fit: one row per work item (``fs_tsoftmax``), the rows gathered first; the optional
    statistics output (f32) is stored per row."""
    src, dst = main.inputs[0], main.outputs[0]
    shape = known_shape(dst)
    size = math.prod(shape)
    stats = main.outputs[1] if len(main.outputs) > 1 else None
    stored = stats is not None and any(t.id == stats.id for t in partition.outputs)
    if stored and stats is not None and stats.dtype.name != "f32":
        return None
    operand = translate_operand((), src)
    epilogue = translate_ops(post, [t for t in partition.outputs
                                    if stats is None or t.id != stats.id],
                             shape, given=dst.id)
    if operand is None or epilogue is None:
        return None
    length = shape[axis]
    rows = size // length if length else 0
    linear = np.arange(size, dtype=np.int64).reshape(shape)
    where = np.moveaxis(linear, axis, -1).reshape(rows, length) if rows else \
        np.zeros((0, 0), dtype=np.int64)
    where_arg = int_table(where)
    scratch = Scratch("table_x", max(size, 1) * 4)
    launches: list[Launch] = []
    try:
        if rows:
            launches.append(gather_launch(ctx, scratch.name, where_arg, operand, shape))
            bindings = [ScratchArg(scratch.name), where_arg, ScalarArg("long", rows),
                        ScalarArg("long", length),
                        ScalarArg("int", int(attr_of(main, "mode") == "inf_as_zero")),
                        BufferArg(stats.id) if stored and stats is not None else where_arg,
                        ScalarArg("int", int(stored)), *table_bindings(epilogue, shape)]
            launches.append(launch_1d(ctx, SOFTMAX_KERNEL, params(SOFTMAX, bindings), rows))
    except NoFit:
        return None
    return KernelPlan("softmax", source(ctx), tuple(launches), reads=tuple(partition.inputs),
                      writes=tuple(partition.outputs), scratch=(scratch,))
