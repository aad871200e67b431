"""What ``fusionspec conform`` prints about its failures: the first cases, then the findings.

Failing cases come most serious first: wrong values before crashes, before graphs handled the
wrong way, before missed fusions (`fusionspec.reports.legend.SEVERITY`), each with the command
that replays it. A CI log is read from its end, so the summary ends with the run's findings
(`fusionspec.reports.findings`: one cause, one line, however many cases show it), in the same
order.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import replace

from fusionspec.conformance.grade.document import FailureRecord, ResultsDocument
from fusionspec.reports.findings import merge_findings
from fusionspec.reports.legend import severity

__all__ = ["failure_lines", "time_line", "FINDINGS_LISTED", "CASES_LISTED"]

#: How many findings, and how many failing cases, the summary lists (the rest are counted).
FINDINGS_LISTED = 10
CASES_LISTED = 20

def _ordered(failures: Sequence[FailureRecord]) -> list[FailureRecord]:
    """`failures` by severity, in case order within one status (the sort is stable)."""
    return sorted(failures, key=lambda f: severity(f.status))


def failure_lines(document: ResultsDocument, unexpected: Sequence[FailureRecord],
                  replay: Callable[[FailureRecord], str]) -> list[str]:
    """The summary's lines about the `unexpected` failures of the run `document` records;
    `replay` gives the command replaying one failure."""
    if not unexpected:
        return []
    lines: list[str] = []
    ordered = _ordered(unexpected)
    for failure in ordered[:CASES_LISTED]:
        lines.append(f"  {failure.status}: {failure.case_id}: {failure.reason}")
        slipped = failure.unexpected_status
        if slipped:
            lines.append(f"    (expectations entry {slipped['entry']} expects another "
                         "failing status)")
        lines.append(f"    replay: {replay(failure)}")
    if len(ordered) > CASES_LISTED:
        lines.append(f"  ... {len(ordered) - CASES_LISTED} more failures in the results file")
    findings = merge_findings([replace(document, failures=list(unexpected), extensions=[])])
    by_id = {f.case_id: f for f in unexpected}
    lines.append(f"{len(findings)} finding(s), most serious first (`fusionspec findings "
                 "RESULTS.json -o FINDINGS.md` explains each):")
    for number, finding in enumerate(findings[:FINDINGS_LISTED], 1):
        example = by_id.get(finding.example.case_id)
        lines.append(f"  {number}. {finding.signature} ({len(finding.records)} case(s), "
                     f"e.g. {finding.example.case_id})")
        if example is not None:
            lines.append(f"     replay: {replay(example)}")
    if len(findings) > FINDINGS_LISTED:
        lines.append(f"  ... {len(findings) - FINDINGS_LISTED} more finding(s)")
    return lines


def time_line(timings: Mapping[str, float], oracle: Mapping[str, int]) -> str:
    """Where the run's time went: starting the backend, drawing, judging (and how many cases'
    reference side came from the oracle cache rather than being computed)."""
    steps = ", ".join(f"{step} {seconds:.1f} s" for step, seconds in timings.items())
    cached = ""
    if oracle.get("read back") or oracle.get("computed"):
        cached = (f" (the reference's side: {oracle.get('read back', 0)} case(s) read back "
                  f"from the oracle cache, {oracle.get('computed', 0)} computed)")
    return f"time: {steps or 'nothing timed'}{cached}"
