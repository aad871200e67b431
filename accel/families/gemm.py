"""The GEMM family: a MatMul, Convolution or ConvTranspose with everything fused around it
(and ConvolutionBackwardWeights, with the BiasAddBackward of train.conv_bwd_weights_bias_bwd:
`fusionspec.accel.families.gemm_backward`).

Each main op is a batch of ``Z`` products ``M x K`` by ``K x N``
(`fusionspec.accel.families.gemm_geometry`). The kernels take one of two forms, chosen by the
device's properties (never its name), each its own template (``gemm_tiled.cl.j2``,
``gemm_register.cl.j2``). The tile choice is `fusionspec.accel.families.gemm_tiles`; what the
family accepts, checked before either form or the table form is built, is
`fusionspec.accel.families.gemm_checks`.

- **Tiled**, where local memory is a separate on-chip store (``DeviceInfo.local_mem_dedicated``,
  GPUs): a work-group of TX x TY work-items computes a TM x TN output tile (TM = TY*RM,
  TN = TX*RN): per step of TK along K it stages the A and B tiles in ``__local`` memory, then
  each work-item accumulates an RM x RN register block in f32. `choose_tiles` sizes the tiles
  from the device (work-group limit, work-item limits, local memory) and the size class of the
  problem (a tile does not grow far past M or N).
- **Register-blocked**, where "local" memory is ordinary cached memory (CPU devices: staging
  there is only extra cache traffic and barriers). A first kernel packs B into panels of
  NB = NV*W columns (W: the device's vector width, at most 8), contiguous along K and zero
  past N. The GEMM kernel then gives each work-item RM rows of one panel: RM x NV
  accumulators of W lanes live in registers while it walks K, each step one row of the panel
  and RM values of A, RM*NV vector multiply-adds. A is read in one of three ways (`A_MODES`,
  `choose_register_tiles`):

  * "run" (MatMul, Convolution, ConvTranspose without ops folded into A): where k's
    innermost coordinate steps through A at a fixed stride (`Geometry.a_run`: all of K for a
    MatMul, the input channels of one tap for a convolution), each row's address and padding
    test are decoded once per run, then read at that stride: an implicit GEMM that decodes a
    convolution window once per tap instead of once per element. A run whose RM rows all lie
    inside the input takes a loop without the padding test; only runs that touch the border
    test each element (the select kept Intel's compiler from folding the load into the
    multiply-add: the 3x3 convolution of the benchmark went from 2.45 to 1.84 ms there);
  * "packed": A materialised k-major in a scratch buffer first (an explicit im2col), where the
    index code decodes but runs do not apply (the weight gradient; a Dequantize folded into a
    convolution's src that cannot be staged) and the buffer fits `IM2COL_BUDGET`;
  * "element": A's full index code per element in the GEMM loop (the rest).

  Both ways of reading a convolution were measured (`fusionspec.accel.tune`, 3x3
  convolution 64 -> 64 channels, 56x56): in runs 2.4-2.6 ms, packed 3.3-6.5 ms, element by
  element 5.3-7.7 ms on PoCL and Intel's runtime (the im2col pass alone costs more than the
  decoding it saves), so runs are the default wherever they apply. `choose_register_tiles`
  picks RM and NV: 6 x 2 by default (12 accumulators, 2 B vectors and a broadcast fill the
  16 vector registers of AVX2, which PoCL's LLVM targets on this class of CPU), 4 x 2 for
  convolution windows, whose rows keep an offset and a padding flag each; a tuning cache may
  replace them (`fusionspec.accel.tuning_cache`, `fusionspec.accel.tune`). Work-items along x walk
  the rows of one panel, so a work-group reads its panel from cache; work-groups are sized so
  that there are several per compute unit. The kernel carries ``vec_type_hint``: a driver
  that vectorises across work-items (Intel's) otherwise widens every accumulator again. On
  the 2-core machine this runs the 512^3 product at 120-150 GFLOP/s under PoCL and Intel's
  runtime (BENCHMARKS.md), against 9-60 GFLOP/s for the tiled form.
- Generic sizes. M, N, K and every size of the index code are kernel arguments
  (`fusionspec.accel.codegen.args`) and the tiles depend on M, N and K only through a few
  size classes, so a program serves every shape of its class; the bounds tests make any
  runtime M, N, K correct with any tiles.
- Operand loads. src and weights are read where they sit (runtime strides, NumPy batch
  broadcasting, conv windows with zero padding computed from the indices). Dequantize ops
  feeding them, and a Quantize -> Dequantize pair on f32 weights, are folded into the loads:
  the shared generator (`fusionspec.accel.codegen.epilogue`) emits them at the operand's index,
  so an int8 value is loaded and turned into ``(x - zp) * scale`` in f32 right there (in the
  packing kernels of the register-blocked form). There, a Dequantize of A is staged instead
  where A can then be read in runs: the launch that packs B also writes A dequantized to a
  dense f32 scratch buffer (`fusionspec.accel.families.stage`), and the GEMM kernel reads that
  in runs, as it reads an f32 source. Accumulation is ``acc += a * b`` in f32 (an
  explicit ``fma`` call is a slow library call on some CPU drivers).
- Epilogue. The main op's optional bias input is added to the accumulator, which is rounded to
  dst's type when that is f16/bf16 (as the reference stores it); all the other ops of the
  partition (BiasAdd, BatchNormInference, unary and binary post-ops with their own
  Dequantize'd operands, the final Quantize) come from `emit_epilogue` at dst's index, and the
  partition's outputs are stored there once.
"""

