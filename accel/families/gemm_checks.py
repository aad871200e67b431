"""What the GEMM family accepts: the checks every GEMM partition passes before either kernel
form (`fusionspec.accel.families.forms`) is built.

`operand_chain` finds the ops folded into a main op's operand loads (a Dequantize, preceded on
the weights by a Quantize) and refuses any other producer; `validate` then raises, in the order
the specialised form would meet them, every error building the partition could raise (geometry,
operand loads, bias, rounding, post-ops, tiles, a trailing BiasAddBackward), so that the table
form (`fusionspec.accel.families.gemm_table`) and the specialised form
(`fusionspec.accel.families.gemm`) reject exactly the same partitions with the same errors.
"""

from __future__ import annotations

from fusionspec.spec.graph import LogicalTensor, Op, Partition

from ..codegen.access import channel_offset, check_broadcast, known_shape
from ..codegen.args import KernelArgs
from ..codegen.op_checks import check_chain
from ..codegen.types import check_supported, is_integer
from ..errors import UnsupportedPartitionError
from .base import BuildContext
from .gemm_backward import backward_geometry, check_bias_backward
from .gemm_geometry import Geometry, geometry_of
from .gemm_tiles import choose_tiles, register_choice
from .post_ops import check_post_ops

__all__ = ["BACKWARD", "fail", "operand_chain", "validate"]

#: The main op of the weight gradient, whose input 2 is a shape, not a bias.
BACKWARD = "ConvolutionBackwardWeights"


def fail(partition: Partition, message: str) -> UnsupportedPartitionError:
    """The error refusing `partition`, naming its pattern and op kinds."""
    return UnsupportedPartitionError(message, pattern=partition.pattern,
                                     kinds=[op.kind for op in partition.ops])


def operand_chain(partition: Partition, main: Op, port: int) -> list[Op]:
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
            raise fail(partition, f"input {port} of op {main.id} ({main.kind}) is computed "
                        f"by op {op.id} ({op.kind}), which the GEMM family cannot fold into "
                        "its operand loads")
        chain.insert(0, op)
        tensor = op.inputs[0]
    if not chain and is_integer(tensor.dtype):
        raise fail(partition, f"input {port} of op {main.id} ({main.kind}) is {tensor.dtype} "
                    "without a Dequantize")
    return chain



def validate(partition: Partition, ctx: BuildContext, main: Op, chains: list[list[Op]],
              post: list[Op]) -> Geometry:
    """The product's geometry, after raising what building either form would raise, in the
    order the specialised form meets it: the geometry, the operands' loads, the bias, the
    rounding to dst's type, the post-ops, the tiles, a BiasAddBackward's kernel."""
    scratch_args = KernelArgs(ctx.preamble())
    geo = backward_geometry(main, scratch_args) if main.kind == BACKWARD else \
        geometry_of(main, scratch_args)
    for port in (0, 1):
        if chains[port]:
            check_chain(chains[port], known_shape(main.inputs[port]))
        else:
            check_supported(main.inputs[port].dtype, "a tensor")
    dst = main.outputs[0]
    dst_shape = known_shape(dst)
    if len(main.inputs) > 2 and main.kind != BACKWARD:  # its input 2 is the weights shape
        bias = main.inputs[2]
        if bias.id not in {t.id for t in partition.inputs}:
            raise fail(partition, f"the bias of op {main.id} must be a partition input")
        check_supported(bias.dtype, "a tensor")
        if geo.channel is not None:
            channel_offset(bias, "c", scratch_args)
        else:
            check_broadcast(bias, dst_shape)
    ctx.policy.round_to(dst.dtype, "acc")
    bias_bwd = [op for op in post if op.kind == "BiasAddBackward"]
    reduced = {op.outputs[0].id for op in bias_bwd}
    outputs = [t for t in partition.outputs if t.id not in reduced]
    check_post_ops([op for op in post if op.kind != "BiasAddBackward"], shape=dst_shape,
                   outputs=outputs, given=dst.id, fail=lambda m: fail(partition, m))
    if bias_bwd and dst.id not in {t.id for t in outputs}:
        check_supported(dst.dtype, "a tensor")
    if register_choice(ctx, geo, chains)[0] is None:
        choose_tiles(ctx, geo.m, geo.n, geo.k)
    for op in bias_bwd:
        check_bias_backward(op, dst)
    return geo

