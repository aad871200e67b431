"""The OpenCL backend's kernels: fused against op by op, against the device's copy bandwidth,
and against the NumPy reference.

For elementwise chains of 2, 3 and 4 ops (the first n of ReLU -> Add -> Multiply -> Maximum;
the spec's patterns allow no more than four) over `--elements` f32 values, each built as a
fusionspec graph that the reference partitioner turns into one partition, the benchmark
measures in one process on one device:

1. the fused kernel (`AccelBackend`) and the same partition op by op (`AccelOpByOpBackend`,
   intermediates in global device memory), kernels only: inputs uploaded before the timed
   run, outputs left on the device (`AccelCompiledPartition.time_launches`);
2. a trivial copy kernel (read N floats, write N floats) on buffers of the same size, whose
   bandwidth is the yardstick for each fused chain's effective bandwidth (bytes its partition
   reads and writes / time);
3. the NumPy reference (`fusionspec.reference.execute`) on the same partition.

The sides alternate within each repetition; every figure is the median of `--repeats` runs.

    python bench/bench_accel.py --out results/bench_accel.json [--elements 16777216]
                                [--repeats 15] [--device pocl-cpu]
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
from typing import TYPE_CHECKING, Any

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from _results import write_json

from fusionspec.accel.backend import AccelBackend, AccelOpByOpBackend
from fusionspec.accel.compiled import AccelCompiledPartition
from fusionspec.accel.devices import select_device
from fusionspec.accel.runtime import Runtime, launch_1d, runtime_for
from fusionspec.reference import execute
from fusionspec.reference.partitioner import partition as reference_partition
from fusionspec.spec.dtypes import DataType
from fusionspec.spec.graph import Graph, LogicalTensor, Op, Partition

if TYPE_CHECKING:  # the conformance package is not needed to run the benchmark
    from fusionspec.conformance.backend import Device

Array = np.ndarray[Any, np.dtype[Any]]

#: The chain's ops, cycled: one unary op then three binaries, each binary taking a fresh input.
CHAIN_KINDS = ("ReLU", "Add", "Multiply", "Maximum")
#: The spec's elementwise patterns (fp.unary_binary, fp.binary_post_ops) end after at most four
#: ops, so longer chains are several partitions and not a fused kernel's test.
CHAIN_LENGTHS = (2, 3, 4)
#: The yardstick, one work item per element, and the same copy written as the backend's
#: elementwise kernels loop (a grid-stride loop over `launch_1d`'s work size) for comparison.
COPY_SOURCE = """
__kernel void copy_f32(__global const float *src, __global float *dst) {
    dst[get_global_id(0)] = src[get_global_id(0)];
}
__kernel void copy_f32_strided(__global const float *src, __global float *dst, const long n) {
    for (long i = get_global_id(0); i < n; i += get_global_size(0)) dst[i] = src[i];
}
"""


def chain_graph(length: int, elements: int) -> Graph:
    """A chain of `length` elementwise f32 ops over `elements` values (see CHAIN_KINDS)."""
    shape = (elements,)
    ops: list[Op] = []
    current = LogicalTensor(0, DataType.f32, shape)
    next_id = 1
    for index in range(length):
        kind = CHAIN_KINDS[index % len(CHAIN_KINDS)]
        inputs = [current]
        if kind != "ReLU":
            inputs.append(LogicalTensor(next_id, DataType.f32, shape))
            next_id += 1
        out = LogicalTensor(next_id, DataType.f32, shape)
        next_id += 1
        ops.append(Op(index, kind, inputs=tuple(inputs), outputs=(out,)))
        current = out
    return Graph(ops).finalize()


def single_partition(graph: Graph) -> Partition:
    """The graph's only partition; the benchmark is meaningless if the partitioner splits it."""
    parts = reference_partition(graph)
    if len(parts) != 1:
        raise SystemExit(f"the partitioner split a {len(graph.ops)}-op chain into "
                         f"{len(parts)} partitions; expected one")
    return parts[0]


def chain_inputs(part: Partition, rng: np.random.Generator) -> dict[int, Array]:
    return {t.id: rng.standard_normal(t.shape or ()).astype(np.float32) for t in part.inputs}


def partition_bytes(part: Partition) -> int:
    """Bytes a fused kernel must move at least: every input read once, every output written."""
    return sum(4 * int(np.prod(t.shape or ())) for t in (*part.inputs, *part.outputs))


