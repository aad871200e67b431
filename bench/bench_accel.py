"""The OpenCL backend per workload, fused against op by op, and against the device's copy
bandwidth: `fusionspec bench` on one accel device, plus the one roof only an OpenCL device
can measure for itself.

The workloads, their sides (fused, op by op, the NumPy reference), the output check, the
timing (`fusionspec.backend.timing`: kernels by OpenCL profiling events, sides interleaved,
an idle pause before each sample, medians with their 95% intervals) and the verdicts are
those of `fusionspec.conformance.perf` (see docs/perf.md). This script adds the device's copy
bandwidth: copy kernels (read N floats, write N floats; one float per work item, and eight
per work item with vector loads) timed by their profiling events on the device, the faster
being the yardstick, and each workload's fused bandwidth as a share of it
(``device_copy_share`` in the record's ``roofline``; ``device_copy_gb_s`` in the document's
``yardsticks``). NumPy's copy, the roof `fusionspec bench` records on CPU devices, measures
the host's memory through NumPy; on a GPU only the device's own copy is a roof.

The document is a performance document (``perf.json``): `fusionspec report`, `fusionspec diff`
and `fusionspec findings` read it like any other.

    python bench/bench_accel.py --out results/perf/bench-accel [--device pocl-cpu]
        [--size full] [--workload GLOBS] [--all] [--budget S] [--elements 16777216]
"""

from __future__ import annotations

import argparse
import dataclasses
import os
import sys
from pathlib import Path
from typing import Any

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
# The graph builders and the copy kernel live beside this script; tools/gpu_check.py takes
# them from here.
from _selection import chosen
from accel_kernels import (  # noqa: F401  (re-exported for tools/gpu_check.py)
    COPY_VARIANTS,
    CopyKernel,
    conv_graph,
    matmul_graph,
    single_partition,
    softmax_graph,
)

from fusionspec.backend import BackendUnavailableError, load_backend
from fusionspec.backend.registry import select_device
from fusionspec.backend.timing import TimingPolicy, interleave
from fusionspec.conformance.perf.bench import FULL_POLICY, SMALL_POLICY, run_bench
from fusionspec.conformance.perf.document import write_perf
from fusionspec.conformance.perf.records import PerfDocument, Roofline, Yardsticks

#: The workloads measured without --workload or --all: a GEMM, a convolution, SoftMax and
#: the memory-bound element-wise patterns, the partitions this script measured before it
#: called `fusionspec bench`.
DEFAULT_WORKLOADS = ("fp.matmul_post_ops/bert-ffn-gelu", "fp.conv_post_ops/resnet50-conv3-3x3",
                     "softmax.post_ops/bert-attention-softmax-bf16", "fp.unary_binary/*",
                     "fp.binary_post_ops/*")
#: Exit code when there is no OpenCL device (as `fusionspec bench`).
UNAVAILABLE_EXIT = 3


def device_copy(device_id: str, elements: int, policy: TimingPolicy) -> dict[str, Any]:
    """The device's copy bandwidth by events: both direct copy kernels in alternation, the
    faster median the yardstick."""
    from fusionspec.accel.devices import select_device as opencl_device
    from fusionspec.accel.runtime import runtime_for

    runtime = runtime_for(opencl_device(device_id))
    copies = {v: CopyKernel(runtime, elements, variant=v) for v in ("scalar", "vector")}
    for variant, copy in copies.items():
        if not copy.check():
            raise SystemExit(f"the {variant} copy kernel did not copy its input")
    times = interleave({v: c.run for v, c in copies.items()}, policy,
                       methods=dict.fromkeys(copies, "events"))
    best = min(times, key=lambda v: times[v].median)
    nbytes = copies[best].nbytes
    return {"device_copy_gb_s": nbytes / times[best].median / 1e9,
            "device_copy_variant": best, "device_copy_elements": elements,
            "device_copy_gb_s_by_variant": {v: nbytes / t.median / 1e9
                                            for v, t in times.items()}}