from __future__ import annotations

import math

from fusionspec.spec.dtypes import DataType
from fusionspec.spec.graph import LogicalTensor, Op, Partition

from ..codegen.access import Domain, channel_offset, known_shape, stride_exprs
from ..codegen.args import KernelArgs
from ..codegen.epilogue import Value, emit_epilogue, supported_kinds
from ..codegen.source import Preamble, render
from ..codegen.types import HOST
from ..plan import Binding, BufferArg, KernelPlan, Launch, Param, Scratch, ScratchArg
from .base import BuildContext, KernelFamily
from .forms import build_in_form
from .gemm_backward import BIAS_KERNEL, backward_geometry, bias_backward_kernel
from .gemm_checks import BACKWARD, fail, operand_chain, validate
from .gemm_geometry import MAIN_KINDS, Geometry, IndexCode, OperandRun, geometry_of
from .gemm_table import build_gemm_table
from .gemm_tiles import (
    A_MODES,
    FLOAT_BYTES,
    IM2COL_BUDGET,
    PACK_BUDGET,
    PLAIN_BLOCK,
    WINDOW_BLOCK,
    RegisterTiles,
    Tiles,
    choose_register_tiles,
    choose_tiles,
    register_blocked,
    register_choice,
)
from .post_ops import table_post_ops
from .stage import StagedOperand, stage_operand

__all__ = ["FAMILY", "KERNEL_NAME", "Tiles", "RegisterTiles", "choose_tiles",
           "choose_register_tiles", "register_blocked", "is_gemm", "build_gemm",
           "IM2COL_BUDGET", "PACK_BUDGET", "A_MODES", "WINDOW_BLOCK", "PLAIN_BLOCK"]

KERNEL_NAME = "fs_gemm"
_ALL_MAINS = MAIN_KINDS | {BACKWARD}


def is_gemm(partition: Partition) -> bool:
    """Exactly one MatMul/Convolution/ConvTranspose with every other op in the epilogue table;
    or a ConvolutionBackwardWeights, alone or followed by a BiasAddBackward of its output."""
    mains = [op for op in partition.ops if op.kind in _ALL_MAINS]
    if len(mains) != 1:
        return False
    others = [op for op in partition.ops if op is not mains[0]]
    if mains[0].kind == BACKWARD:
        return all(op.kind == "BiasAddBackward" and op.inputs[0].id == mains[0].outputs[0].id
                   for op in others) and len(others) <= 1
    kinds = supported_kinds()
    return all(op.kind in kinds for op in others)


def _load_code(main: Op, port: int, code: IndexCode, array: str, chain: list[Op],
               ctx: BuildContext, preamble: Preamble, args: KernelArgs) -> str:
    """Statements setting ``v`` to operand `port` at the decoded index (0 in padding)."""
    operand = main.inputs[port]
    domain = Domain(known_shape(operand), args, array)
    inner = [f"int {array}[{domain.rank}];",
             *(f"{array}[{j}] = {e};" for j, e in enumerate(code.index))]
    if chain:
        body = emit_epilogue(chain, domain=domain, policy=ctx.policy, preamble=preamble)
        inner += [*body.body.splitlines(),
                  f"v = {ctx.policy.as_float(body.result.text, body.result.kind)};"]
    else:
        preamble.uses(operand.dtype)
        buffer = args.read(operand)
        expr, helpers = ctx.policy.load(operand.dtype, buffer, domain.read_offset(operand))
        preamble.need(helpers)
        inner.append(f"v = {ctx.policy.as_float(expr, ctx.policy.kind(operand.dtype))};")
    lines = list(code.statements)
    if code.valid:
        lines += [f"if ({code.valid}) {{", *(f"    {s}" for s in inner), "}"]
    else:
        lines += inner
    return "\n".join(lines)


