"""The reduction family: the seven reductions (ReduceSum, ReduceMean, ReduceProd, ReduceMax,
ReduceMin, ReduceL1, ReduceL2) alone or with post-ops (pattern fp.reduction_post_ops).

Two forms of kernel, chosen by the device's properties, each its own template
(``reduction_output.cl.j2``, ``reduction_group.cl.j2``; their shared helpers are
``_reduction_helpers.cl.j2``):

- **Output per work item** where local memory is ordinary cached memory (CPU devices): a work
  item walks the whole reduced extent of its dst element in one pass, work groups of a few
  outputs. Where the reduced axes are the trailing axes of a dense source, the extent is
  contiguous and it is read W = `DeviceInfo.vector_width` values at a time into vector
  accumulators whose lanes are merged at the end (ReduceProd excepted: its double-float
  product needs ``fma``, a library call on some CPU drivers); elsewhere element by element,
  and neighbouring work items, whose outputs are neighbours, read neighbouring elements.
- **Work group per output** where local memory is dedicated (GPUs): a work group per dst
  element (a grid-stride loop over them; 16, 64 or 256 work items by the reduced extent's size
  class, within the device's limit), its work items striding over the extent, then meeting in
  a local-memory tree.

Accumulation is f32 but keeps the rounding errors: sums carry a TwoSum compensation term (the
square of ReduceL2 its exact error, from a Dekker split), products a double-float low part
(through ``fma``), so the result is within the suite's eps(f32) of the reference's f64
accumulation. Max and Min propagate NaN as NumPy does and start at -inf/+inf. The finished value
(mean: divide by the reduced count; L2: sqrt) goes through the shared epilogue
(`fusionspec.accel.codegen.epilogue`) at the dst index and is stored. NaN and infinity tests are
comparisons and absolute values bit masks: PoCL's ``isnan``, ``isfinite`` and ``fabs`` are
library calls that keep loops from vectorising.

The axes come from the ``axes`` attribute (negative ones wrap, ``keep_dims`` either way); axes
given as a runtime input tensor are not supported, since the kernel's loops are generated for
known axes. The extents, the counts and the mean's divisor are kernel arguments
(`fusionspec.accel.codegen.args`): the code depends on the ranks, the axes and the kind.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from fusionspec.spec.categories import REDUCTION
from fusionspec.spec.graph import Op, Partition

from ..codegen.access import Domain, is_dense, known_shape
from ..codegen.args import KernelArgs
from ..codegen.epilogue import Value, emit_epilogue, supported_kinds
from ..codegen.opctx import attr_of
from ..codegen.source import render
from ..codegen.types import check_supported
from ..errors import UnsupportedPartitionError
from ..plan import KernelPlan, Launch
from .base import BuildContext, KernelFamily
from .forms import build_in_form
from .post_ops import check_post_ops
from .window_table import reduction_map, window_plan

__all__ = ["FAMILY", "KERNEL_NAME", "is_reduction", "build_reduction"]

KERNEL_NAME = "fs_reduce"
_MAX_GROUPS = 1 << 16

_SUM_FINAL = "h - h == 0.0f ? h + l : h"  # h + l where h is finite


@dataclass(frozen=True)
class _Kind:
    """A reduction as C text: the accumulator's start, one element ``{x}`` into the
    accumulator (``{h}``, ``{l}``) with the helpers of suffix ``{s}`` (scalar "", vector W),
    another accumulator (``{h2}``, ``{l2}``) into (h, l), and the finished value of h + l;
    `vector`: whether the step has a vector form."""

    init: str
    step: str
    combine: str
    final: str
    vector: bool = True


_SUM_COMBINE = "fs_rd_add(&h, &l, {h2}); l += {l2};"
#: Per kind.
_KINDS: dict[str, _Kind] = {
    "ReduceSum": _Kind("0.0f", "fs_rd_add{s}(&{h}, &{l}, {x});", _SUM_COMBINE, _SUM_FINAL),
    "ReduceMean": _Kind("0.0f", "fs_rd_add{s}(&{h}, &{l}, {x});", _SUM_COMBINE,
                        f"({_SUM_FINAL}) / {{count}}"),
    "ReduceL1": _Kind("0.0f", "fs_rd_add{s}(&{h}, &{l}, fs_rd_abs{s}({x}));", _SUM_COMBINE,
                      _SUM_FINAL),
    "ReduceL2": _Kind("0.0f", "fs_rd_sq{s}(&{h}, &{l}, {x});", _SUM_COMBINE,
                      f"sqrt({_SUM_FINAL})"),
    "ReduceProd": _Kind("1.0f", "fs_rd_mul(&{h}, &{l}, {x}, 0.0f);",
                        "fs_rd_mul(&h, &l, {h2}, {l2});", _SUM_FINAL, vector=False),
    "ReduceMax": _Kind("(-INFINITY)", "{h} = fs_rd_max{s}({h}, {x});",
                       "h = fs_rd_max(h, {h2});", "h"),
    "ReduceMin": _Kind("INFINITY", "{h} = fs_rd_min{s}({h}, {x});",
                       "h = fs_rd_min(h, {h2});", "h"),
}
#: The table form's mode of each kind (`fusionspec.accel.families.table_gather.MODES`).
_MODES = {"ReduceSum": "sum", "ReduceMean": "mean", "ReduceL1": "l1", "ReduceL2": "l2",
          "ReduceProd": "prod", "ReduceMax": "max", "ReduceMin": "min"}
assert set(_MODES) == set(_KINDS), "every reduction has a table-form mode"
#: Outputs per work group in the output-per-work-item form.
OUTPUTS_PER_GROUP = 16


def is_reduction(partition: Partition) -> bool:
    """One reduction followed by element-wise ops only."""
    kinds = supported_kinds()
    mains = [op for op in partition.ops if op.kind in REDUCTION]
    return len(mains) == 1 and all(op.kind in kinds for op in partition.ops
                                   if op is not mains[0])


def build_reduction(partition: Partition, ctx: BuildContext) -> KernelPlan:
    """One kernel (a work group per dst element, tree reduction, then the epilogue), or for a
    small reduction the gathering program of the table form
    (`fusionspec.accel.families.window_table`)."""
    kinds = [op.kind for op in partition.ops]
    main = next(op for op in partition.ops if op.kind in REDUCTION)
    post = [op for op in partition.ops if op is not main]

    def fail(message: str) -> UnsupportedPartitionError:
        return UnsupportedPartitionError(message, pattern=partition.pattern, kinds=kinds)

    src, dst = main.inputs[0], main.outputs[0]
    if len(main.inputs) > 1:
        raise fail(f"{main.kind} with axes given as an input tensor is not supported (the "
                   "kernel is generated for axes known from the attribute)")
    for t in (src, dst):
        check_supported(t.dtype, f"tensor {t.id} of {main.kind}")
    in_shape, out_shape = known_shape(src), known_shape(dst)
    rank = len(in_shape)
    raw = attr_of(main, "axes")
    if not isinstance(raw, tuple | list) or not all(isinstance(a, int) for a in raw):
        raise fail(f"{main.kind} axes {raw!r} is not a list of integers")
    axes = sorted({int(a) % rank for a in raw if -rank <= int(a) < rank}) if rank else []
    if len(axes) != len(raw):
        raise fail(f"{main.kind} axes {list(raw)} are out of range or repeated for rank {rank}")
    keep = bool(attr_of(main, "keep_dims"))
    kept_axes = [k for k in range(rank) if k not in axes]
    want = tuple(1 if k in axes else d for k, d in enumerate(in_shape)) if keep else \
        tuple(in_shape[k] for k in kept_axes)
    if want != out_shape:
        raise fail(f"{main.kind} dst shape {list(out_shape)} does not follow from src "
                   f"{list(in_shape)} and axes {axes}")
    check_post_ops(post, shape=out_shape, outputs=partition.outputs, given=dst.id, fail=fail)
    size, extent = math.prod(in_shape), math.prod(in_shape[a] for a in axes)
    return build_in_form(
        ctx, size, size,
        table=lambda: window_plan(partition, "reduction", main, [], post,
                                  reduction_map(in_shape, axes), None, _MODES[main.kind], ctx,
                                  divisor=float(np.float32(extent))),
        specialised=lambda: _specialised(partition, ctx, main, post, axes, keep))


def _specialised(partition: Partition, ctx: BuildContext, main: Op, post: list[Op],
                 axes: list[int], keep: bool) -> KernelPlan:
    """The reduction kernel of a validated partition."""
    src, dst = main.inputs[0], main.outputs[0]
    in_shape, out_shape = known_shape(src), known_shape(dst)
    rank = len(in_shape)
    kept_axes = [k for k in range(rank) if k not in axes]
    preamble = ctx.preamble()
    preamble.uses(src.dtype)
    args = KernelArgs(preamble)
    src_domain = Domain(in_shape, args, index="sidx")
    buffer = args.read(src)
    load, helpers = ctx.policy.load(src.dtype, buffer, src_domain.read_offset(src))
    preamble.need(helpers)
    domain = Domain(out_shape, args)
    code = emit_epilogue(post, domain=domain, policy=ctx.policy, preamble=preamble,
                         given={dst.id: Value("acc")}, outputs=partition.outputs, acc="acc")
    extent = math.prod(in_shape[a] for a in axes)
    outputs = domain.size
    per_output = not ctx.device.local_mem_dedicated
    wg = ctx.reduction_work_group(extent)
    kind = _KINDS[main.kind]
    final = kind.final
    if "{count}" in final:
        final = final.format(count=args.f32("red_count", extent))
    kept = [(k, f"idx[{k if keep else n}]") for n, k in enumerate(kept_axes)]
    out_splits = domain.split("rest")
    red_splits = src_domain.split("r", axes)
    outputs_arg, extent_arg = args.long("outputs", outputs), args.long("red_extent", extent)
    # The reduced block of an output is contiguous where the reduced axes are the last ones of
    # a dense source: it starts at o * extent, whatever the extents.
    width = ctx.device.vector_width
    contiguous = per_output and kind.vector and is_dense(src) and \
        axes == list(range(rank - len(axes), rank)) and bool(axes)
    vector_load = tail_load = ""
    if contiguous:
        lanes = []
        for e in range(width + 1):
            expr, helpers = ctx.policy.load(src.dtype, buffer,
                                            f"base + j + {e}" if e < width else "base + j")
            preamble.need(helpers)
            lanes.append(ctx.policy.as_float(expr, ctx.policy.kind(src.dtype)))
        vector_load = f"(float{width})({', '.join(lanes[:width])})"
        tail_load = lanes[width]
    template = "reduction_output.cl.j2" if per_output else "reduction_group.cl.j2"
    source = render(template, preamble=preamble.render(), name=KERNEL_NAME,
                    params=args.decls(), wg=wg, rank=max(rank, 1),
                    out_rank=max(len(out_shape), 1), outputs=outputs_arg, extent=extent_arg,
                    out_splits=out_splits, kept=kept, red_splits=red_splits, init=kind.init,
                    out_index_t=domain.index_type, red_index_t=src_domain.index_type,
                    step=kind.step.format(s="", x="x", h="h", l="l"),
                    vector_step=kind.step.format(s=width, x=vector_load, h="hv", l="lv"),
                    lane_combine=kind.combine.format(h2="h2", l2="l2"),
                    combine=kind.combine.format(h2="red_h[lid + half_]", l2="red_l[lid + half_]"),
                    finish=final, load=load, body=code.body, contiguous=contiguous, w=width,
                    tail_load=tail_load)
    launches: tuple[Launch, ...] = ()
    if outputs and per_output:
        local = min(ctx.work_group(OUTPUTS_PER_GROUP), outputs)
        launches = (Launch(KERNEL_NAME, args.params, (-(-outputs // local) * local,),
                           (local,)),)
    elif outputs:
        groups = min(outputs, _MAX_GROUPS)
        launches = (Launch(KERNEL_NAME, args.params, (groups * wg,), (wg,)),)
    return KernelPlan("reduction", source, launches, reads=tuple(partition.inputs),
                      writes=tuple(partition.outputs))


FAMILY = KernelFamily("reduction", is_reduction, build_reduction)
