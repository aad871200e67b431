"""The table form of the elementwise family: the interpreter kernel ``fs_table``.

`build_table` turns an element-wise partition into one launch of ``fs_table``, the same
program for every partition (`fusionspec.accel.codegen.table_translate`); which partitions take this
form is `fusionspec.accel.families.forms`' decision.
"""

from __future__ import annotations

import functools

from fusionspec.spec.graph import Partition

from ..codegen.source import Preamble, render
from ..codegen.table_epilogue import interpreter
from ..codegen.table_translate import RANK, SLOTS, TableCode, slot_strides, translate
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

__all__ = ["TABLE_KERNEL", "DECLS", "build_table"]

TABLE_KERNEL = "fs_table"


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
