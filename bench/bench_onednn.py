"""The OpenCL backend against the real oneDNN on the same workloads: `fusionspec bench` on
oneDNN's CPU engine and on every OpenCL device, one run each, then their fused sides side by
side.

Everything measured comes from `fusionspec.conformance.perf` (docs/perf.md): per workload the
partitions each backend forms, the fused side against the op-by-op side on that backend
(interleaved, outputs checked against each other first, `fusionspec.backend.timing`), the
verdict and the roofline figures. Each backend writes its own performance document; this
script puts their fused medians in one table with the ratio of each OpenCL device to oneDNN.
The backends run one after another, so a ratio between backends is two runs apart (seconds to
minutes on a shared machine); a fused/op-by-op ratio is measured side by side within one.
The table names each figure's method: the OpenCL devices report their kernels' time by
profiling events (inputs staged, no host transfer), oneDNN is timed by the host's clock
around the adapter's ``execute`` (which copies inputs in and outputs out), so a ratio between
them favours the OpenCL device by the transfers' cost.

oneDNN is timed as an application runs it: `run_bench` leaves the library's verbose checks
off (``ONEDNN_VERBOSE=none``) unless the caller set them.

    python bench/bench_onednn.py --out results/perf/bench-onednn [--size full]
        [--workload GLOB] [--all] [--accel-device ID | --no-accel] [--budget S]

The Intel CPU OpenCL runtime is one of the OpenCL devices when the OpenCL loader can see it
(the ``bench-onednn`` nox session arranges that when ``intel-opencl-rt`` is installed).
"""

from __future__ import annotations

import argparse
import os
import sys
from pathlib import Path
from typing import Any

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from _results import write_json
from _selection import chosen

from fusionspec.backend import BackendUnavailableError, load_backend
from fusionspec.backend.timing import TimingPolicy
from fusionspec.conformance.grade.results import artifact_name
from fusionspec.conformance.perf.bench import FULL_POLICY, SMALL_POLICY, run_bench
from fusionspec.conformance.perf.document import write_perf
from fusionspec.conformance.perf.records import PerfDocument

#: The workloads compared without --workload or --all: the partitions this script compared
#: before it called `fusionspec bench` (an element-wise chain, MatMul with post-ops, a 3x3
#: convolution with post-ops, SoftMax), from the catalog's workloads.
DEFAULT_WORKLOADS = ("fp.binary_post_ops/*", "fp.matmul_post_ops/*",
                     "fp.conv_post_ops/resnet50-conv3-3x3", "softmax.post_ops/*")


def label(document: PerfDocument) -> str:
    device = document.device
    return f"{document.backend} {device.id} ({device.driver})"


def compare(documents: list[PerfDocument]) -> dict[str, Any]:
    """Per workload, each document's fused median (ms), verdict or error, and each later
    document's fused median over the first's (oneDNN's)."""
    names = [label(d) for d in documents]
    rows = []
    for index, record in enumerate(documents[0].workloads):
        row: dict[str, Any] = {"workload": record.id, "fused_ms": {}, "method": {},
                               "verdict": {}, "partitions": {}}
        for name, doc in zip(names, documents):
            r = doc.workloads[index]
            row["partitions"][name] = r.to_json().get("partitions")
            if r.error is not None:
                row["verdict"][name] = f"error: {r.error}"
                continue
            if r.unsupported is not None:  # a declared limitation: not measured
                row["verdict"][name] = f"unsupported: {r.unsupported}"
                continue
            row["fused_ms"][name] = r.fused.median
            row["method"][name] = r.fused.method
            row["verdict"][name] = f"{r.verdict} (x{r.ratio:.2f} op by op)"
        base = row["fused_ms"].get(names[0])
        row["over_first"] = {n: ms / base for n, ms in row["fused_ms"].items()
                             if n != names[0] and base}
        rows.append(row)
    return {"backends": names, "rows": rows}


def table(comparison: dict[str, Any]) -> str:
    names = comparison["backends"]
    lines = []
    for row in comparison["rows"]:
        lines.append(row["workload"])
        for name in names:
            ms = row["fused_ms"].get(name)
            ratio = row["over_first"].get(name)
            how = f" ({row['method'][name]})" if ms is not None else ""
            lines.append(f"  {name:<46}" + (f"{ms:>9.3f} ms{how:<9}" if ms is not None
                                             else f"{'-':>21}")
                         + (f"  x{ratio:.2f} of {names[0].split(' (')[0]}" if ratio else "")
                         + f"  {row['verdict'][name]}")
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=(__doc__ or "").split("\n\n")[0])
    parser.add_argument("--out", type=Path, required=True,
                        help="folder for each backend's perf.json and comparison.json")
    parser.add_argument("--size", choices=("small", "full"), default="full")
    parser.add_argument("--workload", action="append", metavar="GLOB",
                        help="workload ids or globs (default: " + ", ".join(DEFAULT_WORKLOADS)
                             + ")")
    parser.add_argument("--all", action="store_true", help="every workload of the catalog")
    parser.add_argument("--accel-device", action="append", metavar="ID",
                        help="OpenCL device to compare (default: every one found)")
    parser.add_argument("--no-accel", action="store_true", help="oneDNN alone")
    parser.add_argument("--budget", type=float, default=None,
                        help="seconds a side may sample after its minimum of runs")
    args = parser.parse_args(argv)
    workloads = chosen(args.workload, args.all, DEFAULT_WORKLOADS)
    policy = SMALL_POLICY if args.size == "small" else FULL_POLICY
    if args.budget is not None:
        policy = TimingPolicy(policy.warmup, policy.min_repeats, policy.max_repeats,
                              args.budget, policy.target_spread, policy.confidence)
    runs: list[tuple[str, str | None]] = [("onednn", "cpu")]
    if not args.no_accel:
        try:
            found = [d.id for d in load_backend("accel").devices()]
        except BackendUnavailableError:
            found = []
        runs += [("accel", d) for d in (args.accel_device or found)]
    command = " ".join(["python", "bench/bench_onednn.py", *(argv or sys.argv[1:])])
    documents = []
    for spec, device in runs:
        try:
            document = run_bench(spec, workloads, device_id=device, size=args.size,
                                 policy=policy, command=command)
        except BackendUnavailableError as exc:
            print(f"{spec} {device}: not available ({exc})", file=sys.stderr)
            if spec == "onednn":
                return 3
            continue
        name = artifact_name(f"{document.backend}-{document.device.id}")
        print(f"{label(document)}: {write_perf(document, args.out / name / 'perf.json')}",
              flush=True)
        documents.append(document)
    comparison = compare(documents)
    print(table(comparison))
    write_json(args.out / "comparison.json", comparison)
    return 0


if __name__ == "__main__":
    sys.exit(main())
