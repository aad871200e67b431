"""The verdict rules, the performance document's schema and merge, and the gate's thresholds,
on fake timings."""

from __future__ import annotations

import copy
from typing import Any

import pytest

from fusionspec.conformance.perf.document import (
    PerfFormatError,
    merge_perf,
    read_perf,
)
from fusionspec.conformance.perf.gate import PerfDiff
from fusionspec.conformance.perf.gate import compare as gate
from fusionspec.conformance.perf.records import SideTiming
from fusionspec.conformance.perf.verdicts import (
    DOES_NOT_PAY,
    FUSION_PAYS,
    NOT_FUSED,
    verdict,
)


def compare(old: dict[str, Any], new: dict[str, Any], *args: Any, **kwargs: Any) -> PerfDiff:
    """The gate on two documents given as JSON, read to records as the command reads them."""
    return gate(read_perf(old, "old"), read_perf(new, "new"), *args, **kwargs)


def timing(median: float, half: float) -> dict[str, Any]:
    return {"method": "wall", "repeats": 9, "min": median - half, "median": median,
            "ci_low": median - half, "ci_high": median + half, "confidence": 0.95,
            "stopped": "spread", "samples": [median] * 9}



def side(median: float, half: float) -> SideTiming:
    return SideTiming.from_json(timing(median, half))


def record(ident: str, fused: float, opbyop: float, half: float = 0.05) -> dict[str, Any]:
    pattern = ident.split("/")[0]
    f, o = timing(fused, half), timing(opbyop, half)
    return {"id": ident, "pattern": pattern, "name": ident.split("/")[1], "source": "a network",
            "dtype": "f32", "ops": ["Add", "ReLU"], "partitions": [["Add", "ReLU"]],
            "fused_whole": True, "flops": 10, "bytes_fused": 12, "bytes_opbyop": 20,
            "check": {"agree": True, "max_difference": 0.0},
            "timings": {"fused": f, "opbyop": o}, "ratio": opbyop / fused,
            "verdict": verdict(SideTiming.from_json(f), SideTiming.from_json(o),
                               formed_whole=True), "roofline": {"gflop_s": 1.0}}


def document(*records: dict[str, Any], shard: str | None = None) -> dict[str, Any]:
    return {"format": "fusionspec-perf", "version": 1, "backend": "toy", "backend_spec": "toy",
            "device": {"id": "cpu0", "kind": "cpu"}, "size": "small", "seed": 0,
            "shard": shard, "policy": {"warmup": 1, "min_repeats": 9, "max_repeats": 40,
                                       "budget_s": 0.3, "target_spread": 0.03,
                                       "confidence": 0.95},
            "environment": {}, "workloads": list(records)}


def test_verdict_rules() -> None:
    assert verdict(side(1.0, 0.05), side(2.0, 0.05), formed_whole=True) == FUSION_PAYS, \
        "a fused interval wholly below op by op's pays"
    assert verdict(side(1.9, 0.1), side(2.0, 0.1), formed_whole=True) == DOES_NOT_PAY, \
        "overlapping intervals: faster is not shown beyond the noise"
    assert verdict(side(2.5, 0.05), side(2.0, 0.05), formed_whole=True) == DOES_NOT_PAY, \
        "a slower fused side does not pay"
    assert verdict(side(1.0, 0.05), side(2.0, 0.05), formed_whole=False) == NOT_FUSED, \
        "a backend that split the pattern is 'not fused', whatever the times"
    assert verdict(side(1.0, 0.05), side(1.1, 0.01), formed_whole=True,
                   margin=0.1) == DOES_NOT_PAY, "a margin asks for more than disjoint intervals"


def test_document_reading_accepts_and_rejects() -> None:
    good = document(record("fp.bn_relu/a", 1.0, 2.0))
    assert read_perf(good) == read_perf(read_perf(good).to_json()), \
        "a well-formed document reads to records, and they read back as equal ones"
    for breakage, message in (
            (lambda d: d.update(version=2), "version 2"),
            (lambda d: d.update(format="other"), "not a performance document"),
            (lambda d: d["workloads"][0].update(verdict="maybe"), "verdict"),
            (lambda d: d["workloads"][0]["timings"]["fused"].pop("ci_low"),
             r"\$\.workloads\[0\]\.timings\.fused\.ci_low: missing"),
            (lambda d: d["workloads"][0].pop("timings"), r"\$\.workloads\[0\]: a workload "
                                                         "holds exactly one of")):
        bad = copy.deepcopy(good)
        breakage(bad)
        with pytest.raises(PerfFormatError, match=message):
            read_perf(bad)
    errored = document({"id": "fp.bn_relu/a", "pattern": "fp.bn_relu", "name": "a",
                        "source": "x", "dtype": "f32", "ops": ["BatchNormInference"],
                        "error": "the backend does not run it"})
    assert read_perf(errored).workloads[0].error, \
        "a workload may carry an error instead of timings"