class CopyKernel:
    """A copy of `elements` floats between two device buffers (see COPY_SOURCE)."""

    def __init__(self, runtime: Runtime, elements: int, *, strided: bool = False) -> None:
        import pyopencl as cl

        self.runtime = runtime
        self.elements = elements
        self.strided = strided
        program = runtime.program(COPY_SOURCE)
        self.kernel = runtime.kernel(program, "copy_f32_strided" if strided else "copy_f32")
        flags = cl.mem_flags.READ_WRITE
        host = np.arange(elements, dtype=np.float32)
        self.src = cl.Buffer(runtime.context, flags | cl.mem_flags.COPY_HOST_PTR, hostbuf=host)
        self.dst = cl.Buffer(runtime.context, flags, size=host.nbytes)
        self.sizes: tuple[tuple[int], tuple[int] | None] = \
            launch_1d(runtime.info, elements) if strided else ((elements,), None)

    def run(self) -> float:
        """Seconds one copy takes (wall clock until the queue drains)."""
        import pyopencl as cl

        queue = self.runtime.queue
        start = time.perf_counter()
        if self.strided:
            self.kernel.set_args(self.src, self.dst, np.int64(self.elements))
        else:
            self.kernel.set_args(self.src, self.dst)
        cl.enqueue_nd_range_kernel(queue, self.kernel, *self.sizes)
        queue.finish()
        return time.perf_counter() - start

    def check(self) -> bool:
        import pyopencl as cl

        self.run()
        out = np.empty(self.elements, dtype=np.float32)
        cl.enqueue_copy(self.runtime.queue, out, self.dst)
        self.runtime.queue.finish()
        return bool(np.array_equal(out, np.arange(self.elements, dtype=np.float32)))

    @property
    def nbytes(self) -> int:
        return 2 * 4 * self.elements


@dataclass
class ChainSetup:
    length: int
    partition: Partition
    inputs: dict[int, Array]
    fused: AccelCompiledPartition
    opbyop: AccelCompiledPartition


def setup_chain(length: int, elements: int, device: Device, rng: np.random.Generator
                ) -> ChainSetup:
    part = single_partition(chain_graph(length, elements))
    return ChainSetup(length, part, chain_inputs(part, rng),
                      AccelBackend().compile(part, device),
                      AccelOpByOpBackend().compile(part, device))


def max_abs_diff(a: dict[int, Array], b: dict[int, Array]) -> float:
    return max(float(np.max(np.abs(a[k].astype(np.float64) - b[k].astype(np.float64))))
               for k in a)


def measure_chain(chain: ChainSetup, copy_s: float, copy: CopyKernel, repeats: int
                  ) -> dict[str, Any]:
    """Kernel times of both modes and the reference's time, interleaved, with their medians."""
    want = execute(chain.partition, chain.inputs)
    diff = max(max_abs_diff(chain.fused.execute(chain.inputs), want),
               max_abs_diff(chain.opbyop.execute(chain.inputs), want))
    # One run per time_launches call keeps the sides alternating; each call uploads the inputs
    # again, outside the timed part.
    sides: list[tuple[str, Callable[[], float]]] = [
        ("fused", lambda: chain.fused.time_launches(chain.inputs, 1)[0]),
        ("opbyop", lambda: chain.opbyop.time_launches(chain.inputs, 1)[0]),
        ("reference", lambda: _timed(lambda: execute(chain.partition, chain.inputs))),
    ]
    times: dict[str, list[float]] = {name: [] for name, _ in sides}
    for rep in range(repeats):
        for name, fn in sides if rep % 2 == 0 else sides[::-1]:
            times[name].append(fn())
    med = {name: statistics.median(values) for name, values in times.items()}
    moved = partition_bytes(chain.partition)
    fused_gbs = moved / med["fused"] / 1e9
    copy_gbs = copy.nbytes / copy_s / 1e9
    return dict(
        name=f"chain{chain.length}", ops=[op.kind for op in chain.partition.ops],
        kernels_fused=len(chain.fused.plans), kernels_opbyop=len(chain.opbyop.plans),
        bytes_moved_fused=moved, fused_ms=med["fused"] * 1e3, opbyop_ms=med["opbyop"] * 1e3,
        reference_ms=med["reference"] * 1e3, opbyop_over_fused=med["opbyop"] / med["fused"],
        reference_over_fused=med["reference"] / med["fused"], fused_gb_s=fused_gbs,
        fraction_of_copy=fused_gbs / copy_gbs, max_abs_diff=diff,
        samples_ms={k: [v * 1e3 for v in vs] for k, vs in times.items()})


