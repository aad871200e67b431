"""The op table of the post-op generator: op kind -> OpenCL C expression builder.

Each entry takes an `OpCtx` (operands, attributes, per-channel loads, constants) and returns the
`Value` of the op's output at the current domain index. The math is not here: every op's
formula is an entry of `fusionspec.accel.codegen.formulas.FORMULAS`, which the table form's
instruction set (`fusionspec.accel.codegen.table_instructions`) renders too. An entry here only
binds the formula's operands to what the specialised form has (registers, attribute kernel
arguments, per-channel loads, quantization tables) and declares its temporaries. Adding an op
is one formula, one entry here and one check (`fusionspec.accel.codegen.op_checks`).

An entry only writes its formula: what makes an op impossible to write (an attribute absent
or out of range, an operand that does not broadcast) is its check's to say, which both kernel
forms run first.

Attribute values are kernel arguments (`OpCtx.farg`; per-channel lists `OpCtx.table`), never
literals, so an entry's text depends only on the attributes that change its form (GELU's mode,
a quantization's qtype and axis).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping

from fusionspec.spec.dtypes import DataType
from fusionspec.spec.shapes import channel_axis

from .formulas import EXP_OVERFLOW_BOUND, FORMULAS, ByAttribute, Formula
from .op_checks import float_list
from .opctx import OpCtx, Value

__all__ = ["OP_TABLE", "EXP_OVERFLOW_BOUND", "Builder"]

Builder = Callable[[OpCtx], Value]


def _formula(kind: str) -> Formula:
    formula = FORMULAS[kind]
    assert isinstance(formula, Formula), f"{kind}'s formula depends on an attribute"
    return formula


def _spell(ctx: OpCtx, formula: Formula, names: Mapping[str, str]) -> str:
    """`formula` over `names`, its temporaries declared as ``eN``."""
    ctx.need(*formula.helpers)
    return formula.spell(names, lambda _name, expr: ctx.let(expr))


def _attributes(ctx: OpCtx, formula: Formula) -> dict[str, str]:
    return {name: ctx.farg(attribute) for name, attribute in formula.attributes}


def _on_input(kind: str, *, attributes_first: bool = False) -> Builder:
    """An entry over input 0 (``x``) and the formula's attribute operands. Clamp and
    SoftPlus declare their attribute arguments before loading ``x``: that order is their
    kernels' parameter order, which the other entries do not share."""
    formula = _formula(kind)

    def build(ctx: OpCtx) -> Value:
        names = _attributes(ctx, formula) if attributes_first else {}
        names["x"] = ctx.f(0)
        if not attributes_first:
            names |= _attributes(ctx, formula)
        return Value(_spell(ctx, formula, names))
    return build


def _gelu(ctx: OpCtx) -> Value:
    x = ctx.f(0)
    modes = FORMULAS["GELU"]
    assert isinstance(modes, ByAttribute), "GELU's formula depends on its mode"
    return Value(_spell(ctx, modes.pick(ctx.attr(modes.attribute)), {"x": x}))


def _binary(kind: str) -> Builder:
    formula = _formula(kind)

    def build(ctx: OpCtx) -> Value:
        a, b = ctx.arg(0), ctx.arg(1)
        if a.kind == "int" and b.kind == "int":  # the check admits only kinds with `exact`
            return Value(formula.spell_exact({"x": a.text, "y": b.text}), "int")
        return Value(_spell(ctx, formula, {"x": ctx.f(0), "y": ctx.f(1)}))
    return build


def _channel(ctx: OpCtx) -> str:
    """The index of input 0's channel (its data_format) at the domain index."""
    rank = len(ctx.input(0).shape or ())
    return ctx.channel_index(0, channel_axis(str(ctx.attr("data_format")), rank))


def _bias_add(ctx: OpCtx) -> Value:
    c = _channel(ctx)
    x = ctx.f(0)
    return Value(_spell(ctx, _formula("BiasAdd"), {"x": x, "y": ctx.load_at(1, c)}))


def _batch_norm(ctx: OpCtx) -> Value:
    formula = _formula("BatchNormInference")
    c = _channel(ctx)
    names = {name: ctx.let(ctx.load_at(port, c))
             for port, name in enumerate(("gamma", "beta", "mean", "var"), start=1)}
    names |= _attributes(ctx, formula)
    names["x"] = ctx.f(0)
    return Value(_spell(ctx, formula, names))


def _quant_params(ctx: OpCtx) -> dict[str, str]:
    """C expressions of the scale and zero point that apply at the current index (the
    lists already checked against the qtype and the source: `op_checks.quant_params`)."""
    scales = float_list(ctx.op, "scales")
    zps = float_list(ctx.op, "zps", required=False) or [0.0] * len(scales)
    if ctx.attr("qtype") != "per_channel":
        return {"scale": ctx.float_arg("scale", scales[0]), "zp": ctx.float_arg("zp", zps[0])}
    shape = ctx.input(0).shape or ()
    axis = int(ctx.fattr("axis"))
    c = ctx.channel_index(0, axis % len(shape))
    return {"scale": f"{ctx.table('scales', scales)}[{c}]",
            "zp": f"{ctx.table('zps', zps)}[{c}]"}


def _dequantize(ctx: OpCtx) -> Value:
    names = _quant_params(ctx)
    names["x"] = ctx.f(0)
    return Value(_spell(ctx, _formula("Dequantize"), names))


def _quantize(ctx: OpCtx) -> Value:
    dst = ctx.output().dtype
    names = _quant_params(ctx)
    names["x"] = ctx.f(0)
    rounded = _spell(ctx, _formula("Quantize"), names)
    if dst is DataType.s32:
        return Value(f"(long){ctx.policy.float_to_int(dst, rounded)}", "int")
    # The rounded value is whole (or infinite), so an 8-bit result is a clamp and a cast: the
    # saturating conversion builtin is a library call on PoCL, and the int8 AvgPool + Add
    # partition ran 15% slower through it. (The table form's interpreter saturates with the
    # builtins in one switch over the dtype; spelling both alike would change its program.)
    lo, hi = (-128, 127) if dst is DataType.s8 else (0, 255)
    return Value(f"(long)(int)clamp(fs_nan_to_zero({rounded}), {lo}.0f, {hi}.0f)", "int")


def _typecast(ctx: OpCtx) -> Value:
    value = _spell(ctx, _formula("TypeCast"), {"x": ctx.f(0)})
    text, helpers = ctx.policy.round_to(ctx.output().dtype, value)
    ctx.need(*helpers)
    return Value(text)


def _identity(ctx: OpCtx) -> Value:
    return ctx.arg(0)


_ON_INPUT = ("Abs", "Elu", "Exp", "HardSwish", "LeakyReLU", "Log", "Pow", "ReLU", "Reciprocal",
             "Round", "Sigmoid", "Sqrt", "Square", "Tanh")
_BINARY = ("Add", "Subtract", "Multiply", "Divide", "Maximum", "Minimum")

OP_TABLE: dict[str, Builder] = {
    **{kind: _on_input(kind) for kind in _ON_INPUT},
    "Clamp": _on_input("Clamp", attributes_first=True),
    "SoftPlus": _on_input("SoftPlus", attributes_first=True),
    "GELU": _gelu,
    **{kind: _binary(kind) for kind in _BINARY},
    "BiasAdd": _bias_add,
    "BatchNormInference": _batch_norm,
    "Dequantize": _dequantize,
    "Quantize": _quantize,
    "TypeCast": _typecast,
    "Reorder": _identity,
}
