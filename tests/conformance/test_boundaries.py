"""The value boundaries (`fusionspec.conformance.generate.boundaries`): every item drawn or
excused, the fill domains doing what they promise, the floor within its budget."""

from __future__ import annotations

from functools import cache

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from fusionspec.conformance.cases import Case
from fusionspec.conformance.generate.boundaries import (
    BOUNDARY_UNDRAWN,
    F16_OVERFLOW_EDGE,
    INTEGER_EDGE,
    LONG_TERMS,
    OVERFLOW_EDGE,
    UPSTREAM_NONFINITE,
    boundary_cases,
    boundary_items,
    boundary_near_misses,
)
from fusionspec.conformance.generate.instance_plans import instance_plans
from fusionspec.reference import execute, fill_inputs
from fusionspec.reference.dtypes import cast_to
from fusionspec.reference.filling import BOUNDARY_DOMAINS, DOMAINS, fill_tensor, overflow_edge
from fusionspec.spec.catalog import CATALOG
from fusionspec.spec.dtypes import DataType
from fusionspec.spec.graph import LogicalTensor, Op

#: New cases the boundaries may add over the whole catalog.
BUDGET = 300
PATTERNS = [entry.id for entry in CATALOG]


@cache
def _floor(pattern: str) -> tuple[Case, ...]:
    entry = next(e for e in CATALOG if e.id == pattern)
    return tuple(boundary_cases(entry, instance_plans(entry))) + tuple(
        boundary_near_misses(entry))


def _shown(case: Case) -> set[tuple[str, str]]:
    return {(key, value) for key, joined in case.features.items() if key.endswith(".boundary")
            for value in str(joined).split(",")}


@pytest.mark.parametrize("pattern", PATTERNS)
def test_every_boundary_item_is_drawn_by_the_floor_or_excused(pattern: str) -> None:
    entry = next(e for e in CATALOG if e.id == pattern)
    drawn = {item for case in _floor(pattern) for item in _shown(case)}
    missing = sorted(set(boundary_items(entry)) - drawn - set(BOUNDARY_UNDRAWN))
    assert not missing, (f"{pattern}: boundary items its floor does not draw (draw them or "
                         f"list them in BOUNDARY_UNDRAWN with the reason): {missing}")
    stray = sorted(drawn - set(boundary_items(entry)))
    assert not stray, f"{pattern}: floor cases claim items the pattern does not have: {stray}"


def test_the_undrawn_boundaries_each_have_a_reason() -> None:
    blank = [item for item, reason in BOUNDARY_UNDRAWN.items() if not reason.strip()]
    assert not blank, f"boundary items left undrawn without a reason: {blank}"


def test_the_floor_stays_within_its_budget_and_every_kind_has_items() -> None:
    total = sum(len(_floor(p)) for p in PATTERNS)
    assert 0 < total <= BUDGET, f"the boundaries add {total} cases; the budget is {BUDGET}"
    values = {value for e in CATALOG for _, value in boundary_items(e)}
    for wanted in (OVERFLOW_EDGE, F16_OVERFLOW_EDGE, INTEGER_EDGE, UPSTREAM_NONFINITE,
                   "bf16 ties from upstream", "f16 ties from upstream",
                   "bf16 overflow edge from upstream", "f16 overflow edge from upstream",
                   f"{LONG_TERMS}-term sums in f16"):
        assert wanted in values, f"no pattern has a boundary item {wanted!r}"


def test_every_floor_case_is_a_corner_case_with_boundary_domains() -> None:
    for pattern in PATTERNS:
        for case in _floor(pattern):
            assert case.values, f"{case.id} fills nothing from a boundary domain"
            assert set(case.values.values()) <= set(DOMAINS), \
                f"{case.id} names a domain that does not exist: {case.values}"
            assert case.features.get("signal") == "corner", \
                f"{case.id} tests a boundary but is not marked a corner: {case.features}"


def test_upstream_sources_hold_nan_and_inf_with_the_default_seed() -> None:
    for pattern in PATTERNS:
        for case in _floor(pattern):
            if not any(v == UPSTREAM_NONFINITE for _, v in _shown(case)):
                continue
            inputs = fill_inputs(case.graph, 0, case.values)
            for tid in case.values:
                data = np.asarray(inputs[tid], dtype=np.float64)
                assert np.isnan(data).any() and np.isinf(data).any(), \
                    f"{case.id}: the source tensor {tid} holds no NaN or no inf, so nothing " \
                    f"non-finite comes down the chain"


def test_the_ties_cases_bring_the_typecast_exact_ties_it_rounds_to_even() -> None:
    cases = [c for c in _floor("softmax.post_ops")
             if any("ties" in v for _, v in _shown(c))]
    assert len(cases) == 2, f"softmax.post_ops should draw bf16 and f16 ties: {cases}"
    for case in cases:
        graph = case.graph.finalize()
        inputs = fill_inputs(graph, 0, case.values)
        out = graph.output_tensors[0]
        (tid,) = case.values
        source = np.asarray(inputs[tid], dtype=np.float32)
        got = np.asarray(execute(graph, inputs)[out.id], dtype=np.float64)
        want = np.asarray(cast_to(source, out.dtype), dtype=np.float64)
        assert np.array_equal(got, want), \
            f"{case.id}: the Maximum should pass the ties on to the {out.dtype.value} TypeCast"
        inexact = np.asarray(cast_to(source, out.dtype), dtype=np.float64) != source
        # Half the values are ties of the other type: bf16 ties are exact in f16.
        assert inexact.mean() > 0.25, \
            f"{case.id}: only {inexact.mean():.0%} of the values are not exact in " \
            f"{out.dtype.value}"


