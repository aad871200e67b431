"""The gathering program of the table form, shared by the GEMM, pool, reduction, interpolate,
softmax and training families for small problems.

One program (``table_gather.cl.j2`` with the table form's interpreter) holds these kernels
whose text depends on nothing a partition has:

- ``fs_tgather`` fills a dense f32 buffer from an operand: element i reads the operand at the
  linear index ``where[i]`` of its logical shape (-1: padding, 0.0), through the operand's
  instruction table (`fusionspec.accel.codegen.table_translate.translate_operand`: a load in
  its dtype at its runtime strides, or the Dequantize chain folded into it);
- ``fs_tgemm`` multiplies two gathered matrices (`fusionspec.accel.families.gemm_table`);
- ``fs_twindow`` reduces each output's run of gathered values in one of the `MODES`
  (`fusionspec.accel.families.window_table`);
- ``fs_tsoftmax`` normalises each gathered row (`fusionspec.accel.families.window_table`);
- ``fs_tbnstats`` and ``fs_tbnsrc`` are BatchNormTrainingBackward over gathered channels
  (`fusionspec.accel.families.training_table`).

``fs_tgemm``, ``fs_twindow`` and ``fs_tsoftmax`` finish each output through the post-ops'
instruction table (`fusionspec.accel.codegen.table_translate.translate_ops`), which also stores the
outputs. Where the
gathered values come from is data: index maps computed on the host with NumPy and uploaded
once per compiled partition (int32 `TableArg`), so the maps are only made for small problems
(`fusionspec.accel.families.forms.MAP_LIMIT` entries).
"""

from __future__ import annotations

import functools
from collections.abc import Sequence

import numpy as np

from fusionspec.spec.dtypes import DataType
from fusionspec.spec.types import Array

from ..codegen.source import Preamble, render
from ..codegen.table_epilogue import interpreter
from ..codegen.table_instructions import DTYPE_CODES
from ..codegen.table_translate import RANK, SLOTS, TableCode, slot_strides
from ..codegen.types import TypePolicy
from ..plan import Binding, BufferArg, Launch, Param, ScalarArg, ScratchArg, TableArg
from .base import BuildContext

__all__ = ["GATHER_KERNEL", "GEMM_KERNEL", "WINDOW_KERNEL", "SOFTMAX_KERNEL",
           "BN_STATS_KERNEL", "BN_SRC_KERNEL", "MODES", "TABLE", "GEMM", "WINDOW",
           "SOFTMAX", "BN_STATS", "BN_SRC", "NoFit", "source", "int_table",
           "table_bindings", "params",
           "launch_1d", "gather_launch"]

GATHER_KERNEL = "fs_tgather"
GEMM_KERNEL = "fs_tgemm"
WINDOW_KERNEL = "fs_twindow"
SOFTMAX_KERNEL = "fs_tsoftmax"
BN_STATS_KERNEL = "fs_tbnstats"
BN_SRC_KERNEL = "fs_tbnsrc"
#: How ``fs_twindow`` reduces an output's values (the reductions, the two pools, and a
#: weighted sum for interpolation).
MODES: dict[str, int] = {"sum": 0, "mean": 1, "l1": 2, "l2": 3, "prod": 4, "max": 5, "min": 6,
                         "pool_max": 7, "pool_avg": 8, "weighted": 9,
                         "first": 10}

_SLOTS = [f"s{k}" for k in range(SLOTS)]
#: The parameters of an instruction table, in signature order (`table_bindings`).
TABLE = ([f"__global uchar* {s}" for s in _SLOTS]
         + ["__global const long* restrict st"]
         + [f"const long n{d}" for d in range(RANK)]
         + ["__global const int* restrict code", "const int ncode",
            "__global const float* restrict fa"])
GATHER = ["__global float* restrict out", "__global const int* restrict where",
          "const long count", *TABLE]
GEMM = ["__global const float* restrict a", "__global const float* restrict b",
        "__global const int* restrict where", "const long count", "const long gm",
        "const long gn", "const long gk", "__global const uchar* bias", "const int bias_dtype",
        *[f"const long bst{d}" for d in range(RANK)], "const int dst_dtype", *TABLE]
WINDOW = ["__global const float* restrict x", "__global const int* restrict where",
          "__global const float* restrict weights", "const long count", "const long span",
          "const int mode", "const float lowest", "const float divisor", *TABLE]
