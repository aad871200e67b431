"""Coverage by method: for each way the coverage model enumerates corners (the op schemas'
items, the value classes, the dtype x attribute pairs, the layout settings, each validation
rule under each setting it reads, the side input types, the graph format, the value
boundaries), how many items it asks for, how many the runs' cases drew, and what is left with
the reason.

The methods reach the report as data (each method's items and the reasons of the ones it
leaves out, handed in by the ``report`` command); what was drawn comes from the results
documents' recorded coverage, as for the per-op table.

>>> from fusionspec.conformance.method_rows import MethodRow
>>> rows = method_coverage([{"Add.operand ranks": {"equal": 3}}], [MethodRow(
...     "schema items", "...", (("Add.operand ranks", "equal"),
...     ("Add.operand ranks", "lower"), ("SoftPlus.beta", "zero")),
...     (("SoftPlus.beta = zero", "divides by beta"),))])
>>> rows[0].items, rows[0].drawn, rows[0].left, rows[0].undrawn
(3, 1, ('SoftPlus.beta = zero: divides by beta',), ('Add.operand ranks = lower',))
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from fusionspec.conformance.method_rows import MethodRow

from .coverage import percent, split_counts

__all__ = ["MethodCoverage", "method_coverage", "methods_markdown"]


@dataclass(frozen=True)
class MethodCoverage:
    """One method's line: its items, how many some case drew, those it leaves out with the
    reason, and those no case drew for no stated reason."""

    name: str
    summary: str
    items: int
    drawn: int
    left: tuple[str, ...]
    undrawn: tuple[str, ...]

    @property
    def share(self) -> str:
        return percent(self.drawn, self.items)


def method_coverage(observed: Sequence[Mapping[str, Mapping[str, int]]],
                    methods: Sequence[MethodRow]) -> tuple[MethodCoverage, ...]:
    """Each method of `methods` against what the `observed` coverages drew."""
    drawn = {(feature, value) for coverage in observed
             for feature, values in split_counts(coverage).items()
             for value, count in values.items() if count > 0}
    rows = []
    for method in methods:
        items = set(method.items)
        left = dict(method.left)
        seen = items & drawn
        missing = sorted(f"{k} = {v}" for k, v in items - seen if f"{k} = {v}" not in left)
        rows.append(MethodCoverage(
            method.name, method.summary, len(items), len(seen),
            tuple(f"{k}: {v}" for k, v in sorted(left.items())), tuple(missing)))
    return tuple(rows)


def methods_markdown(rows: Sequence[MethodCoverage]) -> str:
    """The table BENCHMARKS.md shows: per method, its items, how many were drawn, how many it
    leaves out with a reason and how many no case drew."""
    lines = ["| method | items | drawn | left out (with a reason) | not drawn |",
             "|---|---:|---:|---:|---:|"]
    lines += [f"| {r.name} | {r.items} | {r.drawn} ({r.share}) | {len(r.left)} | "
              f"{len(r.undrawn)} |" for r in rows]
    return "\n".join(lines) + "\n"
