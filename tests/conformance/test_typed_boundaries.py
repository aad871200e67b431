"""Results documents cross module boundaries as typed records, not as JSON dicts: the functions
that merge, gather, pair and diff documents, and the report's run headers and coverage, take and
return `ResultsDocument` (or the report's `RunInput` around one), and the run's verdict is the
document's own."""

from __future__ import annotations

import typing
from collections.abc import Callable, Mapping
from dataclasses import replace
from typing import Any

import pytest

from fusionspec.conformance.grade import gather, merge
from fusionspec.conformance.grade.document import (
    CaseRecord,
    DeviceRecord,
    ExpectationsSummary,
    FailureRecord,
    ResultsDocument,
    VerdictLine,
)
from fusionspec.reports import diff, model, runs

#: The functions whose documents are records (the list grows as the JSON readers go).
TYPED: tuple[Callable[..., Any], ...] = (
    merge.merge_documents, gather.gathering, gather.gather_artifacts, diff.pair_baselines,
    diff.diff_runs, diff.narrowing, runs.run_view, model.observed_coverage)


def _untyped(hint: object) -> bool:
    """Whether `hint` is, or holds, a mapping of strings to Any (a JSON object)."""
    origin = typing.get_origin(hint)
    args = typing.get_args(hint)
    if origin in (dict, Mapping) and args == (str, Any):
        return True
    return any(_untyped(a) for a in args)


@pytest.mark.parametrize("function", TYPED, ids=lambda f: f.__qualname__)
def test_documents_cross_as_records(function: Callable[..., Any]) -> None:
    hints = typing.get_type_hints(function)
    untyped = [name for name, hint in hints.items() if _untyped(hint)]
    assert not untyped, (f"{function.__module__}.{function.__qualname__} takes or returns "
                         f"a JSON object for {untyped}: documents cross as records")


def _document(*, failures: tuple[FailureRecord, ...] = (), incomplete: str | None = None,
              unavailable: str | None = None,
              expectations: ExpectationsSummary | None = None) -> ResultsDocument:
    line = VerdictLine("c1", "fp.x", "pass", index=0, kind="valid")
    return ResultsDocument("toy", DeviceRecord("cpu0"), totals={"pass": 1}, verdicts=[line],
                           failures=list(failures), incomplete=incomplete,
                           unavailable=unavailable, expectations=expectations)


def test_the_verdict_is_the_documents() -> None:
    failing = FailureRecord("c2", "fp.x", "numeric-mismatch", index=1)
    expected = replace(failing, expected={"entry": 1})
    shrunk = replace(failing, minimal_of="c2")
    stale = CaseRecord("c1", "fp.x", index=0, status="pass", expected_status="fail")
    cases = [
        (_document(), "PASS", "a run with only passes"),
        (_document(failures=(failing,)), "FAIL", "an unexpected failure"),
        (_document(failures=(expected,)), "PASS", "a failure the expectations expect"),
        (_document(failures=(shrunk,)), "PASS", "a shrunk copy alone (counted once, by its "
                                                "original)"),
        (_document(incomplete="stopped"), "INCOMPLETE", "an interrupted run"),
        (_document(unavailable="no device"), "INCOMPLETE", "a run that could not start"),
        (_document(expectations=ExpectationsSummary(unexpected_passes=[stale])), "PASS",
         "a stale entry outside strict mode"),
        (_document(expectations=ExpectationsSummary(strict=True, unexpected_passes=[stale])),
         "FAIL", "a stale entry in strict mode"),
    ]
    for document, verdict, what in cases:
        assert document.verdict == verdict, \
            f"{what}: verdict {document.verdict}, expected {verdict}"
    assert _document().totals_text() == "1 pass" and \
        replace(_document(), totals={}).totals_text() == "no case", \
        "the totals read as 'N status' and 'no case' for none"


def test_merging_records_gives_records() -> None:
    one = replace(_document(), shard="1/2", planned=1,
                  backend_counters={"built": 2, "cached": 1})
    two = replace(_document(), shard="2/2", planned=1, backend_counters={"built": 3},
                  verdicts=[VerdictLine("c9", "fp.x", "pass", index=5, kind="valid")])
    merged = merge.merge_documents([two, one], ["b", "a"])
    assert isinstance(merged, ResultsDocument), f"a merge gives a record: {type(merged)}"
    assert [v.index for v in merged.verdicts] == [0, 5], \
        f"verdicts in plan order: {[v.index for v in merged.verdicts]}"
    assert merged.totals == {"pass": 2} and merged.planned == 2 and merged.shard is None, \
        f"totals and planned add up, the shard is gone: {merged.totals}, {merged.planned}"
    assert merged.backend_counters == {"built": 5, "cached": 1}, \
        f"the backend's counters add up: {merged.backend_counters}"
    assert ResultsDocument.from_json(merged.to_json()) == merged, \
        "the merged record writes JSON that reads back to an equal record"
