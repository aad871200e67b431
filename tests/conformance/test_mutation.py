"""Mutation score: the suite (ci profile) catches each planted bug with the right status, and
passes the reference with zero failures.

Each mutant (testkit.mutants) is the reference with one realistic bug; it is run
on the patterns where that bug can show, in-process for speed (the isolation of the runner has
tests of its own).
"""

from __future__ import annotations

from collections import Counter
from pathlib import Path

import pytest

from fusionspec.conformance.cases import STRUCTURAL_RULES, CaseKind, Status
from fusionspec.conformance.generate.ill_formed import ILL_FORMED_RULES
from fusionspec.conformance.grade.results import ResultsCollector
from fusionspec.conformance.suite import run_suite
from fusionspec.spec.catalog import pattern_ids
from fusionspec.spec.rules import RULES

TESTS = str(Path(__file__).resolve().parents[1])  # holds the testkit package

MUTANTS = [
    # (mutant, patterns, case kinds, the status the suite must give)
    ("DropsLastPostOp", ["fp.conv_post_ops", "fp.matmul_post_ops"], [CaseKind.valid],
     Status.numeric_mismatch),
    ("NeverFuses", ["fp.conv_post_ops", "int8.matmul_post_ops"], [CaseKind.valid],
     Status.fusion_mismatch),
    ("FusesOneTooMany", ["fp.conv_post_ops", "fp.binary_post_ops"], [CaseKind.near_miss],
     Status.extension),
    ("RoundsQuantizeHalfAway", ["int8.conv_post_ops", "int8.pool", "softmax.post_ops"],
     [CaseKind.valid], Status.numeric_mismatch),
    ("IgnoresBiasAddDataFormat", ["fp.conv_post_ops", "fp.matmul_post_ops"], [CaseKind.valid],
     Status.numeric_mismatch),
    ("GeluTanhForErf", ["fp.unary_binary", "fp.binary_post_ops", "fp.conv_post_ops"],
     [CaseKind.valid], Status.numeric_mismatch),
    ("AcceptsIllFormed", ["fp.conv_post_ops", "softmax.post_ops"], [CaseKind.ill_formed],
     Status.accepted_invalid),
    ("WrongOutputDtype", ["fp.matmul_post_ops", "int8.matmul_post_ops"], [CaseKind.valid],
     Status.numeric_mismatch),
]


def _run(backend: str, patterns: list[str] | None, kinds: list[CaseKind]) -> ResultsCollector:
    return run_suite(backend, patterns=patterns, kinds=kinds, isolate=False, sys_path=[TESTS])


@pytest.mark.parametrize(("mutant", "patterns", "kinds", "status"), MUTANTS,
                         ids=[m[0] for m in MUTANTS])
def test_suite_catches_planted_bug(mutant: str, patterns: list[str], kinds: list[CaseKind],
                                   status: Status) -> None:
    results = _run(f"testkit.mutants:{mutant}", patterns, kinds)
    seen = Counter(results.totals)
    assert seen[status.value] > 0, \
        f"{mutant}: the suite never reported {status.value}; statuses seen: {dict(seen)}"
    if status is Status.extension:
        assert not results.failed, \
            f"{mutant} computes right, so fusing more is an extension, not a failure: " \
            f"{[f['reason'] for f in results.failures[:3]]}"
    else:
        assert results.failed, f"{mutant}: a broken backend passed the run: {dict(seen)}"
        wrong = [f for f in results.failures if f["status"] not in (status.value, "error")]
        assert not wrong, f"{mutant}: unexpected failure kinds {[f['status'] for f in wrong]}: " \
                          f"{[f['reason'] for f in wrong[:3]]}"


def test_reference_passes_every_pattern_with_zero_failures() -> None:
    results = _run("reference", None, list(CaseKind))
    bad = [(f["case_id"], f["status"], f["reason"]) for f in results.failures[:5]]
    assert not results.failed, f"the reference fails its own suite: {bad}"
    assert set(results.totals) == {Status.passed.value}, \
        f"the reference must pass every case: {dict(results.totals)}"
    document = results.to_dict()
    assert set(document["patterns"]) == set(pattern_ids()), \
        f"patterns never exercised: {set(pattern_ids()) - set(document['patterns'])}"
    want = {r.id for r in RULES if r.predicate is not None} | set(STRUCTURAL_RULES) | set(
        ILL_FORMED_RULES)
    missing = sorted(want - set(document["rules"]))
    assert not missing, f"rules the ci profile never exercised: {missing}"
