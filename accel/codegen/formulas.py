"""The element-wise formulas: the math of every element-wise op kind, written once for both
kernel forms.

An entry is C text over named operands: ``{x}`` and ``{y}`` (inputs 0 and 1, in f32), the
operands it takes from attributes (`Formula.attributes`) or per-channel parameters, and the
temporaries it names (`Formula.lets`). Each kind of kernel binds the names to what it has:

- the specialised form (`fusionspec.accel.codegen.ops`) to its registers, kernel arguments and
  loads, declaring each temporary as a fresh ``const float eN``;
- the table form (`fusionspec.accel.codegen.table_instructions`) to the registers of its
  interpreter, one instruction per formula, its operands in the order of `Formula.operands`
  (the instruction's ``a``, ``b``, ``k``, ``m``, ``n``, ``q``).

So both spell the same C expression and round alike; a test renders every entry in both forms.

The formulas and their special cases are those of the reference
(`fusionspec.reference.ops.unary`, ``binary``, ``normalization``, ``quantization``), written
for f32 registers; the reference's module docstrings give the reasons (oneDNN's Sigmoid and
SoftPlus guards, Clamp's NaN -> min, half-even Round, the -0 limits of GELU and HardSwish at
-inf). Literals are the formulas' own constants; attribute values are always operands (kernel
arguments in the specialised form, table entries in the table form), so a program's text does
not depend on them.

NaN and infinity tests are plain comparisons (``x != x``, ``x == -INFINITY``), never the
``isnan``/``isinf`` builtins: without fast-math options they mean the same, and on PoCL's CPU
device the builtins are calls that keep the work-item loop from being vectorised (a ReLU ->
Add -> Multiply -> Maximum kernel took 119 ms with them and 11 ms without, on 16 Mi floats).
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping
from dataclasses import dataclass

from fusionspec.reference.ops.unary import EXP_OVERFLOW_BOUND as REFERENCE_EXP_BOUND

from .types import c_float

__all__ = ["Formula", "ByAttribute", "FORMULAS", "EXP_OVERFLOW_BOUND", "INT_SATURATE"]

#: oneDNN's f32 exp overflow bound (Sigmoid and SoftPlus guards), as an exact literal.
EXP_OVERFLOW_BOUND = c_float(float(REFERENCE_EXP_BOUND))
#: Integer results are exact in long, then saturated to s32 as the reference stores them.
INT_SATURATE = "clamp({}, -2147483648L, 2147483647L)"


@dataclass(frozen=True)
class Formula:
    """One op's math: `result`, an f32 C expression over `operands` (placeholders ``{x}``
    ...) and `lets` (temporaries, each ``(name, expression)`` over what precedes it).

    `attributes` maps the operands that are numeric attributes to the attribute's name;
    `exact` is the integer form, over long operands, used when every input is an integer;
    `helpers` are the preamble functions the expression calls; `rounds` means the value is
    then rounded to the output's type by the type policy (`TypePolicy.round_to`)."""

    result: str
    operands: tuple[str, ...] = ("x",)
    attributes: tuple[tuple[str, str], ...] = ()
    lets: tuple[tuple[str, str], ...] = ()
    exact: str | None = None
    helpers: tuple[str, ...] = ()
    rounds: bool = False

    @property
    def is_identity(self) -> bool:
        """Whether the op only passes its input on (no instruction, no statement)."""
        return self.result == "{x}" and not self.lets and not self.rounds

    def spell(self, names: Mapping[str, str],
              let: Callable[[str, str], str] | None = None) -> str:
        """The result with the operands bound to `names`; each temporary is declared by
        `let(name, expression)`, which returns what the later text calls it (a formula with
        temporaries needs one)."""
        bound = dict(names)
        for name, expr in self.lets:
            assert let is not None, "a formula with temporaries needs a way to declare them"
            bound[name] = let(name, expr.format_map(bound))
        return self.result.format_map(bound)

    def spell_exact(self, names: Mapping[str, str]) -> str:
        """The integer form with the operands bound to `names` (saturated to s32)."""
        assert self.exact is not None, "only ops with an integer form have one"
        return INT_SATURATE.format(self.exact.format_map(names))


@dataclass(frozen=True)
class ByAttribute:
    """An op whose formula depends on the value of one attribute (GELU's mode): the formula
    of each value, and the value that any other takes."""

    attribute: str
    cases: Mapping[str, Formula]
    default: str

    def key(self, value: object) -> str:
        """The case that attribute value `value` takes."""
        return str(value) if str(value) in self.cases else self.default

    def pick(self, value: object) -> Formula:
        return self.cases[self.key(value)]


def _binary(result: str, exact: str | None = None) -> Formula:
    return Formula(result, ("x", "y"), exact=exact)


def _with_attribute(result: str, attribute: str) -> Formula:
    return Formula(result, ("x", "p"), attributes=(("p", attribute),))


