"""Findings read facts, not sentences: rewording every reason and description of a results
document regroups nothing, a document written before verdicts carried facts still groups
(by status and pattern), and findings of a backend other than oneDNN never name oneDNN."""

from __future__ import annotations

import copy
import random
import string
from pathlib import Path
from typing import Any

import pytest
from testkit.report import load

from fusionspec.conformance.grade.document import ResultsDocument
from fusionspec.conformance.grade.results import load_document
from fusionspec.reports import causes, findings
from fusionspec.reports.findings import findings_markdown, group_findings, unexplained

#: The sentences of a results document: verdicts' reasons, cases' descriptions, the messages
#: backends raised (findings group and explain by facts, never by these).
_PROSE = ("reason", "description", "observed_reason", "message")


def _scrambled(value: Any, rng: random.Random) -> Any:
    """`value` with every prose field, at any depth, replaced by random text."""
    if isinstance(value, dict):
        return {k: ("".join(rng.choice(string.printable) for _ in range(rng.randint(0, 40)))
                    if k in _PROSE and isinstance(v, str) else _scrambled(v, rng))
                for k, v in value.items()}
    if isinstance(value, list):
        return [_scrambled(v, rng) for v in value]
    return value


def _summary(document: dict[str, Any]) -> list[tuple[str, str, int, str | None]]:
    return [(f.signature, f.status, len(f.records), f.known)
            for f in group_findings(ResultsDocument.from_json(document))]


@pytest.mark.parametrize("fixture", ["never_fuses_results", "gelu_results", "limited_results",
                                     "hostile_results", "fuses_everything_results"])
def test_rewording_every_reason_changes_no_finding(fixture: str,
                                                   request: pytest.FixtureRequest) -> None:
    document = load(request.getfixturevalue(fixture))
    before = _summary(document)
    assert before, f"{fixture}: the run has findings to compare"
    for seed in range(3):
        after = _summary(_scrambled(copy.deepcopy(document), random.Random(seed)))
        assert after == before, \
            f"{fixture}: findings changed when reasons were reworded (seed {seed}):\n" \
            f"before {before}\nafter  {after}"


def test_a_document_without_facts_groups_by_status_and_pattern(
        never_fuses_results: Path) -> None:
    document = load(never_fuses_results)
    for record in document["failures"]:
        record["details"].pop("facts", None)
    found = group_findings(ResultsDocument.from_json(document))
    expected = {(r["status"], r["pattern"]) for r in document["failures"]
                if not r.get("minimal_of")}
    assert {(f.status, f.example.pattern) for f in found} == expected, \
        "a record without facts makes one finding per status and pattern"
    assert all(f.signature.endswith("(no facts recorded)") for f in found), \
        f"a finding without facts says it had none: {[f.signature for f in found]}"


def test_findings_of_another_backend_never_name_onednn(never_fuses_results: Path,
                                                       gelu_results: Path,
                                                       fuses_everything_results: Path) -> None:
    runs = [load_document(p) for p in (never_fuses_results, gelu_results,
                                       fuses_everything_results)]
    text = findings_markdown(runs)
    assert "onednn" not in text.lower(), \
        "findings of backends that are not oneDNN never mention it"
    for module in (findings, causes):
        source = Path(str(module.__file__)).read_text(encoding="utf-8")
        assert "onednn" not in source.lower(), \
            f"{module.__name__} knows no library: what a backend knows arrives as data"


def test_what_nothing_explains_counts_as_unexplained(hostile_results: Path) -> None:
    found = group_findings(load_document(hostile_results))
    left, failing = unexplained(found)
    assert failing and left, \
        f"errors no departure, culprit or cut accounts for stay unexplained: {left} of {failing}"
    assert not any((f.known or "").startswith("Known departure") for f in found), \
        "a backend that declares no departure has no known departure in its findings"
