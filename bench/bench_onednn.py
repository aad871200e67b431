"""The OpenCL backend against the real oneDNN, on the same partitions and shapes.

Each partition below is built as a fusionspec graph that both the reference partitioner and
oneDNN turn into one partition with the same ops (checked, and recorded when not), then run in
one process, alternating within each repetition:

- oneDNN's compiled partition on its CPU engine (`OnednnCompiledPartition.time_executions`:
  buffers filled beforehand, the execute call and the stream wait timed);
- the fused OpenCL kernel on every OpenCL device found (`AccelCompiledPartition.time_launches`:
  inputs uploaded beforehand, outputs left on the device).

Both therefore time the computation with the data in place. Every figure is the median of
`--repeats` samples; the outputs of each side are compared with the reference once. A sample
of a side is: `--settle-ms` of idle time (default 20), three untimed runs, then the median of
five timed runs. The idle time lets the other side's worker threads go to sleep: oneDNN's
OpenMP workers spin for a while after each call (the library's default wait policy, which
its own speed relies on), and a side timed while they spin shares the cores with them
(accel's MatMul measured 3.7 ms right after oneDNN, 2.0 ms with passive OpenMP workers). The
untimed runs wake the side's own threads, so no side is timed waking them either (one run
after the idle time cost oneDNN's MatMul 8.3 ms against 1.6 ms back to back).

    python bench/bench_onednn.py --out results/bench_onednn.json [--repeats 11] [--settle-ms 20]

The Intel CPU OpenCL runtime is one of the devices when the OpenCL loader can see it (the
``bench-onednn`` nox session arranges that when ``intel-opencl-rt`` is installed).
"""

from __future__ import annotations

import argparse
import os
import platform
import statistics
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from _results import write_json

from fusionspec.accel.backend import AccelBackend
from fusionspec.onednn import OnednnBackend
from fusionspec.reference import execute, fill_inputs
from fusionspec.reference.partitioner import partition as reference_partition
from fusionspec.spec.dtypes import DataType
from fusionspec.spec.graph import Graph, LogicalTensor, Op
from fusionspec.spec.types import Array

F32 = DataType.f32


def _t(tid: int, shape: tuple[int, ...]) -> LogicalTensor:
    return LogicalTensor(tid, F32, shape)


