"""The GEMM family: a MatMul, Convolution or ConvTranspose with everything fused around it
(and ConvolutionBackwardWeights, with the BiasAddBackward of train.conv_bwd_weights_bias_bwd:
`fusionspec.accel.families.gemm_backward`).

One kernel per partition, a tiled implicit GEMM (`fusionspec.accel.families.gemm_geometry` maps
each main op to ``Z`` products ``M x K`` by ``K x N``; the template is ``gemm.cl.j2``):

- Tiling. A work-group of TX x TY work-items computes a TM x TN output tile (TM = TY*RM,
  TN = TX*RN): per step of TK along K it stages the A and B tiles in ``__local`` memory, then
  each work-item accumulates an RM x RN register block in f32 (``acc += a * b``: an explicit
  ``fma`` call is a slow library call on some CPU drivers). `choose_tiles` sizes the tiles
  from the device (work-group limit, work-item limits, local memory) and the size class of the
  problem (a tile does not grow far past M or N), so the same generator serves GPUs and CPUs.
- Generic sizes. M, N, K and every size of the index code are kernel arguments
  (`fusionspec.accel.codegen.args`) and the tiles depend on M, N and K only through a few
  size classes, so a program serves every shape of its class; the bounds tests make any
  runtime M, N, K correct with any tiles.
- Operand loads. src and weights are read where they sit (runtime strides, NumPy batch
  broadcasting, conv windows with zero padding computed from the indices). Dequantize ops
  feeding them, and a Quantize -> Dequantize pair on f32 weights, are folded into the loads:
  the shared generator (`fusionspec.accel.codegen.epilogue`) emits them at the operand's index,
  so an int8 value is loaded and turned into ``(x - zp) * scale`` in f32 right there.
- Epilogue. The main op's optional bias input is added to the accumulator, which is rounded to
  dst's type when that is f16/bf16 (as the reference stores it); all the other ops of the
  partition (BiasAdd, BatchNormInference, unary and binary post-ops with their own
  Dequantize'd operands, the final Quantize) come from `emit_epilogue` at dst's index, and the
  partition's outputs are stored there once.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from fusionspec.spec.dtypes import DataType
from fusionspec.spec.graph import LogicalTensor, Op, Partition

from ..codegen.access import Domain, channel_offset, known_shape
from ..codegen.args import KernelArgs
from ..codegen.epilogue import Value, emit_epilogue, supported_kinds
from ..codegen.source import Preamble, render
from ..codegen.types import HOST, is_integer
from ..errors import UnsupportedPartitionError
from ..plan import Binding, BufferArg, KernelPlan, Launch, Scratch, ScratchArg
from .base import BuildContext, KernelFamily
from .gemm_backward import BIAS_KERNEL, backward_geometry, bias_backward_kernel
from .gemm_geometry import MAIN_KINDS, Geometry, IndexCode, geometry_of

__all__ = ["FAMILY", "KERNEL_NAME", "Tiles", "choose_tiles", "is_gemm", "build_gemm"]

KERNEL_NAME = "fs_gemm"
_BACKWARD = "ConvolutionBackwardWeights"
_ALL_MAINS = MAIN_KINDS | {_BACKWARD}
_FLOAT = 4  # bytes of one staged element


@dataclass(frozen=True)
class Tiles:
    """Work-group shape (tx x ty work-items), register block (rm x rn) and K step (tk)."""

    tx: int
    ty: int
    rm: int
    rn: int
    tk: int

    @property
    def tm(self) -> int:
        return self.ty * self.rm

    @property
    def tn(self) -> int:
        return self.tx * self.rn

    @property
    def local_bytes(self) -> int:
        return self.tk * (self.tm + 1 + self.tn) * _FLOAT


def _side_class(extent: int) -> int:
    """The output tile extent for M or N: 1 for a single row or column (matrix-vector), 8 for
    a small extent, else 64. Few classes keep the programs few; a tile past the extent only
    costs idle work-items, which the bounds tests skip."""
    return 1 if extent <= 1 else 8 if extent <= 8 else 64


def choose_tiles(ctx: BuildContext, m: int, n: int, k: int) -> Tiles:
    """Tiles for an M x N x K product on `ctx.device`: up to 64 x 64 outputs per work-group
    (4 x 4 per work-item) and a K step of 16, shrunk to the size class of M and N and to what
    the device allows (work-group size, within `ctx.work_group_limit` when set; work-item
    sizes; half of its local memory). K does not matter: any K runs in steps of 16."""
    dev = ctx.device
    limit = ctx.max_work_group
    items = dev.max_work_item_sizes or (limit, limit)
    lim_x, lim_y = items[0], items[1] if len(items) > 1 else 1

    def side(extent: int) -> tuple[int, int]:  # (work-items, register block) along one dim
        tile = _side_class(extent)
        block = 4 if tile >= 32 else 2 if tile >= 4 else 1
        return tile // block, block

    (ty, rm), (tx, rn) = side(m), side(n)
    while tx * ty > limit or tx > lim_x or ty > lim_y:
        if (tx >= ty and tx > 1) or ty == 1:
            tx //= 2
        else:
            ty //= 2
    tk = 16  # a short K only leaves part of one step's loads masked
    budget = dev.local_mem_size // 2
    tiles = Tiles(tx, ty, rm, rn, tk)
    while tiles.local_bytes > budget and (tiles.tk > 1 or tiles.rm > 1 or tiles.rn > 1):
        if tiles.tk > 1:
            tiles = Tiles(tx, ty, tiles.rm, tiles.rn, tiles.tk // 2)
        else:
            tiles = Tiles(tx, ty, max(tiles.rm // 2, 1), max(tiles.rn // 2, 1), 1)
    if tiles.local_bytes > dev.local_mem_size:
        raise UnsupportedPartitionError(f"the device's {dev.local_mem_size} bytes of local "
                                        "memory cannot hold the smallest GEMM tile")
    return tiles


def is_gemm(partition: Partition) -> bool:
    """Exactly one MatMul/Convolution/ConvTranspose with every other op in the epilogue table;
    or a ConvolutionBackwardWeights, alone or followed by a BiasAddBackward of its output."""
    mains = [op for op in partition.ops if op.kind in _ALL_MAINS]
    if len(mains) != 1:
        return False
    others = [op for op in partition.ops if op is not mains[0]]
    if mains[0].kind == _BACKWARD:
        return all(op.kind == "BiasAddBackward" and op.inputs[0].id == mains[0].outputs[0].id
                   for op in others) and len(others) <= 1
    kinds = supported_kinds()
    return all(op.kind in kinds for op in others)


def _fail(partition: Partition, message: str) -> UnsupportedPartitionError:
    return UnsupportedPartitionError(message, pattern=partition.pattern,
                                     kinds=[op.kind for op in partition.ops])


def _operand_chain(partition: Partition, main: Op, port: int) -> list[Op]:
    """The ops folded into the load of operand `port`: a Dequantize producing it, preceded
    (weights) by a Quantize producing the Dequantize's input; empty for a partition input."""
    producers = {t.id: op for op in partition.ops for t in op.outputs}
    users: dict[int, int] = {}
    for op in partition.ops:
        for t in op.inputs:
            users[t.id] = users.get(t.id, 0) + 1
    outputs = {t.id for t in partition.outputs}

    def private(tensor: LogicalTensor) -> bool:  # consumed by one op only, not an output
        return users.get(tensor.id, 0) == 1 and tensor.id not in outputs

    chain: list[Op] = []
    tensor = main.inputs[port]
    while tensor.id in producers:
        op = producers[tensor.id]
        allowed = "Dequantize" if not chain else "Quantize" if port == 1 and len(chain) == 1 \
            else None
        if op.kind != allowed or not private(tensor):
            raise _fail(partition, f"input {port} of op {main.id} ({main.kind}) is computed "
                        f"by op {op.id} ({op.kind}), which the GEMM family cannot fold into "
                        "its operand loads")
        chain.insert(0, op)
        tensor = op.inputs[0]
    if not chain and is_integer(tensor.dtype):
        raise _fail(partition, f"input {port} of op {main.id} ({main.kind}) is {tensor.dtype} "
                    "without a Dequantize")
    return chain


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


