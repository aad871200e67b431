"""The perf gate on flipped verdicts and on what a comparison could have caught, with made-up
timings whose intervals are given as a fraction of each median."""

from __future__ import annotations

import copy
from typing import Any

import pytest

from fusionspec.conformance.perf.document import read_perf
from fusionspec.conformance.perf.gate import RELATIVE, PerfDiff
from fusionspec.conformance.perf.gate import compare as gate
from fusionspec.conformance.perf.records import SideTiming
from fusionspec.conformance.perf.verdicts import (
    DOES_NOT_PAY,
    FUSION_PAYS,
    NOT_FUSED,
    fusion_costs,
    verdict,
)


def compare(old: dict[str, Any], new: dict[str, Any], *args: Any, **kwargs: Any) -> PerfDiff:
    """The gate on two documents given as JSON, read to records as the command reads them."""
    return gate(read_perf(old, "old"), read_perf(new, "new"), *args, **kwargs)


def timing(median: float, spread: float) -> dict[str, Any]:
    """A side whose interval reaches `spread` of its median either way."""
    return {"method": "wall", "repeats": 20, "min": median * (1 - 2 * spread),
            "median": median, "ci_low": median * (1 - spread),
            "ci_high": median * (1 + spread), "confidence": 0.95, "stopped": "budget"}


def record(ident: str, fused: float, opbyop: float, spread: float,
           opbyop_spread: float | None = None, *, whole: bool = True) -> dict[str, Any]:
    f = timing(fused, spread)
    o = timing(opbyop, spread if opbyop_spread is None else opbyop_spread)
    return {"id": ident, "pattern": ident.split("/")[0], "name": ident.split("/")[1],
            "source": "a layer", "dtype": "f32", "ops": ["Add", "ReLU"],
            "partitions": [["Add", "ReLU"]] if whole else [["Add"], ["ReLU"]],
            "fused_whole": whole, "check": {"agree": True, "max_difference": 0.0},
            "timings": {"fused": f, "opbyop": o}, "ratio": opbyop / fused,
            "verdict": verdict(SideTiming.from_json(f), SideTiming.from_json(o),
                               formed_whole=whole), "roofline": {"gflop_s": 1.0}}


def _checked(document: dict[str, Any]) -> dict[str, Any]:
    """`document`, once its records read it (a document every reader takes)."""
    read_perf(document, "planted document")
    return document


def document(*records: dict[str, Any]) -> dict[str, Any]:
    return _checked({
        "format": "fusionspec-perf", "version": 1, "backend": "toy", "backend_spec": "toy",
        "device": {"id": "cpu0", "kind": "cpu"}, "size": "small", "seed": 0, "shard": None,
        "policy": {"warmup": 1, "min_repeats": 9, "max_repeats": 40, "budget_s": 0.3,
                   "target_spread": 0.03, "confidence": 0.95},
        "environment": {}, "workloads": list(records)})


#: Steady workloads beside the one under test, so that the run-wide drift stays at 1.
STEADY = tuple(record(f"fp.bn_relu/steady-{i}", 1.0, 2.0, 0.02) for i in range(4))

ADD_RELU = "fp.binary_post_ops/resnet50-residual-add-relu"
SWISH = "fp.unary_binary/efficientnet-swish"


def test_a_fused_kernel_half_as_fast_on_a_loaded_machine_fails_the_gate() -> None:
    """The reported runs: op-by-op over fused went from 1.08 to 0.62 on Add + ReLU and from
    1.05 to 0.59 on swish, both fused kernels made slower, while the loaded machine spread the
    new run's intervals 10% either way; the widened intervals cannot see x1.74 there."""
    old = document(record(ADD_RELU, 1.0, 1.08, 0.015), record(SWISH, 1.0, 1.05, 0.01))
    new = document(record(ADD_RELU, 1.08 / 0.62, 1.08, 0.10),
                   record(SWISH, 1.05 / 0.59, 1.05, 0.10))
    assert [r["verdict"] for r in old["workloads"]] == [FUSION_PAYS] * 2, \
        "the baseline's fusions pay"
    assert [r["verdict"] for r in new["workloads"]] == [DOES_NOT_PAY] * 2, \
        "the new run's fusions do not"
    found = compare(old, new)
    for reach in found.reach:
        assert reach.relative > 1.8 and reach.flip is not None and reach.flip < 1.5, \
            f"{reach.workload}: the widened intervals would need more than the x1.74 " \
            f"change, a flip of the bare ones less: {reach}"
    assert found.failed and found.patterns == ["fp.binary_post_ops", "fp.unary_binary"], \
        f"both slowed fusions fail the gate: {[c.describe() for c in found.regressions]}"
    assert all(c.side == RELATIVE and "paid in the baseline" in c.why
               for c in found.regressions), \
        f"each is flagged as a paying fusion that now costs: {found.regressions}"


