"""One catalog pattern across the runs: its row of the matrix and its section of the report.

A `PatternView` carries what the catalog says (notation, page and section, description, rules,
decisions) and what the runs found: counts per run, per rule, per case kind and per dtype, the
grammar coverage, and the failures, the first few of each run drilled down (`failure_view`), the
rest listed. Drill-downs go first to shrunk cases (``minimal_of``), then to one case of each
(status, kind, rule), so a run with hundreds of failures of one kind still shows every kind of
failure it has.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

from fusionspec.conformance.grade.document import FailureRecord, PatternCounts, ResultsDocument
from fusionspec.spec.catalog import CATALOG, PatternEntry
from fusionspec.spec.rules import RuleKind

from .coverage import CoverageView, Required, coverage_views
from .failures import FailureLine, FailureView, failure_line, failure_view
from .legend import family_title
from .runs import Cell, RunView, make_cell

__all__ = ["RuleRow", "BreakdownRow", "RunFailures", "PatternView", "pattern_view",
           "rule_origin", "MAX_LINES", "Anchors"]

#: Failures listed (without drill-down) per pattern and run; the rest are counted.
MAX_LINES = 200

_CATALOG = {e.id: e for e in CATALOG}


class Anchors:
    """Unique HTML ids made of letters, digits, '-' and '_' only."""

    def __init__(self) -> None:
        self._used: set[str] = set()

    def make(self, prefix: str, text: str) -> str:
        base = prefix + re.sub(r"[^A-Za-z0-9_-]+", "-", text).strip("-")[:80]
        anchor, n = base, 2
        while anchor in self._used:
            anchor, n = f"{base}-{n}", n + 1
        self._used.add(anchor)
        return anchor


@dataclass(frozen=True)
class RuleRow:
    """A rule of a pattern: `origin` is ``page`` (a catalog rule), ``notation`` (a structural
    rule of the pattern's notation) or ``schema`` (an op-schema or graph rule)."""

    id: str
    origin: str
    kind: str
    statement: str
    where: str
    cells: tuple[Cell | None, ...]
    graded: bool = True


@dataclass(frozen=True)
class BreakdownRow:
    label: str
    cells: tuple[Cell | None, ...]


@dataclass(frozen=True)
class RunFailures:
    run: RunView
    views: tuple[FailureView, ...]
    lines: tuple[FailureLine, ...]
    hidden: int


@dataclass(frozen=True)
class PatternView:
    id: str
    anchor: str
    known: bool
    notation: str
    family: str
    family_title: str
    page_title: str
    page_file: str
    section: str
    description: str
    decisions: tuple[tuple[str, str, str], ...]
    cells: tuple[Cell | None, ...]
    rules: tuple[RuleRow, ...]
    by_kind: tuple[BreakdownRow, ...]
    by_dtype: tuple[BreakdownRow, ...]
    coverage: tuple[CoverageView, ...]
    failures: tuple[RunFailures, ...]

    @property
    def failing(self) -> int:
        return sum(c.failing for c in self.cells if c is not None)


def rule_origin(rule_id: str, catalog_rules: Sequence[str]) -> str:
    if rule_id in catalog_rules:
        return "page"
    if rule_id.startswith("structure."):
        return "notation"
    if rule_id.startswith(("schema.", "graph.")):
        return "schema"
    return "other"


_ORIGIN_ORDER = {"page": 0, "notation": 1, "schema": 2, "other": 3}

#: What a rule without a statement in the results is, by origin.
_UNSTATED = {"schema": "an op-schema or graph rule: a graph that breaks it is ill-formed and "
                       "must be rejected with a typed error naming it",
             "notation": "a rule the pattern's notation states"}


def _rules(entry: PatternEntry | None, per_run: Sequence[PatternCounts | None],
           statements: Mapping[str, str]) -> tuple[RuleRow, ...]:
    catalog = list(entry.rules) if entry is not None else []
    catalog_ids = [r.id for r in catalog]
    seen = {rid for p in per_run if p is not None for rid in p.rules}
    others = sorted(seen - set(catalog_ids),
                    key=lambda r: (_ORIGIN_ORDER[rule_origin(r, catalog_ids)], r))
    rows = []
    for rid in catalog_ids + others:
        cells = tuple(make_cell(p.rules.get(rid, {})) if p is not None else None
                      for p in per_run)
        spec_rule = next((r for r in catalog if r.id == rid), None)
        if spec_rule is not None:
            rows.append(RuleRow(rid, "page", spec_rule.kind.value, spec_rule.statement,
                                spec_rule.page.cite(spec_rule.section), cells,
                                graded=spec_rule.kind is not RuleKind.note))
        else:
            origin = rule_origin(rid, catalog_ids)
            rows.append(RuleRow(rid, origin, origin,
                                statements.get(rid, "") or _UNSTATED.get(origin, ""), "", cells))
    return tuple(rows)


def _breakdown(tables: Sequence[Mapping[str, Mapping[str, int]] | None],
               order: Callable[[str], tuple[int, str]]) -> tuple[BreakdownRow, ...]:
    labels = sorted({label for t in tables if t is not None for label in t}, key=order)
    return tuple(BreakdownRow(label, tuple(make_cell(t.get(label, {})) if t is not None else None
                                           for t in tables)) for label in labels)


_KIND_ORDER = {"valid": 0, "near-miss": 1, "ill-formed": 2}


def _pick(failures: Sequence[FailureRecord], limit: int,
          ) -> tuple[list[FailureRecord], list[FailureRecord]]:
    """(failures to drill down, the rest), as the module docstring says."""
    chosen = [f for f in failures if f.minimal_of][:limit]
    taken = {id(f) for f in chosen}
    kinds_seen = {(f.status, f.kind, f.rule) for f in chosen}
    for failure in failures:
        key = (failure.status, failure.kind, failure.rule)
        if len(chosen) < limit and key not in kinds_seen and id(failure) not in taken:
            chosen.append(failure)
            taken.add(id(failure))
            kinds_seen.add(key)
    for failure in failures:
        if len(chosen) >= limit:
            break
        if id(failure) not in taken:
            chosen.append(failure)
            taken.add(id(failure))
    return chosen, [f for f in failures if id(f) not in taken]


def pattern_view(pattern: str, runs: Sequence[RunView], documents: Sequence[ResultsDocument],
                 paths: Sequence[Path | None], *, anchors: Anchors,
                 required: Required | None, max_drilldowns: int,
                 statements: Mapping[str, str]) -> PatternView:
    """The view of `pattern` over `runs` (`documents` are their documents and `paths` their
    files, in the same order)."""
    entry = _CATALOG.get(pattern)
    anchor = anchors.make("p-", pattern)
    per_run = [d.patterns.get(pattern) for d in documents]
    failures: list[RunFailures] = []
    first_link: dict[int, str] = {}
    for run, doc, path in zip(runs, documents, paths):
        mine = [f for f in doc.failures if f.pattern == pattern]
        if not mine:
            continue
        chosen, rest = _pick(mine, max_drilldowns)
        views = tuple(failure_view(f, anchor=anchors.make(f"f{run.index + 1}-",
                                                          f.case_id),
                                   run_label=run.label, results_path=path,
                                   rule_statements=statements) for f in chosen)
        if views:
            first_link[run.index] = "#" + views[0].anchor
        failures.append(RunFailures(run, views, tuple(failure_line(f) for f in rest[:MAX_LINES]),
                                    max(0, len(rest) - MAX_LINES)))
    cells = tuple(make_cell(p.counts, link=first_link.get(run.index, "#" + anchor))
                  if p is not None else None for run, p in zip(runs, per_run))
    coverage = coverage_views(pattern, [(run.label, {f: dict(c) for f, c in p.coverage.items()})
                                        for run, p in zip(runs, per_run) if p is not None],
                              required)
    return PatternView(
        id=pattern, anchor=anchor, known=entry is not None,
        notation=entry.notation if entry is not None else "",
        family=entry.family.value if entry is not None else "",
        family_title=family_title(entry.family.value if entry is not None else ""),
        page_title=entry.page.title if entry is not None else "",
        page_file=entry.page.file if entry is not None else "",
        section=entry.section if entry is not None else "",
        description=entry.description if entry is not None else
        "A pattern this version of fusionspec does not have in its catalog.",
        decisions=tuple((d.id, d.text, d.reason) for d in entry.decisions)
        if entry is not None else (),
        cells=cells, rules=_rules(entry, per_run, statements),
        by_kind=_breakdown([p.by_kind if p is not None else None for p in per_run],
                           lambda k: (_KIND_ORDER.get(k, 9), k)),
        by_dtype=_breakdown([p.by_dtype if p is not None else None for p in per_run],
                            lambda k: (0, k)),
        coverage=coverage, failures=tuple(failures))