#: Op kind -> its formula.
FORMULAS: dict[str, Formula | ByAttribute] = {
    "Abs": Formula("fabs({x})"),
    # NaN fails ">", so it becomes min.
    "Clamp": Formula("{low} < {hi} ? {low} : {hi}", ("x", "lo", "hi"),
                     attributes=(("lo", "min"), ("hi", "max")),
                     lets=(("low", "{x} > {lo} ? {x} : {lo}"),)),
    "Elu": _with_attribute("{x} > 0.0f ? {x} : {p} * expm1({x})", "alpha"),
    "Exp": Formula("exp({x})"),
    "GELU": ByAttribute("mode", {
        "gelu_tanh": Formula(
            "{x} == -INFINITY ? -0.0f : {x} / (1.0f + exp(-2.0f * {u}))",
            lets=(("u", f"{c_float(math.sqrt(2.0 / math.pi))} * "
                        "({x} + 0.044715f * {x} * {x} * {x})"),)),
        # The builtin erfc is a library call of 60-70 ns per element on PoCL; fs_erfc is
        # arithmetic (fusionspec.accel.codegen.mathfn) and at least as accurate.
        "gelu_erf": Formula(
            "{x} == -INFINITY ? -0.0f : 0.5f * {x} * fs_erfc(-{x} * M_SQRT1_2_F)",
            helpers=("fs_erfc",)),
    }, default="gelu_erf"),
    # (x+3 clamped)/6 first: x*6 would overflow f32 for |x| > 5.6e37, where f64 does not.
    "HardSwish": Formula("{x} == -INFINITY ? -0.0f : "
                         "{x} * (clamp({x} + 3.0f, 0.0f, 6.0f) / 6.0f)"),
    "LeakyReLU": _with_attribute("{x} > 0.0f ? {x} : {x} * {p}", "alpha"),
    "Log": Formula("log({x})"),
    "Pow": _with_attribute("pow({x}, {p})", "beta"),
    # x*0 for x <= 0: -0 for negatives, NaN stays NaN; -inf gives -0, the limit (not -inf*0).
    "ReLU": Formula("{x} > 0.0f ? {x} : ({x} == -INFINITY ? -0.0f : {x} * 0.0f)"),
    "Reciprocal": Formula("1.0f / {x}"),
    "Round": Formula("rint({x})"),  # half to even
    # -x >= bound gives 0, as the reference's guard; a NaN fails the test and propagates.
    "Sigmoid": Formula(f"-{{x}} >= {EXP_OVERFLOW_BOUND} ? 0.0f : 1.0f / (1.0f + exp(-{{x}}))"),
    "SoftPlus": Formula(f"{{v}} < {EXP_OVERFLOW_BOUND} ? log1p(exp({{v}})) / {{p}} : {{x}}",
                        ("x", "p"), attributes=(("p", "beta"),), lets=(("v", "{x} * {p}"),)),
    "Sqrt": Formula("sqrt({x})"),
    "Square": Formula("{x} * {x}"),
    "Tanh": Formula("tanh({x})"),
    "Add": _binary("{x} + {y}", "{x} + {y}"),
    "Subtract": _binary("{x} - {y}", "{x} - {y}"),
    "Multiply": _binary("{x} * {y}", "{x} * {y}"),
    "Divide": _binary("{x} / {y}"),
    # NaN from either side propagates, as NumPy's maximum/minimum (OpenCL's fmax would drop
    # it); exact integers have no NaN, so the builtin serves them.
    "Maximum": _binary("({x} > {y} || {x} != {x}) ? {x} : {y}", "max({x}, {y})"),
    "Minimum": _binary("({x} < {y} || {x} != {x}) ? {x} : {y}", "min({x}, {y})"),
    # The bias (y) is input 1 at the index of input 0's channel; always f32.
    "BiasAdd": _binary("{x} + {y}"),
    # gamma, beta, mean, var: inputs 1-4 at the index of input 0's channel.
    "BatchNormInference": Formula("{gamma} * ({x} - {mean}) / sqrt({var} + {eps}) + {beta}",
                                  ("x", "gamma", "beta", "mean", "var", "eps"),
                                  attributes=(("eps", "epsilon"),)),
    # scale and zp: per tensor, or per channel along the axis attribute.
    "Dequantize": Formula("({x} - {zp}) * {scale}", ("x", "scale", "zp")),
    # Rounded half to even past zp; each form then saturates to the output's type (NaN -> 0,
    # infinities clipped, as cast_to).
    "Quantize": Formula("fs_quantize_rne({x} / {scale}, {zp})", ("x", "scale", "zp"),
                        helpers=("fs_quantize_rne", "fs_nan_to_zero")),
    "TypeCast": Formula("{x}", rounds=True),
    "Reorder": Formula("{x}"),
    # diff_dst (y) where src (x) > 0, else 0.
    "ReLUBackward": _binary("{x} > 0.0f ? {y} : 0.0f"),
}
