"""A main op's post-ops in either form: the table form's interpreter call or the
specialised epilogue.

`table_post_ops` gives the GEMM, SoftMax, pool and interpolate families the statement that
runs their post-ops through ``fs_table_run`` (`fusionspec.accel.codegen.table_epilogue`), so
their programs depend on the main op alone, when `fusionspec.accel.families.forms.table_form`
takes the table form; `post_ops_body` falls back to the specialised epilogue
(`fusionspec.accel.codegen.epilogue`) otherwise.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

from fusionspec.spec.graph import LogicalTensor, Op

from ..codegen.access import Domain
from ..codegen.args import KernelArgs
from ..codegen.epilogue import Value, emit_epilogue
from ..codegen.op_checks import check_chain
from ..codegen.source import Preamble
from ..codegen.table_epilogue import table_epilogue
from .base import BuildContext
from .forms import table_form

__all__ = ["check_post_ops", "table_post_ops", "post_ops_body"]


def check_post_ops(post: Sequence[Op], *, shape: tuple[int, ...],
                   outputs: Sequence[LogicalTensor], given: int,
                   fail: Callable[[str], Exception]) -> None:
    """Raise what running a main op's `post` ops on its output `given` (of `shape`) would
    raise in either form, the specialised epilogue's errors; `fail` makes the error for an
    output the ops do not compute."""
    stored = check_chain(post, shape, given={given: "float"}, outputs=outputs)
    missing = [t.id for t in outputs if t.id not in stored]
    if missing:
        raise fail(f"outputs {missing} are not computed by the ops")


def table_post_ops(post: Sequence[Op], ctx: BuildContext, *, work: int,
                   shape: tuple[int, ...], outputs: Sequence[LogicalTensor], given: int,
                   args: KernelArgs, preamble: Preamble, index: str, acc: str) -> str | None:
    """The statement running a main op's `post` ops in the table form at the domain index
    ``index[0..]`` (see `table_epilogue`), when `table_form` takes it for a kernel of `work`
    (elements, or multiply-adds for a GEMM) and the chain fits; else None, and the family
    emits its specialised epilogue. The chain is first checked as the specialised epilogue
    checks it (`check_chain`), so both forms reject the same chains with the same errors."""
    if not post or not table_form(ctx, work):
        return None
    stored = check_chain(post, shape, given={given: "float"}, outputs=outputs)
    if any(t.id not in stored for t in outputs):
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
