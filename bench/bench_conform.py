"""``fusionspec conform --jobs N`` on the reference, side by side: the ci profile run with each
job count in turn (interleaved repetitions, so load from other work falls on all of them), wall
time of the whole command and the cases judged. The results documents must agree (a run's
document does not depend on its number of jobs).

Usage: python bench/bench_conform.py [--jobs 1 2] [--repeat 3] [--out results/bench_conform.json]
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from _results import write_json


def _one(jobs: int, out: Path) -> float:
    start = time.perf_counter()
    subprocess.run([sys.executable, "-m", "fusionspec.cli", "conform", "--backend", "reference",
                    "--profile", "ci", "--jobs", str(jobs), "--out", str(out), "--json"],
                   check=True, capture_output=True, text=True)
    return time.perf_counter() - start


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--jobs", type=int, nargs="+", default=[1, 2])
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--out", type=Path, default=Path("results/bench_conform.json"))
    args = parser.parse_args()
    times: dict[int, list[float]] = {j: [] for j in args.jobs}
    cases: dict[int, int] = {}
    with tempfile.TemporaryDirectory() as tmp:
        for _ in range(args.repeat):
            for jobs in args.jobs:
                folder = Path(tmp, f"jobs-{jobs}")
                times[jobs].append(_one(jobs, folder))
                document = json.loads((folder / "results.json").read_text())
                cases[jobs] = len(document["verdicts"])
                print(f"--jobs {jobs}: {times[jobs][-1]:.2f} s ({cases[jobs]} cases)")
    first = args.jobs[0]
    rows = {str(j): {"median_s": statistics.median(t), "min_s": min(t), "runs_s": t,
                     "cases": cases[j], "ratio_to_first": statistics.median(t) /
                     statistics.median(times[first])} for j, t in times.items()}
    write_json(args.out, {"cpu_count": os.cpu_count(), "load_average": os.getloadavg(),
                          "jobs": rows})
    return 0


if __name__ == "__main__":
    sys.exit(main())
