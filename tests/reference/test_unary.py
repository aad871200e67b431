"""Unary ops against PyTorch (float64 oracle) on random data, and every corner case of their
definitions computed by hand (Clamp NaN, Round ties, SoftPlus/Sigmoid guards, Log domain...)."""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import Any

import ml_dtypes
import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from hypothesis.extra import numpy as hnp
from testkit.reference import D, assert_ulp, f32, need_torch, op_fn, run_one, same_bits

from fusionspec.reference.errors import OpInputError
from fusionspec.spec.types import Array

BOUND = 88.72283172607421875  # oneDNN's f32 exp overflow bound


def _data(lo: float, hi: float) -> st.SearchStrategy[Array]:
    bounds = float(np.float32(lo)), float(np.float32(hi))  # hypothesis wants f32 bounds
    return hnp.arrays(np.float32, hnp.array_shapes(min_dims=1, max_dims=3, max_side=6),
                      elements=st.floats(*bounds, width=32))


def _torch_ref(kind: str, attrs: dict[str, Any]) -> tuple[Callable[[Any], Any], float, float]:
    """(float64 torch function, data range low, high) for each unary kind."""
    torch = need_torch()
    fn = torch.nn.functional
    a = {k: float(np.float32(v)) if isinstance(v, float) else v for k, v in attrs.items()}
    table: dict[str, tuple[Callable[[Any], Any], float, float]] = {
        "Abs": (torch.abs, -50, 50),
        "Clamp": (lambda x: torch.clamp(x, a["min"], a["max"]), -5, 5),
        "Elu": (lambda x: fn.elu(x, a["alpha"]), -10, 10),
        "Exp": (torch.exp, -20, 20),
        "HardSwish": (fn.hardswish, -8, 8),
        "LeakyReLU": (lambda x: fn.leaky_relu(x, a["alpha"]), -10, 10),
        "Log": (torch.log, 1e-6, 1e6),
        "Pow": (lambda x: torch.pow(x, a["beta"]), 1e-3, 20),
        "ReLU": (torch.relu, -10, 10),
        "Reciprocal": (torch.reciprocal, 0.01, 100),
        "Round": (torch.round, -100, 100),
        "Sigmoid": (torch.sigmoid, -80, 80),
        "SoftPlus": (lambda x: fn.softplus(x, beta=a["beta"], threshold=1e30), -20, 20),
        "Sqrt": (torch.sqrt, 0, 1e6),
        "Square": (torch.square, -1e3, 1e3),
        "Tanh": (torch.tanh, -10, 10),
        "GELU": ((lambda x: fn.gelu(x, approximate="tanh")) if a.get("mode") == "gelu_tanh"
                 else fn.gelu, -3, 8),
    }
    return table[kind]


CASES: list[tuple[str, dict[str, Any]]] = [
    ("Abs", {}), ("Clamp", {"min": -1.5, "max": 2.25}), ("Elu", {"alpha": 0.7}), ("Exp", {}),
    ("GELU", {"mode": "gelu_erf"}), ("GELU", {"mode": "gelu_tanh"}), ("HardSwish", {}),
    ("LeakyReLU", {"alpha": 0.01}), ("Log", {}), ("Pow", {"beta": 0.37}),
    ("Pow", {"beta": -2.0}), ("ReLU", {}), ("Reciprocal", {}), ("Round", {}),
    ("Sigmoid", {}), ("SoftPlus", {"beta": 1.0}), ("SoftPlus", {"beta": 2.5}),
    ("SoftPlus", {"beta": -1.0}), ("Sqrt", {}), ("Square", {}), ("Tanh", {}),
]


