"""The op table of the post-op generator: op kind -> OpenCL C expression builder.

Each entry takes an `OpCtx` (operands, attributes, per-channel loads, constants) and returns the
`Value` of the op's output at the current domain index. The formulas and their special cases
are those of the reference (`fusionspec.reference.ops.unary`, ``binary``, ``normalization``,
``quantization``), written for f32 registers; the reference's module docstrings give the
reasons (oneDNN's Sigmoid/SoftPlus guards, Clamp's NaN -> min, half-even Round, the -0 limits
of GELU and HardSwish at -inf). Adding an op is one entry in `OP_TABLE`, and one in the
table form's instruction set (`fusionspec.accel.codegen.table_instructions`, same formula),
which a test holds to the same bits.

Attribute values are kernel arguments (`OpCtx.farg`; per-channel lists `OpCtx.table`), never
literals, so an entry's text depends only on the attributes that change its form (GELU's mode,
a quantization's qtype and axis); literals are the formulas' own constants.

NaN and infinity tests are plain comparisons (``x != x``, ``x == -INFINITY``), never the
``isnan``/``isinf`` builtins: without fast-math options they mean the same, and on PoCL's CPU
device the builtins are calls that keep the work-item loop from being vectorised (a ReLU ->
Add -> Multiply -> Maximum kernel took 119 ms with them and 11 ms without, on 16 Mi floats).
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence

from fusionspec.reference.errors import OpInputError
from fusionspec.reference.ops.unary import EXP_OVERFLOW_BOUND as REFERENCE_EXP_BOUND
from fusionspec.spec.dtypes import DataType
from fusionspec.spec.shapes import channel_axis

from ..errors import UnsupportedPartitionError
from .opctx import OpCtx, Value
from .types import c_float

__all__ = ["OP_TABLE", "EXP_OVERFLOW_BOUND", "Builder"]

Builder = Callable[[OpCtx], Value]

#: oneDNN's f32 exp overflow bound (Sigmoid and SoftPlus guards), as an exact literal.
EXP_OVERFLOW_BOUND = c_float(float(REFERENCE_EXP_BOUND))


def _unary(template: str) -> Builder:
    """An entry from a C template over ``{x}`` (the operand's f32 register)."""
    def build(ctx: OpCtx) -> Value:
        return Value(template.format(x=ctx.f(0)))
    return build


def _clamp(ctx: OpCtx) -> Value:
    lo, hi = ctx.farg("min"), ctx.farg("max")
    low = ctx.let(f"{ctx.f(0)} > {lo} ? {ctx.f(0)} : {lo}")  # NaN fails ">", becomes min
    return Value(f"{low} < {hi} ? {low} : {hi}")


def _elu(ctx: OpCtx) -> Value:
    x = ctx.f(0)
    return Value(f"{x} > 0.0f ? {x} : {ctx.farg('alpha')} * expm1({x})")


def _gelu(ctx: OpCtx) -> Value:
    x = ctx.f(0)
    if ctx.attr("mode") == "gelu_tanh":
        k = ctx.lit(math.sqrt(2.0 / math.pi))
        u = ctx.let(f"{k} * ({x} + 0.044715f * {x} * {x} * {x})")
        smooth = f"{x} / (1.0f + exp(-2.0f * {u}))"
    else:
        # The builtin erfc is a library call of 60-70 ns per element on PoCL; fs_erfc is
        # arithmetic (fusionspec.accel.codegen.mathfn) and at least as accurate.
        ctx.need("fs_erfc")
        smooth = f"0.5f * {x} * fs_erfc(-{x} * M_SQRT1_2_F)"
    return Value(f"{x} == -INFINITY ? -0.0f : {smooth}")


def _leaky_relu(ctx: OpCtx) -> Value:
    x = ctx.f(0)
    return Value(f"{x} > 0.0f ? {x} : {x} * {ctx.farg('alpha')}")


def _pow(ctx: OpCtx) -> Value:
    return Value(f"pow({ctx.f(0)}, {ctx.farg('beta')})")


def _sigmoid(ctx: OpCtx) -> Value:
    x = ctx.f(0)
    # -x >= bound gives 0, as the reference's guard; a NaN fails the test and propagates.
    return Value(f"-{x} >= {EXP_OVERFLOW_BOUND} ? 0.0f : 1.0f / (1.0f + exp(-{x}))")


def _softplus(ctx: OpCtx) -> Value:
    if ctx.fattr("beta") == 0:
        raise OpInputError("SoftPlus beta must not be 0 (the result divides by beta)",
                           op_id=ctx.op.id, op_kind=ctx.op.kind)
    b = ctx.farg("beta")
    x = ctx.f(0)
    v = ctx.let(f"{x} * {b}")
    return Value(f"{v} < {EXP_OVERFLOW_BOUND} ? log1p(exp({v})) / {b} : {x}")


_FLOAT_BINARY = {
    "Add": "{a} + {b}", "Subtract": "{a} - {b}", "Multiply": "{a} * {b}", "Divide": "{a} / {b}",
    # NaN from either side propagates, as NumPy's maximum/minimum (OpenCL's fmax would drop it);
    # a != a is the NaN test (see the module docstring).
    "Maximum": "({a} > {b} || {a} != {a}) ? {a} : {b}",
    "Minimum": "({a} < {b} || {a} != {a}) ? {a} : {b}",
}
_INT_BINARY = {
    "Add": "{a} + {b}", "Subtract": "{a} - {b}", "Multiply": "{a} * {b}",
    "Maximum": "max({a}, {b})", "Minimum": "min({a}, {b})",
}


def _binary(kind: str) -> Builder:
    def build(ctx: OpCtx) -> Value:
        if ctx.attr("auto_broadcast") == "none" and ctx.input(0).shape != ctx.input(1).shape:
            raise OpInputError(f"shapes {list(ctx.input(0).shape or ())} and "
                               f"{list(ctx.input(1).shape or ())} differ and auto_broadcast is "
                               "'none'", op_id=ctx.op.id, op_kind=kind)
        a, b = ctx.arg(0), ctx.arg(1)
        if a.kind == "int" and b.kind == "int":
            if kind not in _INT_BINARY:
                raise UnsupportedPartitionError(f"integer {kind} is not supported")
            exact = _INT_BINARY[kind].format(a=a.text, b=b.text)  # exact in long
            return Value(f"clamp({exact}, -2147483648L, 2147483647L)", "int")
        return Value(_FLOAT_BINARY[kind].format(a=ctx.f(0), b=ctx.f(1)))
    return build


def _bias_add(ctx: OpCtx) -> Value:
    src = ctx.input(0)
    rank = len(src.shape or ())
    if rank < 2:
        raise OpInputError(f"src must have rank >= 2, got shape {list(src.shape or ())}",
                           op_id=ctx.op.id, op_kind="BiasAdd")
    c = ctx.channel_index(0, channel_axis(str(ctx.attr("data_format")), rank))
    return Value(f"{ctx.f(0)} + {ctx.load_at(1, c)}")


def _batch_norm(ctx: OpCtx) -> Value:
    src = ctx.input(0)
    rank = len(src.shape or ())
    if rank < 2:
        raise OpInputError(f"src must have rank >= 2, got shape {list(src.shape or ())}",
                           op_id=ctx.op.id, op_kind="BatchNormInference")
    c = ctx.channel_index(0, channel_axis(str(ctx.attr("data_format")), rank))
    gamma, beta, mean, var = (ctx.let(ctx.load_at(port, c)) for port in (1, 2, 3, 4))
    eps = ctx.farg("epsilon")
    return Value(f"{gamma} * ({ctx.f(0)} - {mean}) / sqrt({var} + {eps}) + {beta}")


def _quant_params(ctx: OpCtx) -> tuple[str, str]:
    """C expressions of the scale and zero point that apply at the current index."""
    scales = _floats(ctx, "scales")
    zps = _floats(ctx, "zps", required=False) or [0.0] * len(scales)
    if not scales:
        raise OpInputError("scales must be a non-empty list", op_id=ctx.op.id,
                           op_kind=ctx.op.kind)
    if len(zps) != len(scales):
        raise OpInputError(f"{len(scales)} scales but {len(zps)} zero points",
                           op_id=ctx.op.id, op_kind=ctx.op.kind)
    if ctx.attr("qtype") != "per_channel":
        if len(scales) != 1:
            raise OpInputError(f"per_tensor takes 1 scale, got {len(scales)}",
                               op_id=ctx.op.id, op_kind=ctx.op.kind)
        return ctx.float_arg("scale", scales[0]), ctx.float_arg("zp", zps[0])
    shape = ctx.input(0).shape or ()
    axis = int(ctx.fattr("axis"))
    if not -len(shape) <= axis < len(shape) or shape[axis] != len(scales):
        raise OpInputError(f"{len(scales)} scales do not match axis {axis} of src "
                           f"{list(shape)}", op_id=ctx.op.id, op_kind=ctx.op.kind)
    c = ctx.channel_index(0, axis % len(shape))
    return f"{ctx.table('scales', scales)}[{c}]", f"{ctx.table('zps', zps)}[{c}]"


def _floats(ctx: OpCtx, name: str, *, required: bool = True) -> list[float]:
    try:
        value = ctx.attr(name)
    except UnsupportedPartitionError:
        if required:
            raise
        return []
    if not isinstance(value, Sequence) or isinstance(value, str):
        raise UnsupportedPartitionError(f"attribute {name!r} must be a list")
    return [float(v) for v in value]


def _dequantize(ctx: OpCtx) -> Value:
    scale, zp = _quant_params(ctx)
    return Value(f"({ctx.f(0)} - {zp}) * {scale}")


def _quantize(ctx: OpCtx) -> Value:
    dst = ctx.output().dtype
    if dst not in (DataType.s8, DataType.u8, DataType.s32):
        raise UnsupportedPartitionError(f"Quantize to {dst} is not supported (s8, u8 only)")
    scale, zp = _quant_params(ctx)
    ctx.need("fs_quantize_rne", "fs_nan_to_zero")
    # Saturated like cast_to: NaN -> 0, infinities clipped.
    rounded = f"fs_quantize_rne({ctx.f(0)} / {scale}, {zp})"
    if dst is DataType.s32:
        return Value(f"(long){ctx.policy.float_to_int(dst, rounded)}", "int")
    # The rounded value is whole (or infinite), so an 8-bit result is a clamp and a cast: the
    # saturating conversion builtin is a library call on PoCL, and the int8 AvgPool + Add
    # partition ran 15% slower through it.
    lo, hi = (-128, 127) if dst is DataType.s8 else (0, 255)
    return Value(f"(long)(int)clamp(fs_nan_to_zero({rounded}), {lo}.0f, {hi}.0f)", "int")


def _typecast(ctx: OpCtx) -> Value:
    dst = ctx.output().dtype
    if dst is DataType.f32:
        return Value(ctx.f(0))
    text, helpers = ctx.policy.round_to(dst, ctx.f(0))
    ctx.need(*helpers)
    return Value(text)


def _identity(ctx: OpCtx) -> Value:
    return ctx.arg(0)


OP_TABLE: dict[str, Builder] = {
    "Abs": _unary("fabs({x})"),
    "Clamp": _clamp,
    "Elu": _elu,
    "Exp": _unary("exp({x})"),
    "GELU": _gelu,
    # (x+3 clamped)/6 first: x*6 would overflow f32 for |x| > 5.6e37, where f64 does not.
    "HardSwish": _unary("{x} == -INFINITY ? -0.0f : "
                        "{x} * (clamp({x} + 3.0f, 0.0f, 6.0f) / 6.0f)"),
    "LeakyReLU": _leaky_relu,
    "Log": _unary("log({x})"),
    "Pow": _pow,
    # x*0 for x <= 0: -0 for negatives, NaN stays NaN; -inf gives -0, the limit (not -inf*0).
    "ReLU": _unary("{x} > 0.0f ? {x} : ({x} == -INFINITY ? -0.0f : {x} * 0.0f)"),
    "Reciprocal": _unary("1.0f / {x}"),
    "Round": _unary("rint({x})"),  # half to even
    "Sigmoid": _sigmoid,
    "SoftPlus": _softplus,
    "Sqrt": _unary("sqrt({x})"),
    "Square": _unary("{x} * {x}"),
    "Tanh": _unary("tanh({x})"),
    **{kind: _binary(kind) for kind in _FLOAT_BINARY},
    "BiasAdd": _bias_add,
    "BatchNormInference": _batch_norm,
    "Dequantize": _dequantize,
    "Quantize": _quantize,
    "TypeCast": _typecast,
    "Reorder": _identity,
}