def _tensor(tid: int, dtype: DataType, shape: tuple[int, ...] = (8, 16)) -> LogicalTensor:
    return LogicalTensor(tid, dtype, shape)


def _is_tie(values: np.ndarray, bits: int) -> np.ndarray:
    """Whether each value lies exactly halfway between two numbers of `bits` significant
    bits (a bf16 has 8, an f16 11)."""
    step = np.exp2(np.floor(np.log2(values)) - (bits - 1))
    result: np.ndarray = values - np.floor(values / step) * step == step / 2
    return result


@given(seed=st.integers(0, 2 ** 32), tid=st.integers(0, 1000))
def test_narrow_ties_are_exact_midpoints_of_bf16_or_f16_neighbours(seed: int, tid: int) -> None:
    values = np.asarray(fill_tensor(_tensor(tid, DataType.f32), [], seed, "narrow-ties"),
                        dtype=np.float64)
    assert np.all((values >= 1) & (values <= 8 + 1 / 16)), \
        f"narrow ties must be positive and at least 1 (a Maximum passes them): {values.min()}"
    ties_b, ties_h = _is_tie(values, 8), _is_tie(values, 11)
    assert np.all(ties_b | ties_h), \
        f"values that are a tie of neither bf16 nor f16: {values[~(ties_b | ties_h)][:4]}"
    assert ties_b.any() and ties_h.any(), \
        "the domain should hold both bf16 and f16 ties"
    again = fill_tensor(_tensor(tid, DataType.f32), [], seed, "narrow-ties")
    assert np.array_equal(np.asarray(again), values.astype(np.float32)), \
        "fill_inputs must be deterministic per (seed, tensor id)"


@given(seed=st.integers(0, 2 ** 32), dtype=st.sampled_from([DataType.f32, DataType.f16,
                                                            DataType.bf16]),
       beta=st.sampled_from([None, -1.0, 2.0]))
def test_overflow_edge_puts_half_the_values_within_one_of_the_edge(
        seed: int, dtype: DataType, beta: float | None) -> None:
    t = _tensor(5, dtype, (16, 16))
    uses: list[tuple[Op, int]] = []
    edge = overflow_edge(dtype)
    if beta is not None:
        uses = [(Op(0, "SoftPlus", (t,), (_tensor(6, dtype, (16, 16)),), {"beta": beta}), 0)]
        edge /= abs(beta)
    values = np.abs(np.asarray(fill_tensor(t, uses, seed, "overflow-edge"), dtype=np.float64))
    near = np.abs(values - edge) <= 1.01
    assert 0.3 < near.mean() < 0.7, \
        f"about half the values should lie within 1 of {edge:.4f}: {near.mean():.0%} do"


@given(seed=st.integers(0, 2 ** 32))
def test_integer_edge_holds_halves_and_odd_integers_around_two_pow_23(seed: int) -> None:
    values = np.abs(np.asarray(fill_tensor(_tensor(4, DataType.f32, (16, 16)), [], seed,
                                           "integer-edge"), dtype=np.float64))
    edge = values[values >= 2.0 ** 22]
    assert 0.3 < edge.size / values.size < 0.7, \
        f"about half the values should be past 2^22: {edge.size} of {values.size} are"
    assert np.all(edge < 2.0 ** 25), f"integer-edge values beyond 2^25: {edge.max()}"
    halves = edge[(edge < 2.0 ** 23) & (edge % 1 == 0.5)]
    odd = edge[(edge >= 2.0 ** 23) & (edge < 2.0 ** 24) & (edge % 2 == 1)]
    assert halves.size and odd.size, \
        "the domain should hold ties below 2^23 and odd integers above it"


def test_overflow_edges_are_those_of_the_types() -> None:
    assert overflow_edge(DataType.f32) == pytest.approx(88.7228, abs=1e-4), \
        "f32's exp overflows past ln(FLT_MAX) = 88.7228"
    assert overflow_edge(DataType.f16) == pytest.approx(11.0899, abs=1e-4), \
        "f16's exp overflows past ln(65504) = 11.0899"


@given(seed=st.integers(0, 2 ** 32))
def test_narrow_max_straddles_the_largest_bf16_and_f16_values(seed: int) -> None:
    values = np.asarray(fill_tensor(_tensor(9, DataType.f32, (16, 16)), [], seed,
                                    "narrow-max"), dtype=np.float32)
    for dtype, top in ((DataType.f16, 65504.0), (DataType.bf16, 2.0 ** 128 - 2.0 ** 120)):
        near = values[np.abs(values / top - 1) < 0.01]
        with np.errstate(over="ignore"):
            narrowed = np.asarray(cast_to(near, dtype), dtype=np.float64)
        assert near.size > 64, f"too few values near the largest {dtype.value}: {near.size}"
        assert (near > top).any() and (narrowed == top).any() and np.isinf(narrowed).any(), \
            f"narrow-max should hold {dtype.value} values rounding down to {top} from past " \
            "it, and values overflowing"
        assert np.all(near >= 1), "narrow-max values must be at least 1 (a Maximum passes them)"


@given(seed=st.integers(0, 2 ** 32))
def test_long_sums_are_unthinned_full_precision_values(seed: int) -> None:
    t = _tensor(2, DataType.f16, (8, LONG_TERMS))
    values = np.asarray(fill_tensor(t, [], seed, "long-sum"), dtype=np.float64)
    assert np.all((values >= 0.5) & (values <= 1.0)), \
        f"long-sum values leave [0.5, 1]: {values.min()}, {values.max()}"
    assert len(np.unique(values)) > 100, \
        "long-sum values should be full precision, not a grid"


def test_the_boundary_domains_are_value_domains() -> None:
    assert set(BOUNDARY_DOMAINS) <= set(DOMAINS), \
        "every boundary domain must be a domain fill_inputs accepts"
