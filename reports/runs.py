"""One run (a results document of one backend on one device) as the report shows it.

`RunView` holds the header of a run (backend, device, driver, runtime, package versions, times)
and its one-line verdict; `Count` and `Cell` are the status counts the matrix and the tables show.

>>> cell = make_cell({"pass": 3, "numeric-mismatch": 1}, link="#x")
>>> cell.state, cell.cases, cell.failing, cell.conforming
('fail', 4, 1, '75 %')
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from .coverage import percent
from .document import Doc
from .labels import run_name
from .legend import StatusInfo, status_info, status_order

__all__ = ["RunInput", "Count", "Cell", "RunView", "counts_of", "make_cell", "run_view"]


@dataclass(frozen=True)
class RunInput:
    """A results document as read by `load_results`, and the file it came from (its folder
    holds the failure folders)."""

    document: Mapping[str, Any]
    path: Path | None = None

    def doc(self, fallback: str) -> Doc:
        return Doc(self.document, str(self.path) if self.path is not None else fallback)


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


def _pairs(doc: Doc) -> tuple[tuple[str, str], ...]:
    return tuple((str(k), v if isinstance(v, str) else str(v)) for k, v in doc.data.items())


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


def run_view(run: Doc, index: int, label_suffix: str = "") -> RunView:
    device = run.obj("device")
    totals = make_cell(run.counts("totals"))
    suite_errors = sum(1 for f in run.objects("failures")
                       if f.obj("details").raw("suite_error") is True and not f.text("minimal_of"))
    expected = sum(1 for f in run.objects("failures")
                   if f.raw("expected") and not f.text("minimal_of"))
    section = run.obj("expectations")
    strict_passes = len(section.objects("unexpected_passes")) \
        if section.raw("strict") is True else 0
    verdict, summary = _summary(totals, len(run.objects("limitations")), suite_errors,
                                expected, strict_passes)
    unavailable, incomplete = run.text("unavailable"), run.text("incomplete")
    if unavailable:
        verdict, summary = "UNAVAILABLE", f"the backend could not run: {unavailable}"
    elif incomplete:
        verdict, summary = "INCOMPLETE", f"{summary}; the run is incomplete: {incomplete}"
    return RunView(
        index=index, key=f"run-{index + 1}", backend=run.text("backend", "?") + label_suffix,
        device_id=device.text("id", "?"), device_kind=device.text("kind"),
        device_name=device.text("name"), driver=device.text("driver"),
        runtime=device.text("runtime"), extras=_pairs(device.obj("extras")),
        environment=_pairs(run.obj("environment")), suite_version=run.text("suite_version"),
        suite_commit=run.text("suite_commit"), spec_version=run.text("spec_version"),
        seed=run.text("seed"),
        started=run.text("started"), finished=run.text("finished"), source=run.source,
        totals=totals, verdict=verdict, summary=summary,
        problems=_pairs(run.obj("device_problems")), counters=_pairs(run.obj("backend_counters")))