def _run_code(main: Op, code: IndexCode, run: OperandRun, rows: int, ctx: BuildContext,
              preamble: Preamble, args: KernelArgs, staged: StagedOperand | None
              ) -> tuple[str, list[str]]:
    """For A read in runs: statements setting ``aok`` (not padding) and ``aoff`` (the element
    offset) at the decoded (m, k), the start of a run; and, per row i, the expression loading
    A at ``aoff<i>`` plus ``c`` steps of the run. A `staged` A (its Dequantize computed by the
    packing launch, `fusionspec.accel.families.stage`) is read from its dense f32 scratch."""
    operand = main.inputs[0]
    domain = Domain(known_shape(operand), args, "ai")
    if staged is None:
        preamble.uses(operand.dtype)
        buffer = args.read(operand)
    else:
        buffer = staged.buffer
    lines = [*code.statements, f"int ai[{domain.rank}];",
             *(f"ai[{j}] = {e};" for j, e in enumerate(code.index))]
    offset = domain.read_offset(operand) if staged is None else domain.dense_offset(operand)
    if code.valid:
        lines += [f"aok = {code.valid};", f"aoff = aok ? {offset} : 0;"]
    else:
        lines.append(f"aoff = {offset};")
    last = len(known_shape(operand)) - 1
    stride = stride_exprs(operand, args)[run.dim] if staged is None else \
        "1" if run.dim == last else args.dense_stride(operand, run.dim)
    step = "c" if stride == "1" else f"c * {stride}"
    loads = []
    for i in range(rows):
        if staged is not None:
            loads.append(f"{buffer}[aoff{i} + {step}]")
            continue
        expr, helpers = ctx.policy.load_float(operand.dtype, buffer, f"aoff{i} + {step}")
        preamble.need(helpers)
        loads.append(expr)
    return "\n".join(lines), loads


def _store_code(partition: Partition, main: Op, geo: Geometry, post: list[Op],
                outputs: list[LogicalTensor], ctx: BuildContext, preamble: Preamble,
                args: KernelArgs, accumulator: str) -> tuple[str, Domain]:
    """Statements finishing output (m, n), whose sum is the C expression `accumulator`: bias,
    rounding to dst's type, epilogue, stores of `outputs`; and dst's domain."""
    dst = main.outputs[0]
    domain = Domain(known_shape(dst), args, "idx")
    lines = list(geo.d.statements)
    if domain.rank:
        lines += [f"int idx[{domain.rank}];",
                  *(f"idx[{j}] = {e};" for j, e in enumerate(geo.d.index))]
    lines.append(f"float acc = {accumulator};")
    if len(main.inputs) > 2 and main.kind != BACKWARD:  # its input 2 is the weights shape
        bias = main.inputs[2]
        if bias.id not in {t.id for t in partition.inputs}:
            raise fail(partition, f"the bias of op {main.id} must be a partition input")
        preamble.uses(bias.dtype)
        buffer = args.read(bias)
        if geo.channel is not None:  # Convolution/ConvTranspose: 1-D, per output channel
            offset = channel_offset(bias, geo.channel, args)
        else:  # MatMul: broadcast to dst
            offset = domain.read_offset(bias)
        expr, helpers = ctx.policy.load(bias.dtype, buffer, offset)
        preamble.need(helpers)
        lines.append(f"acc += {ctx.policy.as_float(expr, ctx.policy.kind(bias.dtype))};")
    if dst.dtype is not DataType.f32:
        rounded, helpers = ctx.policy.round_to(dst.dtype, "acc")
        preamble.need(helpers)
        lines.append(f"acc = {rounded};")
    # Small products run the post-ops in the table form: the program then depends on the
    # main op's structure alone (fusionspec.accel.families.post_ops).
    table = table_post_ops(post, ctx, work=domain.size * geo.k, shape=domain.shape,
                           outputs=outputs, given=dst.id, args=args, preamble=preamble,
                           index="idx", acc="acc")
    if table is not None:
        return "\n".join([*lines, table]), domain
    code = emit_epilogue(post, domain=domain, policy=ctx.policy, preamble=preamble,
                         given={dst.id: Value("acc")}, outputs=outputs)
    missing = [t.id for t in outputs if t.id not in code.stored]
    if missing:
        raise fail(partition, f"outputs {missing} are not computed by the ops")
    lines += code.body.splitlines()
    return "\n".join(lines), domain


