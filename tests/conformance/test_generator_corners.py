"""Corners the generator reaches by method: axes of one length under attributes left to their
defaults and per-channel operands (`ambiguous_axes`), inner tensors with some dims unknown (the
graph-format method), and side inputs fed by ops of neighbouring kinds (`neighbours`), each
drawn by the ci profile."""

from __future__ import annotations

from functools import cache

import pytest
from testkit.mutation_runs import run_backend

from fusionspec.conformance.cases import Case, CaseKind, Status
from fusionspec.conformance.generate.ambiguous_axes import AMBIGUOUS, ambiguous_items
from fusionspec.conformance.generate.coverage import case_items
from fusionspec.conformance.generate.format_valid import SHAPES
from fusionspec.conformance.generate.instance_build import axis_attrs
from fusionspec.conformance.generate.instance_plans import instance_plans
from fusionspec.conformance.generate.methods import METHODS
from fusionspec.conformance.generate.neighbours import NEIGHBOURS, neighbour_items
from fusionspec.conformance.suite import PROFILES, draw_cases
from fusionspec.reference import partition
from fusionspec.spec.catalog import CATALOG, entry, pattern_ids
from fusionspec.spec.categories import BINARY
from fusionspec.spec.graph import Graph, Op

PARTLY_UNKNOWN = "inner dims partly unknown (-1)"


@cache
def _ci_valid(pattern: str) -> tuple[Case, ...]:
    return tuple(draw_cases(entry(pattern), CaseKind.valid, PROFILES["ci"]))


def _drawn(pattern: str, key: str) -> set[str]:
    return {value for case in _ci_valid(pattern) for k, value in case_items(case.features)
            if k == key}


def _default_axis_on_equal_dims(op: Op) -> bool:
    """A per-channel Quantize/Dequantize relying on its default axis whose last dim has as many
    elements as it has scales (and as its dim 1)."""
    shape: tuple[int, ...] = op.inputs[0].shape or ()
    scales = op.attrs.get("scales", ())
    return (op.kind in ("Quantize", "Dequantize") and op.attrs.get("qtype") == "per_channel"
            and "axis" not in op.attrs and len(shape) >= 3 and isinstance(scales, tuple)
            and shape[-1] == shape[1] == len(scales) > 1)


@pytest.mark.parametrize("pattern", ["int8.conv_post_ops", "int8.matmul_post_ops",
                                     "int8.pool", "int8.reorder", "softmax.post_ops"])
def test_ci_draws_a_per_channel_quantization_left_to_its_default_axis_on_equal_dims(
        pattern: str) -> None:
    found = [c.id for c in _ci_valid(pattern)
             if any(_default_axis_on_equal_dims(op) for op in c.graph.ops)]
    assert found, (f"{pattern}: no ci case leaves out the axis of a per-channel "
                   "Quantize/Dequantize whose last dim is as long as its dim 1 and its scales")


def _matmul_channel_ambiguous(graph: Graph) -> bool:
    """A MatMul output of rank 3 or more whose dim 1 is as long as its last, read by a binary
    op whose other operand runs along the last axis only."""
    for op in graph.ops:
        out: tuple[int, ...] = op.outputs[0].shape or ()
        if op.kind != "MatMul" or len(out) < 3 or out[1] != out[-1]:
            continue
        for user, _ in graph.consumers.get(op.outputs[0].id, ()):
            while user.kind not in BINARY and graph.consumers.get(user.outputs[0].id):
                user = graph.consumers[user.outputs[0].id][0][0]
            other: tuple[int, ...] = (user.inputs[1].shape or ()) if user.kind in BINARY \
                else ()
            if len(other) == len(out) and other[-1] == out[-1] > 1 and \
                    all(d == 1 for d in other[:-1]):
                return True
    return False


@pytest.mark.parametrize("pattern", ["fp.matmul_post_ops", "int8.matmul_post_ops"])
def test_ci_draws_a_matmul_whose_dim_1_is_as_long_as_its_channels_under_a_channel_operand(
        pattern: str) -> None:
    found = [c.id for c in _ci_valid(pattern) if _matmul_channel_ambiguous(c.graph)]
    assert found, (f"{pattern}: no ci MatMul case of rank >= 3 has dim 1 as long as the last "
                   "under a binary post-op whose operand runs along the last axis")


@pytest.mark.parametrize("pattern", pattern_ids())
def test_every_axis_attribute_is_drawn_left_to_its_default_and_written(pattern: str) -> None:
    found = entry(pattern)
    kinds = {k for plan in instance_plans(found) for k in plan.kinds}
    wanted = {f"{k}.{a} {how}" for k in kinds for a in axis_attrs(k)
              for how in ("written", "left to its default")}
    if kinds & set(BINARY):
        wanted.add(next(v for _, v in ambiguous_items(found) if v.startswith("per-channel")))
    missing = sorted(wanted - _drawn(pattern, AMBIGUOUS))
    assert not missing, f"{pattern}: ambiguous-axes items no ci case draws: {missing}"
    left = {v for _, v in ambiguous_items(found)} - _drawn(pattern, AMBIGUOUS)
    assert not left, f"{pattern}: items of the method the ci profile does not draw: {left}"


def test_the_new_methods_are_counted_by_the_coverage_model() -> None:
    names = {m.name for m in METHODS}
    assert {"ambiguous axes", "neighbouring kinds"} <= names, \
        f"the methods are missing from the coverage model's table: {sorted(names)}"
    assert any(ambiguous_items(e) for e in CATALOG) and any(neighbour_items(e) for e in CATALOG), \
        "a method asks no item of any pattern"


@pytest.mark.parametrize("pattern", pattern_ids())
def test_ci_draws_inner_tensors_with_some_dims_unknown(pattern: str) -> None:
    cases = [c for c in _ci_valid(pattern) if PARTLY_UNKNOWN in str(c.features.get(SHAPES))]
    assert cases, f"{pattern}: no ci case declares an inner tensor with some dims unknown"
    for case in cases:
        partly = [t for op in case.graph.ops for t in op.outputs
                  if t.shape is not None and any(d < 0 for d in t.shape)
                  and any(d >= 0 for d in t.shape)]
        assert partly, f"{case.id}: marked {PARTLY_UNKNOWN!r} but declares no such tensor"
        final = case.graph.finalize()
        assert all(t.shape_known for op in final.ops for t in op.outputs), \
            f"{case.id}: shape inference leaves a dim unknown"
        assert any(p.pattern is not None for p in partition(case.graph)), \
            f"{case.id}: the reference no longer fuses the instance"


@pytest.mark.parametrize("pattern", ["int8.conv_post_ops", "int8.convtranspose_post_ops",
                                     "int8.matmul_post_ops"])
def test_ci_draws_side_inputs_fed_by_kinds_sorting_before_and_after(pattern: str) -> None:
    drawn = _drawn(pattern, NEIGHBOURS)
    sides = {value.rsplit("(", 1)[1] for value in drawn}
    assert {"sorting before)", "sorting after)"} <= sides, \
        f"{pattern}: the ci profile feeds no side input from both neighbouring kinds: {drawn}"


@pytest.mark.slow
def test_a_matcher_comparing_kinds_by_order_is_a_fusion_mismatch() -> None:
    results = run_backend("testkit.mutants_neighbours:KindsComparedByOrder",
                          ["int8.conv_post_ops", "int8.matmul_post_ops"], [CaseKind.valid])
    statuses = {f.status for f in results.failures}
    assert results.failed and statuses == {Status.fusion_mismatch.value}, \
        f"the order-comparing matcher must fail on fusion only: {dict(results.totals)}"
