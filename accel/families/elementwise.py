"""The elementwise family: a partition made only of element-wise ops becomes one kernel.

That covers the patterns fp.unary_binary, fp.binary_post_ops, fp.reciprocal_multiply,
fp.bn_relu, fp.reorder_add, int8.reorder and int8.reorder_add, and every single-op partition of
an element-wise kind (any kind of the epilogue table). Work item ``i`` computes element ``i``
of the partition's domain (the broadcast of its ops' output shapes, row-major); the shared
post-op generator (`fusionspec.accel.codegen.epilogue`) loads the inputs with broadcasting,
evaluates every op in registers and stores each output once, in its dtype. No intermediate
tensor touches global memory.

Addressing is specialised per operand on a lazy domain (`fusionspec.accel.codegen.access`): a
dense operand of the domain's size is read at ``i``, a dense broadcast operand with one
division and remainder per run of dims it spans, and only a strided operand, a per-channel
parameter or a smaller output asks for axis indices. The extents, strides and attribute values
are kernel arguments, so one program serves every shape with the same rank, broadcast structure
and layouts (a dense chain divides by nothing, so it pays nothing for that). When the launch
covers the domain (CPU devices, and GPUs below their cap) the kernel has no loop, only a bounds
test: on PoCL the loop alone cost about a third of a memory-bound chain's time.
"""

from __future__ import annotations

import math

from fusionspec.spec.graph import Partition

from ..codegen.access import INT_LIMIT, Domain, broadcast_domain, known_shape
from ..codegen.args import KernelArgs
from ..codegen.epilogue import emit_epilogue, supported_kinds
from ..codegen.op_checks import check_chain
from ..codegen.source import render
from ..errors import UnsupportedPartitionError
from ..plan import KernelPlan, Launch
from .base import BuildContext, KernelFamily
from .elementwise_table import build_table
from .forms import build_in_form

__all__ = ["FAMILY", "KERNEL_NAME", "is_elementwise", "build_elementwise"]

KERNEL_NAME = "fs_elementwise"


def is_elementwise(partition: Partition) -> bool:
    """Whether every op of `partition` has an entry in the epilogue's op table."""
    kinds = supported_kinds()
    return bool(partition.ops) and all(op.kind in kinds for op in partition.ops)


def build_elementwise(partition: Partition, ctx: BuildContext) -> KernelPlan:
    """One kernel computing all of `partition`'s outputs, a work item per element: the table
    form's interpreter or the specialised kernel (`fusionspec.accel.families.forms`)."""
    shape = broadcast_domain([known_shape(t) for op in partition.ops for t in op.outputs])
    stored = check_chain(partition.ops, shape, outputs=partition.outputs)
    missing = [t.id for t in partition.outputs if t.id not in stored]
    if missing:
        raise UnsupportedPartitionError(f"outputs {missing} are not computed by the ops",
                                        pattern=partition.pattern,
                                        kinds=[op.kind for op in partition.ops])
    return build_in_form(ctx, math.prod(shape), 0,
                         table=lambda: build_table(partition, ctx, shape),
                         specialised=lambda: _specialised(partition, ctx, shape))


def _specialised(partition: Partition, ctx: BuildContext, shape: tuple[int, ...]
                 ) -> KernelPlan:
    preamble = ctx.preamble()
    args = KernelArgs(preamble)
    domain = Domain(shape, args, linear="i")
    code = emit_epilogue(partition.ops, domain=domain, policy=ctx.policy, preamble=preamble,
                         outputs=partition.outputs)
    # Registered before the signature is read: the template uses them too.
    size = domain.size_arg()
    axes = domain.axis_declarations()
    index_t = domain.index_type
    launches: tuple[Launch, ...] = ()
    loop = False
    if domain.size:
        global_size, local_size = ctx.launch_1d(domain.size)
        loop = global_size[0] < domain.size
        if global_size[0] > INT_LIMIT:  # work-item ids past the domain must not wrap an int
            index_t = "long"
        launches = (Launch(KERNEL_NAME, args.params, global_size, local_size),)
    source = render("elementwise.cl.j2", preamble=preamble.render(), name=KERNEL_NAME,
                    params=args.decls(), index_t=index_t, size=size, loop=loop, axes=axes,
                    body=code.body)
    return KernelPlan("elementwise", source, launches, reads=tuple(partition.inputs),
                      writes=tuple(partition.outputs))


FAMILY = KernelFamily("elementwise", is_elementwise, build_elementwise)
