"""The table form in the kernel families: the elementwise family's interpreter kernel, the
post-ops of the other families through the same interpreter, and the choice between forms.

`build_table` turns an element-wise partition into one launch of ``fs_table`` (the same
program for every partition: `fusionspec.accel.codegen.table`); `table_post_ops` gives the
GEMM, SoftMax, pool and interpolate families the statement that runs their post-ops through
``fs_table_run`` (`fusionspec.accel.codegen.table_epilogue`), so their programs depend on the
main op alone. `choose_table` decides: ``form="table"`` takes the table form wherever it fits,
``"specialised"`` never, and ``"auto"`` (the backend's default) for kernels of at most
`TABLE_LIMIT` elements (multiply-adds for a GEMM). Below that a kernel runs in microseconds
either way and the 0.1-0.3 s a specialised program costs to build is the whole price of a
case; above it the specialised kernel's straight-line code is what matters (the benchmarks'
problems are far above it).
"""

from __future__ import annotations

import functools
from collections.abc import Callable, Sequence

from fusionspec.spec.graph import LogicalTensor, Op, Partition

from ..codegen.access import Domain
from ..codegen.args import KernelArgs
from ..codegen.epilogue import Value, emit_epilogue
from ..codegen.source import Preamble, render
from ..codegen.table import RANK, SLOTS, TableCode, slot_strides, translate
from ..codegen.table_epilogue import interpreter, table_epilogue
from ..codegen.types import TypePolicy
from ..plan import (
    Binding,
    BufferArg,
    KernelPlan,
    Launch,
    Param,
    ScalarArg,
    TableArg,
)
from .base import BuildContext

__all__ = ["TABLE_LIMIT", "TABLE_KERNEL", "FORMS", "DECLS", "choose_table", "build_table",
           "table_post_ops", "post_ops_body"]

TABLE_KERNEL = "fs_table"
#: The largest domain (elements) that ``form="auto"`` runs in the table form.
TABLE_LIMIT = 1 << 20
#: The kernel forms a backend can be asked for.
FORMS = ("auto", "table", "specialised")


def choose_table(ctx: BuildContext, size: int) -> bool:
    """Whether a partition whose domain holds `size` elements should try the table form."""
    if ctx.form == "table":
        return True
    return ctx.form == "auto" and size <= TABLE_LIMIT


_BUFFERS = [f"s{k}" for k in range(SLOTS)]
#: The interpreter kernel's parameters, in signature order (`_params` binds them alike).
DECLS = ([f"__global uchar* {b}" for b in _BUFFERS]
         + ["__global const long* restrict st"]
         + [f"const long n{d}" for d in range(RANK)]
         + ["const long size", "__global const int* restrict code", "const int ncode",
            "__global const float* restrict fa"])


def _source(ctx: BuildContext) -> str:
    """The interpreter program: the same text for every partition on a device."""
    return _rendered(ctx.policy)


@functools.cache
def _rendered(policy: TypePolicy) -> str:
    preamble = Preamble(policy)
    interpreter(preamble, noinline=False)
    return render("table.cl.j2", preamble=preamble.render(), name=TABLE_KERNEL, params=DECLS,
                  buffers=_BUFFERS,
                  extents=[f"n{d}" for d in range(RANK)])


def _params(table: TableCode, shape: tuple[int, ...], size: int) -> tuple[Param, ...]:
    bindings: list[Binding] = []
    for k in range(SLOTS):
        # An unused slot is never read: any buffer does, the instruction table's costs nothing.
        bindings.append(BufferArg(table.buffers[k]) if k < len(table.buffers)
                        else TableArg(table.code, "int"))
    bindings.append(slot_strides(table))
    padded = (1,) * (RANK - len(shape)) + shape
    bindings.extend(ScalarArg("long", n) for n in padded)
    bindings += [ScalarArg("long", size), TableArg(table.code, "int"),
                 ScalarArg("int", len(table.code) // 8), TableArg(table.floats)]
    assert len(bindings) == len(DECLS), "the table kernel's signature and bindings disagree"
    return tuple(Param(decl, binding) for decl, binding in zip(DECLS, bindings))


def build_table(partition: Partition, ctx: BuildContext, shape: tuple[int, ...]
                ) -> KernelPlan | None:
    """The table-form plan of an element-wise `partition` over the domain `shape`, or None when
    it does not fit the interpreter or one launch cannot cover the domain."""
    table = translate(partition, shape)
    size = 1
    for n in shape:
        size *= n
    if table is None:
        return None
    source = _source(ctx)
    launches: tuple[Launch, ...] = ()
    if size:
        global_size, local_size = ctx.launch_1d(size)
        if global_size[0] < size:
            return None  # the interpreter has no grid-stride loop
        launches = (Launch(TABLE_KERNEL, _params(table, shape, size), global_size,
                           local_size),)
    return KernelPlan("elementwise", source, launches, reads=tuple(partition.inputs),
                      writes=tuple(partition.outputs))



def table_post_ops(post: Sequence[Op], ctx: BuildContext, *, work: int,
                   shape: tuple[int, ...], outputs: Sequence[LogicalTensor], given: int,
                   args: KernelArgs, preamble: Preamble, index: str, acc: str) -> str | None:
    """The statement running a main op's `post` ops in the table form at the domain index
    ``index[0..]`` (see `table_epilogue`), when `choose_table` takes it for a kernel of `work`
    (elements, or multiply-adds for a GEMM) and the chain fits; else None, and the family
    emits its specialised epilogue. The chain is first generated in the specialised form on a
    scratch signature, so both forms reject the same chains with the same errors."""
    if not post or not choose_table(ctx, work):
        return None
    scratch = Preamble(ctx.policy)
    scratch_args = KernelArgs(scratch)
    checked = emit_epilogue(post, domain=Domain(shape, scratch_args, index), policy=ctx.policy,
                            preamble=scratch, given={given: Value(acc)}, outputs=outputs,
                            acc=acc)
    if any(t.id not in checked.stored for t in outputs):
        return None  # the family's specialised path names the missing outputs
    return table_epilogue(post, shape=shape, outputs=outputs, given=given, args=args,
                          preamble=preamble, coords=[f"{index}[{j}]" for j in range(len(shape))],
                          acc=acc)


def post_ops_body(post: Sequence[Op], ctx: BuildContext, *, domain: Domain,
                  outputs: Sequence[LogicalTensor], given: int, args: KernelArgs,
                  preamble: Preamble, fail: Callable[[str], Exception]) -> str:
    """The statements that run a main op's `post` ops on ``acc`` at each element of `domain`
    (index ``idx``, linear ``i``): the table form where `table_post_ops` takes it, else the
    specialised epilogue; `fail` makes the error for an output the ops do not compute."""
    body = table_post_ops(post, ctx, work=domain.size, shape=domain.shape, outputs=outputs,
                          given=given, args=args, preamble=preamble, index="idx", acc="acc")
    if body is not None:
        return body
    code = emit_epilogue(post, domain=domain, policy=ctx.policy, preamble=preamble,
                         given={given: Value("acc")}, outputs=outputs, acc="acc", linear="i")
    missing = [t.id for t in outputs if t.id not in code.stored]
    if missing:
        raise fail(f"outputs {missing} are not computed by the ops")
    return code.body
