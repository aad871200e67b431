"""The table form of the GEMM family: one program for every small MatMul, Convolution and
ConvTranspose.

The specialised GEMM kernels (`fusionspec.accel.families.gemm`) compile the main op's index
code, its operand dtypes, folded Dequantize ops, bias and rounding into the program, so a
conformance run, where nearly every case differs in one of them, builds hundreds of GEMM
programs. In the table form all of that is data:

- where each operand element and each result sits: index maps computed on the host
  (`fusionspec.accel.families.gemm_tables`), uploaded once as int32 tables;
- how an operand is read: its instruction table (`fusionspec.accel.codegen.table`: a load in
  its dtype, or the folded Dequantize chain), run by ``fs_tgather`` into a dense f32 matrix;
- the bias (a dtype code and strides over dst's coordinates), the rounding to dst's dtype (a
  dtype code) and the post-ops with the stores (the post-ops' instruction table), applied by
  ``fs_tgemm`` after each dot product.

Three launches: gather A, gather B, then the product. The program text
(``gemm_table.cl.j2`` with the interpreter) is the same for every partition on a device.
`build_gemm_table` returns None for what the interpreter cannot hold (more slots, registers
or axes); the caller then keeps the specialised plan, which has already validated the
partition, so both forms reject the same partitions with the same errors.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from fusionspec.spec.dtypes import DataType
from fusionspec.spec.graph import LogicalTensor, Op, Partition
from fusionspec.spec.shapes import channel_axis
from fusionspec.spec.types import Array

from ..codegen.access import is_dense, known_shape
from ..codegen.opctx import attr_of
from ..codegen.source import Preamble, render
from ..codegen.table import RANK, SLOTS, TableCode, translate_operand, translate_ops
from ..codegen.table_epilogue import interpreter
from ..codegen.table_ops import DTYPE_CODES
from ..plan import (
    Binding,
    BufferArg,
    KernelPlan,
    Launch,
    Param,
    ScalarArg,
    Scratch,
    ScratchArg,
    StrideArg,
    TableArg,
)
from .base import BuildContext
from .gemm_tables import IndexMaps, index_maps

__all__ = ["GATHER_KERNEL", "GEMM_KERNEL", "build_gemm_table"]

GATHER_KERNEL = "fs_tgather"
GEMM_KERNEL = "fs_tgemm"

_SLOTS = [f"s{k}" for k in range(SLOTS)]
_TABLE = ([f"__global uchar* {s}" for s in _SLOTS]
          + [f"const long st{k}_{d}" for k in range(SLOTS) for d in range(RANK)]
          + [f"const long n{d}" for d in range(RANK)]
          + ["__global const int* restrict code", "const int ncode",
             "__global const float* restrict fa"])
_GATHER = ["__global float* restrict out", "__global const int* restrict where",
           "const long count", *_TABLE]
_GEMM = ["__global const float* restrict a", "__global const float* restrict b",
         "__global const int* restrict where", "const long count", "const long gm",
         "const long gn", "const long gk", "__global const uchar* bias", "const int bias_dtype",
         *[f"const long bst{d}" for d in range(RANK)], "const int dst_dtype", *_TABLE]


def _source(ctx: BuildContext) -> str:
    preamble = Preamble(ctx.policy)
    interpreter(preamble, noinline=False)
    return render("gemm_table.cl.j2", preamble=preamble.render(), gather=GATHER_KERNEL,
                  gemm=GEMM_KERNEL, gather_params=_GATHER, gemm_params=_GEMM, buffers=_SLOTS,
                  strides=[", ".join(f"st{k}_{d}" for d in range(RANK)) for k in range(SLOTS)],
                  extents=[f"n{d}" for d in range(RANK)],
                  bias_strides=[f"bst{d}" for d in range(RANK)],
                  f16=DTYPE_CODES[DataType.f16], bf16=DTYPE_CODES[DataType.bf16])


def _ints(values: Array) -> TableArg:
    return TableArg(tuple(int(v) for v in np.asarray(values, dtype=np.int32).ravel()), "int")


def _table_bindings(table: TableCode, shape: Sequence[int]) -> list[Binding]:
    """The bindings of `_TABLE`: slots, their strides, the extents, the instruction tables."""
    code = TableArg(table.code, "int")
    bindings: list[Binding] = [BufferArg(table.buffers[k]) if k < len(table.buffers) else code
                               for k in range(SLOTS)]
    for k in range(SLOTS):
        bindings.extend(table.strides[k] if k < len(table.strides)
                        else [ScalarArg("long", 0)] * RANK)
    padded = (1,) * (RANK - len(shape)) + tuple(shape)
    bindings.extend(ScalarArg("long", n) for n in padded)
    bindings += [code, ScalarArg("int", len(table.code) // 8), TableArg(table.floats)]
    return bindings


def _params(decls: Sequence[str], bindings: Sequence[Binding]) -> tuple[Param, ...]:
    assert len(decls) == len(bindings), "a table GEMM kernel's signature and bindings disagree"
    return tuple(Param(decl, binding) for decl, binding in zip(decls, bindings))


def _bias_strides(main: Op, bias: LogicalTensor, dst_shape: tuple[int, ...]
                  ) -> list[Binding]:
    """Per axis of dst padded to `RANK`, the bias's stride: along the channel axis for a
    convolution (the bias is 1-D, one value per output channel), right-aligned NumPy
    broadcasting for a MatMul."""
    strides: list[Binding] = [ScalarArg("long", 0)] * RANK
    offset = RANK - len(dst_shape)
    shape = known_shape(bias)
    if main.kind != "MatMul":
        axis = channel_axis(str(attr_of(main, "data_format")), len(dst_shape))
        if shape[0] != 1:
            strides[offset + axis] = ScalarArg("long", 1) if is_dense(bias) \
                else StrideArg(bias.id, 0)
        return strides
    dense = is_dense(bias)
    running = 1
    for j in range(len(shape) - 1, -1, -1):
        d = RANK - len(shape) + j
        if shape[j] != 1:
            strides[d] = ScalarArg("long", running) if dense else StrideArg(bias.id, j)
        running *= shape[j]
    return strides


def build_gemm_table(partition: Partition, main: Op, chains: Sequence[Sequence[Op]],
                     post: Sequence[Op], outputs: Sequence[LogicalTensor], ctx: BuildContext
                     ) -> KernelPlan | None:
    """The table-form plan of a forward GEMM partition (see the module docstring), or None
    when it does not fit the interpreter or one launch cannot cover a domain."""
    try:
        return _build(partition, main, chains, post, outputs, ctx)
    except _NoFit:
        return None


def _build(partition: Partition, main: Op, chains: Sequence[Sequence[Op]],
           post: Sequence[Op], outputs: Sequence[LogicalTensor], ctx: BuildContext
           ) -> KernelPlan | None:
    dst = main.outputs[0]
    dst_shape = known_shape(dst)
    if len(dst_shape) > RANK:
        return None
    operands = [translate_operand(chains[port], main.inputs[port]) for port in (0, 1)]
    epilogue = translate_ops(post, outputs, dst_shape, given=dst.id)
    if epilogue is None or operands[0] is None or operands[1] is None:
        return None
    maps: IndexMaps = index_maps(main)
    bias = main.inputs[2] if len(main.inputs) > 2 else None
    bias_binding: Binding = BufferArg(bias.id) if bias is not None \
        else TableArg(epilogue.code, "int")
    bias_strides = _bias_strides(main, bias, dst_shape) if bias is not None \
        else [ScalarArg("long", 0)] * RANK
    sizes = (maps.z * maps.m * maps.k, maps.z * maps.k * maps.n, maps.z * maps.m * maps.n)
    scratch = (Scratch("table_a", max(sizes[0], 1) * 4), Scratch("table_b", max(sizes[1], 1) * 4))
    launches: list[Launch] = []
    for port, (where, count) in enumerate(((maps.a, sizes[0]), (maps.b, sizes[1]))):
        if not count or not sizes[2]:
            continue
        table = operands[port]
        assert table is not None
        bindings = [ScratchArg(scratch[port].name), _ints(where), ScalarArg("long", count),
                    *_table_bindings(table, known_shape(main.inputs[port]))]
        launches.append(_launch_1d(ctx, GATHER_KERNEL, _params(_GATHER, bindings), count))
    if sizes[2]:
        dtype_code = DTYPE_CODES[bias.dtype] if bias is not None else -1
        bindings = [ScratchArg("table_a"), ScratchArg("table_b"), _ints(maps.d),
                    ScalarArg("long", sizes[2]), ScalarArg("long", maps.m),
                    ScalarArg("long", maps.n), ScalarArg("long", maps.k), bias_binding,
                    ScalarArg("int", dtype_code), *bias_strides,
                    ScalarArg("int", DTYPE_CODES[dst.dtype]),
                    *_table_bindings(epilogue, dst_shape)]
        launches.append(_launch_1d(ctx, GEMM_KERNEL, _params(_GEMM, bindings), sizes[2]))
    return KernelPlan("gemm", _source(ctx), tuple(launches), reads=tuple(partition.inputs),
                      writes=tuple(partition.outputs), scratch=scratch)


def _launch_1d(ctx: BuildContext, kernel: str, params: tuple[Param, ...], count: int
               ) -> Launch:
    global_size, local_size = ctx.launch_1d(count)
    if global_size[0] < count:  # the kernels have no grid-stride loop
        raise _NoFit
    return Launch(kernel, params, global_size, local_size)


class _NoFit(Exception):
    """One launch cannot cover the domain."""
