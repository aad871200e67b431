"""The elementwise family: a partition made only of element-wise ops becomes one kernel.

That covers the patterns fp.unary_binary, fp.binary_post_ops, fp.reciprocal_multiply,
fp.bn_relu, fp.reorder_add, int8.reorder and int8.reorder_add, and every single-op partition of
an element-wise kind (any kind of the epilogue table). The kernel is a grid-stride loop over the
partition's domain (the broadcast of its ops' output shapes); each work item splits its linear
index into ``idx[]``, and the shared post-op generator (`fusionspec.accel.codegen.epilogue`)
loads the inputs through their strides with broadcasting, evaluates every op in registers and
stores each output once, in its dtype. No intermediate tensor touches global memory.
"""

from __future__ import annotations

from fusionspec.spec.graph import Partition

from ..codegen.access import Domain, broadcast_domain, known_shape
from ..codegen.epilogue import emit_epilogue, supported_kinds
from ..codegen.source import render
from ..errors import UnsupportedPartitionError
from ..plan import KernelPlan, Launch
from .base import BuildContext, Family

__all__ = ["FAMILY", "KERNEL_NAME", "is_elementwise", "build_elementwise"]

KERNEL_NAME = "fs_elementwise"
_INT_LIMIT = 2 ** 31 - 1


def is_elementwise(partition: Partition) -> bool:
    """Whether every op of `partition` has an entry in the epilogue's op table."""
    kinds = supported_kinds()
    return bool(partition.ops) and all(op.kind in kinds for op in partition.ops)


def build_elementwise(partition: Partition, ctx: BuildContext) -> KernelPlan:
    """One grid-stride kernel computing all of `partition`'s outputs."""
    domain = Domain(broadcast_domain([known_shape(t) for op in partition.ops
                                      for t in op.outputs]))
    preamble = ctx.preamble()
    code = emit_epilogue(partition.ops, domain=domain, policy=ctx.policy, preamble=preamble,
                         outputs=partition.outputs, linear="i")
    missing = [t.id for t in partition.outputs if t.id not in code.stored]
    if missing:
        raise UnsupportedPartitionError(f"outputs {missing} are not computed by the ops",
                                        pattern=partition.pattern,
                                        kinds=[op.kind for op in partition.ops])
    index_t = "int" if domain.size <= _INT_LIMIT else "long"
    dims = [(axis, extent) for axis, extent in enumerate(domain.shape) if extent != 1]
    splits = [(axis, extent, n == len(dims) - 1) for n, (axis, extent) in
              enumerate(reversed(dims))]
    source = render("elementwise.cl.j2", preamble=preamble.render(), name=KERNEL_NAME,
                    params=[p.decl for p in code.params], index_t=index_t,
                    size=f"{domain.size}{'L' if index_t == 'long' else ''}",
                    rank=domain.rank, splits=splits, body=code.body)
    launches: tuple[Launch, ...] = ()
    if domain.size:
        global_size, local_size = ctx.launch_1d(domain.size)
        launches = (Launch(KERNEL_NAME, code.params, global_size, local_size),)
    return KernelPlan("elementwise", source, launches, reads=tuple(partition.inputs),
                      writes=tuple(partition.outputs))


FAMILY = Family("elementwise", is_elementwise, build_elementwise)
