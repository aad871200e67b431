"""How close a backend's output must be to the reference's: each op's accuracy, and the comparison.

The allowance is not a flat table: each element of each output gets its own bound, computed
alongside the reference by `fusionspec.conformance.grade.bounds` from two things:

1. **Each op's own accuracy** (`ACCURACY`, one row per op kind, with its source). Ops that IEEE
   754 defines as correctly rounded (+, -, *, /, sqrt, conversions, and the ops built from
   comparisons and one such operation) get nothing beyond correct rounding: on the same inputs a
   conforming backend returns the same f32 value. Transcendental functions get a few ulp of the
   f32 result, stated per op (the OpenCL C single-precision limits, which a device must meet),
   plus an absolute term where the usual formula cancels (GELU's ``0.5*x*(1 + erf(...))``).
   Accumulating ops (convolution, MatMul, pooling, reductions, SoftMax, batch normalization)
   get the classic bound for a sum of n terms in any order, ``2*n*u*sum|terms|`` (u = 2^-24),
   which is zero where every partial sum is exact in f32 (the suite's grid fills).
2. **Propagation through the chain**: an error interval travels with every value. Element-wise
   ops evaluate themselves at the corners of their inputs' intervals (in float64), so a
   well-conditioned op passes the error on unchanged and an ill-conditioned one (a division by a
   value near zero, a Round or Quantize whose input may cross a .5 tie, an Exp of a large
   argument) widens it exactly as much as its conditioning says; linear ops carry it through
   their absolute weights (``conv(r_src, |w|) + conv(|src|, r_w)``).

Every rounding is applied to the interval, not to the value: a result rounded to f32, bf16, f16
or an integer type may be the other neighbour of the reference's value only where the interval
before the rounding contains the tie between them, so a truncating backend is caught wherever
the exact value is not near a tie, and exact chains must round ties to even. An element whose
interval covers a domain edge (a Log of a value that may be 0, an Exp at the overflow bound) has
no meaningful bound: it is *uncertain* (an infinite radius) and accepts any value.

`compare` checks a backend's output against the reference's within a `Bound` (the radius of each
element). NaN and inf must agree exactly (NaN with NaN, an inf with the same inf) except on
uncertain elements.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from fusionspec.reference.dtypes import data_type_of, numpy_dtype
from fusionspec.spec.dtypes import DataType
from fusionspec.spec.errors import FusionspecError
from fusionspec.spec.graph import Op

from .details import BoundRecord, Details, OutputSummary, WorstElement

__all__ = ["EPS", "U32", "WEAK_RELATIVE", "Accuracy", "ACCURACY", "ToleranceError",
           "weak_elements",
           "accuracy_of", "accuracy_table", "Bound", "Worst", "Comparison", "compare",
           "WORST_COUNT", "dtype_reason", "dtype_name", "chain_of"]

#: Machine epsilon per floating-point type, as benchdnn defines it (2^-mantissa bits).
EPS: Mapping[DataType, float] = {
    DataType.f32: 2.0 ** -23, DataType.bf16: 2.0 ** -7, DataType.f16: 2.0 ** -10,
    DataType.f8_e4m3: 2.0 ** -3, DataType.f8_e5m2: 2.0 ** -2,
}
#: The unit roundoff of f32: the largest relative error of one correct rounding.
U32 = 2.0 ** -24

#: An element whose radius exceeds this share of its value (or that is uncertain) carries weak
#: signal: the case is ill-conditioned there (a result of cancellation, a rounding near a tie).
WEAK_RELATIVE = 1.0 / 16

#: How many of the worst elements a comparison keeps for the report.
WORST_COUNT = 5

_OPENCL = "OpenCL C 1.2, section 7.4, single-precision ULP limits"
_IEEE = "IEEE 754: correctly rounded"


class ToleranceError(FusionspecError):
    """No accuracy is defined for an op kind (it is outside the spec pages)."""


@dataclass(frozen=True, kw_only=True)
class Accuracy:
    """What one op may add to the error of its result, beyond propagating its inputs' errors.

    For element-wise ops: ``ulps`` units in the last place of the f32 result, plus
    ``ulps_per_x2 * x^2`` more (an argument rounding amplified by the function's slope), plus
    ``abs_x * u * |x|`` absolute (cancellation in the usual formula). For the other ops `rule`
    states the bound in words (the formulas are in `fusionspec.conformance.grade.bounds`).
    `source` says where the numbers come from.
    """

    kinds: tuple[str, ...]
    ulps: float = 0.0
    ulps_per_x2: float = 0.0
    abs_x: float = 0.0
    rule: str
    source: str


ACCURACY: tuple[Accuracy, ...] = (
    Accuracy(kinds=("Abs", "Clamp", "LeakyReLU", "ReLU", "Round", "Square", "Sqrt", "Reciprocal",
                    "Add", "Subtract", "Multiply", "Divide", "Maximum", "Minimum", "BiasAdd",
                    "ReLUBackward", "Reorder", "TypeCast", "Dequantize"),
             rule="correctly rounded: the same inputs give the same result; an input error "
                  "moves it only as far as the op's value moves over the input's interval",
             source=_IEEE),
    Accuracy(kinds=("Exp",), ulps=3, rule="3 ulp", source=_OPENCL + " (exp: 3 ulp)"),
    Accuracy(kinds=("Log",), ulps=3, rule="3 ulp", source=_OPENCL + " (log: 3 ulp)"),
    Accuracy(kinds=("Tanh",), ulps=5, rule="5 ulp", source=_OPENCL + " (tanh: 5 ulp)"),
    Accuracy(kinds=("Sigmoid",), ulps=5, rule="5 ulp: exp (3 ulp), an add and a division",
             source=_OPENCL + " (exp: 3 ulp; + and / correctly rounded)"),
    Accuracy(kinds=("Elu",), ulps=4, rule="4 ulp: expm1 (3 ulp) times alpha",
             source=_OPENCL + " (expm1: 3 ulp)"),
    Accuracy(kinds=("SoftPlus",), ulps=5, abs_x=2,
             rule="5 ulp (exp and log1p, 3 ulp each, and a division) + 2u|x| (the rounding "
                  "of beta*x, carried through a slope of at most 1)",
             source=_OPENCL + " (exp, log1p: 3 ulp)"),
    Accuracy(kinds=("Pow",), ulps=16, rule="16 ulp", source=_OPENCL + " (pow: 16 ulp)"),
    Accuracy(kinds=("HardSwish",), ulps=2, abs_x=2,
             rule="2 ulp + 2u|x|: x*min(max(x + 3, 0), 6)/6 rounds x + 3 (absolute error "
                  "u*3, times |x|/6) and two more operations",
             source=_IEEE + " for each of its operations"),
    Accuracy(kinds=("GELU",), ulps=16, ulps_per_x2=1, abs_x=16,
             rule="erf form: 16 ulp + x^2 ulp (the rounding of x/sqrt 2 amplified by erfc's "
                  "slope) + 16u|x| (0.5*x*(1 + erf) cancels for negative x); tanh form: "
                  "the same, which covers 5 ulp of tanh and the rounding of its cubic argument",
             source=_OPENCL + " (erf, erfc: 16 ulp)"),
    Accuracy(kinds=("Convolution", "ConvTranspose", "ConvolutionBackwardWeights", "MatMul"),
             rule="2n*u*sum|x*w| for n non-zero products per output (any summation order, and "
                  "the reference's own f32 blocks), 0 where all partial sums are exact in f32; "
                  "input errors through conv(r_x, |w|) + conv(|x|, r_w)",
             source="Higham, Accuracy and Stability of Numerical Algorithms, section 3.1"),
    Accuracy(kinds=("AvgPool",),
             rule="the sum as above, then 1 ulp for the division (a multiplication by "
                  "1/count is allowed); input errors averaged",
             source="Higham 3.1; " + _IEEE),
    Accuracy(kinds=("MaxPool", "ReduceMax", "ReduceMin"),
             rule="exact: the result is one of the inputs; the largest input error in the "
                  "window or group", source="selection"),
    Accuracy(kinds=("ReduceSum", "ReduceMean", "ReduceL1", "BiasAddBackward"),
             rule="2n*u*sum|x| (0 when exact), 1 ulp more for ReduceMean's division",
             source="Higham 3.1"),
    Accuracy(kinds=("ReduceL2",),
             rule="(2n + 4)*u*|y| (a sum of squares and a square root); input errors by the "
                  "norm's 1-Lipschitz bound", source="Higham 3.1"),
    Accuracy(kinds=("ReduceProd",),
             rule="2n*u*|y| (n multiplications); input errors through the product of the "
                  "magnitudes' upper ends", source="Higham 3.1"),
    Accuracy(kinds=("Interpolate",),
             rule="nearest: exact; linear: 4 ulp + 2*d*u*max(in)*interp(|x|) (a source "
                  "coordinate computed in another f32 order moves each weight by an ulp of "
                  "the coordinate), input errors interpolated",
             source=_IEEE + " for the coordinate arithmetic"),
    Accuracy(kinds=("SoftMax",),
             rule="u*y*(8 + 2n + 2|x - max| + 2*spread): exp (3 ulp) of x - max (whose rounding "
                  "grows with its size), a sum of n terms and a division; input errors through "
                  "the Jacobian, y_i*(r_i + sum_j y_j*r_j)",
             source=_OPENCL + " (exp: 3 ulp); Higham 3.1"),
    Accuracy(kinds=("BatchNormInference",),
             rule="4u*(|gamma/sigma|*(|x| + |mean|) + |beta|) + 2 ulp: x - mean cancels, "
                  "and a backend may fold the op into x*scale + shift",
             source=_IEEE + " for each of its operations"),
    Accuracy(kinds=("BatchNormTrainingBackward",),
             rule="the sums over N*spatial as above, then 4u on each term of diff_src",
             source="Higham 3.1"),
    Accuracy(kinds=("Quantize",),
             rule="exact value x/scale + zp rounded half to even: the other neighbour only "
                  "where the input's interval (widened by u|x| when 1/scale is inexact) "
                  "contains the .5 tie", source=_IEEE + "; benchdnn's off-by-one at ties"),
)

_BY_KIND: dict[str, Accuracy] = {k: a for a in ACCURACY for k in a.kinds}


def accuracy_of(kind: str) -> Accuracy:
    """The accuracy row of op kind `kind`."""
    try:
        return _BY_KIND[kind]
    except KeyError:
        raise ToleranceError(f"no accuracy rule for op kind {kind!r}: every op the suite "
                             "grades needs its row in ACCURACY "
                             "(fusionspec.conformance.grade.tolerances)") from None


def accuracy_table() -> list[dict[str, Any]]:
    """The table as rows for the report and the docs."""
    return [{"ops": list(a.kinds), "ulps": a.ulps, "ulps_per_x2": a.ulps_per_x2,
             "abs_x": a.abs_x, "rule": a.rule, "source": a.source} for a in ACCURACY]


# -- the bound of one output ------------------------------------------------------------------

@dataclass(frozen=True)
class Bound:
    """What `compare` accepts for one output: `radius` (float64, the output's shape) is how far
    each element may be from the reference's value; inf marks an uncertain element. `chain`
    names the ops the output went through (``SoftMax->Add``)."""

    dtype: DataType
    radius: np.ndarray[Any, Any]
    chain: tuple[str, ...] = ()
    basis: tuple[str, ...] = field(default=())

    @property
    def label(self) -> str:
        return "->".join(self.chain)

    def weak(self, expected: np.ndarray[Any, Any]) -> np.ndarray[Any, Any]:
        """Elements with weak signal (see `weak_elements`)."""
        return weak_elements(expected, self.radius, self.dtype)

    def record(self) -> BoundRecord:
        """The bound as the results document records it."""
        finite = self.radius[np.isfinite(self.radius)]
        return BoundRecord(dtype=self.dtype.value, chain=self.label, basis=list(self.basis),
                           max_radius=_json_number(float(finite.max())) if finite.size else 0.0,
                           uncertain=int(np.isinf(self.radius).sum()))


def weak_elements(expected: np.ndarray[Any, Any], radius: np.ndarray[Any, Any],
                  dtype: DataType) -> np.ndarray[Any, Any]:
    """Finite elements with weak signal: uncertain, or a radius above `WEAK_RELATIVE` of the
    value and above one step of `dtype` there (the other neighbour at a rounding tie is not
    weak signal, only a tie)."""
    value = np.asarray(expected, dtype=np.float64)
    magnitude = np.abs(value)
    if dtype.is_integer:
        step: np.ndarray[Any, Any] | float = 1.0
    else:
        with np.errstate(invalid="ignore", over="ignore"):
            narrow = np.asarray(value).astype(numpy_dtype(dtype)) if dtype.is_float else value
            step = np.abs(np.spacing(np.asarray(narrow, dtype=np.float32)).astype(np.float64))
            if dtype in EPS and dtype is not DataType.f32:
                step = np.maximum(step, EPS[dtype] * magnitude)
    r = np.broadcast_to(np.asarray(radius, dtype=np.float64), value.shape)
    with np.errstate(invalid="ignore"):
        flags: np.ndarray[Any, Any] = np.isfinite(value) & (np.isinf(r) | (
            (r > WEAK_RELATIVE * magnitude) & (r > step)))
    return flags


@dataclass(frozen=True)
class Worst:
    """One offending element: its index, the reference's value, the backend's, and the bound
    (the radius allowed there)."""

    index: tuple[int, ...]
    expected: float
    actual: float
    bound: float = 0.0

    def record(self) -> WorstElement:
        """The element as the results document records it."""
        return WorstElement(index=list(self.index), expected=_json_number(self.expected),
                            actual=_json_number(self.actual), bound=_json_number(self.bound))


@dataclass(frozen=True)
class Comparison:
    """The outcome of `compare`: `passed`, why not (`reason`), the largest errors over finite
    elements, how many elements fail, and the worst few."""

    passed: bool
    reason: str
    bound: Bound
    max_abs_error: float = 0.0
    max_rel_error: float = 0.0
    mismatches: int = 0
    total: int = 0
    worst: tuple[Worst, ...] = ()
    #: the largest error divided by its element's bound (inf when the bound is 0)
    max_excess: float = 0.0

    def output_summary(self, tensor: int) -> OutputSummary:
        """The comparison of graph output `tensor`, as the details' numerics list it."""
        return OutputSummary(tensor=tensor, dtype=self.bound.dtype.value, passed=self.passed,
                             max_abs_error=_json_number(self.max_abs_error),
                             max_rel_error=_json_number(self.max_rel_error),
                             max_excess=_json_number(self.max_excess),
                             max_radius=self.bound.record().max_radius)

    def failing_output(self) -> Details:
        """What the details of a numeric mismatch record of the failing output's comparison."""
        return Details(bound=self.bound.record(),
                       max_abs_error=_json_number(self.max_abs_error),
                       max_rel_error=_json_number(self.max_rel_error),
                       max_excess=_json_number(self.max_excess),
                       mismatches=self.mismatches, total=self.total,
                       worst=[w.record() for w in self.worst])


def _json_number(value: float) -> float | str:
    """A float JSON can carry: NaN and infinities become strings."""
    return value if math.isfinite(value) else str(value)


def dtype_name(dtype: np.dtype[Any]) -> str:
    """The graph spelling of a NumPy dtype (``bf16`` for bfloat16), else NumPy's name."""
    try:
        return data_type_of(dtype).value
    except ValueError:
        return str(dtype)


#: Slack on every radius for the float64 arithmetic that computed it.
_SLACK = 1.0 + 2.0 ** -30


def compare(expected: np.ndarray[Any, Any], actual: object, bound: Bound) -> Comparison:
    """Compare a backend's `actual` output with the reference's `expected` (which has the
    logical tensor's storage dtype) within `bound`."""
    label = f" [{bound.label}]" if bound.chain else ""
    want_dtype = numpy_dtype(bound.dtype)
    if not isinstance(actual, np.ndarray):
        return Comparison(False, f"the backend returned {type(actual).__name__}, not a NumPy "
                          f"array{label}", bound)
    if actual.dtype != want_dtype:
        return Comparison(False, f"dst dtype {dtype_name(actual.dtype)}, spec requires "
                          f"{bound.dtype}{label}", bound)
    if actual.shape != expected.shape:
        return Comparison(False, f"dst shape {list(actual.shape)}, spec requires "
                          f"{list(expected.shape)}{label}", bound)
    total = int(expected.size)
    exp = expected.astype(np.float64)
    got = actual.astype(np.float64)
    radius = np.broadcast_to(np.asarray(bound.radius, dtype=np.float64), exp.shape)
    uncertain = np.isinf(radius)
    exp_nan, got_nan = np.isnan(exp), np.isnan(got)
    exp_fin, got_fin = np.isfinite(exp), np.isfinite(got)
    # Non-finite values must agree exactly: NaN with NaN, an inf with the same inf.
    special = ~exp_fin | ~got_fin
    special_bad = special & ~uncertain & ~(
        (exp_nan & got_nan) | (~exp_nan & ~got_nan & (exp == got)))
    both = exp_fin & got_fin
    with np.errstate(invalid="ignore"):  # inf - inf where both are non-finite; masked out
        diff = np.where(both, np.abs(got - exp), 0.0)
    allowed = np.where(uncertain, np.inf, radius * _SLACK)
    bad = (both & (diff > allowed)) | special_bad
    with np.errstate(divide="ignore", invalid="ignore"):
        rel = np.where(both & (exp != 0), diff / np.abs(exp), np.where(diff > 0, np.inf, 0.0))
        excess = np.where(bad & both, np.where(allowed > 0, diff / allowed, np.inf), 0.0)
    max_abs = float(diff.max()) if total else 0.0
    max_rel = float(rel[both].max()) if both.any() else 0.0
    max_excess = float(excess.max()) if total else 0.0
    count = int(bad.sum())
    if not count:
        return Comparison(True, "", bound, max_abs, max_rel, 0, total, (), max_excess)
    worst = _worst(exp, got, bad, special_bad, excess, radius)
    nonfinite = int(special_bad.sum())
    what = (f"{nonfinite} NaN/inf element(s) differ from the reference" if nonfinite
            else f"{count} of {total} element(s) exceed their error bound")
    if count > nonfinite and nonfinite:
        what += f", {count - nonfinite} more exceed their error bound"
    reason = (f"{what} (max abs error {max_abs:.3g}, max rel error {max_rel:.3g}; "
              f"{_excess_text(max_excess)}){label}")
    return Comparison(False, reason, bound, max_abs, max_rel, count, total, worst, max_excess)


def _excess_text(excess: float) -> str:
    """How far past its bound the worst element is, as a phrase that reads."""
    if math.isinf(excess):
        return "the worst differs where the bound is zero (the result must be exact)"
    return f"the worst is {excess:.3g} x its bound"


def _worst(exp: np.ndarray[Any, Any], got: np.ndarray[Any, Any], bad: np.ndarray[Any, Any],
           special_bad: np.ndarray[Any, Any], excess: np.ndarray[Any, Any],
           radius: np.ndarray[Any, Any]) -> tuple[Worst, ...]:
    """The failing elements furthest beyond their bound, NaN/inf disagreements first."""
    flat = np.flatnonzero(bad)
    score = np.where(special_bad.ravel()[flat], np.inf, excess.ravel()[flat])
    order = flat[np.argsort(-score, kind="stable")[:WORST_COUNT]]
    return tuple(Worst(tuple(int(i) for i in np.unravel_index(k, exp.shape)),
                       float(exp.ravel()[k]), float(got.ravel()[k]), float(radius.ravel()[k]))
                 for k in order)


def dtype_reason(actual: DataType | str, required: DataType, ops: Iterable[Op]) -> str:
    """The sentence for an output of the wrong type: ``dst dtype f16, spec requires f32
    [SoftMax->Add]``."""
    chain = "->".join(op.kind for op in ops)
    return f"dst dtype {actual}, spec requires {required}" + (f" [{chain}]" if chain else "")


def chain_of(ops: Sequence[Op]) -> tuple[str, ...]:
    """The op kinds of `ops`, in order (a bound's `chain`)."""
    return tuple(op.kind for op in ops)
