"""What an element-wise op chain must satisfy before either kernel form generates it.

Both forms of a post-op chain, the specialised epilogue (`fusionspec.accel.codegen.epilogue`)
and the table form's instructions (`fusionspec.accel.codegen.table_translate`), accept the
same chains and reject the others with the same errors, because both are preceded by
`check_chain`: it walks the ops in the order the generator does and raises, for the first op
that has one, the error its formula cannot be written for (an op without a formula, an
unsupported dtype, an operand that does not broadcast into the domain, an attribute that is
absent or out of range). Each op kind has its own check in `OP_CHECKS`, which raises in the
order its entry in `fusionspec.accel.codegen.ops.OP_TABLE` reads its operands and attributes
(the formulas themselves: `fusionspec.accel.codegen.formulas`).
Nothing is generated, so a family can validate a chain for the form it does not build.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence

from fusionspec.reference.errors import OpInputError
from fusionspec.spec.dtypes import DataType
from fusionspec.spec.graph import LogicalTensor, Op
from fusionspec.spec.shapes import channel_axis

from ..errors import UnsupportedPartitionError
from .access import check_broadcast, known_shape
from .formulas import FORMULAS, Formula
from .opctx import attr_of, fattr_of
from .types import Kind, check_supported, is_integer

__all__ = ["OP_CHECKS", "ChainCheck", "check_chain", "ordered_ops", "float_list",
           "quant_params", "INT_BINARY_KINDS"]

#: The binary kinds that have an exact integer form (both operands integer).
INT_BINARY_KINDS = frozenset(kind for kind, formula in FORMULAS.items()
                             if isinstance(formula, Formula) and formula.exact is not None)
_FLOAT_BINARY_KINDS = ("Add", "Subtract", "Multiply", "Divide", "Maximum", "Minimum")


def float_list(op: Op, name: str, *, required: bool = True) -> list[float]:
    """List attribute `name` of `op` as floats; an absent optional one is empty."""
    try:
        value = attr_of(op, name)
    except UnsupportedPartitionError:
        if required:
            raise
        return []
    if not isinstance(value, Sequence) or isinstance(value, str):
        raise UnsupportedPartitionError(f"attribute {name!r} must be a list")
    return [float(v) for v in value]


def ordered_ops(ops: Sequence[Op]) -> list[Op]:
    """`ops` with every producer before its consumers (stable otherwise)."""
    produced = {t.id: op for op in ops for t in op.outputs}
    order: list[Op] = []
    state: dict[int, int] = {}  # op id -> 1 visiting, 2 done

    def visit(op: Op) -> None:
        if state.get(op.id) == 2:
            return
        if state.get(op.id) == 1:
            raise UnsupportedPartitionError("the ops form a cycle",
                                            kinds=[o.kind for o in ops])
        state[op.id] = 1
        for t in op.inputs:
            if t.id in produced:
                visit(produced[t.id])
        state[op.id] = 2
        order.append(op)

    for op in ops:
        visit(op)
    return order


class ChainCheck:
    """The state of one chain's check: the register kind of each tensor already computed or
    loaded, over a domain of `shape`."""

    def __init__(self, ops: Sequence[Op], shape: Sequence[int],
                 given: Mapping[int, Kind]) -> None:
        self.shape = tuple(shape)
        self.kinds: dict[int, Kind] = dict(given)
        self.produced = {t.id for op in ops for t in op.outputs}

    def fits(self, tensor: LogicalTensor) -> None:
        """`tensor` has a known shape that broadcasts into the domain."""
        check_broadcast(tensor, self.shape)

    def operand(self, op: Op, port: int) -> Kind:
        """The register kind of input `port` of `op`, checking it as its load would be."""
        tensor = op.inputs[port]
        kind = self.kinds.get(tensor.id)
        if kind is None:
            if tensor.id in self.produced:
                raise UnsupportedPartitionError(f"tensor {tensor.id} is used before it is "
                                                "computed")
            self.fits(tensor)
            kind = self.kinds[tensor.id] = "int" if is_integer(tensor.dtype) else "float"
        return kind

    def per_channel(self, op: Op, port: int) -> None:
        """Input `port` of `op` can be read per channel: a 1-D partition input."""
        tensor = op.inputs[port]
        if tensor.id in self.produced or tensor.id in self.kinds:
            raise UnsupportedPartitionError(f"op {op.id} ({op.kind}) reads tensor {tensor.id} "
                                            "per channel, which the OpenCL backend supports "
                                            "only for partition inputs")
        if tensor.shape is None or len(tensor.shape) != 1:
            raise UnsupportedPartitionError(f"op {op.id} ({op.kind}): tensor {tensor.id} must "
                                            "be 1-D")
        known_shape(tensor)

    def channel(self, op: Op) -> None:
        """Input 0 of `op` is addressed along its channel axis (BiasAdd, BatchNorm)."""
        src = op.inputs[0]
        rank = len(src.shape or ())
        if rank < 2:
            raise OpInputError(f"src must have rank >= 2, got shape {list(src.shape or ())}",
                               op_id=op.id, op_kind=op.kind)
        channel_axis(str(attr_of(op, "data_format")), rank)
        self.fits(src)


Check = Callable[[ChainCheck, Op], Kind]


def _unary(check: ChainCheck, op: Op) -> Kind:
    check.operand(op, 0)
    return "float"


def _with_attrs(*names: str, first: bool = False) -> Check:
    """An op reading input 0 and the numeric attributes `names` (before input 0: `first`)."""
    def run(check: ChainCheck, op: Op) -> Kind:
        if not first:
            check.operand(op, 0)
        for name in names:
            fattr_of(op, name)
        if first:
            check.operand(op, 0)
        return "float"
    return run


def _gelu(check: ChainCheck, op: Op) -> Kind:
    check.operand(op, 0)
    attr_of(op, "mode")
    return "float"


def _softplus(check: ChainCheck, op: Op) -> Kind:
    if fattr_of(op, "beta") == 0:
        raise OpInputError("SoftPlus beta must not be 0 (the result divides by beta)",
                           op_id=op.id, op_kind=op.kind)
    check.operand(op, 0)
    return "float"


def _binary(check: ChainCheck, op: Op) -> Kind:
    a, b = op.inputs[0], op.inputs[1]
    if attr_of(op, "auto_broadcast") == "none" and a.shape != b.shape:
        raise OpInputError(f"shapes {list(a.shape or ())} and {list(b.shape or ())} differ "
                           "and auto_broadcast is 'none'", op_id=op.id, op_kind=op.kind)
    if check.operand(op, 0) == check.operand(op, 1) == "int":
        if op.kind not in INT_BINARY_KINDS:
            raise UnsupportedPartitionError(f"integer {op.kind} is not supported")
        return "int"
    return "float"


def _bias_add(check: ChainCheck, op: Op) -> Kind:
    check.channel(op)
    check.operand(op, 0)
    check.per_channel(op, 1)
    return "float"


def _batch_norm(check: ChainCheck, op: Op) -> Kind:
    check.channel(op)
    for port in (1, 2, 3, 4):
        check.per_channel(op, port)
    fattr_of(op, "epsilon")
    check.operand(op, 0)
    return "float"


def quant_params(check: ChainCheck, op: Op) -> None:
    """The scales and zero points of a Dequantize or Quantize fit its qtype and source."""
    scales = float_list(op, "scales")
    zps = float_list(op, "zps", required=False) or [0.0] * len(scales)
    if not scales:
        raise OpInputError("scales must be a non-empty list", op_id=op.id, op_kind=op.kind)
    if len(zps) != len(scales):
        raise OpInputError(f"{len(scales)} scales but {len(zps)} zero points", op_id=op.id,
                           op_kind=op.kind)
    if attr_of(op, "qtype") != "per_channel":
        if len(scales) != 1:
            raise OpInputError(f"per_tensor takes 1 scale, got {len(scales)}", op_id=op.id,
                               op_kind=op.kind)
        return
    shape = op.inputs[0].shape or ()
    axis = int(fattr_of(op, "axis"))
    if not -len(shape) <= axis < len(shape) or shape[axis] != len(scales):
        raise OpInputError(f"{len(scales)} scales do not match axis {axis} of src "
                           f"{list(shape)}", op_id=op.id, op_kind=op.kind)
    check.fits(op.inputs[0])


def _dequantize(check: ChainCheck, op: Op) -> Kind:
    quant_params(check, op)
    check.operand(op, 0)
    return "float"


def _quantize(check: ChainCheck, op: Op) -> Kind:
    dst = op.outputs[0].dtype
    if dst not in (DataType.s8, DataType.u8, DataType.s32):
        raise UnsupportedPartitionError(f"Quantize to {dst} is not supported (s8, u8 only)")
    quant_params(check, op)
    check.operand(op, 0)
    return "int"


def _typecast(check: ChainCheck, op: Op) -> Kind:
    check.operand(op, 0)
    dst = op.outputs[0].dtype
    if dst not in (DataType.f32, DataType.f16, DataType.bf16):
        raise UnsupportedPartitionError(f"cannot round a float register to {dst}")
    return "float"


def _identity(check: ChainCheck, op: Op) -> Kind:
    return check.operand(op, 0)


#: Per op kind of the post-op table, its check; it returns the kind of the op's register.
OP_CHECKS: dict[str, Check] = {
    "Abs": _unary,
    "Clamp": _with_attrs("min", "max", first=True),
    "Elu": _with_attrs("alpha"),
    "Exp": _unary,
    "GELU": _gelu,
    "HardSwish": _unary,
    "LeakyReLU": _with_attrs("alpha"),
    "Log": _unary,
    "Pow": _with_attrs("beta"),
    "ReLU": _unary,
    "Reciprocal": _unary,
    "Round": _unary,
    "Sigmoid": _unary,
    "SoftPlus": _softplus,
    "Sqrt": _unary,
    "Square": _unary,
    "Tanh": _unary,
    **{kind: _binary for kind in _FLOAT_BINARY_KINDS},
    "BiasAdd": _bias_add,
    "BatchNormInference": _batch_norm,
    "Dequantize": _dequantize,
    "Quantize": _quantize,
    "TypeCast": _typecast,
    "Reorder": _identity,
}


def check_chain(ops: Sequence[Op], shape: Sequence[int], *,
                given: Mapping[int, Kind] | None = None,
                outputs: Sequence[LogicalTensor] = ()) -> tuple[int, ...]:
    """Raise what generating `ops` over a domain of `shape` would raise (see the module
    docstring); else the ids of the `outputs` the chain stores (the given ones first, then in
    the order the ops compute them). `given`: the register kind of each tensor the caller
    computed (a main op's output)."""
    order = ordered_ops(ops)
    check = ChainCheck(order, shape, given or {})
    wanted = {t.id: t for t in outputs}
    stored: list[int] = []
    for tid in check.kinds:
        if tid in wanted:
            check_supported(wanted[tid].dtype, "a tensor")
            check.fits(wanted[tid])
            stored.append(tid)
    for op in order:
        run = OP_CHECKS.get(op.kind)
        if run is None:
            raise UnsupportedPartitionError(f"op {op.id} ({op.kind}) has no OpenCL "
                                            "expression in the epilogue table",
                                            kinds=[o.kind for o in order])
        for t in (*op.inputs, *op.outputs):
            check_supported(t.dtype, f"tensor {t.id} of op {op.id} ({op.kind})")
        kind = run(check, op)
        out = op.outputs[0]
        check.fits(out)
        check.kinds[out.id] = kind
        if out.id in wanted and out.id not in stored:
            stored.append(out.id)
    if not order and not check.kinds:
        raise UnsupportedPartitionError("an epilogue needs ops or a given value")
    return tuple(stored)