SOFTMAX = ["__global const float* restrict x", "__global const int* restrict where",
           "const long count", "const long span", "const int inf_as_zero",
           "__global float* stats", "const int has_stats", *TABLE]
_CHANNEL = ["__global const uchar* {0}_b", "const int {0}_dtype", "const long {0}_stride"]
BN_STATS = ["__global const float* restrict x", "__global const float* restrict dy",
            "const long channels", "const long per_channel",
            *(d.format(t) for t in ("mean", "var") for d in _CHANNEL), "const float epsilon",
            "__global float* stats", "__global uchar* gamma_out", "const int gamma_out_dtype",
            "__global uchar* beta_out", "const int beta_out_dtype"]
BN_SRC = ["__global const float* restrict x", "__global const float* restrict dy",
          "__global const int* restrict where", "const long count", "const long per_channel",
          *(d.format(t) for t in ("mean", "var", "gamma") for d in _CHANNEL),
          "const float epsilon", "const float channel_count",
          "__global const float* restrict stats", "__global uchar* out", "const int out_dtype"]


class NoFit(Exception):
    """A launch cannot cover its domain in one pass (the kernels have no grid-stride loop)."""


def source(ctx: BuildContext) -> str:
    """The program: the same text for every partition on a device."""
    return _source(ctx.policy)


@functools.cache
def _source(policy: TypePolicy) -> str:
    preamble = Preamble(policy)
    interpreter(preamble, noinline=False)
    preamble.need(("fs_exp_hl",))
    return render("table_gather.cl.j2", preamble=preamble.render(), gather=GATHER_KERNEL,
                  gemm=GEMM_KERNEL, window=WINDOW_KERNEL, softmax=SOFTMAX_KERNEL,
                  bn_stats=BN_STATS_KERNEL, bn_src=BN_SRC_KERNEL, gather_params=GATHER,
                  gemm_params=GEMM, window_params=WINDOW, softmax_params=SOFTMAX,
                  bn_stats_params=BN_STATS, bn_src_params=BN_SRC, buffers=_SLOTS,
                  extents=[f"n{d}" for d in range(RANK)],
                  bias_strides=[f"bst{d}" for d in range(RANK)], modes=MODES,
                  f16=DTYPE_CODES[DataType.f16], bf16=DTYPE_CODES[DataType.bf16])


def int_table(values: Array) -> TableArg:
    """An int32 table argument of `values` (flattened)."""
    return TableArg(tuple(np.asarray(values, dtype=np.int32).ravel().tolist()), "int")


def table_bindings(table: TableCode, shape: Sequence[int]) -> list[Binding]:
    """The bindings of `TABLE` for `table` over the domain `shape`; a slot nothing uses is
    bound to the instruction table's buffer (it is never read)."""
    code = TableArg(table.code, "int")
    bindings: list[Binding] = [BufferArg(table.buffers[k]) if k < len(table.buffers) else code
                               for k in range(SLOTS)]
    bindings.append(slot_strides(table))
    padded = (1,) * (RANK - len(shape)) + tuple(shape)
    bindings.extend(ScalarArg("long", n) for n in padded)
    bindings += [code, ScalarArg("int", len(table.code) // 8), TableArg(table.floats)]
    return bindings


def params(decls: Sequence[str], bindings: Sequence[Binding]) -> tuple[Param, ...]:
    assert len(decls) == len(bindings), "a gathering kernel's signature and bindings disagree"
    return tuple(Param(decl, binding) for decl, binding in zip(decls, bindings))


def launch_1d(ctx: BuildContext, kernel: str, bound: tuple[Param, ...], count: int) -> Launch:
    """One work item per element of `count`; `NoFit` when one launch cannot cover them."""
    global_size, local_size = ctx.launch_1d(count)
    if global_size[0] < count:
        raise NoFit
    return Launch(kernel, bound, global_size, local_size)


def gather_launch(ctx: BuildContext, scratch: str, where: TableArg, table: TableCode,
                  shape: Sequence[int]) -> Launch:
    """The ``fs_tgather`` launch filling scratch buffer `scratch` from the operand of
    `table` (over its logical `shape`) at the linear indices `where` (`int_table`)."""
    count = len(where.values)
    bindings = [ScratchArg(scratch), where, ScalarArg("long", count),
                *table_bindings(table, shape)]
    return launch_1d(ctx, GATHER_KERNEL, params(GATHER, bindings), count)
