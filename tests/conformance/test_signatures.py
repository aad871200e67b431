"""Cause signatures: a planted mistake is named, across every op and pattern it shows in, and
the findings make one entry of it.

The unit tests check each mistaken conversion on values whose right and wrong roundings are
known; the suite tests run a planted mutant (testkit.mutants) in-process on the patterns where
its bug shows and read the verdicts' ``signature`` and the findings built from them.
"""

from __future__ import annotations

from pathlib import Path

import ml_dtypes
import numpy as np
import pytest

from fusionspec.conformance.cases import CaseKind
from fusionspec.conformance.grade.document import ResultsDocument
from fusionspec.conformance.grade.results import ResultsCollector
from fusionspec.conformance.grade.signatures import (
    SIGNATURES,
    round_half_away,
    truncate_to,
)
from fusionspec.conformance.suite import run_suite
from fusionspec.reports.findings import group_findings
from fusionspec.spec.dtypes import DataType

TESTS = str(Path(__file__).resolve().parents[1])


def test_truncation_rounds_toward_zero_where_nearest_even_rounds_away() -> None:
    # 1 + 3/256 lies between the bf16 values 1 + 2/256 and 1 + 4/256 (nearer the upper one).
    x = np.array([1 + 3 / 256, -(1 + 3 / 256), 1.0], dtype=np.float32)
    got = truncate_to(x, DataType.bf16).astype(np.float64)
    nearest = x.astype(ml_dtypes.bfloat16).astype(np.float64)
    assert got.tolist() == [1 + 2 / 256, -(1 + 2 / 256), 1.0], \
        f"bf16 truncation of {x.tolist()} gave {got.tolist()}, want toward zero"
    assert nearest[0] == 1 + 4 / 256, f"nearest even of 1+3/256 is {nearest[0]}, not 1+4/256"


def test_f16_truncation_never_moves_away_from_zero() -> None:
    x = np.random.default_rng(0).normal(size=1000).astype(np.float32)
    got = truncate_to(x, DataType.f16).astype(np.float64)
    assert np.all(np.abs(got) <= np.abs(x.astype(np.float64))), \
        "an f16 truncation moved a value away from zero"
    assert np.all(np.abs(x - got) < np.abs(np.spacing(got.astype(np.float16))) * 1.0001), \
        "an f16 truncation moved a value by more than one f16 step"


def test_half_away_rounding_differs_from_half_even_only_at_ties() -> None:
    x = np.array([0.5, 1.5, 2.5, -2.5, 2.4, -2.6])
    assert round_half_away(x).tolist() == [1.0, 2.0, 3.0, -3.0, 2.0, -3.0], \
        f"half away from zero of {x.tolist()} is {round_half_away(x).tolist()}"


def test_signature_ids_are_unique_and_stated() -> None:
    ids = [s.id for s in SIGNATURES]
    assert len(ids) == len(set(ids)), f"signature ids repeat: {ids}"
    assert all(s.statement for s in SIGNATURES), "a signature has no statement"


def _run(mutant: str, patterns: list[str]) -> ResultsCollector:
    return run_suite(f"testkit.mutants:{mutant}", patterns=patterns, kinds=[CaseKind.valid],
                     isolate=False, sys_path=[TESTS])


@pytest.mark.slow
@pytest.mark.parametrize(("mutant", "patterns", "signature"), [
    ("TruncatesNarrowOutputs", ["fp.conv_post_ops", "fp.matmul_post_ops", "fp.unary_binary"],
     "truncated-narrowing"),
    ("RoundsQuantizeHalfAway", ["int8.conv_post_ops", "int8.matmul_post_ops"],
     "round-half-away"),
    ("QuantizeWraps", ["int8.conv_post_ops", "int8.matmul_post_ops"], "wrap-not-saturate"),
])
def test_a_planted_mistake_is_one_finding_named_by_its_signature(
        mutant: str, patterns: list[str], signature: str) -> None:
    results = _run(mutant, patterns)
    document = results.to_dict()
    numeric = [f for f in document["failures"] if f["status"] == "numeric-mismatch"]
    assert numeric, f"{mutant}: no numeric mismatch on {patterns}"
    named = [f for f in numeric if (f.get("details", {}).get("signature") or {}).get("id")
             == signature]
    assert len(named) >= 0.8 * len(numeric), (
        f"{mutant}: {len(named)} of {len(numeric)} numeric mismatches carry signature "
        f"{signature}; others: "
        f"{[(f.get('details', {}).get('signature') or {}).get('id') for f in numeric][:8]}")
    findings = [f for f in group_findings(ResultsDocument.from_json(document, mutant))
                if f.status == "numeric-mismatch"]
    top = findings[0]
    assert signature in (top.known or ""), \
        f"{mutant}: the largest finding is not named by {signature}: {top.signature!r}"
    assert len(top.records) == len(named), \
        f"{mutant}: {len(named)} cases share signature {signature} but the finding has " \
        f"{len(top.records)}"
