"""The table form of the training family: its three ops in programs every small problem
shares.

- ReLUBackward alone is an instruction of the table form's interpreter, so it runs in the
  element-wise family's shared program (`fusionspec.accel.families.elementwise_table.build_table`);
- BiasAddBackward is a per-channel sum: ``fs_twindow`` in mode ``sum`` over the reduction map
  of every axis but the channel (`fusionspec.accel.families.window_table`);
- BatchNormTrainingBackward (with or without the ReLUBackward feeding its src) gathers x (the
  ReLUBackward computed on the way, through its instruction table) and dy into (channel,
  element) rows, then ``fs_tbnstats`` computes each channel's sums (stored to diff_gamma and
  diff_beta when the partition outputs them, and to a scratch buffer) and ``fs_tbnsrc``
  diff_src, with the specialised kernels' formulas and compensations
  (``training_batch_norm.cl.j2``). The per-channel tensors are read through a dtype code and
  a stride.

`training_table_plan` is called after the family has validated the partition
(`fusionspec.accel.families.training`); None makes it build the specialised plan.
"""

from __future__ import annotations

import math

import numpy as np

from fusionspec.spec.graph import LogicalTensor, Op, Partition
from fusionspec.spec.shapes import channel_axis

from ..codegen.access import is_dense, known_shape
from ..codegen.opctx import attr_of
from ..codegen.table_instructions import DTYPE_CODES
from ..codegen.table_translate import translate_operand
from ..plan import (
    Binding,
    BufferArg,
    KernelPlan,
    Launch,
    ScalarArg,
    Scratch,
    ScratchArg,
    StrideArg,
    TableArg,
)
from .base import BuildContext
from .elementwise_table import build_table
from .table_gather import (
    BN_SRC,
    BN_SRC_KERNEL,
    BN_STATS,
    BN_STATS_KERNEL,
    NoFit,
    gather_launch,
    int_table,
    launch_1d,
    params,
    source,
)
from .window_table import reduction_map, window_plan

__all__ = ["training_table_plan"]


def _channel(tensor: LogicalTensor | None, spare: TableArg) -> list[Binding]:
    """The bindings of a per-channel tensor: buffer, dtype code, stride (absent: code -1)."""
    if tensor is None:
        return [spare, ScalarArg("int", -1), ScalarArg("long", 0)]
    stride: Binding = ScalarArg("long", 1) if is_dense(tensor) else StrideArg(tensor.id, 0)
    return [BufferArg(tensor.id), ScalarArg("int", DTYPE_CODES[tensor.dtype]), stride]


def training_table_plan(partition: Partition, main: Op, relu: Op | None, epsilon: float,
                        ctx: BuildContext) -> KernelPlan | None:
    """The table-form plan of a training partition (see the module docstring), or None."""
    shape = known_shape(main.inputs[0])
    if main.kind == "ReLUBackward":
        plan = build_table(partition, ctx, shape)
        return None if plan is None else KernelPlan(
            "training", plan.source, plan.launches, plan.reads, plan.writes)
    caxis = channel_axis(str(attr_of(main, "data_format")), len(shape))
    where = reduction_map(shape, [a for a in range(len(shape)) if a != caxis])
    if main.kind == "BiasAddBackward":
        plan = window_plan(partition, "training", main, [], [], where, None, "sum", ctx)
        return None if plan is None else KernelPlan(
            "training", plan.source, plan.launches, plan.reads, plan.writes, plan.scratch)
    x_table = translate_operand([relu] if relu is not None else [], main.inputs[0])
    dy_table = translate_operand([], main.inputs[1])
    if x_table is None or dy_table is None:
        return None
    channels = shape[caxis]
    per_channel = math.prod(shape) // channels if channels else 0
    count = channels * per_channel
    outputs = {t.id for t in partition.outputs}
    where_arg = int_table(where)
    spare = TableArg(x_table.code, "int")
    scratch = (Scratch("table_a", max(count, 1) * 4), Scratch("table_b", max(count, 1) * 4),
               Scratch("bn_stats", 8 * max(channels, 1)))
    stores: list[Binding] = []
    for port in (1, 2):
        out = main.outputs[port] if len(main.outputs) == 3 else None
        stored = out is not None and out.id in outputs
        stores += [BufferArg(out.id) if out is not None and stored else spare,
                   ScalarArg("int", DTYPE_CODES[out.dtype] if out is not None and stored
                             else -1)]
    eps = ScalarArg("float", float(np.float32(epsilon)))
    gamma = main.inputs[4] if len(main.inputs) > 4 else None
    launches: list[Launch] = []
    try:
        if count:
            launches += [gather_launch(ctx, "table_a", where_arg, x_table, shape),
                         gather_launch(ctx, "table_b", where_arg, dy_table, shape)]
        if channels:  # also without elements: the sums are then 0
            stats = [ScratchArg("table_a"), ScratchArg("table_b"), ScalarArg("long", channels),
                     ScalarArg("long", per_channel), *_channel(main.inputs[2], spare),
                     *_channel(main.inputs[3], spare), eps, ScratchArg("bn_stats"), *stores]
            launches.append(launch_1d(ctx, BN_STATS_KERNEL, params(BN_STATS, stats),
                                      channels))
        if count:
            src = [ScratchArg("table_a"), ScratchArg("table_b"), where_arg,
                   ScalarArg("long", count), ScalarArg("long", per_channel),
                   *_channel(main.inputs[2], spare), *_channel(main.inputs[3], spare),
                   *_channel(gamma, spare), eps,
                   ScalarArg("float", float(np.float32(per_channel))), ScratchArg("bn_stats"),
                   BufferArg(main.outputs[0].id),
                   ScalarArg("int", DTYPE_CODES[main.outputs[0].dtype])]
            launches.append(launch_1d(ctx, BN_SRC_KERNEL, params(BN_SRC, src), count))
    except NoFit:
        return None
    return KernelPlan("training", source(ctx), tuple(launches), reads=tuple(partition.inputs),
                      writes=tuple(partition.outputs), scratch=scratch)