def _launch_2d(ctx: BuildContext, kernel: str, params: tuple[Param, ...], extent: int,
               rows: int, z: int) -> Launch:
    """A packing kernel's launch: `extent` work-items along x (rounded up to whole work
    groups; the kernel skips the rest), `rows` along y, `z` along z."""
    local = min(ctx.work_group(64), extent)
    return Launch(kernel, params, (-(-extent // local) * local, rows, z), (local, 1, 1))


def _register_launches(ctx: BuildContext, geo: Geometry, tiles: RegisterTiles,
                       params: tuple[Param, ...]) -> list[Launch]:
    """Pack B (and A), then the GEMM: work-group x runs along the row blocks of one panel,
    sized so that every compute unit gets about four work-groups."""
    panels = -(-geo.n // tiles.nb)
    blocks = -(-geo.m // tiles.rm)
    launches = []
    if geo.k:
        launches.append(_launch_2d(ctx, f"{KERNEL_NAME}_pack_b", params,
                                   panels * tiles.nv, geo.k, geo.z))
        if tiles.a_mode == "packed":
            launches.append(_launch_2d(ctx, f"{KERNEL_NAME}_pack_a", params,
                                       blocks * tiles.rm, geo.k, geo.z))
    wanted = -(-blocks * panels * geo.z // (4 * max(ctx.device.compute_units, 1)))
    local = max(1, min(blocks, wanted, ctx.max_work_group))
    launches.append(Launch(KERNEL_NAME, params, (-(-blocks // local) * local, panels, geo.z),
                           (local, 1, 1)))
    return launches


def build_gemm(partition: Partition, ctx: BuildContext) -> KernelPlan:
    """The GEMM kernels computing all of `partition`'s outputs: for a small product
    (`fusionspec.accel.families.forms`) the table form's shared program where it fits
    (`fusionspec.accel.families.gemm_table`), else tiled or register-blocked (see the module
    docstring), and, after a ConvolutionBackwardWeights, the BiasAddBackward kernel."""
    (main,) = [op for op in partition.ops if op.kind in _ALL_MAINS]
    chains = [operand_chain(partition, main, port) for port in (0, 1)]
    folded = {op.id for chain in chains for op in chain}
    post = [op for op in partition.ops if op is not main and op.id not in folded]
    geo = validate(partition, ctx, main, chains, post)
    return build_in_form(ctx, geo.z * geo.m * geo.n * geo.k,
                         max(geo.m * geo.k, geo.k * geo.n, geo.m * geo.n) * geo.z,
                         table=lambda: build_gemm_table(partition, main, chains, post, ctx),
                         specialised=lambda: _build_specialised(partition, ctx))


def _build_specialised(partition: Partition, ctx: BuildContext) -> KernelPlan:
    """The specialised plan (tiled or register-blocked) of a validated partition."""
    (main,) = [op for op in partition.ops if op.kind in _ALL_MAINS]
    chains = [operand_chain(partition, main, port) for port in (0, 1)]
    folded = {op.id for chain in chains for op in chain}
    post = [op for op in partition.ops if op is not main and op.id not in folded]
    bias_bwd = [op for op in post if op.kind == "BiasAddBackward"]
    post = [op for op in post if op.kind != "BiasAddBackward"]
    preamble = ctx.preamble()
    args = KernelArgs(preamble)
    geo = backward_geometry(main, args) if main.kind == BACKWARD else geometry_of(main, args)
    register, stage = register_choice(ctx, geo, chains)
    staged = stage_operand(chains[0], "a_f32", ctx, preamble, args) if stage else None
    # The bounds of the product, which the template tests every index against.
    m, n, k = args.index("M", geo.m), args.index("N", geo.n), args.index("K", geo.k)
    load_a = _load_code(main, 0, geo.a, "ai", chains[0], ctx, preamble, args)
    load_b = _load_code(main, 1, geo.b, "bi", chains[1], ctx, preamble, args)
    dst = main.outputs[0]
    reduced = {op.outputs[0].id for op in bias_bwd}
    outputs = [t for t in partition.outputs if t.id not in reduced]
    accumulator = "accr[i][j]" if register is None else f"accs[i * {register.nb} + j]"
    store, dst_domain = _store_code(partition, main, geo, post, outputs, ctx, preamble, args,
                                    accumulator)
    scratch: list[Scratch] = []
    diff_weights: Binding = BufferArg(dst.id)
    if bias_bwd and dst.id not in {t.id for t in outputs}:  # diff_weights stays on the device
        size = math.prod(known_shape(dst)) * HOST[dst.dtype].itemsize
        scratch.append(Scratch("diff_weights", max(size, 1)))
        diff_weights = ScratchArg("diff_weights")
        args.alias(dst, "scratch")
        buffer = args.buffer("scratch", ctx.policy.storage(dst.dtype), diff_weights,
                             const=False)
        statement, helpers = ctx.policy.store(dst.dtype, buffer, dst_domain.dense_offset(dst),
                                              "acc", "float")
        preamble.need(helpers)
        store += f"\n{statement}"
    extra: list[str] = []
    launches: list[Launch] = []
    if register is None:
        tiles = choose_tiles(ctx, geo.m, geo.n, geo.k)
        values: dict[str, object] = dict(
            register=False, tx=tiles.tx, ty=tiles.ty, rm=tiles.rm, rn=tiles.rn, tk=tiles.tk,
            tm=tiles.tm, tn=tiles.tn, staged=None)
        params = args.params
        if geo.m and geo.n and geo.z:
            groups_n, groups_m = -(-geo.n // tiles.tn), -(-geo.m // tiles.tm)
            launches.append(Launch(KERNEL_NAME, params, (groups_n * tiles.tx,
                                                         groups_m * tiles.ty, geo.z),
                                   (tiles.tx, tiles.ty, 1)))
    else:
        panels = -(-geo.n // register.nb)
        packed_b = args.buffer("packed_b", "float", ScratchArg("packed_b"), const=False)
        scratch.append(Scratch("packed_b", max(geo.z * panels * register.nb * geo.k, 1)
                               * FLOAT_BYTES))
        packed_a = ""
        blocks = -(-geo.m // register.rm)
        if register.a_mode == "packed":
            packed_a = args.buffer("packed_a", "float", ScratchArg("packed_a"), const=False)
            scratch.append(Scratch("packed_a", max(geo.z * blocks * register.rm * geo.k, 1)
                                   * FLOAT_BYTES))
        run, run_setup, run_loads = "", "", [""] * register.rm
        if register.a_mode == "run":
            assert geo.a_run is not None
            run = geo.a_run.length
            run_setup, run_loads = _run_code(main, geo.a, geo.a_run, register.rm, ctx,
                                             preamble, args, staged)
        if staged is not None:
            scratch.append(staged.scratch)
        values = dict(register=True, rm=register.rm, nv=register.nv, w=register.width,
                      nb=register.nb, a_mode=register.a_mode, packed_a=packed_a,
                      packed_b=packed_b, panels=args.index("panels", panels),
                      blocks=args.index("blocks", blocks), run=run, run_setup=run_setup,
                      run_loads=run_loads, run_padded=bool(geo.a.valid), staged=staged)
        params = args.params
        if geo.m and geo.n and geo.z:
            launches += _register_launches(ctx, geo, register, params)
    for op in bias_bwd:
        code, bias_params, channels = bias_backward_kernel(op, dst, diff_weights, ctx.policy,
                                                           preamble)
        extra.append(code)
        if channels:
            launches.append(Launch(BIAS_KERNEL, bias_params, *ctx.launch_1d(channels)))
    template = "gemm_tiled.cl.j2" if register is None else "gemm_register.cl.j2"
    source = render(template, preamble=preamble.render(), name=KERNEL_NAME,
                    params=args.decls(), prologue=geo.prologue, load_a=load_a, load_b=load_b,
                    store=store, m=m, n=n, k=k, **values)
    return KernelPlan("gemm", "\n".join([source, *extra]), tuple(launches),
                      reads=tuple(partition.inputs), writes=tuple(partition.outputs),
                      scratch=tuple(scratch))


FAMILY = KernelFamily("gemm", is_gemm, build_gemm)
