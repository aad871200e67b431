"""The perf gate's noise check: repeated bench runs of one build must not trip it.

Runs `fusionspec bench` (`fusionspec.conformance.perf.bench.run_bench`) ``--runs`` times on the
same backend, device, size and workloads, writing each run's performance document
(``run-01/perf.json`` ...), then compares every pair of runs with the perf gate
(`fusionspec.conformance.perf.gate.compare`, the rule of ``fusionspec diff``) in both
directions: each run as the baseline of each other. Nothing changed between the runs, so any
regression the gate reports is noise passing for a slowdown. Writes ``noise.json`` (per
comparison the regressions and the run-wide drift) and exits 1 when the gate flagged one.

    python bench/bench_perf_noise.py --backend accel --out results/perf/noise-accel
        [--runs 10] [--size small] [--device ID] [--workload GLOB] [--threshold 0.1]
"""

from __future__ import annotations

import argparse
import itertools
import os
import sys
import time
from fnmatch import fnmatchcase
from pathlib import Path
from typing import Any

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from _results import write_json

from fusionspec.conformance.perf.bench import run_bench
from fusionspec.conformance.perf.document import load_perf, write_perf
from fusionspec.conformance.perf.gate import DEFAULT_THRESHOLD, compare
from fusionspec.conformance.perf.records import PerfDocument
from fusionspec.conformance.perf.workloads import WORKLOADS, Workload


def chosen(globs: list[str] | None) -> list[Workload]:
    if not globs:
        return list(WORKLOADS)
    found = [w for w in WORKLOADS if any(fnmatchcase(w.id, g) for g in globs)]
    if not found:
        raise SystemExit(f"--workload {','.join(globs)} matches no workload")
    return found


def compare_all(documents: list[PerfDocument], threshold: float) -> dict[str, Any]:
    """Every ordered pair of runs through the gate: the regressions each flagged."""
    comparisons = []
    for old, new in itertools.permutations(range(len(documents)), 2):
        found = compare(documents[old], documents[new], threshold)
        comparisons.append({"baseline": old + 1, "new": new + 1, "compared": found.compared,
                            "drift": found.drift,
                            "regressions": [c.describe() for c in found.regressions],
                            "broken": found.broken})
    flagged = [c for c in comparisons if c["regressions"] or c["broken"]]
    return {"runs": len(documents), "pairs": len(documents) * (len(documents) - 1) // 2,
            "comparisons": len(comparisons), "threshold": threshold,
            "comparisons_flagged": len(flagged),
            "regressions": sum(len(c["regressions"]) + len(c["broken"]) for c in comparisons),
            "drift_range": [min((c["drift"] for c in comparisons), default=1.0),
                            max((c["drift"] for c in comparisons), default=1.0)],
            "comparisons_detail": comparisons}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=(__doc__ or "").split("\n\n")[0])
    parser.add_argument("--backend", default="accel")
    parser.add_argument("--device", default=None)
    parser.add_argument("--size", choices=("small", "full"), default="small")
    parser.add_argument("--runs", type=int, default=10)
    parser.add_argument("--workload", action="append", metavar="GLOB",
                        help="workload ids or globs (default: the whole catalog)")
    parser.add_argument("--threshold", type=float, default=DEFAULT_THRESHOLD,
                        help="the gate's threshold (as fusionspec diff --threshold)")
    parser.add_argument("--out", type=Path, required=True)
    parser.add_argument("--compare-only", action="store_true",
                        help="compare the run-NN/perf.json already under --out")
    args = parser.parse_args(argv)
    if args.runs < 2:
        raise SystemExit("--runs must be 2 or more: the check compares runs")
    documents = []
    if args.compare_only:
        paths = sorted(args.out.glob("run-*/perf.json"))
        if len(paths) < 2:
            raise SystemExit(f"{args.out}: fewer than two run-NN/perf.json to compare")
        documents = [load_perf(p) for p in paths]
    else:
        workloads = chosen(args.workload)
        for run in range(1, args.runs + 1):
            started = time.perf_counter()
            doc = run_bench(args.backend, workloads, device_id=args.device, size=args.size,
                            command=f"python bench/bench_perf_noise.py (run {run})")
            path = write_perf(doc, args.out / f"run-{run:02d}" / "perf.json")
            load = ", ".join(f"{v:.2f}" for v in doc.environment.load_average or ())
            print(f"run {run}: {len(doc.workloads)} workloads in "
                  f"{time.perf_counter() - started:.1f} s, load average {load}: {path}",
                  flush=True)
            documents.append(doc)
    found = compare_all(documents, args.threshold)
    first = documents[0]
    found.update(backend=first.backend, device=first.device.to_json(), size=first.size,
                 workloads=len(first.workloads))
    print(f"{found['runs']} runs of {found['workloads']} workloads ({first.label}, "
          f"size {first.size}): {found['pairs']} pairs, "
          f"{found['comparisons']} comparisons (each way), {found['regressions']} "
          f"regression(s) flagged in {found['comparisons_flagged']}; run-wide drift "
          f"x{found['drift_range'][0]:.2f} to x{found['drift_range'][1]:.2f}")
    for c in found["comparisons_detail"]:
        for line in c["regressions"] + c["broken"]:
            print(f"  run {c['new']} against run {c['baseline']}: {line}")
    write_json(args.out / "noise.json", found)
    return 1 if found["regressions"] else 0


if __name__ == "__main__":
    sys.exit(main())