@pytest.mark.parametrize(("kind", "attrs"), CASES, ids=[f"{k}{a}" for k, a in CASES])
@settings(max_examples=25)
@given(seed=st.integers(0, 2**32 - 1))
def test_unary_matches_torch_float64(kind: str, attrs: dict[str, Any], seed: int) -> None:
    torch = need_torch()
    ref, lo, hi = _torch_ref(kind, attrs)
    rng = np.random.default_rng(seed)
    x = f32(rng.uniform(lo, hi, size=(3, 17)))
    got = op_fn(kind)(x, **attrs)
    want = ref(torch.from_numpy(x.astype(np.float64))).numpy()
    assert got.dtype == np.float32, f"{kind} returned {got.dtype}, expected float32"
    # The reference rounds a float64 value once: at most half an ulp plus float64 noise.
    assert_ulp(got, want, 0.5001, f"{kind} {attrs} vs torch float64")


_F32 = {"width": 32, "allow_nan": False, "allow_infinity": False}
ATTRIBUTE_CASES = st.one_of(
    st.tuples(st.just("Elu"), st.fixed_dictionaries({"alpha": st.floats(0, 5, **_F32)})),
    st.tuples(st.just("LeakyReLU"),
              st.fixed_dictionaries({"alpha": st.floats(-2, 2, **_F32)})),
    st.tuples(st.just("Pow"), st.fixed_dictionaries({"beta": st.floats(-3, 3, **_F32)})),
    st.tuples(st.just("SoftPlus"), st.fixed_dictionaries({
        "beta": st.floats(-4, 4, **_F32).filter(lambda b: abs(b) > 1e-3)})),
    st.tuples(st.just("Clamp"), st.tuples(st.floats(-10, 10, **_F32), st.floats(0, 10, **_F32))
              .map(lambda p: {"min": p[0], "max": p[0] + p[1]})),
)


@settings(max_examples=60)
@given(case=ATTRIBUTE_CASES, data=st.data())
def test_unary_attributes_match_torch_float64(case: tuple[str, dict[str, Any]],
                                              data: st.DataObject) -> None:
    torch = need_torch()
    kind, attrs = case
    ref, lo, hi = _torch_ref(kind, attrs)
    x = data.draw(_data(lo, hi), label="src")
    got = op_fn(kind)(x, **attrs)
    want = ref(torch.from_numpy(x.astype(np.float64))).numpy()
    assert_ulp(got, want, 0.5001, f"{kind} {attrs} vs torch float64")


@settings(max_examples=25)
@given(x=_data(-30, 0))
def test_gelu_erf_negative_tail_matches_torch_erfc(x: Array) -> None:
    torch = need_torch()
    # torch's gelu cancels in 1 + erf(x) for very negative x; 0.5*x*erfc(-x/sqrt 2) does not.
    t = torch.from_numpy(x.astype(np.float64))
    want = (0.5 * t * torch.special.erfc(-t / math.sqrt(2.0))).numpy()
    assert_ulp(op_fn("GELU")(x, mode="gelu_erf"), want, 0.5001, "GELU erf tail vs torch erfc")


def test_erfc_matches_math_erfc_over_the_reals() -> None:
    from fusionspec.reference.ops.unary import erfc

    # Up to z = 26, where erfc is still a normal float64 (beyond, both sides lose digits).
    z = np.concatenate([np.linspace(-6, 26, 40001), [0.0, 1e-300, 1.999999, 2.0, 2.000001]])
    want = np.array([math.erfc(v) for v in z])
    rel = np.abs(erfc(z) - want) / want
    assert rel.max() < 1e-12, f"erfc relative error {rel.max():.3g} at z={z[rel.argmax()]}"


def _one(kind: str, x: float | list[float], **attrs: Any) -> Array:
    return np.asarray(op_fn(kind)(f32(x), **attrs))


def test_clamp_maps_nan_to_min_and_clips_infinities() -> None:
    got = _one("Clamp", [np.nan, -np.inf, np.inf, -3.0, 0.25, 7.0], min=-1.0, max=2.0)
    want = f32([-1.0, -1.0, 2.0, -1.0, 0.25, 2.0])
    assert same_bits(got, want), f"Clamp gave {got}, expected {want} (NaN -> min)"


