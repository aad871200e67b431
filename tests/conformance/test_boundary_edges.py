"""The value boundaries at the last representable inputs around an exponential's switch
(`fusionspec.reference.thresholds`, the ``edge-ulps`` domain) and at a narrow tensor where a
near miss of a dtype rule ends the pattern's partition: the ci profile draws both, and the
grading judges such a tensor as rounded even where a backend fuses past it."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from functools import cache

import numpy as np
import pytest
from testkit.real_bugs_onednn_more import SoftMaxPostOpsOnNarrowOutput

from fusionspec.conformance.cases import Case, CaseKind, Status
from fusionspec.conformance.generate.boundaries import (
    boundary_items,
    boundary_near_misses,
    narrow_end_value,
    ulps_value,
)
from fusionspec.conformance.grade.verdicts import judge
from fusionspec.conformance.suite import PROFILES, draw_cases
from fusionspec.reference import execute, fill_inputs
from fusionspec.reference.backend import NUMPY_DEVICE, ReferenceBackend
from fusionspec.reference.dtypes import cast_to, widen
from fusionspec.reference.execute import run_op
from fusionspec.reference.ops.unary import EXP_OVERFLOW_BOUND
from fusionspec.reference.thresholds import EDGE_ULPS, edge_points, edges
from fusionspec.spec.catalog import entry
from fusionspec.spec.dtypes import DataType
from fusionspec.spec.graph import LogicalTensor, Op, Partition
from fusionspec.spec.types import Array

F32, BF16, F16 = DataType.f32, DataType.bf16, DataType.f16


def _op(kind: str, dtype: DataType, size: int = 2 * EDGE_ULPS + 1, **attrs: float) -> Op:
    t = LogicalTensor(0, dtype, (size,))
    return Op(0, kind, (t,), (LogicalTensor(1, dtype, (size,)),), dict(attrs))


@cache
def _ci(pattern: str, kind: CaseKind) -> tuple[Case, ...]:
    return tuple(draw_cases(entry(pattern), kind, PROFILES["ci"]))


def _outputs(op: Op, points: Array) -> Array:
    with np.errstate(all="ignore"):
        return np.asarray(run_op(op, [points.astype(np.float32)])[0], dtype=np.float64)


@pytest.mark.parametrize("dtype", [F32, BF16, F16])
def test_exp_edge_points_are_consecutive_and_straddle_the_overflow(dtype: DataType) -> None:
    op = _op("Exp", dtype)
    switch = next(e for e in edges(op, dtype, dtype) if e.name.endswith(dtype.value))
    points = np.sort(edge_points(switch.at, dtype))
    assert len(points) == 2 * EDGE_ULPS + 1, f"{dtype}: {len(points)} points, not 2*{EDGE_ULPS}+1"
    codes = np.asarray(points, dtype=np.float32 if dtype is F32 else np.float64)
    stored = cast_to(codes, dtype)
    assert np.array_equal(stored.astype(np.float64), points), \
        f"{dtype}: the points are not representable in the type: {points}"
    finite = np.isfinite(cast_to(_outputs(op, points), dtype).astype(np.float64))
    assert finite[:EDGE_ULPS - 1].all() and not finite[-(EDGE_ULPS - 1):].any(), \
        f"{dtype}: Exp must be finite below the switch and inf past it: {points} -> {finite}"
    flips = int(np.count_nonzero(finite[1:] != finite[:-1]))
    assert flips == 1, f"{dtype}: the points should hold exactly one switch: {finite}"


def test_the_f32_exp_points_reach_the_last_finite_inputs() -> None:
    points = edge_points(edges(_op("Exp", F32), F32)[0].at, F32)
    last = float(EXP_OVERFLOW_BOUND)
    assert last in points, f"the last f32 input with a finite exp ({last}) is not drawn: {points}"
    window = points[(points > 88.72280) & (points <= last)]
    assert len(window) >= 3, \
        f"a guard a few ulps low (88.7228) must meet several finite inputs: {points}"


@pytest.mark.parametrize("kind,attrs", [("Sigmoid", {}), ("SoftPlus", {"beta": 2.0})])
def test_guard_points_straddle_the_guard(kind: str, attrs: Mapping[str, float]) -> None:
    op = _op(kind, F32, **attrs)
    (switch,) = edges(op, F32)
    points = np.sort(edge_points(switch.at, F32))
    scaled = -points if kind == "Sigmoid" else points * attrs["beta"]
    guarded = scaled >= float(EXP_OVERFLOW_BOUND)
    assert guarded.any() and (~guarded).any(), \
        f"{kind}: the points do not reach both sides of the guard: {points}"


def test_ops_whose_exponent_never_overflows_have_no_switch() -> None:
    for kind, attrs in (("Elu", {"alpha": 1.0}), ("GELU", {}), ("Pow", {"beta": 0.0}),
                        ("Pow", {"beta": -1.0})):
        found = edges(_op(kind, F32, **attrs), F32)
        assert not found, f"{kind} {attrs} has no switch at a normal f32 input: {found}"


def test_the_ci_profile_draws_the_last_inputs_of_every_switch_item() -> None:
    pattern = entry("fp.unary_binary")
    wanted = {item for item in boundary_items(pattern) if "inputs either side" in item[1]}
    assert ("Exp.boundary", ulps_value("exp(x) overflows f32", F32)) in wanted, \
        f"fp.unary_binary has no item for the f32 exp overflow's last inputs: {sorted(wanted)}"
    shown = {(key, value) for case in _ci("fp.unary_binary", CaseKind.valid)
             for key, joined in case.features.items() if key.endswith(".boundary")
             for value in str(joined).split(",")}
    assert not wanted - shown, f"items the ci profile does not draw: {sorted(wanted - shown)}"


def test_the_ci_exp_case_holds_finite_results_in_the_last_3e5_before_overflow() -> None:
    item = ulps_value("exp(x) overflows f32", F32)
    case = next(c for c in _ci("fp.unary_binary", CaseKind.valid)
                if item in str(c.features.get("Exp.boundary", "")))
    graph = case.graph.finalize()
    inputs = fill_inputs(graph, 0, case.values)
    exp = next(op for op in graph.ops if op.kind == "Exp")
    x = np.asarray(inputs[exp.inputs[0].id], dtype=np.float64)
    with np.errstate(over="ignore"):
        y = np.asarray(execute(graph, inputs, keep_intermediates=True)[exp.outputs[0].id],
                       dtype=np.float64)
    near = (x > 88.72280) & (x <= float(EXP_OVERFLOW_BOUND))
    assert near.any() and np.isfinite(y[near]).all(), \
        f"{case.id}: no input in (88.72280, 88.72283] with a finite exp: {np.unique(x)}"
    assert np.isinf(y[x > float(EXP_OVERFLOW_BOUND)]).all(), \
        f"{case.id}: inputs past the last finite one must overflow: {np.unique(x)}"


def test_the_ci_profile_draws_the_narrow_softmax_end_as_a_near_miss() -> None:
    cases = [c for c in _ci("softmax.post_ops", CaseKind.near_miss)
             if "rounding where the pattern ends" in str(c.features.get("SoftMax.boundary"))]
    shown = {str(c.features["SoftMax.boundary"]) for c in cases}
    assert shown == {narrow_end_value(BF16), narrow_end_value(F16)}, \
        f"the ci near misses should end SoftMax in bf16 and in f16: {shown}"
    assert all(c.rule == "softmax.f32_dst" for c in cases), \
        f"these near misses break softmax.f32_dst: {[c.rule for c in cases]}"
    wanted = {i for i in boundary_items(entry("softmax.post_ops")) if "pattern ends" in i[1]}
    assert len(wanted) == 2, f"softmax.post_ops should have the two items: {sorted(wanted)}"


class _FusesAndRounds(SoftMaxPostOpsOnNarrowOutput):
    """The same fusion beyond the spec, computed right: the SoftMax result is rounded to its
    declared bf16/f16 before the post-op reads it."""

    def kernel(self, op: Op, args: Sequence[Array], part: Partition,
               values: Mapping[int, Array]) -> list[Array] | None:
        if op.kind != "SoftMax":
            return None
        results = run_op(op, args)
        dst = widen(cast_to(results[0], op.outputs[0].dtype))
        return [dst, *results[1:]]


@pytest.mark.parametrize("dtype", [BF16, F16])
def test_a_fusion_past_the_narrow_end_must_round_there(dtype: DataType) -> None:
    (case,) = [c for c in boundary_near_misses(entry("softmax.post_ops"), "softmax.f32_dst")
               if c.features["SoftMax.boundary"] == narrow_end_value(dtype)]
    verdicts = {name: judge(case, backend, NUMPY_DEVICE).status for name, backend in (
        ("reference", ReferenceBackend()), ("skips the rounding", SoftMaxPostOpsOnNarrowOutput()),
        ("rounds", _FusesAndRounds()))}
    assert verdicts == {"reference": Status.passed, "skips the rounding":
                        Status.numeric_mismatch, "rounds": Status.extension}, \
        f"{case.id}: a fusion past the {dtype} SoftMax dst must round it there: {verdicts}"