def _store_code(partition: Partition, main: Op, geo: Geometry, post: list[Op],
                outputs: list[LogicalTensor], ctx: BuildContext, preamble: Preamble,
                args: KernelArgs) -> tuple[str, Domain]:
    """Statements finishing output (m, n): bias, rounding to dst's type, epilogue, stores of
    `outputs`; and dst's domain."""
    dst = main.outputs[0]
    domain = Domain(known_shape(dst), args, "idx")
    lines = list(geo.d.statements)
    if domain.rank:
        lines += [f"int idx[{domain.rank}];",
                  *(f"idx[{j}] = {e};" for j, e in enumerate(geo.d.index))]
    lines.append("float acc = accr[i][j];")
    if len(main.inputs) > 2 and main.kind != _BACKWARD:  # its input 2 is the weights shape
        bias = main.inputs[2]
        if bias.id not in {t.id for t in partition.inputs}:
            raise _fail(partition, f"the bias of op {main.id} must be a partition input")
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
    code = emit_epilogue(post, domain=domain, policy=ctx.policy, preamble=preamble,
                         given={dst.id: Value("acc")}, outputs=outputs)
    missing = [t.id for t in outputs if t.id not in code.stored]
    if missing:
        raise _fail(partition, f"outputs {missing} are not computed by the ops")
    lines += code.body.splitlines()
    return "\n".join(lines), domain