def add_device_copy(document: PerfDocument, copy: dict[str, Any]) -> PerfDocument:
    """`document` with the device's copy yardstick and each workload's share of it."""
    yard = document.yardsticks or Yardsticks()
    extra = {**yard.extra, **{k: v for k, v in copy.items()
                              if k != "device_copy_gb_s_by_variant"}}
    for variant, gb_s in copy["device_copy_gb_s_by_variant"].items():
        extra[f"device_copy_{variant}_gb_s"] = gb_s
    workloads = []
    for record in document.workloads:
        roof = record.roofline
        if roof is not None and roof.gb_s is not None:
            share = {**roof.extra, "device_copy_share": roof.gb_s / copy["device_copy_gb_s"]}
            record = dataclasses.replace(record, roofline=dataclasses.replace(roof, extra=share))
        workloads.append(record)
    return dataclasses.replace(document, yardsticks=dataclasses.replace(yard, extra=extra),
                               workloads=tuple(workloads))


def table(document: PerfDocument) -> str:
    device = document.device
    yard = document.yardsticks or Yardsticks()
    load = document.environment.load_average or ()
    lines = [f"accel on {device.name} ({device.id}, {device.driver}), size "
             f"{document.size}, load average " + ", ".join(f"{v:.2f}" for v in load),
             f"device copy {yard.extra.get('device_copy_gb_s', 0):.1f} GB/s "
             f"({yard.extra.get('device_copy_variant')}); NumPy copy "
             f"{yard.copy_gb_s or 0:.1f} GB/s, sgemm {yard.gemm_gflop_s or 0:.1f} "
             "GFLOP/s"]
    head = (f"{'workload':<56}{'fused ms':>10}{'op-by-op':>10}{'ratio':>7}  {'verdict':<20}"
            f"{'GFLOP/s':>9}{'GB/s':>8}{'of copy':>9}{'ref ms':>9}")
    lines += [head, "-" * len(head)]
    for r in document.workloads:
        if r.error is not None:
            lines.append(f"{r.id:<56}  error: {r.error}")
            continue
        if r.unsupported is not None:  # a declared limitation: not measured
            lines.append(f"{r.id:<56}  unsupported: {r.unsupported}")
            continue
        roof, side = r.roofline or Roofline(), r.side("reference")
        ref = f"{side.median:>9.3f}" if side is not None else f"{'-':>9}"
        lines.append(f"{r.id:<56}{r.fused.median:>10.3f}"
                     f"{r.opbyop.median:>10.3f}{r.ratio:>7.2f}  {r.verdict:<20}"
                     f"{roof.gflop_s:>9.2f}{roof.gb_s:>8.2f}"
                     f"{roof.extra.get('device_copy_share', 0):>9.0%}{ref}")
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=(__doc__ or "").split("\n\n")[0])
    parser.add_argument("--out", type=Path, required=True, help="folder for perf.json")
    parser.add_argument("--device", default=None, help="OpenCL device id (default: the first)")
    parser.add_argument("--size", choices=("small", "full"), default="full")
    parser.add_argument("--workload", action="append", metavar="GLOB",
                        help="workload ids or globs (default: " + ", ".join(DEFAULT_WORKLOADS)
                             + ")")
    parser.add_argument("--all", action="store_true", help="every workload of the catalog")
    parser.add_argument("--budget", type=float, default=None,
                        help="seconds a side may sample after its minimum of runs")
    parser.add_argument("--elements", type=int, default=16 * 2**20,
                        help="f32 elements the copy yardstick moves (default 16Mi)")
    parser.add_argument("--no-reference", action="store_true",
                        help="leave out the NumPy reference side")
    args = parser.parse_args(argv)
    workloads = chosen(args.workload, args.all, DEFAULT_WORKLOADS)
    policy = SMALL_POLICY if args.size == "small" else FULL_POLICY
    if args.budget is not None:
        policy = TimingPolicy(policy.warmup, policy.min_repeats, policy.max_repeats,
                              args.budget, policy.target_spread, policy.confidence)
    try:
        device = select_device(load_backend("accel"), args.device)
    except BackendUnavailableError as exc:
        print(f"no OpenCL device: {exc}", file=sys.stderr)
        return UNAVAILABLE_EXIT
    copy = device_copy(device.id, args.elements, policy)
    command = " ".join(["python", "bench/bench_accel.py", *(argv or sys.argv[1:])])
    document = run_bench("accel", workloads, device_id=device.id, size=args.size,
                         policy=policy, reference=not args.no_reference, command=command)
    document = add_device_copy(document, copy)
    written = write_perf(document, args.out / "perf.json")
    print(table(document))
    print(f"performance document: {written}")
    return 1 if any(r.error is not None for r in document.workloads) else 0


if __name__ == "__main__":
    sys.exit(main())
