"""The softmax family: SoftMax and its epilogue (pattern softmax.post_ops: 0 to 20 unary/binary
post-ops, then an optional TypeCast and an optional Quantize), and single SoftMax partitions.

Two forms of kernel, chosen by the device's properties, the first in two variants; each is
its own template (``softmax_row_vector.cl.j2``, ``softmax_row_strided.cl.j2``,
``softmax_group.cl.j2``, sharing the ``_softmax_*.cl.j2`` pieces):

- **Row per work item** where local memory is ordinary cached memory (CPU devices). Where
  the row is contiguous (the last axis of a dense source), three passes of W =
  `DeviceInfo.vector_width` elements at a time, the row staying in the core's cache: the
  maximum, the sum of ``exp(x - max)``, each exponential kept in a scratch buffer of the
  source's size (f32), then each kept exponential times ``1/sum`` through the epilogue; each
  reduction keeps four vectors in flight. The exponentials are most of the cost: keeping
  them halves it, against computing them twice, and the online form's rescaling and
  compensated sums cost more still (BENCHMARKS.md, "SoftMax"). Elsewhere a work item walks
  its row element by element (neighbouring work items, whose rows are neighbours in memory,
  read neighbouring elements) in one online pass that keeps a running maximum and a
  compensated sum, rescaled when the maximum grows, so a strided row is read twice rather
  than three times; a second pass normalises.
  Work groups hold a few rows each. The exponential is `fusionspec.accel.codegen.mathfn`'s
  arithmetic one: the builtin is a library call on some CPU drivers, which would keep the
  loops from being vectorised.
- **Work group per row** where local memory is dedicated (GPUs): the work items read the row
  through the source's runtime strides, reduce the maximum and then the sum in local memory
  with power-of-two trees (a grid-stride loop over rows when there are more rows than
  groups).

Either way each element is then normalised, goes through the shared post-op generator
(`fusionspec.accel.codegen.epilogue`) and is stored in its dtype, and the optional statistics
output (``max + log(sum)``, f32) is stored per row. Accumulation is f32; the exponential's
argument keeps the rounding error of ``x - max`` (``fs_sm_exp`` in the template). The 4W
partial sums of a contiguous row err by about (n/4W + 3) ulp of the sum, inside the suite's
SoftMax bound, which allows any order of summation (2n ulp;
`fusionspec.conformance.grade.bounds`). A row without a finite maximum gives NaN (or 0 with
``mode="inf_as_zero"`` for a row of -inf), as the reference's does.

The row count, the row length and the extents that split a row index are kernel arguments
(`fusionspec.accel.codegen.args`); the work-group size of the GPU form comes from a few
classes of the row length (`reduction_work_group`), so one program serves many shapes of a
rank and axis.
"""

from __future__ import annotations

import math

from fusionspec.spec.graph import Op, Partition

from ..codegen.access import Domain, is_dense, known_shape
from ..codegen.args import KernelArgs
from ..codegen.epilogue import Value, emit_epilogue, supported_kinds
from ..codegen.opctx import attr_of
from ..codegen.source import render
from ..codegen.types import check_supported
from ..errors import UnsupportedPartitionError
from ..plan import KernelPlan, Launch, Scratch, ScratchArg
from .base import BuildContext, KernelFamily
from .forms import build_in_form
from .post_ops import check_post_ops, table_post_ops
from .window_table import softmax_plan

__all__ = ["FAMILY", "KERNEL_NAME", "is_softmax", "build_softmax"]

KERNEL_NAME = "fs_softmax"
#: Work groups launched at most by the GPU form; the kernel loops over the remaining rows.
_MAX_GROUPS = 1 << 16
#: Rows per work group in the row-per-work-item form.
ROWS_PER_GROUP = 16


def _split(partition: Partition) -> tuple[Op, list[Op]]:
    """The SoftMax op and the post-ops of `partition` (UnsupportedPartitionError otherwise)."""
    mains = [op for op in partition.ops if op.kind == "SoftMax"]
    if len(mains) != 1:
        raise UnsupportedPartitionError("a softmax partition has exactly one SoftMax",
                                        pattern=partition.pattern,
                                        kinds=[op.kind for op in partition.ops])
    return mains[0], [op for op in partition.ops if op is not mains[0]]


def is_softmax(partition: Partition) -> bool:
    """Whether `partition` is one SoftMax followed by element-wise ops only."""
    kinds = supported_kinds()
    mains = [op for op in partition.ops if op.kind == "SoftMax"]
    return len(mains) == 1 and all(op.kind in kinds for op in partition.ops if op is not mains[0])