def _timed(fn: Callable[[], object]) -> float:
    start = time.perf_counter()
    fn()
    return time.perf_counter() - start


def run(elements: int, repeats: int, device_id: str | None, lengths: tuple[int, ...]
        ) -> dict[str, Any]:
    backend = AccelBackend(device_id)
    devices = backend.devices()
    if not devices:
        raise SystemExit(f"no OpenCL device: {backend.unavailable_reason()}")
    device = devices[0]
    info = select_device(device.id)
    rng = np.random.default_rng(0)
    copy = CopyKernel(runtime_for(info), elements)
    strided = CopyKernel(runtime_for(info), elements, strided=True)
    if not (copy.check() and strided.check()):
        raise SystemExit("a copy kernel did not copy its input")
    chains = [setup_chain(n, elements, device, rng) for n in lengths]
    copy_times: list[float] = []
    strided_times: list[float] = []
    for _ in range(repeats):
        copy_times.append(copy.run())
        strided_times.append(strided.run())
    results = []
    for chain in chains:
        # The copy runs again next to each chain so that load drift affects both alike.
        local_copy = statistics.median([copy.run() for _ in range(max(3, repeats // 2))])
        results.append(measure_chain(chain, local_copy, copy, repeats))
    copy_s, strided_s = statistics.median(copy_times), statistics.median(strided_times)
    return dict(device=device.id, device_name=info.name, driver=info.driver,
                platform=info.platform, compute_units=info.compute_units, elements=elements,
                repeats=repeats, copy_ms=copy_s * 1e3, copy_gb_s=copy.nbytes / copy_s / 1e9,
                strided_copy_ms=strided_s * 1e3, strided_copy_gb_s=copy.nbytes / strided_s / 1e9,
                chains=results)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=(__doc__ or "").split("\n\n")[0])
    parser.add_argument("--out", required=True, help="where to write the JSON results")
    parser.add_argument("--elements", type=int, default=16 * 2**20,
                        help="f32 elements per tensor (default 16Mi)")
    parser.add_argument("--repeats", type=int, default=15, help="timed runs per side (median)")
    parser.add_argument("--device", default=None, help="OpenCL device id (default: the first)")
    parser.add_argument("--lengths", default=",".join(map(str, CHAIN_LENGTHS)),
                        help="comma-separated chain lengths")
    args = parser.parse_args(argv)
    lengths = tuple(int(n) for n in args.lengths.split(",") if n)
    doc = run(args.elements, args.repeats, args.device, lengths)
    print(f"device {doc['device_name']} ({doc['device']}), driver {doc['driver']}, "
          f"{doc['elements']} f32 elements, median of {doc['repeats']}")
    print(f"copy kernel: {doc['copy_ms']:.2f} ms, {doc['copy_gb_s']:.2f} GB/s; as a "
          f"grid-stride loop: {doc['strided_copy_ms']:.2f} ms, "
          f"{doc['strided_copy_gb_s']:.2f} GB/s")
    header = (f"{'chain':<8}{'fused ms':>10}{'op-by-op ms':>13}{'ratio':>7}{'GB/s':>8}"
              f"{'of copy':>9}{'ref ms':>9}{'ref/fused':>11}")
    print(header)
    print("-" * len(header))
    for r in doc["chains"]:
        print(f"{r['name']:<8}{r['fused_ms']:>10.2f}{r['opbyop_ms']:>13.2f}"
              f"{r['opbyop_over_fused']:>7.2f}{r['fused_gb_s']:>8.2f}"
              f"{r['fraction_of_copy']:>8.0%} {r['reference_ms']:>9.2f}"
              f"{r['reference_over_fused']:>11.2f}", flush=True)
    doc.update(python=platform.python_version(), numpy=np.__version__, cpus=os.cpu_count(),
               machine=platform.machine())
    write_json(args.out, doc)
    return 0


if __name__ == "__main__":
    sys.exit(main())