def test_elu_alpha_scales_the_negative_branch() -> None:
    got = _one("Elu", [-1.0, 0.0, 3.0, -np.inf], alpha=2.0)
    want = [2.0 * math.expm1(-1.0), 0.0, 3.0, -2.0]
    assert_ulp(got, want, 0.5, "Elu alpha=2")
    assert _one("Elu", [-5.0], alpha=0.0)[0] == 0.0, "Elu alpha=0 gives 0 (-0.0) below 0"


def test_gelu_known_values_both_modes() -> None:
    erf1 = 0.5 * (1 + math.erf(1 / math.sqrt(2)))
    u = math.sqrt(2 / math.pi) * (1 + 0.044715)
    tanh1 = 0.5 * (1 + math.tanh(u))
    assert_ulp(_one("GELU", [1.0], mode="gelu_erf"), [erf1], 0.5, "GELU erf at 1")
    assert_ulp(_one("GELU", [1.0], mode="gelu_tanh"), [tanh1], 0.5, "GELU tanh at 1")
    assert float(_one("GELU", [1.0])[0]) == float(np.float32(erf1)), "GELU defaults to erf"
    ends = _one("GELU", [-np.inf, np.inf, 0.0], mode="gelu_erf")
    assert same_bits(ends, f32([-0.0, np.inf, 0.0])), f"GELU limits at +-inf: got {ends}"


def test_hardswish_piecewise_values() -> None:
    got = _one("HardSwish", [-4.0, -3.0, -1.0, 0.0, 1.0, 3.0, 5.0])
    want = [0.0, 0.0, -1 * 2 / 6, 0.0, 1 * 4 / 6, 3.0, 5.0]
    assert_ulp(got, want, 0.5, "HardSwish = x*min(max(x+3,0),6)/6")


def test_leaky_relu_alpha() -> None:
    got = _one("LeakyReLU", [-2.0, 0.0, 3.0], alpha=0.1)
    assert_ulp(got, [-2.0 * float(np.float32(0.1)), 0.0, 3.0], 0.5, "LeakyReLU alpha=0.1")


def test_log_of_zero_and_negative() -> None:
    got = _one("Log", [0.0, -0.0, -1.0, 1.0, np.inf])
    assert same_bits(got, f32([-np.inf, -np.inf, np.nan, 0.0, np.inf])), \
        f"Log of 0/-0/-1/1/inf gave {got}; IEEE says -inf, -inf, NaN, 0, inf"


def test_pow_beta_corner_cases() -> None:
    assert_ulp(_one("Pow", [4.0, 2.0, 10.0], beta=0.5), [2.0, math.sqrt(2), math.sqrt(10)],
               0.5, "Pow beta=0.5")
    assert same_bits(_one("Pow", [2.0, -2.0, 0.0], beta=-1.0), f32([0.5, -0.5, np.inf])), \
        "Pow beta=-1: 1/x with 0 -> inf"
    assert same_bits(_one("Pow", [-2.0, -8.0], beta=2.0), f32([4.0, 64.0])), \
        "Pow with an integer beta accepts negative bases"
    assert np.isnan(_one("Pow", [-8.0], beta=1 / 3)).all(), "negative base, fractional beta"


def test_round_is_half_to_even_and_keeps_negative_zero() -> None:
    got = _one("Round", [-2.5, -1.5, -0.5, 0.5, 1.5, 2.5, 0.49999997, -0.2])
    want = f32([-2.0, -2.0, -0.0, 0.0, 2.0, 2.0, 0.0, -0.0])
    assert same_bits(got, want), f"Round gave {got}, expected {want} (ties to even, -0 kept)"


