"""Grammar coverage of a pattern: which features and values its cases exercised, and which of
the required ones none did.

A results document records, per pattern, ``coverage``: feature -> value -> number of cases
(`fusionspec.conformance.cases.Case.features`). A case that exercised several values of one
feature (two different binaries in its epilogue) records them comma-joined (``"Add,Divide"``);
here each is counted on its own. The *required* items, (feature, value) pairs that the
pattern's grammar and dtype table call for, come from the suite
(`fusionspec.conformance.generate.coverage.coverage_items`) through the ``report`` command, so
this package needs nothing but the data.

>>> split_counts({"Binary": {"Add,Divide": 2, "Add": 1}})
{'Binary': {'Add': 3, 'Divide': 2}}
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from markupsafe import Markup

from .svg import CoverageCell, CoverageRow, coverage_chart

__all__ = ["Required", "CoverageView", "split_counts", "coverage_rows", "coverage_views",
           "percent", "MAX_VALUES_DRAWN"]

#: Required (feature, value) pairs of one pattern.
Required = Sequence[tuple[str, str]]

#: A feature with more distinct values than this, and none of them required, is summarized in
#: a line instead of drawn (free-text features such as a near-miss's description).
MAX_VALUES_DRAWN = 40


@dataclass(frozen=True)
class CoverageView:
    """The coverage chart of a pattern for the runs named in `label`."""

    label: str
    chart: Markup
    required: int
    exercised: int
    missing: tuple[str, ...]
    summarized: tuple[str, ...]

    @property
    def summary(self) -> str:
        if not self.required:
            return "no required items known for this pattern"
        return (f"{self.exercised} of {self.required} required items exercised "
                f"({percent(self.exercised, self.required)})")


def percent(part: int, whole: int) -> str:
    """`part` of `whole` as a percentage, rounded down, so that 100 % means all of them."""
    if whole <= 0:
        return "—"
    value = math.floor(1000 * part / whole) / 10
    return f"{value:g} %"


def split_counts(coverage: Mapping[str, Mapping[str, int]]) -> dict[str, dict[str, int]]:
    """Per feature, cases per single value (comma-joined values split)."""
    result: dict[str, dict[str, int]] = {}
    for feature, values in coverage.items():
        counts = result.setdefault(feature, {})
        for joined, count in values.items():
            for value in str(joined).split(","):
                if value:
                    counts[value] = counts.get(value, 0) + count
    return result


def coverage_rows(observed: Mapping[str, Mapping[str, int]], required: Required | None,
                  ) -> tuple[list[CoverageRow], list[str], list[str]]:
    """The chart's rows, the required items no case exercised (``feature = value``), and the
    features summarized instead of drawn.

    With `required`, the rows are its features in its order, required values first, then any
    other value seen; without it, every feature seen, values by count.
    """
    rows: list[CoverageRow] = []
    missing: list[str] = []
    summarized: list[str] = []
    if required is not None:
        wanted: dict[str, list[str]] = {}
        for feature, value in required:
            wanted.setdefault(feature, []).append(value)
        for feature, values in wanted.items():
            seen = observed.get(feature, {})
            cells = [CoverageCell(v, seen.get(v, 0)) for v in values]
            extra = sorted((v for v in seen if v not in values), key=lambda v: -seen[v])
            cells += [CoverageCell(v, seen[v], required=False) for v in extra]
            missing += [f"{feature} = {c.value}" for c in cells if c.required and not c.count]
            rows.append(CoverageRow(feature, tuple(cells)))
        return rows, missing, summarized
    for feature, seen in observed.items():
        if len(seen) > MAX_VALUES_DRAWN:
            summarized.append(f"{feature}: {len(seen)} distinct values")
            continue
        ordered = sorted(seen, key=lambda v: -seen[v])
        rows.append(CoverageRow(feature, tuple(CoverageCell(v, seen[v], required=False)
                                               for v in ordered)))
    return rows, missing, summarized


def coverage_views(pattern: str, per_run: Sequence[tuple[str, Mapping[str, Mapping[str, int]]]],
                   required: Required | None) -> tuple[CoverageView, ...]:
    """One chart when every run exercised the same (the usual case: same profile, same seed),
    else one per run. `per_run` is (run label, the pattern's ``coverage`` in that run)."""
    split = [(label, split_counts(cov)) for label, cov in per_run]
    if not split:
        return ()
    groups: list[tuple[list[str], dict[str, dict[str, int]]]] = []
    for label, counts in split:
        for labels, same in groups:
            if same == counts:
                labels.append(label)
                break
        else:
            groups.append(([label], counts))
    views = []
    for labels, counts in groups:
        rows, missing, summarized = coverage_rows(counts, required)
        label = "every run" if len(groups) == 1 and len(split) > 1 else ", ".join(labels)
        n_required = len(set(required)) if required is not None else 0
        chart = coverage_chart(rows, title=f"grammar coverage of {pattern} ({label})")
        # coverage_chart escapes every text it places, so the SVG goes into the page as it is.
        views.append(CoverageView(label, Markup(chart), n_required,
                                  n_required - len(set(missing)), tuple(missing),
                                  tuple(summarized)))
    return tuple(views)
