"""The table form's interpreter in a program, and as the epilogue of a main op's kernel.

`interpreter` puts ``fs_table_run`` (``accel/templates/table_run.cl.j2``) and the helpers it
calls into a program's preamble; the text is the same for every partition, so a program that
runs its post-ops through it depends on its main op's structure alone, not on the chain after
it. `table_epilogue` is what a family calls instead of `emit_epilogue` for that: it translates
the post-ops (`fusionspec.accel.codegen.table_translate.translate_ops`), declares the slots,
strides and tables as parameters of fixed names (``fs_ts<k>``, ``fs_tst`` (a buffer of every slot's
strides), ``fs_tcode``, ``fs_tn``, ``fs_tfa``), and returns the statement that runs them at
the caller's index. A slot nothing uses is bound to the instruction table's buffer (any buffer
does: it is never read).
"""

from __future__ import annotations

from collections.abc import Sequence

from fusionspec.spec.graph import LogicalTensor, Op

from ..plan import Binding, BufferArg, ScalarArg, TableArg
from .args import KernelArgs
from .source import Preamble, render
from .table_instructions import DTYPE_CODES, HELPERS_USED, QUANTIZE_ROUNDED, STATEMENTS
from .table_translate import RANK, REGS, SLOTS, slot_strides, translate_ops

__all__ = ["interpreter", "table_epilogue"]


def interpreter(preamble: Preamble, *, noinline: bool) -> None:
    """Add ``fs_table_run`` and its helpers to `preamble`; `noinline` keeps it a call (inside
    a main op's kernel, so a driver's vectoriser sees one call, not the interpreter)."""
    preamble.need(HELPERS_USED)
    preamble.add(render("table_run.cl.j2", slots=SLOTS, rank=RANK, regs=REGS,
                        dt={dtype.name: code for dtype, code in DTYPE_CODES.items()},
                        cases=STATEMENTS, quantize=QUANTIZE_ROUNDED, noinline=noinline))


def table_epilogue(ops: Sequence[Op], *, shape: Sequence[int],
                   outputs: Sequence[LogicalTensor], given: int, args: KernelArgs,
                   preamble: Preamble, coords: Sequence[str], acc: str) -> str | None:
    """The statement running `ops` after a main op whose output (`given`, of `shape`) is the
    C variable `acc` at the index whose coordinates are `coords`: the outputs among them are
    stored, and `acc` takes the last op's value. None when the chain does not fit the
    interpreter (the caller then emits the specialised epilogue)."""
    table = translate_ops(ops, outputs, shape, given=given)
    if table is None:
        return None
    interpreter(preamble, noinline=True)
    code_table = TableArg(table.code, "int")
    code = args.custom("fs_tcode", "__global const int* restrict fs_tcode", code_table)
    count = args.custom("fs_tn", "const int fs_tn", ScalarArg("int", len(table.code) // 8))
    floats = args.custom("fs_tfa", "__global const float* restrict fs_tfa",
                         TableArg(table.floats))
    slots: list[str] = []
    for k in range(SLOTS):
        used = k < len(table.buffers)
        slot: Binding = BufferArg(table.buffers[k]) if used else code_table
        slots.append(args.custom(f"fs_ts{k}", f"__global uchar* fs_ts{k}", slot))
    strides = args.custom("fs_tst", "__global const long* restrict fs_tst", slot_strides(table))
    padded = ["0"] * (RANK - len(coords)) + [f"(long)({c})" for c in coords]
    return (f"{{ const long fs_c[{RANK}] = {{{', '.join(padded)}}};\n"
            f"  __global uchar* const fs_s[{SLOTS}] = {{{', '.join(slots)}}};\n"
            f"  {acc} = fs_table_run({acc}, fs_c, fs_s, {strides}, {code}, {count}, {floats}); }}")
