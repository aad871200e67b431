"""The bench on backends with planted speeds (`testkit.perf_backends`): a backend whose fused
partition runs its ops one by one does not pay, one that splits the pattern is not fused, and
the gate catches one pattern's fused kernel made 30% slower, naming that pattern, while two
runs of the same backend do not trip it."""

from __future__ import annotations

import functools

import pytest
from testkit.perf_backends import SLOW_PATTERN

from fusionspec.backend.timing import TimingPolicy
from fusionspec.conformance.perf.bench import run_bench
from fusionspec.conformance.perf.gate import compare
from fusionspec.conformance.perf.records import PerfDocument
from fusionspec.conformance.perf.verdicts import DOES_NOT_PAY, FUSION_PAYS, NOT_FUSED
from fusionspec.conformance.perf.workloads import WORKLOADS

#: Cheap workloads (the reference computes them in well under a kernel's sleep).
CHEAP = [w for w in WORKLOADS if w.pattern in ("fp.unary_binary", SLOW_PATTERN, "fp.bn_relu")]
#: At least 20 kept runs: the median interval then leaves out the five slowest runs, which a
#: shared machine may stall (a sleep only ever overshoots). The gate widens each interval by
#: its own spread, so the planted slowdown is caught only where the intervals stay narrow.
POLICY = TimingPolicy(warmup=1, min_repeats=20, max_repeats=40, budget_s=0.5,
                      target_spread=0.01)


@functools.cache
def bench(backend: str, run: int = 0) -> PerfDocument:
    del run  # only makes separate runs separate cache entries
    return run_bench(f"testkit.perf_backends:{backend}", CHEAP, policy=POLICY,
                     measure_yardsticks=False)


def verdicts(doc: PerfDocument) -> dict[str, str]:
    return {r.id: r.verdict or r.error or "" for r in doc.workloads}


def test_fused_kernels_that_save_launches_pay() -> None:
    found = verdicts(bench("PacedBackend"))
    assert set(found.values()) == {FUSION_PAYS}, f"one kernel instead of several pays: {found}"


def test_a_fused_partition_running_its_ops_one_by_one_does_not_pay() -> None:
    found = verdicts(bench("OneByOneBackend"))
    assert set(found.values()) == {DOES_NOT_PAY}, \
        f"a 'fused' partition that runs op by op cannot pay: {found}"


def test_a_backend_that_splits_the_pattern_is_not_fused() -> None:
    doc = bench("SplittingBackend")
    assert set(verdicts(doc).values()) == {NOT_FUSED}, f"split patterns: {verdicts(doc)}"
    assert all(len(r.partitions or ()) == len(r.ops) for r in doc.workloads), \
        "the document records the partitions the backend formed"


def test_the_gate_names_the_pattern_made_slower() -> None:
    """On device-timed kernels: the host's clock around a 10 ms sleep moves by more than the
    30% under heavy load (a load average of 7 on 2 cores), which widens the intervals past
    what the gate can tell apart; a device timer reports the planted times whatever the load."""
    old, new = bench("DeviceTimedBackend"), bench("DeviceTimedSlowPatternBackend")
    assert all(r.fused.method == "events" for r in old.workloads), \
        "both sides are timed by the backend's own timer"
    found = compare(old, new)
    assert found.failed and found.patterns == [SLOW_PATTERN], \
        f"a 30% slower fused kernel of {SLOW_PATTERN} is caught, and only it: " \
        f"{[c.describe() for c in found.regressions]}"
    slowed = {c.workload for c in found.regressions}
    assert slowed == {w.id for w in CHEAP if w.pattern == SLOW_PATTERN}, \
        f"every workload of {SLOW_PATTERN} is flagged, no other: {sorted(slowed)}"


def test_two_runs_of_the_same_backend_pass_the_gate() -> None:
    found = compare(bench("PacedBackend"), bench("PacedBackend", 1))
    assert not found.failed, f"noise tripped the gate: {[c.describe() for c in found.regressions]}"


def test_records_carry_rates_and_a_rerun_command() -> None:
    for r in bench("PacedBackend").workloads:
        assert r.check is not None and r.check.agree, f"{r.id}: the sides' outputs agree"
        assert r.flops and r.bytes_opbyop and r.bytes_fused \
            and r.flops > 0 and r.bytes_opbyop > r.bytes_fused > 0, \
            f"{r.id}: op by op moves the intermediates too"
        assert r.roofline is not None and (r.roofline.gb_s or 0) > 0, \
            f"{r.id}: an achieved bandwidth"
        assert r.rerun is not None \
            and r.rerun.startswith("fusionspec bench --backend testkit.perf_backends:") \
            and r.id in r.rerun, f"{r.id}: the rerun command selects it: {r.rerun}"


@pytest.mark.parametrize("jobs", [1, 2])
def test_a_backend_that_crashes_costs_only_its_workload(jobs: int) -> None:
    """The blame lands on the workload the dead worker held (with two workers, the other one
    is busy too), and a fresh worker measures the rest."""
    doc = run_bench("testkit.perf_backends:CrashingBackend", CHEAP, policy=POLICY,
                    measure_yardsticks=False, jobs=jobs)
    found = {r.id: r for r in doc.workloads}
    assert [r.id for r in doc.workloads] == [w.id for w in CHEAP], \
        "the records keep the workloads' order"
    for ident, record in found.items():
        if ident.startswith(SLOW_PATTERN + "/"):
            assert "SIGSEGV" in (record.error or ""), \
                f"{ident}: the crash is recorded with its signal: {record}"
            assert (record.rerun or "").endswith(f"--workload {ident}"), \
                f"{ident}: the record says how to rerun it: {record.rerun}"
        else:
            assert record.verdict == FUSION_PAYS, \
                f"{ident}: measured despite the other workload's crash: {record}"