def build_softmax(partition: Partition, ctx: BuildContext) -> KernelPlan:
    """One kernel (per row, max and sum reductions, then the epilogue), or for a small SoftMax
    the gathering program of the table form (`fusionspec.accel.families.window_table`)."""
    main, post = _split(partition)
    src, dst = main.inputs[0], main.outputs[0]
    stats = main.outputs[1] if len(main.outputs) > 1 else None
    kinds = [op.kind for op in partition.ops]
    for t in (*main.inputs, *main.outputs):
        check_supported(t.dtype, f"tensor {t.id} of SoftMax")
    shape = known_shape(dst)
    if known_shape(src) != shape:
        raise UnsupportedPartitionError(f"SoftMax src {list(known_shape(src))} and dst "
                                        f"{list(shape)} differ", pattern=partition.pattern,
                                        kinds=kinds)
    if stats is not None and any(t.id == stats.id for op in post for t in op.inputs):
        raise UnsupportedPartitionError("post-ops that read the SoftMax statistics are not "
                                        "supported", pattern=partition.pattern, kinds=kinds)
    rank = len(shape)
    axis_attr = attr_of(main, "axis")
    axis = int(axis_attr) if isinstance(axis_attr, int) else 1
    if not -rank <= axis < rank:
        raise UnsupportedPartitionError(f"SoftMax axis {axis} is out of range for rank {rank}",
                                        pattern=partition.pattern, kinds=kinds)
    axis %= rank
    outputs = [t for t in partition.outputs if stats is None or t.id != stats.id]
    check_post_ops(post, shape=shape, outputs=outputs, given=dst.id,
                   fail=lambda message: UnsupportedPartitionError(
                       message, pattern=partition.pattern, kinds=kinds))
    size = math.prod(shape)
    return build_in_form(ctx, size, size,
                         table=lambda: softmax_plan(partition, main, post, axis, ctx),
                         specialised=lambda: _specialised(partition, ctx, main, post, axis))


def _specialised(partition: Partition, ctx: BuildContext, main: Op, post: list[Op], axis: int
                 ) -> KernelPlan:
    """The SoftMax kernel of a validated partition."""
    src, dst = main.inputs[0], main.outputs[0]
    stats = main.outputs[1] if len(main.outputs) > 1 else None
    shape = known_shape(dst)
    rank = len(shape)
    preamble = ctx.preamble()
    args = KernelArgs(preamble)
    domain = Domain(shape, args)
    preamble.uses(src.dtype)
    buffer = args.read(src)
    load, helpers = ctx.policy.load(src.dtype, buffer, domain.read_offset(src))
    preamble.need(helpers)
    stats_name = ""
    if stats is not None and any(t.id == stats.id for t in partition.outputs):
        stats_name = args.write(stats)
    outputs = [t for t in partition.outputs if stats is None or t.id != stats.id]
    # Small domains run the post-ops in the table form (fusionspec.accel.families.post_ops).
    body = table_post_ops(post, ctx, work=domain.size, shape=domain.shape, outputs=outputs,
                          given=dst.id, args=args, preamble=preamble, index="idx", acc="acc")
    if body is None:
        body = emit_epilogue(post, domain=domain, policy=ctx.policy, preamble=preamble,
                             given={dst.id: Value("acc")}, outputs=outputs, acc="acc").body
    length = shape[axis]
    rows = domain.size // length if length else 0
    per_row = not ctx.device.local_mem_dedicated
    wg = ctx.reduction_work_group(length)
    # Every other axis is split from the row index, whatever its extent (no extent of 1 is
    # special), so the code depends on the rank and the axis only.
    splits = domain.split("rest", [k for k in range(rank) if k != axis])
    rows_arg, length_arg = args.long("rows", rows), args.long("row_length", length)
    # The row is contiguous where the axis is the last of a dense source: its elements sit at
    # row * length + k whatever the other extents.
    contiguous = per_row and axis == rank - 1 and is_dense(src)
    width = ctx.device.vector_width
    preamble.need(("fs_exp_hl", "fs_exp_hl" + str(width)) if contiguous else ("fs_exp_hl",))
    vector_load = tail_load = exps = ""
    chunk_loads: list[str] = []
    scratch: tuple[Scratch, ...] = ()
    if contiguous:
        exps = args.buffer("exps", "float", ScratchArg("exps"), const=False)
        scratch = (Scratch("exps", max(rows * length, 1) * 4),)
        kind = ctx.policy.kind(src.dtype)

        def element(offset: str) -> str:
            expr, helpers = ctx.policy.load(src.dtype, buffer, offset)
            preamble.need(helpers)
            return ctx.policy.as_float(expr, kind)

        def vector(first: int) -> str:
            lanes = ", ".join(element(f"base + k + {first + e}") for e in range(width))
            return f"(float{width})({lanes})"

        vector_load, tail_load = vector(0), element("base + k")
        chunk_loads = [vector(j * width) for j in range(4)]
    template = "softmax_group.cl.j2" if not per_row else \
        "softmax_row_vector.cl.j2" if contiguous else "softmax_row_strided.cl.j2"
    source = render(template, preamble=preamble.render(), name=KERNEL_NAME,
                    params=args.decls(), wg=wg, rank=rank, rows=rows_arg, splits=splits,
                    index_t=domain.index_type, per_row=per_row, contiguous=contiguous,
                    w=width, vector_load=vector_load, tail_load=tail_load,
                    chunk_loads=chunk_loads, exps=exps,
                    axis=axis, length=length_arg, load=load,
                    inf_as_zero=attr_of(main, "mode") == "inf_as_zero",
                    stats=stats_name, body=body)
    launches: tuple[Launch, ...] = ()
    if rows and per_row:
        local = min(ctx.work_group(ROWS_PER_GROUP), rows)
        launches = (Launch(KERNEL_NAME, args.params, (-(-rows // local) * local,), (local,)),)
    elif rows:
        groups = min(rows, _MAX_GROUPS)
        launches = (Launch(KERNEL_NAME, args.params, (groups * wg,), (wg,)),)
    return KernelPlan("softmax", source, launches, reads=tuple(partition.inputs),
                      writes=tuple(partition.outputs), scratch=scratch)


FAMILY = KernelFamily("softmax", is_softmax, build_softmax)
