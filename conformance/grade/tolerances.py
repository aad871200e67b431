"""How close a backend's output must be to the reference's: one table, and the comparison.

The starting point is benchdnn's graph driver, which compares each partition output with per-driver
thresholds (eps(f32) = 2^-23, eps(bf16) = 2^-7, eps(f16) = 2^-10). `TOLERANCE_CLASSES` keeps those
thresholds per op family as data, each row with the benchdnn value it comes from and the reason
where fusionspec departs from it. `tolerance_for(ops, dst_dtype)` turns the ops a value went through
into one `Tolerance`:

1. **Chain budget (f32).** Every op contributes its family's f32 threshold; along a chain the
   contributions add (first-order error analysis: relative errors of successive well-conditioned
   operations add up). An op that amplifies the error it receives multiplies the budget so far
   first: Square by 2, Pow by |beta|, Exp by `EXP_ARGUMENT_BOUND` (exp turns an absolute input
   error into a relative output error, scaled by the argument's size).
2. **Intermediate roundings.** A tensor inside the chain declared bf16/f16 may be rounded by one
   side and not the other (a partition boundary, a TypeCast after a slightly different f32
   value): one ulp of that type, eps(dt), joins the budget.
3. **Final rounding.** A bf16/f16 output is rounded once from f32; a value that differs in f32 by
   the budget can land one ulp apart, so such outputs get eps(dst) more (benchdnn's xf16
   thresholds are eps(dt) for the same reason).
4. **Integer and 8-bit outputs** must be exact, except benchdnn's off-by-one: where the exact
   value before rounding (`compare`'s `exact`) sits at a .5 tie, either neighbour is accepted.
   benchdnn's window around the tie is 9e-6 (its fills make the value exact); here the window
   also grows with the chain budget, relative to the value, since a chain of inexact ops moves
   a tie by that much. The allowance exists because a library may multiply by 1/scale; with
   power-of-two Quantize scales that product is exact, and when every op before the Quantize
   is exact on the suite's fills (no transcendental function), a value exactly on a tie is a
   true tie and must round half to even (the verdict removes the allowance there).

An element passes when ``|actual - expected| <= rtol*|expected| + atol*max(1, M)``, where `M`
is the tensor's largest finite reference magnitude. The absolute term covers cancellation: an
element near zero obtained from operands of magnitude M carries their absolute error (benchdnn
reaches the same end through its per-driver absolute relaxations and an L2-norm fallback).

NaN and inf: wherever the reference has a NaN the backend must have a NaN, and an inf must be
the same inf; a NaN or inf where the reference has a finite value is a mismatch.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from fusionspec.reference.dtypes import cast_to, data_type_of, numpy_dtype
from fusionspec.spec.dtypes import DataType
from fusionspec.spec.errors import FusionspecError
from fusionspec.spec.graph import Op

__all__ = ["EPS", "EXP_ARGUMENT_BOUND", "TIE_WINDOW", "ToleranceClass", "TOLERANCE_CLASSES",
           "Tolerance", "ToleranceError", "Worst", "Comparison", "tolerance_class_of",
           "tolerance_for", "compare",
           "tolerance_table", "WORST_COUNT", "dtype_reason",
           "dtype_name"]

#: Machine epsilon per floating-point type, as benchdnn defines it (2^-mantissa bits).
EPS: Mapping[DataType, float] = {
    DataType.f32: 2.0 ** -23, DataType.bf16: 2.0 ** -7, DataType.f16: 2.0 ** -10,
    DataType.f8_e4m3: 2.0 ** -3, DataType.f8_e5m2: 2.0 ** -2,
}
_EPS32 = EPS[DataType.f32]

#: The argument size assumed for Exp's error amplification. Generated inputs lie in [-4, 4] and
#: the catalog's chains before an Exp (a conv or matmul of a few such values, some post-ops)
#: stay within about 16; larger arguments push exp towards f32 overflow, where both sides give
#: inf anyway.
EXP_ARGUMENT_BOUND = 16.0

#: benchdnn's window around a .5 tie for integer outputs (exact fills move a tie by no more).
TIE_WINDOW = 9e-6

#: How many of the worst elements a comparison keeps for the report.
WORST_COUNT = 5


class ToleranceError(FusionspecError):
    """No tolerance is defined for an op kind (it is outside the spec pages)."""


@dataclass(frozen=True, kw_only=True)
class ToleranceClass:
    """One row of the table: op kinds that share a threshold.

    `f32` is the relative error one op of the family may add in f32 compute; `benchdnn` is the
    threshold benchdnn uses for the same ops; `why` explains where `f32` departs from it.
    """

    name: str
    kinds: tuple[str, ...]
    f32: float
    benchdnn: str
    why: str = ""


TOLERANCE_CLASSES: tuple[ToleranceClass, ...] = (
    ToleranceClass(
        name="binary",
        kinds=("Add", "Subtract", "Multiply", "Divide", "Maximum", "Minimum", "BiasAdd"),
        f32=_EPS32,
        benchdnn="binary driver: eps(dst)",
    ),
    ToleranceClass(
        name="eltwise",
        kinds=(
            "Abs", "Clamp", "Exp", "HardSwish", "LeakyReLU", "Pow", "Reciprocal", "ReLU", "Round",
            "Sigmoid", "Sqrt", "Square", "ReLUBackward",
        ),
        f32=4e-6,
        benchdnn="eltwise driver: 4e-6 for f32, eps(dt) for bf16/f16",
    ),
    ToleranceClass(
        name="eltwise-complex",
        kinds=("Elu", "GELU", "Log", "SoftPlus", "Tanh"),
        f32=4e-5,
        benchdnn="eltwise driver: 4e-5 for gelu_tanh, elu, tanh, soft_relu, log",
        why=("GELU's erf form is included: it goes through erf, whose OpenCL builtin may be off "
            "by 16 ulp"),
    ),
    ToleranceClass(
        name="conv",
        kinds=("Convolution", "ConvTranspose", "ConvolutionBackwardWeights"),
        f32=_EPS32,
        benchdnn="conv/deconv driver: 0 (exact by construction)",
        why=("the fills keep every product and partial sum exact too; one f32 rounding is "
            "allowed for a backend that contracts or reorders the accumulation differently"),
    ),
    ToleranceClass(
        name="matmul",
        kinds=("MatMul",),
        f32=_EPS32,
        benchdnn="matmul driver: 0 plus relaxations",
        why="as for conv",
    ),
    ToleranceClass(
        name="softmax",
        kinds=("SoftMax",),
        f32=10 * _EPS32,
        benchdnn="softmax driver: 10*eps(f32) for f32",
    ),
    ToleranceClass(
        name="pool-max",
        kinds=("MaxPool",),
        f32=0.0,
        benchdnn="pool driver: 0 for max",
        why="max returns one of its inputs, so it adds no error",
    ),
    ToleranceClass(
        name="pool-avg",
        kinds=("AvgPool",),
        f32=10 * _EPS32,
        benchdnn="pool driver: 10*eps(dt) for avg",
    ),
    ToleranceClass(
        name="interpolate-nearest",
        kinds=("Interpolate",),
        f32=0.0,
        benchdnn="resampling driver: 0 for nearest",
        why="nearest copies an input element",
    ),
    ToleranceClass(
        name="interpolate-linear",
        kinds=("Interpolate",),
        f32=7 * _EPS32,
        benchdnn="resampling driver: 7*eps(dst) for linear",
    ),
    ToleranceClass(
        name="reduction",
        kinds=(
            "ReduceMax", "ReduceMean", "ReduceMin", "ReduceProd", "ReduceSum", "BiasAddBackward",
        ),
        f32=_EPS32,
        benchdnn="reduction driver: eps(dst)",
    ),
    ToleranceClass(
        name="reduction-norm",
        kinds=("ReduceL1", "ReduceL2"),
        f32=5 * _EPS32,
        benchdnn="reduction driver: 5*eps(dst) for norm algorithms",
    ),
    ToleranceClass(
        name="batchnorm",
        kinds=("BatchNormInference",),
        f32=6e-7,
        benchdnn="bnorm driver: 6e-7 for src/dst",
    ),
    ToleranceClass(
        name="batchnorm-backward",
        kinds=("BatchNormTrainingBackward",),
        f32=5e-6,
        benchdnn="bnorm driver, backward: 5e-6 for scale/shift",
    ),
    ToleranceClass(
        name="reorder",
        kinds=("Dequantize", "Quantize", "Reorder", "TypeCast"),
        f32=_EPS32,
        benchdnn="reorder driver: 0 plus off-by-one at ties",
        why=("one f32 rounding for the scale arithmetic, which a backend may do as a "
            "multiplication by 1/scale (benchdnn's dst-scale allowance)"),
    ),
)

_BY_NAME: dict[str, ToleranceClass] = {f.name: f for f in TOLERANCE_CLASSES}
_BY_KIND: dict[str, ToleranceClass] = {}
for _family in TOLERANCE_CLASSES:
    for _kind in _family.kinds:
        _BY_KIND.setdefault(_kind, _family)


def tolerance_class_of(op: Op) -> ToleranceClass:
    """The table row for `op` (Interpolate's row depends on its mode)."""
    if op.kind == "Interpolate":
        mode = op.attrs.get("mode", "nearest")
        return _BY_NAME["interpolate-nearest" if mode == "nearest" else "interpolate-linear"]
    try:
        return _BY_KIND[op.kind]
    except KeyError:
        raise ToleranceError(f"no tolerance is defined for op kind {op.kind!r}: it is not an "
                             "op of the spec pages") from None


def _amplification(op: Op) -> float:
    """How much an op multiplies the relative error of its input (its condition number)."""
    if op.kind == "Square":
        return 2.0
    if op.kind == "Pow":
        beta = op.attrs.get("beta", 1.0)
        return max(1.0, abs(float(beta))) if isinstance(beta, int | float) else 1.0
    if op.kind == "Exp":
        return EXP_ARGUMENT_BOUND
    return 1.0


def _is_narrow_float(dtype: DataType) -> bool:
    return dtype in (DataType.bf16, DataType.f16)


def _is_exact_type(dtype: DataType) -> bool:
    """Integer outputs and floats of at most 8 bits: exact up to benchdnn's off-by-one."""
    return dtype.is_integer or dtype in (DataType.f8_e4m3, DataType.f8_e5m2)


@dataclass(frozen=True)
class Tolerance:
    """What `compare` accepts for one output.

    An element passes when ``|actual - expected| <= rtol*|expected| + atol*max(1, M)`` (M: the
    tensor's largest finite reference magnitude). With `off_by_one`, an element may also be the
    other neighbour of the exact value when that value lies within ``max(TIE_WINDOW,
    tie_window*|exact|)`` of a rounding tie. `chain` names the ops (``SoftMax->Add``); `basis`
    says how the numbers were reached, one line per contribution.
    """

    dtype: DataType
    rtol: float
    atol: float
    off_by_one: bool = False
    tie_window: float = 0.0
    chain: tuple[str, ...] = ()
    basis: tuple[str, ...] = field(default=())

    @property
    def label(self) -> str:
        return "->".join(self.chain)

    def to_dict(self) -> dict[str, Any]:
        return {"dtype": self.dtype.value, "rtol": self.rtol, "atol": self.atol,
                "off_by_one": self.off_by_one, "tie_window": self.tie_window,
                "chain": self.label, "basis": list(self.basis)}


def tolerance_for(ops: Sequence[Op], dst_dtype: DataType) -> Tolerance:
    """The tolerance for a `dst_dtype` output computed by `ops` (in producer-first order; the
    last op produces the output)."""
    budget = 0.0
    basis: list[str] = []
    for index, op in enumerate(ops):
        family = tolerance_class_of(op)
        amplify = _amplification(op)
        if amplify != 1.0 and budget:
            budget *= amplify
            basis.append(f"{op.kind} amplifies the error before it x{amplify:g}")
        budget += family.f32
        basis.append(f"{op.kind} ({family.name}) +{family.f32:.3g}")
        last = index == len(ops) - 1
        for out in op.outputs[:1]:
            if not last and _is_narrow_float(out.dtype):
                budget += EPS[out.dtype]
                basis.append(f"intermediate {out.dtype} tensor {out.id} may round: "
                             f"+eps({out.dtype})")
    chain = tuple(op.kind for op in ops)
    if _is_exact_type(dst_dtype):
        basis.append(f"{dst_dtype} output: exact, off by one only at a rounding tie "
                     f"(window {budget:.3g} relative, at least {TIE_WINDOW:g})")
        return Tolerance(dst_dtype, 0.0, 0.0, True, budget, chain, tuple(basis))
    if dst_dtype is DataType.boolean:
        basis.append("boolean output: exact")
        return Tolerance(dst_dtype, 0.0, 0.0, False, 0.0, chain, tuple(basis))
    rtol = budget
    if _is_narrow_float(dst_dtype):
        rtol += EPS[dst_dtype]
        basis.append(f"{dst_dtype} output rounds once: +eps({dst_dtype})")
    return Tolerance(dst_dtype, rtol, budget, False, 0.0, chain, tuple(basis))


def tolerance_table() -> list[dict[str, Any]]:
    """The table as rows for the report: per family, the tolerance of one op of the family for
    each output type (its rtol; ``exact+-1 at ties`` for integer outputs), and its sources."""
    rows: list[dict[str, Any]] = []
    for family in TOLERANCE_CLASSES:
        kind = family.kinds[0]
        attrs = {"mode": "linear"} if family.name == "interpolate-linear" else {}
        columns: dict[str, float | str] = {}
        for dtype in (DataType.f32, DataType.bf16, DataType.f16, DataType.s8, DataType.u8):
            tol = tolerance_for([Op(0, kind, attrs=attrs)], dtype)
            columns[dtype.value] = "exact+-1 at ties" if tol.off_by_one else tol.rtol
        rows.append({"family": family.name, "ops": list(family.kinds), "f32_per_op": family.f32,
                     **columns, "benchdnn": family.benchdnn, "why": family.why})
    return rows


# -- comparison ----------------------------------------------------------------------------

@dataclass(frozen=True)
class Worst:
    """One offending element: its index, the reference's value and the backend's."""

    index: tuple[int, ...]
    expected: float
    actual: float

    def to_dict(self) -> dict[str, Any]:
        return {"index": list(self.index), "expected": _json_number(self.expected),
                "actual": _json_number(self.actual)}


@dataclass(frozen=True)
class Comparison:
    """The outcome of `compare`: `passed`, why not (`reason`), the largest errors over finite
    elements, how many elements fail, and the worst few."""

    passed: bool
    reason: str
    tolerance: Tolerance
    max_abs_error: float = 0.0
    max_rel_error: float = 0.0
    mismatches: int = 0
    total: int = 0
    worst: tuple[Worst, ...] = ()

    def to_dict(self) -> dict[str, Any]:
        return {"passed": self.passed, "reason": self.reason,
                "tolerance": self.tolerance.to_dict(),
                "max_abs_error": _json_number(self.max_abs_error),
                "max_rel_error": _json_number(self.max_rel_error),
                "mismatches": self.mismatches, "total": self.total,
                "worst": [w.to_dict() for w in self.worst]}


def _json_number(value: float) -> float | str:
    """A float JSON can carry: NaN and infinities become strings."""
    return value if math.isfinite(value) else str(value)


def dtype_name(dtype: np.dtype[Any]) -> str:
    """The graph spelling of a NumPy dtype (``bf16`` for bfloat16), else NumPy's name."""
    try:
        return data_type_of(dtype).value
    except ValueError:
        return str(dtype)


def compare(expected: np.ndarray[Any, Any], actual: object, tol: Tolerance, *,
            exact: np.ndarray[Any, Any] | None = None) -> Comparison:
    """Compare a backend's `actual` output with the reference's `expected` (which has the
    logical tensor's storage dtype) under `tol`. `exact` is the reference's value before its
    final rounding to an integer or 8-bit type; without it no off-by-one is accepted."""
    label = f" [{tol.label}]" if tol.chain else ""
    want_dtype = numpy_dtype(tol.dtype)
    if not isinstance(actual, np.ndarray):
        return Comparison(False, f"the backend returned {type(actual).__name__}, not a NumPy "
                          f"array{label}", tol)
    if actual.dtype != want_dtype:
        return Comparison(False, f"dst dtype {dtype_name(actual.dtype)}, spec requires "
                          f"{tol.dtype}{label}", tol)
    if actual.shape != expected.shape:
        return Comparison(False, f"dst shape {list(actual.shape)}, spec requires "
                          f"{list(expected.shape)}{label}", tol)
    total = int(expected.size)
    exp = expected.astype(np.float64)
    got = actual.astype(np.float64)
    exp_nan, got_nan = np.isnan(exp), np.isnan(got)
    exp_fin, got_fin = np.isfinite(exp), np.isfinite(got)
    # Non-finite values must agree exactly: NaN with NaN, an inf with the same inf.
    special = ~exp_fin | ~got_fin
    special_bad = special & ~((exp_nan & got_nan) | (~exp_nan & ~got_nan & (exp == got)))
    both = exp_fin & got_fin
    with np.errstate(invalid="ignore"):  # inf - inf where both are non-finite; masked out
        diff = np.where(both, np.abs(got - exp), 0.0)
    magnitude = max(1.0, float(np.abs(exp[exp_fin]).max())) if exp_fin.any() else 1.0
    allowed = tol.rtol * np.abs(np.where(both, exp, 0.0)) + tol.atol * magnitude
    bad = both & (diff > allowed)
    if tol.off_by_one and exact is not None and bad.any():
        bad &= ~_off_by_one(exp, got, np.asarray(exact, dtype=np.float64), tol)
    bad |= special_bad
    with np.errstate(divide="ignore", invalid="ignore"):
        rel = np.where(both & (exp != 0), diff / np.abs(exp), np.where(diff > 0, np.inf, 0.0))
    max_abs = float(diff.max()) if total else 0.0
    max_rel = float(rel[both].max()) if both.any() else 0.0
    count = int(bad.sum())
    worst = _worst(exp, got, bad, special_bad, diff, allowed)
    if not count:
        return Comparison(True, "", tol, max_abs, max_rel, 0, total, ())
    nonfinite = int(special_bad.sum())
    what = (f"{nonfinite} NaN/inf element(s) differ from the reference" if nonfinite
            else f"{count} of {total} element(s) exceed the tolerance")
    if count > nonfinite and nonfinite:
        what += f", {count - nonfinite} more exceed the tolerance"
    reason = (f"{what} (max abs error {max_abs:.3g}, max rel error {max_rel:.3g}; "
              f"rtol {tol.rtol:.3g}, atol {tol.atol:.3g}){label}")
    return Comparison(False, reason, tol, max_abs, max_rel, count, total, worst)


def _off_by_one(exp: np.ndarray[Any, Any], got: np.ndarray[Any, Any],
                exact: np.ndarray[Any, Any], tol: Tolerance) -> np.ndarray[Any, Any]:
    """Elements where expected and actual are the two roundings of an exact value that lies
    within the tie window of a rounding tie (benchdnn's is_off_by_one, window widened)."""
    window = np.minimum(np.maximum(TIE_WINDOW, tol.tie_window * np.abs(exact)), 0.25)
    with np.errstate(invalid="ignore", over="ignore"):
        # float64 on purpose: a 9e-6 window is below f32's resolution at 255.
        low = cast_to(exact - window, tol.dtype).astype(np.float64)
        high = cast_to(exact + window, tol.dtype).astype(np.float64)
    ok: np.ndarray[Any, Any] = (low != high) & (exp != got) & (
        ((exp == low) & (got == high)) | ((exp == high) & (got == low)))
    return ok


def _worst(exp: np.ndarray[Any, Any], got: np.ndarray[Any, Any], bad: np.ndarray[Any, Any],
           special_bad: np.ndarray[Any, Any], diff: np.ndarray[Any, Any],
           allowed: np.ndarray[Any, Any]) -> tuple[Worst, ...]:
    """The failing elements furthest beyond their allowance, NaN/inf disagreements first."""
    flat = np.flatnonzero(bad)
    if not flat.size:
        return ()
    with np.errstate(divide="ignore", invalid="ignore"):
        excess = np.where(allowed > 0, diff / allowed, np.inf).ravel()[flat]
    excess = np.where(special_bad.ravel()[flat], np.inf, excess)
    order = flat[np.argsort(-excess, kind="stable")[:WORST_COUNT]]
    return tuple(Worst(tuple(int(i) for i in np.unravel_index(k, exp.shape)),
                       float(exp.ravel()[k]), float(got.ravel()[k])) for k in order)


def dtype_reason(actual: DataType | str, required: DataType, ops: Iterable[Op]) -> str:
    """The sentence for an output of the wrong type: ``dst dtype f16, spec requires f32
    [SoftMax->Add]``."""
    chain = "->".join(op.kind for op in ops)
    return f"dst dtype {actual}, spec requires {required}" + (f" [{chain}]" if chain else "")
