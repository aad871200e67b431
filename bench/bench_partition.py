"""Partitioner benchmark: `fusionspec.reference.partition` on synthetic ResNet-like graphs.

Targets (issue: reference partitioner): at most 1 s for 10,000 ops on a 2-core machine, and
linear growth: the 20,000-op time at most 2.2 x the 10,000-op time. Both sizes are measured in
one run, interleaved, and the median of the repetitions is reported, so that a noisy machine
affects both sides alike.

Usage: python bench/bench_partition.py [--sizes 10000 20000] [--repeat 5] [--out results.json]
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).parent))

from synthetic import resnet_like

from fusionspec.reference.partitioner import partition


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", type=int, nargs="+", default=[10000, 20000])
    parser.add_argument("--repeat", type=int, default=5)
    parser.add_argument("--out", type=Path)
    args = parser.parse_args()
    graphs = {n: resnet_like(n).finalize() for n in args.sizes}
    times: dict[int, list[float]] = {n: [] for n in args.sizes}
    counts: dict[int, int] = {}
    for _ in range(args.repeat):
        for n, graph in graphs.items():
            start = time.perf_counter()
            parts = partition(graph)
            times[n].append(time.perf_counter() - start)
            counts[n] = len(parts)
    base = args.sizes[0]
    rows = []
    print(f"{'ops':>8} {'partitions':>11} {'median s':>9} {'min s':>7} {'ratio':>6}")
    for n in args.sizes:
        med = statistics.median(times[n])
        ratio = med / statistics.median(times[base])
        rows.append({"ops": len(graphs[n].ops), "partitions": counts[n], "median_s": med,
                     "min_s": min(times[n]), "ratio_to_first": ratio})
        print(f"{len(graphs[n].ops):>8} {counts[n]:>11} {med:>9.3f} {min(times[n]):>7.3f} "
              f"{ratio:>6.2f}")
    if args.out:
        args.out.write_text(json.dumps({"benchmark": "partition", "rows": rows}, indent=2))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
