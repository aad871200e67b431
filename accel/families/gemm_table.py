"""The table form of the GEMM family: one program for every small MatMul, Convolution,
ConvTranspose and ConvolutionBackwardWeights (with the BiasAddBackward that may follow it).

The specialised GEMM kernels (`fusionspec.accel.families.gemm`) compile the main op's index
code, its operand dtypes, folded Dequantize ops, bias and rounding into the program, so a
conformance run, where nearly every case differs in one of them, builds hundreds of GEMM
programs. In the table form all of that is data:

- where each operand element and each result sits: index maps computed on the host
  (`fusionspec.accel.families.gemm_index_maps`), uploaded once as int32 tables;
- how an operand is read: its instruction table (`fusionspec.accel.codegen.table_translate`: a
  load in its dtype, or the folded Dequantize chain), run by ``fs_tgather`` into a dense f32 matrix;
- the bias (a dtype code and strides over dst's coordinates), the rounding to dst's dtype (a
  dtype code) and the post-ops with the stores (the post-ops' instruction table), applied by
  ``fs_tgemm`` after each dot product.

Three launches: gather A, gather B, then the product; after a ConvolutionBackwardWeights, a
BiasAddBackward sums diff_weights per channel as the reduction's table form does
(`fusionspec.accel.families.window_table`: a gather and ``fs_twindow``). The program text
(``table_gather.cl.j2``, `fusionspec.accel.families.table_gather`) is the same for every
partition on a device, and shared with the pool, reduction and interpolate families.
`build_gemm_table` returns None for what the interpreter cannot hold (more slots, registers
or axes); the caller then builds the specialised plan. The caller validates the partition
before choosing a form (`fusionspec.accel.families.gemm`), so both forms reject the same
partitions with the same errors.
"""

from __future__ import annotations

from collections.abc import Sequence

from fusionspec.spec.graph import LogicalTensor, Op, Partition
from fusionspec.spec.shapes import channel_axis

from ..codegen.access import is_dense, known_shape
from ..codegen.opctx import attr_of
from ..codegen.table_instructions import DTYPE_CODES
from ..codegen.table_translate import RANK, translate_operand, translate_ops
from ..plan import (
    Binding,
    BufferArg,
    KernelPlan,
    Launch,
    ScalarArg,
    Scratch,
    ScratchArg,
    StrideArg,
    TableArg,
)
from .base import BuildContext
from .gemm_index_maps import index_maps
from .table_gather import (
    GEMM,
    GEMM_KERNEL,
    NoFit,
    gather_launch,
    int_table,
    launch_1d,
    params,
    source,
    table_bindings,
)
from .window_table import reduction_map, window_plan

__all__ = ["build_gemm_table"]


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
                     post: Sequence[Op], ctx: BuildContext) -> KernelPlan | None:
    """The table-form plan of a GEMM partition (see the module docstring): `chains` the ops
    folded into each operand, `post` the rest (after a ConvolutionBackwardWeights, its
    BiasAddBackward); None when it does not fit the interpreter or one launch cannot cover a
    domain."""
    try:
        return _build(partition, main, chains, post, ctx)
    except NoFit:
        return None


def _build(partition: Partition, main: Op, chains: Sequence[Sequence[Op]],
           post: Sequence[Op], ctx: BuildContext) -> KernelPlan | None:
    dst = main.outputs[0]
    dst_shape = known_shape(dst)
    if len(dst_shape) > RANK:
        return None
    bias_bwd = [op for op in post if op.kind == "BiasAddBackward"]
    post = [op for op in post if op.kind != "BiasAddBackward"]
    reduced = {op.outputs[0].id for op in bias_bwd}
    outputs = [t for t in partition.outputs if t.id not in reduced]
    # diff_weights reduced by BiasAddBackward is stored first, the partition's output or not.
    kept = [dst] if bias_bwd and dst.id not in {t.id for t in outputs} else []
    operands = [translate_operand(chains[port], main.inputs[port]) for port in (0, 1)]
    epilogue = translate_ops(post, [*outputs, *kept], dst_shape, given=dst.id)
    if epilogue is None or operands[0] is None or operands[1] is None:
        return None
    maps = index_maps(main)
    # The backward op's input 2 is the weights' shape, not a bias.
    bias = main.inputs[2] if (len(main.inputs) > 2 and main.kind == "MatMul") or \
        (len(main.inputs) > 2 and main.kind in ("Convolution", "ConvTranspose")) else None
    bias_binding: Binding = BufferArg(bias.id) if bias is not None \
        else TableArg(epilogue.code, "int")
    bias_strides = _bias_strides(main, bias, dst_shape) if bias is not None \
        else [ScalarArg("long", 0)] * RANK
    count = maps.z * maps.m * maps.n
    scratch = (Scratch("table_a", max(maps.a.size, 1) * 4),
               Scratch("table_b", max(maps.b.size, 1) * 4))
    launches: list[Launch] = []
    if count:
        for port, where in ((0, maps.a), (1, maps.b)):
            table = operands[port]
            assert table is not None
            if where.size:
                launches.append(gather_launch(ctx, scratch[port].name, int_table(where), table,
                                              known_shape(main.inputs[port])))
        bindings = [ScratchArg("table_a"), ScratchArg("table_b"), int_table(maps.d),
                    ScalarArg("long", count), ScalarArg("long", maps.m),
                    ScalarArg("long", maps.n), ScalarArg("long", maps.k), bias_binding,
                    ScalarArg("int", DTYPE_CODES[bias.dtype] if bias is not None else -1),
                    *bias_strides, ScalarArg("int", DTYPE_CODES[dst.dtype]),
                    *table_bindings(epilogue, dst_shape)]
        launches.append(launch_1d(ctx, GEMM_KERNEL, params(GEMM, bindings), count))
    all_scratch = list(scratch)
    for op in bias_bwd:  # a per-channel sum of diff_weights, as the reduction's table form
        axis = channel_axis(str(attr_of(op, "data_format")), len(dst_shape))
        where = reduction_map(dst_shape, [a for a in range(len(dst_shape)) if a != axis])
        summed = window_plan(partition, "gemm", op, [], [], where, None, "sum", ctx)
        if summed is None:
            return None
        launches += summed.launches
        all_scratch += summed.scratch
    return KernelPlan("gemm", source(ctx), tuple(launches), reads=tuple(partition.inputs),
                      writes=(*partition.outputs, *kept), scratch=tuple(all_scratch))