def build_gemm(partition: Partition, ctx: BuildContext) -> KernelPlan:
    """One tiled implicit-GEMM kernel computing all of `partition`'s outputs (and, after a
    ConvolutionBackwardWeights, the BiasAddBackward kernel)."""
    (main,) = [op for op in partition.ops if op.kind in _ALL_MAINS]
    chains = [_operand_chain(partition, main, port) for port in (0, 1)]
    folded = {op.id for chain in chains for op in chain}
    post = [op for op in partition.ops if op is not main and op.id not in folded]
    bias_bwd = [op for op in post if op.kind == "BiasAddBackward"]
    post = [op for op in post if op.kind != "BiasAddBackward"]
    preamble = ctx.preamble()
    args = KernelArgs(preamble)
    geo = backward_geometry(main, args) if main.kind == _BACKWARD else geometry_of(main, args)
    # The bounds of the product, which the template tests every index against.
    m, n, k = args.index("M", geo.m), args.index("N", geo.n), args.index("K", geo.k)
    load_a = _load_code(main, 0, geo.a, "ai", chains[0], ctx, preamble, args)
    load_b = _load_code(main, 1, geo.b, "bi", chains[1], ctx, preamble, args)
    dst = main.outputs[0]
    reduced = {op.outputs[0].id for op in bias_bwd}
    outputs = [t for t in partition.outputs if t.id not in reduced]
    store, dst_domain = _store_code(partition, main, geo, post, outputs, ctx, preamble, args)
    scratch: tuple[Scratch, ...] = ()
    diff_weights: Binding = BufferArg(dst.id)
    if bias_bwd and dst.id not in {t.id for t in outputs}:  # diff_weights stays on the device
        size = math.prod(known_shape(dst)) * HOST[dst.dtype].itemsize
        scratch = (Scratch("diff_weights", max(size, 1)),)
        diff_weights = ScratchArg("diff_weights")
        args.alias(dst, "scratch")
        buffer = args.buffer("scratch", ctx.policy.storage(dst.dtype), diff_weights,
                             const=False)
        statement, helpers = ctx.policy.store(dst.dtype, buffer, dst_domain.dense_offset(dst),
                                              "acc", "float")
        preamble.need(helpers)
        store += f"\n{statement}"
    tiles = choose_tiles(ctx, geo.m, geo.n, geo.k)
    extra: list[str] = []
    launches: list[Launch] = []
    if geo.m and geo.n and geo.z:
        groups_n, groups_m = -(-geo.n // tiles.tn), -(-geo.m // tiles.tm)
        launches.append(Launch(KERNEL_NAME, args.params, (groups_n * tiles.tx,
                                                          groups_m * tiles.ty, geo.z),
                               (tiles.tx, tiles.ty, 1)))
    for op in bias_bwd:
        code, bias_params, channels = bias_backward_kernel(op, dst, diff_weights, ctx.policy,
                                                           preamble)
        extra.append(code)
        if channels:
            launches.append(Launch(BIAS_KERNEL, bias_params, *ctx.launch_1d(channels)))
    source = render("gemm.cl.j2", preamble=preamble.render(), name=KERNEL_NAME,
                    params=args.decls(), prologue=geo.prologue, load_a=load_a, load_b=load_b,
                    store=store, m=m, n=n, k=k, tx=tiles.tx, ty=tiles.ty, rm=tiles.rm,
                    rn=tiles.rn, tk=tiles.tk, tm=tiles.tm, tn=tiles.tn)
    return KernelPlan("gemm", "\n".join([source, *extra]), tuple(launches),
                      reads=tuple(partition.inputs), writes=tuple(partition.outputs),
                      scratch=scratch)


FAMILY = KernelFamily("gemm", is_gemm, build_gemm)