def test_a_flip_that_straddles_the_boundary_is_listed_not_gated() -> None:
    """Loaded runs of one build: a fusion that barely paid, and in the next run barely does
    not, its intervals overlapping op by op's. The verdict admits that noise."""
    old = document(record(ADD_RELU, 1.0, 1.06, 0.02), *STEADY)
    new = document(record(ADD_RELU, 1.0, 0.98, 0.04), *STEADY)
    assert (old["workloads"][0]["verdict"], new["workloads"][0]["verdict"]) == \
        (FUSION_PAYS, DOES_NOT_PAY), "the verdict flips"
    found = compare(old, new)
    assert not found.failed, \
        f"a flip within overlapping intervals is noise: {[c.describe() for c in found.regressions]}"
    assert found.verdicts == [(ADD_RELU, FUSION_PAYS, DOES_NOT_PAY)], \
        f"the flip is listed: {found.verdicts}"


def test_a_flip_clear_of_the_boundary_but_within_the_threshold_is_not_gated() -> None:
    old = document(record(ADD_RELU, 1.0, 1.03, 0.005), *STEADY)
    new = document(record(ADD_RELU, 1.0, 0.97, 0.005), *STEADY)
    assert fusion_costs(SideTiming.from_json(new["workloads"][0]["timings"]["fused"]),
                        SideTiming.from_json(new["workloads"][0]["timings"]["opbyop"])), \
        "the new fused interval lies wholly above op by op's"
    assert not compare(old, new).failed, \
        "a 6% change stays under the 10% threshold even when the verdict flips"
    assert compare(old, new, threshold=0.02).failed, \
        "the same flip is flagged under a 2% threshold"


def test_a_paying_fusion_the_backend_no_longer_forms_fails_the_gate() -> None:
    old = document(record(ADD_RELU, 1.0, 2.0, 0.02), *STEADY)
    new = document(record(ADD_RELU, 1.0, 2.0, 0.02, whole=False), *STEADY)
    assert new["workloads"][0]["verdict"] == NOT_FUSED, "the new run splits the pattern"
    found = compare(old, new)
    assert found.failed and [c.side for c in found.regressions] == ["partitions"], \
        f"a fusion lost is a regression whatever the times: {found.regressions}"
    back = compare(new, old)
    assert not back.failed, f"forming it again is no regression: {back.regressions}"


@pytest.mark.parametrize(("old_ratio", "old_spread", "new_spread", "rule"), [
    (1.3, 0.02, 0.08, "flip"),       # paid: the flip's bare reading is the nearest
    (0.9, 0.03, 0.05, "relative"),   # did not pay: the widened relative question
    (0.9, 0.01, 0.01, "relative"),
    (1.3, 0.005, 0.005, "relative"),  # steady enough for the widened reading to be nearer
])
def test_the_detectable_slowdown_is_the_one_the_gate_flags(
        old_ratio: float, old_spread: float, new_spread: float, rule: str) -> None:
    """Centred on the baseline's ratio, a fused side slowed a little beyond the reported
    detectable slowdown is flagged, and a little short of it is not."""
    old = document(record(ADD_RELU, 1.0, old_ratio, old_spread), *STEADY)
    same = document(record(ADD_RELU, 1.0, old_ratio, new_spread), *STEADY)
    found = compare(old, same)
    assert not found.failed, f"an unchanged run passes: {found.regressions}"
    reach = next(r for r in found.reach if r.workload == ADD_RELU)
    nearest = min(("relative", reach.relative), ("absolute", reach.absolute),
                  ("flip", reach.flip if reach.flip is not None else float("inf")),
                  key=lambda kv: kv[1])
    assert nearest == (rule, reach.least), f"the nearest rule is {rule}: {reach}"
    for factor, flagged in ((1.02, True), (0.98, False)):
        slowed = document(record(ADD_RELU, reach.least * factor, old_ratio, new_spread),
                          *STEADY)
        result = compare(old, slowed)
        assert result.failed is flagged, \
            f"a fused side x{reach.least * factor:.3f} slower against a detectable " \
            f"x{reach.least:.3f} is {'flagged' if flagged else 'passed'}: {result.regressions}"


def test_the_run_summary_names_its_least_steady_workload() -> None:
    noisy = record(SWISH, 1.0, 2.0, 0.12)
    old = document(*STEADY, noisy)
    found = compare(old, copy.deepcopy(old))
    summary = found.detectable
    assert summary is not None and summary.workloads == 5, f"five workloads: {summary}"
    assert summary.worst_workload == SWISH and summary.worst > summary.median, \
        f"the widest intervals make the largest detectable slowdown: {summary}"
    assert summary.best == pytest.approx(min(r.least for r in found.reach)), \
        f"the steadiest workload's figure is the best: {summary}"
    assert "x" in summary.describe() and SWISH in summary.describe(), \
        f"the description names the figure and the workload: {summary.describe()}"
    assert compare(document(), document()).detectable is None, \
        "without workloads compared there is nothing to say"


def test_declared_unsupported_workloads_are_listed_not_compared() -> None:
    old = document(record(ADD_RELU, 1.0, 2.0, 0.02), *STEADY)
    new = copy.deepcopy(old)
    new["workloads"][0] = {k: v for k, v in old["workloads"][0].items()
                           if k in ("id", "pattern", "name", "source", "dtype", "ops")}
    new["workloads"][0]["unsupported"] = "no Add here"
    found = compare(old, _checked(new))
    assert not found.failed and found.compared == 4, \
        f"a workload now declared unsupported is not compared: {found}"
    assert found.unsupported == [f"{ADD_RELU}: declared unsupported in the new run: "
                                 "no Add here"], f"it is listed: {found.unsupported}"
