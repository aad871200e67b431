"""The perf gate's comparison as Markdown: what ``fusionspec diff --markdown`` appends for two
performance documents (GitHub Actions shows ``$GITHUB_STEP_SUMMARY`` on the run's page).

Every string comes from the two documents (workload ids, errors, backend and device names), so
each is cleaned of control characters (`fusionspec.spec.text.clean_text`) and escaped for
Markdown (`fusionspec.reports.markdown`) as the results diff's Markdown is: a ``|`` cannot end
a table cell, a ``<script>`` reads back as its characters.
"""

from __future__ import annotations

from collections.abc import Sequence

from fusionspec.conformance.perf.gate import Change, PerfDiff
from fusionspec.spec.text import clean_text

from .markdown import code, text

__all__ = ["perf_diff_markdown", "SHOWN"]

#: How many entries of each list the Markdown shows.
SHOWN = 30


def _cell(value: object) -> str:
    return text(clean_text(value, 300))


def _changes(title: str, changes: Sequence[Change]) -> list[str]:
    if not changes:
        return []
    lines = [f"#### {title}", "", "| workload | side | before (ms) | after (ms) | at least |",
             "|---|---|---:|---:|---:|"]
    for c in changes[:SHOWN]:
        lines.append(f"| {_cell(c.workload)} | {_cell(c.side)} | {c.old_ms:.4g} | "
                     f"{c.new_ms:.4g} | x{c.bound:.2f} |")
    if len(changes) > SHOWN:
        lines.append(f"| … {len(changes) - SHOWN} more | | | | |")
    return [*lines, ""]


def _items(title: str, items: Sequence[str]) -> list[str]:
    if not items:
        return []
    lines = [f"#### {title}", ""] + [f"- {_cell(i)}" for i in items[:SHOWN]]
    if len(items) > SHOWN:
        lines.append(f"- … {len(items) - SHOWN} more")
    return [*lines, ""]


def perf_diff_markdown(d: PerfDiff, old: str, new: str, label: str) -> str:
    """The comparison `d` of the documents at `old` and `new` (paths, shown as code), whose new
    run is `label` (backend on device), as Markdown."""
    verdict = ("REGRESSION" if d.regressions or d.broken else "INVALID" if d.invalid
               else "INCOMPLETE" if d.incomplete
               else "NARROWED" if d.narrowed and not d.allow_narrower else "OK")
    lines = [f"### Performance: {_cell(label)} against {code(clean_text(old, 300))}", "",
             f"**{verdict}**: {len(d.regressions)} slower, {len(d.speedups)} faster of "
             f"{d.compared} workload(s) compared (new run {code(clean_text(new, 300))}; fused "
             f"against op by op beyond {d.threshold:.0%}, run-wide drift x{d.drift:.2f}).", ""]
    reach = d.detectable
    if reach is not None:
        lines += [f"Could detect: {_cell(reach.describe())}.", ""]
    if d.note:
        lines += [f"Note: {_cell(d.note)}.", ""]
    if d.incomplete:
        lines += [f"Incomplete: {_cell(d.incomplete)}.", ""]
    if d.narrowed:
        accepted = " (accepted: `--allow-narrower`)" if d.allow_narrower else \
            "; pass `--allow-narrower` if that is meant"
        lines += [f"Narrowed: {_cell(d.narrowed)}{accepted}.", ""]
    lines += _changes("Slower", d.regressions)
    lines += _items("No longer runs", d.broken)
    lines += _items("Invalid measurements", d.invalid)
    lines += _changes("Faster", d.speedups)
    lines += _items("Changed verdicts", [f"{i}: {a} -> {b}" for i, a, b in d.verdicts])
    lines += _items("Declared unsupported", d.unsupported)
    lines += _items("Only in OLD", d.only_old)
    lines += _items("Only in NEW", d.only_new)
    return "\n".join(lines) + "\n"