def test_softplus_negative_beta_and_overflow_guard() -> None:
    got = _one("SoftPlus", [0.0, -100.0, 100.0, 1.0], beta=-1.0)
    want = [-math.log(2), -100.0, -math.log1p(math.exp(-100.0)), -math.log1p(math.exp(-1))]
    assert_ulp(got, want, 0.5, "SoftPlus beta=-1 is -log(1 + e^-x)")
    big = _one("SoftPlus", [100.0, 50.0], beta=2.0)
    assert same_bits(big, f32([100.0, 50.0])), f"beta*x past {BOUND} returns x, got {big}"
    assert_ulp(_one("SoftPlus", [1.0], beta=2.0), [math.log1p(math.exp(2)) / 2], 0.5,
               "SoftPlus beta=2 at 1")
    with pytest.raises(OpInputError, match="beta"):
        _one("SoftPlus", [1.0], beta=0.0)


def test_sigmoid_saturates_at_the_exp_overflow_bound() -> None:
    below = float(np.nextafter(np.float32(BOUND), np.float32(0)))
    got = _one("Sigmoid", [-BOUND, -below, -200.0, 200.0, 0.0])
    assert got[0] == 0.0 and got[2] == 0.0, f"Sigmoid(-x) with x >= {BOUND} is 0, got {got}"
    assert got[1] > 0.0, f"just inside the bound Sigmoid is a tiny non-zero value, got {got[1]}"
    assert got[3] == 1.0 and got[4] == 0.5, f"Sigmoid(200)=1 and Sigmoid(0)=0.5, got {got}"


def test_relu_gives_negative_zero_and_keeps_nan() -> None:
    got = _one("ReLU", [-1.0, 0.0, 2.0, np.nan])
    assert same_bits(got, f32([-0.0, 0.0, 2.0, np.nan])), f"ReLU gave {got}"


def test_reciprocal_sqrt_exp_tanh_specials() -> None:
    assert same_bits(_one("Reciprocal", [0.0, -0.0, 4.0]), f32([np.inf, -np.inf, 0.25])), \
        "1/0 = inf, 1/-0 = -inf"
    assert same_bits(_one("Sqrt", [-1.0, -0.0, 9.0]), f32([np.nan, -0.0, 3.0])), \
        "sqrt(-1) = NaN, sqrt(-0) = -0"
    assert same_bits(_one("Exp", [89.0, -200.0]), f32([np.inf, 0.0])), \
        "exp overflows to inf in f32"
    assert same_bits(_one("Tanh", [np.inf, -np.inf]), f32([1.0, -1.0])), "tanh(+-inf)"
    assert same_bits(_one("Square", [-3.0]), f32([9.0])), "Square(-3) = 9"
    assert same_bits(_one("Abs", [-0.0, -2.0]), f32([0.0, 2.0])), "Abs clears the sign"


def test_unary_through_executor_rounds_once_to_bf16() -> None:
    x = f32([1.0, 2.0, 3.0]).astype(ml_dtypes.bfloat16)
    (got,) = run_one("Exp", [x], [D.bf16])
    want = np.exp(np.array([1.0, 2.0, 3.0])).astype(np.float32).astype(got.dtype)
    assert got.dtype == want.dtype and np.array_equal(got, want), \
        f"Exp bf16 output {got} should be exp in f32 rounded to bf16 {want}"


def test_hardswish_of_minus_infinity_is_its_limit() -> None:
    got = op_fn("HardSwish")(np.array([-np.inf, np.inf, -3.0], dtype=np.float32))
    assert got[0] == 0 and not np.isnan(got[0]), f"HardSwish(-inf) = {got[0]}, the limit is 0"
    assert got[1] == np.inf and got[2] == 0, f"HardSwish(+inf, -3) = {got[1:]}, want (inf, 0)"


def test_relu_of_minus_infinity_is_minus_zero() -> None:
    got = op_fn("ReLU")(np.array([-np.inf, -2.0, np.nan, 3.0], dtype=np.float32))
    assert got[0] == 0 and np.signbit(got[0]), f"ReLU(-inf) = {got[0]}, want -0.0 (the limit)"
    assert np.signbit(got[1]) and np.isnan(got[2]) and got[3] == 3, \
        f"ReLU(-2, nan, 3) = {got[1:]}, want (-0.0, nan, 3)"
