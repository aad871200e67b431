"""``fusionspec diff`` on two performance documents: the perf gate.

    fusionspec diff baseline/perf.json results/perf/NAME-DEVICE/perf.json [--threshold 0.1]

`fusionspec.cli.diff` hands over here when it is given performance documents
(`fusionspec bench` writes them). The comparison is `fusionspec.conformance.perf.gate.compare`:
a workload regresses when its fused side slowed against its op-by-op side by more than
``--threshold``, or a side slowed beyond the run-wide drift more than 2.5 times, in the most
favourable reading of the confidence intervals, each widened by its own spread (the level of
a side moves between runs about as far as the run's own spread). Exit codes: 0 without a
regression, 1 with one (or a workload measured in the baseline that no longer runs), 2 for a
usage error.
"""

from __future__ import annotations

import argparse

from .output import UsageError, emit

#: How many entries of each list the text output shows.
SHOWN = 30


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
    old, new = load_perf(args.old), load_perf(args.new)
    d = compare(old, new, threshold)
    lines = [f"{new['backend']} on {new['device']['id']} against {args.old}: "
             f"{len(d.regressions)} slower, {len(d.speedups)} faster of {d.compared} "
             f"workload(s) compared (fused against op by op beyond {threshold:.0%}, a side "
             f"beyond the run-wide drift x{d.drift:.2f} by x{1 + DEFAULT_ABSOLUTE_THRESHOLD:.1f}, "
             "each interval widened by its own spread)"]
    if d.note:
        lines.append(f"  note: {d.note}")
    lines += [f"  slower: {c.describe()}" for c in d.regressions[:SHOWN]]
    lines += [f"  no longer runs: {b}" for b in d.broken[:SHOWN]]
    lines += [f"  faster: {c.describe()}" for c in d.speedups[:SHOWN]]
    lines += [f"  verdict: {i}: {a} -> {b}" for i, a, b in d.verdicts[:SHOWN]]
    lines += [f"  only in OLD: {i}" for i in d.only_old[:SHOWN]]
    lines += [f"  only in NEW: {i}" for i in d.only_new[:SHOWN]]
    lines.append(f"REGRESSION in {', '.join(d.patterns) or 'workloads that no longer run'}"
                 if d.failed else "OK: no slowdown beyond the threshold")

    def change(c: object) -> dict[str, object]:
        return dict(vars(c))

    emit(args, "\n".join(lines), {
        "ok": not d.failed, "threshold": threshold, "compared": d.compared, "drift": d.drift,
        "regressions": [change(c) for c in d.regressions], "broken": d.broken,
        "speedups": [change(c) for c in d.speedups], "patterns": d.patterns,
        "verdict_changes": [{"workload": i, "before": a, "after": b} for i, a, b in d.verdicts],
        "only_old": d.only_old, "only_new": d.only_new, "note": d.note})
    return 1 if d.failed else 0
