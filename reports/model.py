"""Results documents in, the report's view model out: everything the templates show, computed.

`build_report(runs, baselines=..., required=...)` reads one or more results documents (one per
backend and device, side by side) and returns a `Report`: the header (versions, date, each run's
backend, device, driver, runtime and packages, and its verdict), the matrix (pattern rows grouped
by catalog family, one column per run), a section per pattern (`fusionspec.reports.patterns`),
the declared limitations apart from the failures, and the diff against baselines
(`fusionspec.reports.diff`). Templates only lay this out; they compute nothing.

The documents are `ResultsDocument` records, as
`fusionspec.conformance.grade.results.load_document` reads them (every field checked on the way
in, a field of the wrong shape named there). This package reads results and the spec's catalog
only: the ``required`` coverage items are passed in as data.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime

from fusionspec.conformance.grade.document import LimitationRecord, ResultsDocument
from fusionspec.conformance.method_rows import MethodRow
from fusionspec.spec.catalog import CATALOG, PatternFamily
from fusionspec.spec.pages import PAGES

from .catch_rates import CatchRates
from .coverage import Required
from .diff import RunDiff, diff_runs, pair_baselines
from .document import ReportError
from .labels import run_suffixes
from .legend import METRICS, STATUSES, StatusInfo, family_title, status_info
from .method_coverage import MethodCoverage, method_coverage
from .mutation import MutationView
from .op_coverage import OpCoverage, op_coverage
from .patterns import Anchors, PatternView, pattern_view
from .perf import PerfSection
from .runs import RunInput, RunView, run_view

__all__ = ["FamilyGroup", "LimitationGroup", "Report", "build_report", "DEFAULT_DRILLDOWNS",
           "observed_coverage"]

#: Failures drilled down per pattern and run (the others are listed in a table).
DEFAULT_DRILLDOWNS = 8


@dataclass(frozen=True)
class FamilyGroup:
    """Matrix rows of one catalog family."""

    title: str
    patterns: tuple[PatternView, ...]


@dataclass(frozen=True)
class LimitationGroup:
    """Cases of one pattern that one run reports ``unsupported`` for one declared reason."""

    run_label: str
    pattern: str
    pattern_anchor: str
    reason: str
    cases: int
    passed_anyway: int
    observed: tuple[tuple[StatusInfo, int], ...]
    dtypes: str


@dataclass(frozen=True)
class Report:
    generated: str
    suite_versions: tuple[str, ...]
    spec_versions: tuple[str, ...]
    spec_pages: tuple[tuple[str, str], ...]
    runs: tuple[RunView, ...]
    families: tuple[FamilyGroup, ...]
    not_run: tuple[str, ...]
    limitations: tuple[LimitationGroup, ...]
    diffs: tuple[RunDiff, ...]
    diff_notes: tuple[str, ...]
    has_baseline: bool
    statuses: tuple[StatusInfo, ...]
    metrics: tuple[tuple[str, str], ...]
    #: The mutation score, when the report was given one (``--mutation``).
    mutation: MutationView | None = None
    #: What ``fusionspec bench`` measured, when the report was given performance documents.
    perf: PerfSection | None = None
    #: Per op kind, how much of the coverage model the runs drew (with the required items).
    op_coverage: tuple[OpCoverage, ...] = ()
    #: Per method of the coverage model, its items, how many were drawn and what is left.
    method_coverage: tuple[MethodCoverage, ...] = ()
    #: The sampled mutation score and the real-bug score, each read or saying why not.
    catch_rates: CatchRates | None = None

    @property
    def patterns(self) -> tuple[PatternView, ...]:
        return tuple(p for group in self.families for p in group.patterns)

    @property
    def failing(self) -> int:
        return sum(run.totals.failing for run in self.runs)

    @property
    def verdict(self) -> str:
        """FAIL, INCOMPLETE or UNAVAILABLE when any run is, PASS when all pass, else EMPTY."""
        verdicts = {run.verdict for run in self.runs}
        for worst in ("FAIL", "INCOMPLETE", "UNAVAILABLE"):
            if worst in verdicts:
                return worst
        return "PASS" if verdicts == {"PASS"} else "EMPTY"


def _statements(documents: Sequence[ResultsDocument]) -> dict[str, str]:
    found: dict[str, str] = {}
    for doc in documents:
        for rid, rule in doc.rules.items():
            if rule.statement:
                found.setdefault(rid, rule.statement)
    return found


def _limitations(runs: Sequence[RunView], documents: Sequence[ResultsDocument],
                 anchors: Mapping[str, str]) -> tuple[LimitationGroup, ...]:
    groups: list[LimitationGroup] = []
    for run, doc in zip(runs, documents):
        by_key: dict[tuple[str, str], list[LimitationRecord]] = {}
        for item in doc.limitations:
            by_key.setdefault((item.pattern, item.reason), []).append(item)
        for (pattern, reason), items in by_key.items():
            observed = Counter(i.observed_status for i in items if i.observed_status)
            groups.append(LimitationGroup(
                run.label, pattern, anchors.get(pattern, ""), reason, len(items),
                sum(1 for i in items if i.limitation_passed),
                tuple((status_info(s), n) for s, n in sorted(observed.items())),
                ", ".join(sorted({i.dtype for i in items if i.dtype}))))
    return tuple(groups)


def _labels(documents: Sequence[ResultsDocument]) -> list[str]:
    """The suffix of each run's name (`fusionspec.reports.labels.run_suffixes`)."""
    return run_suffixes([(doc.backend, doc.device.id) for doc in documents],
                        [doc.device.driver for doc in documents])


