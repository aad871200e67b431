"""Results documents in, the report's view model out: everything the templates show, computed.

`build_report(runs, baselines=..., required=...)` reads one or more results documents (one per
backend and device, side by side) and returns a `Report`: the header (versions, date, each run's
backend, device, driver, runtime and packages, and its verdict), the matrix (pattern rows grouped
by catalog family, one column per run), a section per pattern (`fusionspec.reports.patterns`),
the declared limitations apart from the failures, and the diff against baselines
(`fusionspec.reports.diff`). Templates only lay this out; they compute nothing.

The documents are those `fusionspec.conformance.grade.results.load_results` returns (schema
checked); a field of the wrong shape inside raises `ReportError` naming it. This package reads
results and the spec's catalog only: the ``required`` coverage items are passed in as data.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime

from fusionspec.spec.catalog import CATALOG, PatternFamily
from fusionspec.spec.pages import PAGES

from .catch_rates import CatchRates
from .coverage import Required
from .diff import RunDiff, diff_runs, pair_baselines
from .document import Doc, ReportError
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


def _statements(docs: Sequence[Doc]) -> dict[str, str]:
    found: dict[str, str] = {}
    for doc in docs:
        rules = doc.obj("rules")
        for rid in rules.data:
            text = rules.obj(rid).text("statement")
            if text:
                found.setdefault(rid, text)
    return found


def _limitations(runs: Sequence[RunView], docs: Sequence[Doc],
                 anchors: Mapping[str, str]) -> tuple[LimitationGroup, ...]:
    groups: list[LimitationGroup] = []
    for run, doc in zip(runs, docs):
        by_key: dict[tuple[str, str], list[Doc]] = {}
        for item in doc.objects("limitations"):
            by_key.setdefault((item.text("pattern"), item.text("reason")), []).append(item)
        for (pattern, reason), items in by_key.items():
            observed = Counter(i.text("observed_status") for i in items
                               if i.text("observed_status"))
            groups.append(LimitationGroup(
                run.label, pattern, anchors.get(pattern, ""), reason, len(items),
                sum(1 for i in items if i.raw("limitation_passed") is True),
                tuple((status_info(s), n) for s, n in sorted(observed.items())),
                ", ".join(sorted({i.text("dtype") for i in items if i.text("dtype")}))))
    return tuple(groups)


def _labels(docs: Sequence[Doc]) -> list[str]:
    """The suffix of each run's name (`fusionspec.reports.labels.run_suffixes`)."""
    return run_suffixes([(doc.text("backend"), doc.obj("device").text("id")) for doc in docs],
                        [doc.obj("device").text("driver") for doc in docs])


def build_report(runs: Sequence[RunInput], *, baselines: Sequence[RunInput] = (),
                 required: Mapping[str, Required] | None = None,
                 max_drilldowns: int = DEFAULT_DRILLDOWNS,
                 generated: datetime | None = None,
                 mutation: MutationView | None = None,
                 perf: PerfSection | None = None,
                 methods: Sequence[Mapping[str, object]] = (),
                 catch_rates: CatchRates | None = None) -> Report:
    """The view model of the report on `runs` (see the module docstring); `perf`, the
    performance section, may stand without any run."""
    if not runs and (perf is None or not perf.runs):
        raise ReportError("a report needs at least one results or performance document")
    if max_drilldowns < 0:
        raise ReportError(f"the number of drill-downs per pattern must be >= 0, got "
                          f"{max_drilldowns}")
    docs = [r.doc(f"results document {i + 1}") for i, r in enumerate(runs)]
    views = tuple(run_view(doc, i, suffix)
                  for i, (doc, suffix) in enumerate(zip(docs, _labels(docs))))
    statements = _statements(docs)
    present = {p for doc in docs for p in doc.obj("patterns").data}
    order = [e.id for e in CATALOG if e.id in present] + sorted(
        present - {e.id for e in CATALOG})
    anchors = Anchors()
    patterns = [pattern_view(p, views, docs, [r.path for r in runs], anchors=anchors,
                             required=required.get(p) if required is not None else None,
                             max_drilldowns=max_drilldowns, statements=statements)
                for p in order]
    families = []
    for family in [f.value for f in PatternFamily] + [""]:
        members = tuple(p for p in patterns if p.family == family)
        if members:
            families.append(FamilyGroup(family_title(family), members))
    base_docs = [b.doc(f"baseline {i + 1}") for i, b in enumerate(baselines)]
    pairs, notes = pair_baselines(docs, base_docs) if base_docs else ([], [])
    seen_statuses = {c.status.name for run in views for c in run.totals.counts}
    statuses = STATUSES + tuple(status_info(s) for s in sorted(seen_statuses)
                                if s not in {k.name for k in STATUSES})
    pages = {p.text("file"): p.text("title") for d in docs for p in d.objects("spec_pages")}
    return Report(
        generated=(generated or datetime.now(UTC)).isoformat(timespec="seconds"),
        suite_versions=tuple(sorted({v.suite_version for v in views})),
        spec_versions=tuple(sorted({v.spec_version for v in views})),
        spec_pages=tuple(pages.items()) or tuple((p.file, p.title) for p in PAGES),
        runs=views, families=tuple(families),
        not_run=tuple(e.id for e in CATALOG if e.id not in present),
        limitations=_limitations(views, docs, {p.id: p.anchor for p in patterns}),
        diffs=tuple(diff_runs(run, base, note) for run, base, note in pairs),
        diff_notes=tuple(notes), has_baseline=bool(base_docs), statuses=statuses,
        metrics=METRICS, mutation=mutation, perf=perf,
        op_coverage=op_coverage(observed_coverage(docs), required) if required is not None else (),
        method_coverage=method_coverage(observed_coverage(docs), methods),
        catch_rates=catch_rates)


def observed_coverage(docs: Sequence[Doc]) -> list[dict[str, dict[str, int]]]:
    """Every pattern's recorded coverage in every run."""
    found = []
    for doc in docs:
        table = doc.obj("patterns")
        for pattern in table.data:
            coverage = table.obj(pattern).obj("coverage")
            found.append({f: coverage.counts(f) for f in coverage.data})
    return found
