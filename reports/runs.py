"""One run (a results document of one backend on one device) as the report shows it.

`RunView` holds the header of a run (backend, device, driver, runtime, package versions, times)
and its one-line verdict; `Count` and `Cell` are the status counts the matrix and the tables show.

>>> cell = make_cell({"pass": 3, "numeric-mismatch": 1}, link="#x")
>>> cell.state, cell.cases, cell.failing, cell.conforming
('fail', 4, 1, '75 %')
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, replace
from pathlib import Path

from fusionspec.conformance.grade.document import ResultsDocument

from .coverage import percent
from .labels import run_name
from .legend import StatusInfo, status_info, status_order

__all__ = ["RunInput", "Count", "Cell", "RunView", "counts_of", "make_cell", "run_view"]


@dataclass(frozen=True)
class RunInput:
    """A results document as read by `load_document`, and the file it came from (its folder
    holds the failure folders); `name` stands for the file in messages when there is none."""

    document: ResultsDocument
    path: Path | None = None
    name: str = "results document"

    @property
    def source(self) -> str:
        """What messages call the document: its file, or its name."""
        return str(self.path) if self.path is not None else self.name

    def named(self, name: str) -> RunInput:
        """The same run, called `name` when it has no file."""
        return replace(self, name=name)


@dataclass(frozen=True)
class Count:
    status: StatusInfo
    count: int


def counts_of(counts: Mapping[str, int]) -> tuple[Count, ...]:
    """Non-zero counts in legend order."""
    return tuple(Count(status_info(s), n) for s, n in sorted(counts.items(),
                                                             key=lambda kv: status_order(kv[0]))
                 if n)


@dataclass(frozen=True)
class Cell:
    """Counts by status for one pattern (or rule, kind, dtype) on one run.

    `state` colours the cell: ``pass`` (all conform), ``soft`` (no failure, but extensions or
    unsupported cases), ``fail``, or ``none`` (no case). `bar` is the stacked bar: (CSS class,
    width in percent). `link` is where a click leads (the first failure, or the pattern).
    """

    counts: tuple[Count, ...]
    cases: int
    failing: int
    state: str
    conforming: str
    bar: tuple[tuple[str, str], ...]
    link: str = ""


def make_cell(counts: Mapping[str, int], *, link: str = "") -> Cell:
    listed = counts_of(counts)
    cases = sum(c.count for c in listed)
    failing = sum(c.count for c in listed if c.status.failing)
    graded = cases - counts.get("unsupported", 0)
    good = counts.get("pass", 0) + counts.get("extension", 0)
    if cases == 0:
        state = "none"
    elif failing:
        state = "fail"
    elif good == cases:
        state = "pass"
    else:
        state = "soft"
    return Cell(listed, cases, failing, state, percent(good, graded), _bar(listed, cases), link)


#: The narrowest a non-empty segment of a stacked bar is drawn, in percent (one failure among
#: thousands of passes must still show).
MIN_SEGMENT = 3.0


def _bar(listed: tuple[Count, ...], cases: int) -> tuple[tuple[str, str], ...]:
    if not cases:
        return ()
    widths = [max(MIN_SEGMENT, 100 * c.count / cases) for c in listed]
    widest = widths.index(max(widths))
    widths[widest] -= sum(widths) - 100  # the widest segment gives up what the others gained
    return tuple((c.status.css, f"{w:.2f}") for c, w in zip(listed, widths))


@dataclass(frozen=True)
class RunView:
    """The header of one run and its verdict."""

    index: int
    key: str
    backend: str
    device_id: str
    device_kind: str
    device_name: str
    driver: str
    runtime: str
    extras: tuple[tuple[str, str], ...]
    environment: tuple[tuple[str, str], ...]
    suite_version: str
    suite_commit: str
    spec_version: str
    seed: str
    started: str
    finished: str
    source: str
    totals: Cell
    verdict: str
    summary: str
    problems: tuple[tuple[str, str], ...] = ()
    counters: tuple[tuple[str, str], ...] = ()

    @property
    def label(self) -> str:
        return run_name(self.backend, self.device_id)


def _pairs(table: Mapping[str, object]) -> tuple[tuple[str, str], ...]:
    return tuple((str(k), v if isinstance(v, str) else str(v)) for k, v in table.items())


def _summary(totals: Cell, limitations: int, suite_errors: int, expected: int = 0,
             strict_passes: int = 0) -> tuple[str, str]:
    """(PASS / FAIL / EMPTY, the sentence after it). `expected` failing cases are expected by
    the run's expectations file and do not fail it; `strict_passes` are expected failures that
    passed in a strict run, which do."""
    if totals.cases == 0:
        return "EMPTY", "no case was graded"
    by = {c.status.name: c.count for c in totals.counts}
    known = f"; {expected} of the failures are expected (expectations file)" if expected else ""
    stale = (f"; {strict_passes} expected failure(s) passed (strict expectations)"
             if strict_passes else "")
    if totals.failing > expected or strict_passes:
        bad = ", ".join(f"{c.count} {c.status.name}" for c in totals.counts if c.status.failing)
        rest = ", ".join(f"{c.count} {c.status.name}" for c in totals.counts
                         if not c.status.failing)
        own = f"; {suite_errors} of the errors are the suite's own" if suite_errors else ""
        return "FAIL", (f"{totals.failing} of {totals.cases} cases fail ({bad}{own})"
                        + (f"; {rest}" if rest else "") + known + stale)
    if by.get("pass", 0) == totals.cases:
        return "PASS", f"all {totals.cases} cases pass"
    parts = ", ".join(f"{c.count} {c.status.name}" for c in totals.counts)
    note = f" ({limitations} declared limitation(s))" if limitations else ""
    return "PASS", f"no unexpected failure in {totals.cases} cases: {parts}{note}{known}"


def run_view(run: RunInput, index: int, label_suffix: str = "") -> RunView:
    doc = run.document
    device = doc.device
    totals = make_cell(doc.totals)
    suite_errors = sum(1 for f in doc.failures
                       if f.details.suite_error is True and not f.minimal_of)
    expected = sum(1 for f in doc.failures if f.expected and not f.minimal_of)
    strict_passes = len(doc.unexpected_passes) if doc.strict else 0
    verdict, summary = _summary(totals, len(doc.limitations), suite_errors, expected,
                                strict_passes)
    if doc.unavailable:
        verdict, summary = "UNAVAILABLE", f"the backend could not run: {doc.unavailable}"
    elif doc.incomplete:
        verdict, summary = "INCOMPLETE", f"{summary}; the run is incomplete: {doc.incomplete}"
    return RunView(
        index=index, key=f"run-{index + 1}", backend=doc.backend + label_suffix,
        device_id=device.id, device_kind=device.kind, device_name=device.name,
        driver=device.driver, runtime=device.runtime, extras=_pairs(device.extras),
        environment=_pairs(doc.environment), suite_version=doc.suite_version or "",
        suite_commit=doc.suite_commit or "", spec_version=doc.spec_version or "",
        seed=str(doc.seed), started=doc.started or "", finished=doc.finished or "",
        source=run.source, totals=totals, verdict=verdict, summary=summary,
        problems=_pairs(doc.device_problems), counters=_pairs(doc.backend_counters))