def build_report(runs: Sequence[RunInput], *, baselines: Sequence[RunInput] = (),
                 required: Mapping[str, Required] | None = None,
                 max_drilldowns: int = DEFAULT_DRILLDOWNS,
                 generated: datetime | None = None,
                 mutation: MutationView | None = None,
                 perf: PerfSection | None = None,
                 methods: Sequence[MethodRow] = (),
                 catch_rates: CatchRates | None = None) -> Report:
    """The view model of the report on `runs` (see the module docstring); `perf`, the
    performance section, may stand without any run."""
    if not runs and (perf is None or not perf.runs):
        raise ReportError("a report needs at least one results or performance document")
    if max_drilldowns < 0:
        raise ReportError(f"the number of drill-downs per pattern must be >= 0, got "
                          f"{max_drilldowns}")
    named = [r.named(f"results document {i + 1}") for i, r in enumerate(runs)]
    documents = [r.document for r in named]
    views = tuple(run_view(run, i, suffix)
                  for i, (run, suffix) in enumerate(zip(named, _labels(documents))))
    statements = _statements(documents)
    present = {p for doc in documents for p in doc.patterns}
    order = [e.id for e in CATALOG if e.id in present] + sorted(
        present - {e.id for e in CATALOG})
    anchors = Anchors()
    patterns = [pattern_view(p, views, documents, [r.path for r in runs], anchors=anchors,
                             required=required.get(p) if required is not None else None,
                             max_drilldowns=max_drilldowns, statements=statements)
                for p in order]
    families = []
    for family in [f.value for f in PatternFamily] + [""]:
        members = tuple(p for p in patterns if p.family == family)
        if members:
            families.append(FamilyGroup(family_title(family), members))
    bases = [b.named(f"baseline {i + 1}") for i, b in enumerate(baselines)]
    pairs, notes = pair_baselines(named, bases) if bases else ([], [])
    seen_statuses = {c.status.name for run in views for c in run.totals.counts}
    statuses = STATUSES + tuple(status_info(s) for s in sorted(seen_statuses)
                                if s not in {k.name for k in STATUSES})
    pages = {p.file: p.title for d in documents for p in d.spec_pages}
    return Report(
        generated=(generated or datetime.now(UTC)).isoformat(timespec="seconds"),
        suite_versions=tuple(sorted({v.suite_version for v in views})),
        spec_versions=tuple(sorted({v.spec_version for v in views})),
        spec_pages=tuple(pages.items()) or tuple((p.file, p.title) for p in PAGES),
        runs=views, families=tuple(families),
        not_run=tuple(e.id for e in CATALOG if e.id not in present),
        limitations=_limitations(views, documents, {p.id: p.anchor for p in patterns}),
        diffs=tuple(diff_runs(run, base, note) for run, base, note in pairs),
        diff_notes=tuple(notes), has_baseline=bool(bases), statuses=statuses,
        metrics=METRICS, mutation=mutation, perf=perf,
        op_coverage=op_coverage(observed_coverage(documents), required)
        if required is not None else (),
        method_coverage=method_coverage(observed_coverage(documents), methods),
        catch_rates=catch_rates)


def observed_coverage(documents: Sequence[ResultsDocument]) -> list[dict[str, dict[str, int]]]:
    """Every pattern's recorded coverage in every run."""
    return [{f: dict(counts) for f, counts in entry.coverage.items()}
            for doc in documents for entry in doc.patterns.values()]