def binary_chain(elements: int) -> Graph:
    """Add -> ReLU -> Multiply over `elements` f32 values (fp.binary_post_ops)."""
    shape = (elements // 1024, 1024)
    return Graph([
        Op(0, "Add", [_t(0, shape), _t(1, shape)], [_t(2, shape)]),
        Op(1, "ReLU", [_t(2, shape)], [_t(3, shape)]),
        Op(2, "Multiply", [_t(3, shape), _t(4, shape)], [_t(5, shape)]),
    ])


def matmul_bias_gelu(m: int, k: int, n: int) -> Graph:
    return Graph([
        Op(0, "MatMul", [_t(0, (m, k)), _t(1, (k, n))], [_t(2, (m, n))]),
        Op(1, "BiasAdd", [_t(2, (m, n)), _t(3, (n,))], [_t(4, (m, n))]),
        Op(2, "GELU", [_t(4, (m, n))], [_t(5, (m, n))]),
    ])


def conv_bias_relu(n: int, c: int, hw: int) -> Graph:
    src, wei, dst = (n, c, hw, hw), (c, c, 3, 3), (n, c, hw, hw)
    attrs = {"strides": [1, 1], "pads_begin": [1, 1], "pads_end": [1, 1],
             "dilations": [1, 1], "data_format": "NCX", "weights_format": "OIX", "groups": 1}
    return Graph([
        Op(0, "Convolution", [_t(0, src), _t(1, wei)], [_t(2, dst)], attrs),
        Op(1, "BiasAdd", [_t(2, dst), _t(3, (c,))], [_t(4, dst)], {"data_format": "NCX"}),
        Op(2, "ReLU", [_t(4, dst)], [_t(5, dst)]),
    ])


def softmax(rows: int, cols: int) -> Graph:
    return Graph([Op(0, "SoftMax", [_t(0, (rows, cols))], [_t(1, (rows, cols))], {"axis": -1})])


CASES: dict[str, Callable[[], Graph]] = {
    "Add -> ReLU -> Multiply, 4 Mi f32": lambda: binary_chain(4 * 1024 * 1024),
    "MatMul 512x512x512 + BiasAdd + GELU": lambda: matmul_bias_gelu(512, 512, 512),
    "Convolution 1x64x56x56, 3x3 + BiasAdd + ReLU": lambda: conv_bias_relu(1, 64, 56),
    "SoftMax 256x4096": lambda: softmax(256, 4096),
}


@dataclass
class Side:
    """One contender: a label and a function timing one execution."""

    label: str
    once: Callable[[], float]
    outputs: Callable[[], dict[int, Array]]


def _close(got: dict[int, Array], want: dict[int, Array]) -> float:
    return max(float(np.max(np.abs(got[k].astype(np.float64) - want[k].astype(np.float64))))
               for k in want if k in got)


def measure(name: str, graph: Graph, onednn: OnednnBackend, accel: AccelBackend,
            repeats: int, settle_s: float = 0.02) -> dict[str, Any]:
    final = graph.finalize()
    (expected,) = reference_partition(final)
    inputs = fill_inputs(final, seed=0)
    reference = execute(final, inputs)
    want = {t.id: reference[t.id] for t in expected.outputs}
    row: dict[str, Any] = {"case": name, "ops": [op.kind for op in expected.ops]}
    parts = onednn.partition(graph)
    same = len(parts) == 1 and parts[0].op_ids == expected.op_ids
    row["onednn_same_partition"] = same
    if not same:
        row["onednn_partitions"] = [[op.kind for op in p.ops] for p in parts]
        return row
    sides: list[Side] = []
    cpu = onednn.devices()[0]
    compiled = onednn.compile(parts[0], cpu)
    sides.append(Side(f"oneDNN {onednn.library.version}",
                      lambda: compiled.time_executions(inputs, 1)[0],
                      lambda: compiled.execute(inputs)))
    for device in accel.devices():
        kernel = accel.compile(expected, device)
        sides.append(Side(f"accel {device.id}", lambda k=kernel: k.time_launches(inputs, 1)[0],
                          lambda k=kernel: k.execute(inputs)))
    times: dict[str, list[float]] = {s.label: [] for s in sides}
    for side in sides:
        side.once()  # warm-up: first-touch allocation, lazy initialisation
    for _ in range(repeats):
        for side in sides:
            time.sleep(settle_s)  # the previous side's worker threads go idle first
            for _ in range(3):
                side.once()  # wakes this side's own threads
            times[side.label].append(statistics.median(side.once() for _ in range(5)))
    row["median_ms"] = {label: 1e3 * statistics.median(ts) for label, ts in times.items()}
    row["max_abs_error"] = {s.label: _close(s.outputs(), want) for s in sides}
    base = row["median_ms"][sides[0].label]
    row["accel_over_onednn"] = {label: ms / base for label, ms in row["median_ms"].items()
                                if label != sides[0].label}
    return row


def main(argv: list[str] | None = None) -> int:
    # oneDNN's verbose checks would format a line on every execution; time the library as a
    # user runs it (the adapter turns them on only where the user left ONEDNN_VERBOSE unset).
    os.environ.setdefault("ONEDNN_VERBOSE", "none")
    parser = argparse.ArgumentParser(description=(__doc__ or "").split("\n\n")[0])
    parser.add_argument("--out", help="results JSON to write")
    parser.add_argument("--repeats", type=int, default=11)
    parser.add_argument("--settle-ms", type=float, default=20.0,
                        help="idle time before each timed run (default 20 ms)")
    args = parser.parse_args(argv)
    onednn, accel = OnednnBackend(), AccelBackend()
    if not onednn.devices():
        print(f"oneDNN is not available: {onednn.unavailable_reason()}", file=sys.stderr)
        return 2
    if not accel.devices():
        print(f"no OpenCL device: {accel.unavailable_reason()}", file=sys.stderr)
        return 2
    rows = []
    for name, build in CASES.items():
        row = measure(name, build(), onednn, accel, args.repeats, args.settle_ms / 1e3)
        rows.append(row)
        if not row["onednn_same_partition"]:
            print(f"{name}: oneDNN partitions it as {row['onednn_partitions']}; not compared")
            continue
        cells = ", ".join(f"{label} {ms:.2f} ms" for label, ms in row["median_ms"].items())
        ratios = ", ".join(f"{label} {r:.2f}x" for label, r in row["accel_over_onednn"].items())
        print(f"{name}: {cells} (accel / oneDNN: {ratios})")
    document = {
        "benchmark": "accel vs oneDNN", "repeats": args.repeats,
        "settle_ms": args.settle_ms, "rows": rows,
        "onednn": {"version": onednn.library.version, "runtime": onednn.library.cpu_runtime},
        "accel_devices": [{"id": d.id, "name": d.name, "driver": d.driver}
                          for d in accel.devices()],
        "machine": {"cpus": os.cpu_count(), "platform": platform.platform(),
                    "load_average": os.getloadavg()[0]},
    }
    if args.out:
        write_json(args.out, document)
    return 0


if __name__ == "__main__":
    sys.exit(main())