def test_merge_joins_shards_and_refuses_others() -> None:
    a = document(record("fp.bn_relu/a", 1.0, 2.0), shard="1/2")
    b = document(record("fp.unary_binary/b", 1.0, 2.0), shard="2/2")
    merged = merge_perf([read_perf(a), read_perf(b)])
    assert [r.id for r in merged.workloads] == ["fp.bn_relu/a", "fp.unary_binary/b"], \
        "the merged document holds both shards' workloads"
    assert merged.shard is None, "a merged document is no shard"
    with pytest.raises(PerfFormatError, match="in both"):
        merge_perf([read_perf(a), read_perf(a)], ["one", "two"])
    other = copy.deepcopy(b)
    other["size"] = "full"
    with pytest.raises(PerfFormatError, match="size 'full' differs"):
        merge_perf([read_perf(a), read_perf(other)])


def test_gate_flags_only_what_the_intervals_support() -> None:
    old = document(record("fp.bn_relu/a", 1.0, 2.0), record("fp.unary_binary/b", 1.0, 2.0))
    noisy = document(record("fp.bn_relu/a", 1.08, 2.0), record("fp.unary_binary/b", 0.97, 2.0))
    assert not compare(old, noisy).failed, \
        "an 8% drift within overlapping intervals is noise, not a regression"
    steady = document(record("fp.bn_relu/a", 1.0, 2.0, half=0.01),
                      record("fp.unary_binary/b", 1.0, 2.0, half=0.01))
    slow = document(record("fp.bn_relu/a", 1.3, 2.0, half=0.01),
                    record("fp.unary_binary/b", 1.0, 2.0, half=0.01))
    found = compare(steady, slow)
    assert found.failed and found.patterns == ["fp.bn_relu"], \
        f"a 30% slower fused side with tight intervals is a regression of its pattern: {found}"
    assert [c.side for c in found.regressions] == ["fused against op by op"], \
        f"the fused side slowed against its op-by-op side: {found.regressions}"
    wide = document(record("fp.bn_relu/a", 1.3, 2.0, half=0.3),
                    record("fp.unary_binary/b", 1.0, 2.0, half=0.3))
    assert not compare(steady, wide).failed, \
        "a slowdown that wide intervals cannot tell from noise is not flagged"
    assert not compare(steady, slow, threshold=0.25).failed, \
        "x1.3 with widened intervals allowing x1.20 stays under a 25% threshold"
    fast = compare(slow, steady)
    assert not fast.failed and len(fast.speedups) == 1, "the mirror image is a speedup"


def test_gate_widens_each_interval_by_its_own_spread() -> None:
    """Measured on the 2-core machine: a fused kernel steady at 1.11 ms in one run ran at
    1.46 ms in another run of the same build, its interval then 17% wide; the level between
    runs moves about as far as a run's own spread, so the gate reads each interval widened
    by its own ratio at each end."""
    before = document(record("fp.bn_relu/a", 1.107, 3.34, half=0.012))
    after = document(record("fp.bn_relu/a", 1.46, 3.31, half=0.12))
    assert compare(before, after, widen=0.0).failed, \
        "the bare intervals would call this shift a regression"
    found = compare(before, after)
    assert not found.failed, \
        f"widened by their own spread, the intervals allow no change: {found.regressions}"


def test_gate_forgives_load_on_both_sides_and_the_whole_run() -> None:
    old = document(record("fp.bn_relu/a", 1.0, 2.0), record("fp.unary_binary/b", 1.0, 2.0),
                   record("fp.reorder_add/c", 1.0, 2.0))
    burst = document(record("fp.bn_relu/a", 1.4, 2.8), record("fp.unary_binary/b", 1.0, 2.0),
                     record("fp.reorder_add/c", 1.0, 2.0))
    assert not compare(old, burst).failed, \
        "a 40% burst on both sides of one workload is load, not a regression"
    loaded = document(record("fp.bn_relu/a", 1.6, 3.2), record("fp.unary_binary/b", 1.6, 3.2),
                      record("fp.reorder_add/c", 1.6, 3.2))
    found = compare(old, loaded)
    assert not found.failed and found.drift == pytest.approx(1.6), \
        f"a machine 60% slower throughout drifts, it does not regress: {found}"
    twice = document(record("fp.bn_relu/a", 2.0, 4.0), record("fp.unary_binary/b", 1.0, 2.0),
                     record("fp.reorder_add/c", 1.0, 2.0))
    assert not compare(old, twice).failed, \
        "both sides of one workload twice as slow is a level PoCL's processes switch between"
    both = document(record("fp.bn_relu/a", 4.0, 8.0), record("fp.unary_binary/b", 1.0, 2.0),
                    record("fp.reorder_add/c", 1.0, 2.0))
    found = compare(old, both)
    assert found.failed and found.patterns == ["fp.bn_relu"] and \
        {c.side for c in found.regressions} == {"fused", "opbyop"}, \
        f"both sides four times as slow against a steady run is a regression: " \
        f"{found.regressions}"


def test_gate_counts_a_workload_that_no_longer_runs() -> None:
    old = document(record("fp.bn_relu/a", 1.0, 2.0))
    broken = document({**{k: v for k, v in record("fp.bn_relu/a", 1.0, 2.0).items()
                          if k not in ("timings", "verdict", "check")}, "error": "crash"})
    found = compare(old, broken)
    assert found.failed and found.broken == ["fp.bn_relu/a: crash"], \
        "a workload measured before that errors now fails the gate"
    full = copy.deepcopy(old)
    full["size"] = "full"
    with pytest.raises(PerfFormatError, match="same size"):
        compare(old, full)
