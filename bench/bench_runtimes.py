"""The OpenCL runtimes side by side: which one should be the embedded default.

For every OpenCL device found (or those named with ``--devices``), in one run on one machine:

1. the device probe (`fusionspec.accel.probe`): does it build and run every kernel family
   without crashing;
2. cold and warm compile cost per partition, the price a conformance run pays per case: a
   deterministic sample of the suite's own partitions (the catalog instances of every pattern,
   `--sample` of them) compiled and executed once each by the OpenCL backend, first with every
   cache empty (a fresh driver cache, fusionspec's binary cache off), then again in a new
   process with the caches the first pass filled. Each pass runs in its own process, so the
   driver starts as a user's would;
3. copy bandwidth and the MatMul 512x512x512 + BiasAdd + GELU partition in GFLOP/s, from
   ``bench/bench_accel.py``'s measurements (run separately; see BENCHMARKS.md).

    python bench/bench_runtimes.py --out results/bench_runtimes.json [--sample 60]
                                   [--devices pocl-cpu,intel-cpu]
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
from typing import Any

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from _results import write_json

#: What a pass prints on its last line: per-partition seconds and the backend's counters.
_PASS_SCRIPT = """
import json, sys, time
from fusionspec.accel.backend import AccelBackend
from fusionspec.conformance.generate.instances import instance_cases
from fusionspec.reference.filling import fill_inputs
from fusionspec.reference.partitioner import partition
from fusionspec.spec.catalog import CATALOG

device_id, sample = sys.argv[1], int(sys.argv[2])
parts = [p for pattern in CATALOG for case in instance_cases(pattern)
         for p in partition(case.graph)]
step = max(1, len(parts) // sample)
parts = parts[::step][:sample]
backend = AccelBackend(device_id)
device = next(d for d in backend.devices() if d.id == device_id)
times = []
for part in parts:
    start = time.perf_counter()
    backend.compile(part, device).execute(fill_inputs(part, seed=0))
    times.append(time.perf_counter() - start)
print(json.dumps({"times": times, "counters": backend.counters()}))
"""


def _pass(device_id: str, sample: int, env: dict[str, str]) -> dict[str, Any]:
    done = subprocess.run([sys.executable, "-c", _PASS_SCRIPT, device_id, str(sample)],
                          env=env, capture_output=True, text=True, timeout=3600, check=False)
    if done.returncode != 0:
        tail = " ".join(done.stderr.strip().splitlines()[-3:])
        return {"error": f"exit {done.returncode}: {tail}"}
    result: dict[str, Any] = json.loads(done.stdout.strip().splitlines()[-1])
    return result


def _summary(found: dict[str, Any]) -> dict[str, Any]:
    if "error" in found:
        return found
    times = found["times"]
    return {"partitions": len(times), "median_ms": 1e3 * statistics.median(times),
            "mean_ms": 1e3 * statistics.mean(times), "total_s": sum(times),
            "counters": found["counters"]}


def measure(device_id: str, sample: int) -> dict[str, Any]:
    """Probe, cold pass and warm pass of one device, each in a fresh process."""
    from fusionspec.accel.devices import select_device

    info = select_device(device_id)
    with tempfile.TemporaryDirectory(prefix="fusionspec-bench-runtimes-") as scratch:
        env = {**os.environ, "XDG_CACHE_HOME": os.path.join(scratch, "cache"),
               "POCL_CACHE_DIR": os.path.join(scratch, "pocl"),
               "FUSIONSPEC_ACCEL_PROBE": "off"}
        start = time.perf_counter()
        probe = subprocess.run([sys.executable, "-m", "fusionspec.accel.probe_worker", device_id],
                               env=env, capture_output=True, text=True, timeout=600,
                               check=False)
        probe_s = time.perf_counter() - start
        said = probe.stdout.strip().splitlines()[-1:] if probe.returncode == 0 else []
        verdict = json.loads(said[0]) if said else {
            "ok": False, "reason": f"the probe died (exit {probe.returncode})"}
        cold = _summary(_pass(device_id, sample, env))
        warm = _summary(_pass(device_id, sample, env))
    return {"device": device_id, "name": info.name, "platform": info.platform,
            "driver": info.driver, "probe_ok": verdict["ok"], "probe_reason": verdict["reason"],
            "probe_s": probe_s, "cold": cold, "warm": warm}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", required=True)
    parser.add_argument("--sample", type=int, default=60,
                        help="partitions compiled per pass (default 60)")
    parser.add_argument("--devices", help="comma-separated device ids (default: all found)")
    args = parser.parse_args()
    from fusionspec.accel.devices import device_ids

    wanted = args.devices.split(",") if args.devices else device_ids()
    rows = [measure(d, args.sample) for d in wanted]
    for row in rows:
        print(f"{row['device']:<12} {row['platform']} {row['driver']}: probe "
              f"{'ok' if row['probe_ok'] else 'FAILED ' + row['probe_reason']} "
              f"({row['probe_s']:.1f} s)")
        for phase in ("cold", "warm"):
            got = row[phase]
            if "error" in got:
                print(f"  {phase}: {got['error']}")
            else:
                print(f"  {phase}: {got['partitions']} partitions, median "
                      f"{got['median_ms']:.0f} ms, mean {got['mean_ms']:.0f} ms, total "
                      f"{got['total_s']:.1f} s")
    write_json(args.out, {"sample": args.sample, "devices": rows})


if __name__ == "__main__":
    main()
