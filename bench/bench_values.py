"""How clean the suite's clean cases are: the share of NaN/inf outputs and of weak-signal outputs.

Draws the valid and near-miss cases of the ci profile (the same cases `fusionspec conform`
judges), fills each from its value domains with seed 0, runs the reference and computes the
error bounds, and reports per pattern, for the cases carrying clean signal and for the corner
cases apart:

- the share of output elements that are NaN or inf (target: under 5% per pattern for the clean
  cases; a corner case is meant to have some);
- the share of output elements with weak signal (an uncertain element, or a bound above 1/16
  of the value);
- how many clean cases the generator marked ``conditioning: weak`` (no clean plan helped).

    python bench/bench_values.py --out results/bench_values.json [--patterns a,b]
"""

from __future__ import annotations

import argparse
import os
import sys
from collections import defaultdict
from typing import Any

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from _results import write_json


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", help="write the figures as JSON here")
    parser.add_argument("--patterns", help="comma-separated pattern ids (default: all)")
    args = parser.parse_args(argv)

    import numpy as np

    from fusionspec.conformance.cases import CaseKind
    from fusionspec.conformance.generate.values import output_health
    from fusionspec.conformance.selection import Selection
    from fusionspec.conformance.suite import PROFILES, draw_cases

    ids = tuple(args.patterns.split(",")) if args.patterns else ()
    rows: list[dict[str, Any]] = []
    for pattern in Selection(patterns=ids).validate().entries():
        tally: dict[str, list[float]] = defaultdict(lambda: [0.0, 0.0, 0.0, 0.0])
        weak_cases = 0
        for kind in (CaseKind.valid, CaseKind.near_miss):
            for case in draw_cases(pattern, kind, PROFILES["ci"]):
                graph = case.graph.finalize()
                size = sum(int(np.prod(t.shape or ())) for t in graph.output_tensors)
                nonfinite, weak = output_health(graph, case.values)
                signal = str(case.features.get("signal", "clean"))
                entry = tally[signal]
                entry[0] += 1
                entry[1] += size
                entry[2] += nonfinite * size
                entry[3] += weak * size
                weak_cases += case.features.get("conditioning") == "weak"
        row: dict[str, Any] = {"pattern": pattern.id, "weak_clean_cases": weak_cases}
        for signal, (cases, size, nonfinite, weak) in sorted(tally.items()):
            row[signal] = {"cases": int(cases), "elements": int(size),
                           "nonfinite_share": nonfinite / size if size else 0.0,
                           "weak_share": weak / size if size else 0.0}
        rows.append(row)
        clean = row.get("clean", {})
        corner = row.get("corner", {})
        print(f"{pattern.id:34s} clean {clean.get('cases', 0):4d} cases: "
              f"{100 * clean.get('nonfinite_share', 0):5.2f}% NaN/inf, "
              f"{100 * clean.get('weak_share', 0):5.2f}% weak ({weak_cases} weak cases); "
              f"corner {corner.get('cases', 0):3d} cases: "
              f"{100 * corner.get('nonfinite_share', 0):5.1f}% NaN/inf")
    worst = max((r.get("clean", {}).get("nonfinite_share", 0.0) for r in rows), default=0.0)
    print(f"largest NaN/inf share of clean outputs in a pattern: {100 * worst:.2f}%")
    if args.out:
        write_json(args.out, {"profile": "ci", "seed": 0, "patterns": rows,
                              "max_clean_nonfinite_share": worst})
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
