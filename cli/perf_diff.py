"""``fusionspec diff`` on two performance documents: the perf gate.

    fusionspec diff baseline/perf.json results/perf/NAME-DEVICE/perf.json [--threshold 0.1]

`fusionspec.cli.diff` hands over here when it is given performance documents
(`fusionspec bench` writes them). The comparison is `fusionspec.conformance.perf.gate.compare`:
a workload regresses when its fused side slowed against its op-by-op side by more than
``--threshold``, or a side slowed beyond the run-wide drift more than 2.5 times, in the most
favourable reading of the confidence intervals, each widened by its own spread (the level of
a side moves between runs about as far as the run's own spread); and when a fusion that paid in
the baseline is now slower than op by op beyond both runs' bare intervals, or is no longer
formed. The summary says what the comparison could have caught: the smallest fused slowdown
it would have flagged, given the intervals both runs measured.

A comparison also fails when it cannot vouch for the new run: a side whose interval starts at
0 s in either run (an invalid measurement), workloads of the baseline missing from the new
run (a narrower selection, a shard, renamed workloads; ``--allow-narrower`` accepts that on
purpose), a new document that says it is incomplete, or nothing compared at all.
``--markdown FILE`` appends the comparison as Markdown, every string from the documents
escaped. Exit codes: 0 without a regression, 1 with one (or a workload measured in the
baseline that no longer runs, or a comparison that cannot vouch for the new run), 2 for a
usage error.
"""

from __future__ import annotations

import argparse
import math
from pathlib import Path
from typing import TYPE_CHECKING

from fusionspec.spec.text import clean_text

from .output import UsageError, check_paths, emit

#: How many entries of each list the text output shows.
SHOWN = 30

if TYPE_CHECKING:
    from fusionspec.conformance.perf.gate import PerfDiff


def run_perf(args: argparse.Namespace) -> int:
    from fusionspec.conformance.perf.document import load_perf
    from fusionspec.conformance.perf.gate import (
        DEFAULT_ABSOLUTE_THRESHOLD,
        DEFAULT_THRESHOLD,
        compare,
    )

    threshold = DEFAULT_THRESHOLD if args.threshold is None else args.threshold
    if not 0 <= threshold < 10:
        raise UsageError(f"--threshold is a fraction (0.1 for 10%), got {threshold}")
    check_paths({"OLD": args.old, "NEW": args.new}, {"--markdown": args.markdown})
    old, new = load_perf(args.old), load_perf(args.new)
    allow = bool(getattr(args, "allow_narrower", False))
    d = compare(old, new, threshold, allow_narrower=allow)
    label = new.label
    lines = [f"{label} against {args.old}: "
             f"{len(d.regressions)} slower, {len(d.speedups)} faster of {d.compared} "
             f"workload(s) compared (fused against op by op beyond {threshold:.0%}, a side "
             f"beyond the run-wide drift x{d.drift:.2f} by x{1 + DEFAULT_ABSOLUTE_THRESHOLD:.1f}, "
             "each interval widened by its own spread; a fusion that paid and now costs)"]
    reach = d.detectable
    if reach is not None:
        lines.append(f"  could detect: {reach.describe()}")
    if d.note:
        lines.append(f"  note: {d.note}")
    lines += [f"  slower: {c.describe()}" for c in d.regressions[:SHOWN]]
    lines += [f"  no longer runs: {b}" for b in d.broken[:SHOWN]]
    lines += [f"  invalid: {b}" for b in d.invalid[:SHOWN]]
    lines += [f"  faster: {c.describe()}" for c in d.speedups[:SHOWN]]
    lines += [f"  verdict: {i}: {a} -> {b}" for i, a, b in d.verdicts[:SHOWN]]
    lines += [f"  unsupported: {u}" for u in d.unsupported[:SHOWN]]
    lines += [f"  only in OLD: {i}" for i in d.only_old[:SHOWN]]
    lines += [f"  only in NEW: {i}" for i in d.only_new[:SHOWN]]
    if d.incomplete:
        lines.append(f"  {d.incomplete}")
    narrowed = bool(d.narrowed) and not allow
    if d.narrowed:
        lines.append(f"  narrowed: {d.narrowed}" + (" (accepted: --allow-narrower)" if allow
                                                   else "; pass --allow-narrower if that is "
                                                        "meant"))
    regressed = bool(d.regressions or d.broken)
    lines.append(f"REGRESSION in {', '.join(d.patterns) or 'workloads that no longer run'}"
                 if regressed else "INVALID: measurements of 0 s" if d.invalid
                 else "INCOMPLETE" if d.incomplete else "NARROWED" if narrowed
                 else "OK: no slowdown beyond the threshold")
    if args.markdown is not None:
        from fusionspec.reports.perf_diff import perf_diff_markdown

        _append(args.markdown, perf_diff_markdown(d, str(args.old), str(args.new), label))

    def change(c: object) -> dict[str, object]:
        return dict(vars(c))

    emit(args, "\n".join(clean_text(line) for line in lines), {
        "ok": not d.failed, "threshold": threshold, "compared": d.compared, "drift": d.drift,
        "detectable": _detectable(d),
        "regressions": [change(c) for c in d.regressions], "broken": d.broken,
        "speedups": [change(c) for c in d.speedups], "patterns": d.patterns,
        "verdict_changes": [{"workload": i, "before": a, "after": b} for i, a, b in d.verdicts],
        "unsupported": d.unsupported, "only_old": d.only_old, "only_new": d.only_new,
        "invalid": d.invalid, "incomplete": d.incomplete, "narrowed": d.narrowed,
        "narrower_allowed": allow, "note": d.note})
    return 1 if d.failed else 0


def _append(path: Path, text: str) -> None:
    """Append `text` to `path` (created with its folder when missing), as the results diff
    appends its Markdown."""
    path.parent.mkdir(parents=True, exist_ok=True)
    with path.open("a", encoding="utf-8") as out:
        out.write(text)


def _finite(value: float | None) -> float | None:
    """`value`, or None where no slowdown could be caught (JSON has no infinity)."""
    return value if value is not None and math.isfinite(value) else None


def _detectable(d: PerfDiff) -> dict[str, object] | None:
    """The smallest fused slowdown each workload's comparison would have flagged, and its
    summary over the run."""
    summary = d.detectable
    if summary is None:
        return None
    return {"median": _finite(summary.median), "best": _finite(summary.best),
            "worst": _finite(summary.worst), "worst_workload": summary.worst_workload,
            "workloads": [{"workload": r.workload, "least": _finite(r.least),
                           "relative": _finite(r.relative), "absolute": _finite(r.absolute),
                           "flip": _finite(r.flip)} for r in d.reach]}
