"""Element-wise unary ops: Abs, Clamp, Elu, Exp, GELU, HardSwish, LeakyReLU, Log, Pow, ReLU,
Reciprocal, Round, Sigmoid, SoftPlus, Sqrt, Square, Tanh.

Inputs arrive as float32, and f32 attributes (alpha, beta, min, max) are rounded to float32
first, since that is their type. Single IEEE operations (+, -, *, /, sqrt) are done in float32,
which is correctly rounded. Transcendental functions are evaluated in float64 and rounded once
to float32, so the result is the correctly rounded f32 value up to a vanishing chance of a tie.

Where oneDNN's definition has guards or special cases the spec keeps them: Clamp maps NaN to
`min`, Sigmoid returns 0 once ``-x >= 88.72283172607421875`` (the f32 exp overflow bound) and
SoftPlus returns x once beta*x reaches the same bound; Round is round-half-to-even. A NaN fails
both guards and propagates, as it does through every other unary op except Clamp.
"""

from __future__ import annotations

import math

import numpy as np

from fusionspec.spec.types import Array

from ..dtypes import to_compute
from ..errors import OpInputError

#: The largest f32 input of exp that does not overflow; oneDNN's guard for Sigmoid and SoftPlus.
EXP_OVERFLOW_BOUND = np.float32(88.72283172607421875)

_SQRT_2_OVER_PI = math.sqrt(2.0 / math.pi)
_GELU_TANH_CUBIC = 0.044715


def _f32(values: Array) -> Array:
    """The op's result in the compute dtype: float32, rounded once (float64 under
    `high_precision`)."""
    return to_compute(values)


def _f64(values: Array) -> Array:
    return np.asarray(values, dtype=np.float64)


def _attr(value: float) -> float:
    """An f32 attribute as the op sees it: rounded to float32 (JSON may give 0.1)."""
    return float(np.float32(value))


def erfc(z: Array) -> Array:
    """The complementary error function in float64 (SciPy's implementation: accurate to a few
    ulp over the reals, including the far tail that 1 - erf(z) would cancel away)."""
    # Imported here: SciPy's import takes a third of a second, and most processes that load
    # the reference (the suite's runner, a partition-only command) never evaluate erfc.
    from scipy import special as scipy_special

    result: Array = scipy_special.erfc(np.asarray(z, dtype=np.float64))
    return result


def Abs(src: Array) -> Array:
    return np.abs(src)


def Clamp(src: Array, *, min: float, max: float) -> Array:
    # Written as oneDNN's clip_v2 compares: a NaN fails "x > min", so it becomes min.
    lo, hi = np.float32(min), np.float32(max)
    low_clipped = np.where(src > lo, src, lo)
    return _f32(np.where(low_clipped < hi, low_clipped, hi))


def Elu(src: Array, *, alpha: float) -> Array:
    x = _f64(src)
    with np.errstate(over="ignore", invalid="ignore"):
        return _f32(np.where(x > 0, x, _attr(alpha) * np.expm1(np.minimum(x, 0.0))))


def Exp(src: Array) -> Array:
    with np.errstate(over="ignore"):
        return _f32(np.exp(_f64(src)))


def GELU(src: Array, *, mode: str) -> Array:
    """erf: x*Phi(x) = 0.5*x*erfc(-x/sqrt 2). tanh: 0.5*x*(1 + tanh(u)) with
    u = sqrt(2/pi)*(x + 0.044715*x^3), computed as x/(1 + exp(-2u)) to avoid cancellation.
    GELU(-inf) is -0 (the limit) rather than the NaN of a literal evaluation."""
    x = _f64(src)
    with np.errstate(over="ignore", invalid="ignore"):
        if mode == "gelu_tanh":
            u = _SQRT_2_OVER_PI * (x + _GELU_TANH_CUBIC * x * x * x)
            y = x / (1.0 + np.exp(-2.0 * u))
        else:
            y = 0.5 * x * erfc(-x / math.sqrt(2.0))
    return _f32(np.where(np.isneginf(x), -0.0, y))


def HardSwish(src: Array) -> Array:
    """x*min(max(x + 3, 0), 6)/6; HardSwish(-inf) is -0 (the limit; a literal -inf*0 is NaN)."""
    x = _f64(src)
    with np.errstate(invalid="ignore"):
        y = x * np.clip(x + 3.0, 0.0, 6.0) / 6.0
    return _f32(np.where(np.isneginf(x), -0.0, y))


def LeakyReLU(src: Array, *, alpha: float) -> Array:
    return _f32(np.where(src > 0, src, src * np.float32(alpha)))


def Log(src: Array) -> Array:
    # log(0) = -inf and log(x < 0) = NaN, as IEEE says; no warning for either.
    with np.errstate(divide="ignore", invalid="ignore"):
        return _f32(np.log(_f64(src)))


def Pow(src: Array, *, beta: float) -> Array:
    with np.errstate(divide="ignore", invalid="ignore", over="ignore"):
        return _f32(np.power(_f64(src), _attr(beta)))


def ReLU(src: Array) -> Array:
    # x*0 rather than 0 for x <= 0: negative inputs give -0.0 and NaN stays NaN; -inf gives
    # -0.0, the limit (a literal -inf*0 would be NaN).
    with np.errstate(invalid="ignore"):
        low = np.where(np.isneginf(src), np.float32(-0.0), src * np.float32(0.0))
    return _f32(np.where(src > 0, src, low))


def Reciprocal(src: Array) -> Array:
    with np.errstate(divide="ignore", over="ignore"):
        return _f32(np.float32(1.0) / src)


def Round(src: Array) -> Array:
    return _f32(np.rint(src))  # half to even; -0.5 -> -0.0


def Sigmoid(src: Array) -> Array:
    # The guard is written "-x >= bound gives 0" so that a NaN fails it and stays NaN.
    neg = -_f32(src)
    with np.errstate(over="ignore", invalid="ignore"):
        y = 1.0 / (1.0 + np.exp(_f64(neg)))
        return _f32(np.where(neg >= EXP_OVERFLOW_BOUND, 0.0, y))


def SoftPlus(src: Array, *, beta: float) -> Array:
    """log(1 + e^(beta*x))/beta; once beta*x reaches the exp overflow bound the result is x
    (the function is linear there to far below f32 precision). Negative beta is allowed.
    beta*x is exact in float64 for f32 operands, so no rounding of it leaks into e^(beta*x)."""
    b = _attr(beta)
    if b == 0:
        raise OpInputError("SoftPlus beta must not be 0 (the result divides by beta)")
    x = _f64(src)
    scaled = x * b
    with np.errstate(over="ignore"):
        smooth = np.log1p(np.exp(np.minimum(scaled, float(EXP_OVERFLOW_BOUND)))) / b
    return _f32(np.where(scaled < EXP_OVERFLOW_BOUND, smooth, x))


def Sqrt(src: Array) -> Array:
    with np.errstate(invalid="ignore"):
        return _f32(np.sqrt(_f32(src)))


def Square(src: Array) -> Array:
    with np.errstate(over="ignore"):  # overflow to inf is the f32 result
        return _f32(src) * _f32(src)


def Tanh(src: Array) -> Array:
    return _f32(np.tanh(_f64(src)))


#: The op implementations of this module (listed in `fusionspec.reference.ops`).
OPS = (Abs, Clamp, Elu, Exp, GELU, HardSwish, LeakyReLU, Log, Pow, ReLU, Reciprocal, Round,
       Sigmoid, SoftPlus, Sqrt, Square, Tanh)
