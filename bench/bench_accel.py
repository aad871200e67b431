"""The OpenCL backend's kernels: fused against op by op, against the device's copy bandwidth,
and against the NumPy reference.

For elementwise chains of 2, 3 and 4 ops (the first n of ReLU -> Add -> Multiply -> Maximum;
the spec's patterns allow no more than four) over `--elements` f32 values, each built as a
fusionspec graph that the reference partitioner turns into one partition, the benchmark
measures in one process on one device:

1. the fused kernel (`AccelBackend`) and the same partition op by op (`AccelOpByOpBackend`,
   intermediates in global device memory), kernels only: inputs uploaded before the timed
   runs, outputs left on the device. Each sample times two runs: a "cold" one on freshly
   allocated buffers (`AccelCompiledPartition.time_launches(fresh=True)`, host's clock), which
   also touches its output and intermediate buffers for the first time, and a "warm" one on
   the partition's pooled buffers (`execute_timed`, profiling events), as a caller running the
   partition repeatedly would see it; the headline figures are warm;
2. copy kernels (read N floats, write N floats) on buffers of the same size: one float per
   work item, and eight per work item (vload8/vstore8; 16-wide vectors abort PoCL 3.0's LLVM on
   AVX-512 CPUs it does not know, see BENCHMARKS.md); the faster is the yardstick for each fused
   chain's effective bandwidth (bytes its partition reads and writes / time);
3. the NumPy reference (`fusionspec.reference.execute`) on the same partition.

Three compute-bound partitions follow, fused against op by op and the reference: MatMul +
BiasAdd + GELU (fp.matmul_post_ops, `--matmul` M,K,N), a 3x3 Convolution (padding 1, NCX,
OIX) + BiasAdd + ReLU (fp.conv_post_ops, `--conv` N,C,HW: C channels in and out, HW x HW
positions) and SoftMax over the last axis of a `--softmax` R,C tensor (softmax.post_ops
without post-ops: one op, so no op-by-op column). For the two GEMM partitions the rate in
GFLOP/s (a multiply-add counts twice) stands next to NumPy's sgemm (its BLAS) on the same
product shapes, timed in the same rotation: M x K by K x N for the MatMul, the convolution's
im2col product (N*HW*HW x 9C by 9C x C) for the convolution.

Timing follows the project's one method (`fusionspec.backend.timing`): the kernels (fused, op
by op, the copies) are timed by OpenCL profiling events on the device, from the start of the
first launch to the end of the last (`AccelCompiledPartition.execute_timed`), so a GPU's launch
and host-wait costs do not enter the figure; the cold runs, the reference and NumPy's sgemm by
the host's clock. Each side drops one warm-up run, then samples until the median's 95% interval
spans at most 2% of it (after min(5, `--repeats`) runs), `--budget` seconds are spent or
`--repeats` runs are in. The sides alternate within each repetition; every figure is a
median, and the JSON document keeps each side's minimum, interval and samples.
Before each side the process idles `SETTLE_S` (0.1 s): NumPy's BLAS (the reference's MatMul
and convolution, the sgemm side) and the OpenCL runtimes keep their worker threads spinning
for a while after a call (OpenBLAS for up to about 2^28 cycles), and a side timed while they
spin shares the two cores with them (the fused MatMul measured 3.5 ms so, 1.9 ms after an
idle pause).

    python bench/bench_accel.py --out results/bench_accel.json [--elements 16777216]
                                [--repeats 15] [--budget 2] [--device pocl-cpu]
                                [--matmul 512,512,512] [--conv 1,64,56] [--softmax 256,4096]
"""

from __future__ import annotations

import argparse
import os
import platform
import sys
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from _results import write_json

from fusionspec.accel.backend import AccelBackend, AccelOpByOpBackend
from fusionspec.accel.compiled import AccelCompiledPartition
from fusionspec.accel.devices import select_device
from fusionspec.accel.runtime import Runtime, launch_1d, runtime_for
from fusionspec.backend.timing import Measurement, Timing, TimingPolicy, measure
from fusionspec.reference import execute
from fusionspec.reference.partitioner import partition as reference_partition
from fusionspec.spec.dtypes import DataType
from fusionspec.spec.graph import Graph, LogicalTensor, Op, Partition
from fusionspec.spec.types import Array

if TYPE_CHECKING:  # the conformance package is not needed to run the benchmark
    from fusionspec.backend import Device

#: The chain's ops, cycled: one unary op then three binaries, each binary taking a fresh input.
CHAIN_KINDS = ("ReLU", "Add", "Multiply", "Maximum")
#: The spec's elementwise patterns (fp.unary_binary, fp.binary_post_ops) end after at most four
#: ops, so longer chains are several partitions and not a fused kernel's test.
CHAIN_LENGTHS = (2, 3, 4)
#: The yardsticks: one work item per element; eight elements per work item in vector loads
#: and stores (scalar tail); and, for comparison, the copy as a grid-stride loop over
#: `launch_1d`'s work size (what the elementwise kernels do where a GPU launch is capped).
COPY_SOURCE = """
__kernel void copy_f32(__global const float *src, __global float *dst) {
    dst[get_global_id(0)] = src[get_global_id(0)];
}
__kernel void copy_f32x8(__global const float *src, __global float *dst, const long n) {
    const long g = get_global_id(0);
    if (8 * g + 7 < n) vstore8(vload8(g, src), g, dst);
    else for (long i = 8 * g; i < n; ++i) dst[i] = src[i];
}
__kernel void copy_f32_strided(__global const float *src, __global float *dst, const long n) {
    for (long i = get_global_id(0); i < n; i += get_global_size(0)) dst[i] = src[i];
}
"""
#: CopyKernel variants: kernel name and elements per work item.
COPY_VARIANTS = {"scalar": ("copy_f32", 1), "vector": ("copy_f32x8", 8),
                 "strided": ("copy_f32_strided", 1)}


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
    """A copy of `elements` floats between two device buffers (see COPY_SOURCE; `variant` is
    a key of COPY_VARIANTS)."""

    def __init__(self, runtime: Runtime, elements: int, *, variant: str = "scalar") -> None:
        import pyopencl as cl

        self.runtime = runtime
        self.elements = elements
        self.variant = variant
        name, per_item = COPY_VARIANTS[variant]
        program = runtime.program(COPY_SOURCE, kernels=[v[0] for v in COPY_VARIANTS.values()])
        self.kernel = runtime.kernel(program, name)
        flags = cl.mem_flags.READ_WRITE
        host = np.arange(elements, dtype=np.float32)
        self.src = cl.Buffer(runtime.context, flags | cl.mem_flags.COPY_HOST_PTR, hostbuf=host)
        self.dst = cl.Buffer(runtime.context, flags, size=host.nbytes)
        self.sizes: tuple[tuple[int], tuple[int] | None] = \
            launch_1d(runtime.info, elements) if variant == "strided" else \
            ((-(-elements // per_item),), None)

    def run(self) -> float:
        """Seconds one copy takes on the device, from its profiling event (a wall clock
        around the launch and the wait would time the launch on a GPU, not the copy)."""
        import pyopencl as cl

        queue = self.runtime.profiling_queue
        if self.variant == "scalar":
            self.kernel.set_args(self.src, self.dst)
        else:
            self.kernel.set_args(self.src, self.dst, np.int64(self.elements))
        event = cl.enqueue_nd_range_kernel(queue, self.kernel, *self.sizes)
        queue.finish()
        return float(event.profile.end - event.profile.start) * 1e-9

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


def plans_bytes(compiled: AccelCompiledPartition) -> int:
    """Bytes the kernels of `compiled` move at least: each plan reads its inputs once and
    writes its outputs once (for op by op, every intermediate is written and read back)."""
    return sum(4 * int(np.prod(t.shape or ())) for plan in compiled.plans
               for t in (*plan.reads, *plan.writes))


def max_abs_diff(a: dict[int, Array], b: dict[int, Array]) -> float:
    return max(float(np.max(np.abs(a[k].astype(np.float64) - b[k].astype(np.float64))))
               for k in a)


@dataclass(frozen=True)
class Side:
    """One thing timed: `sample` runs it once and returns named timings (seconds), the first
    under `name`; `method` says how they were taken ("events" or "wall")."""

    name: str
    sample: Callable[[], dict[str, float]]
    method: str = "wall"


#: Idle time before each side's sample, so that no other side's worker threads still spin.
SETTLE_S = 0.1


def policy_for(repeats: int, budget_s: float) -> TimingPolicy:
    """The benchmark's timing policy: one warm-up run, at least min(5, `repeats`) and at most
    `repeats` kept runs, more until the median is known within 2% or `budget_s` is spent."""
    return TimingPolicy(warmup=1, min_repeats=min(5, repeats), max_repeats=repeats,
                        budget_s=budget_s, target_spread=0.02)


def alternate(sides: list[Side], policy: TimingPolicy) -> dict[str, Timing]:
    """Samples of every side in alternating order (forwards, then backwards), so that
    drifting load affects all sides alike, each after `SETTLE_S` of idle time, until each
    side's own figure is good enough under `policy` (fusionspec.backend.timing); a side that
    is done drops out of the rotation."""
    started = time.perf_counter()
    found: dict[str, Measurement] = {}
    done: dict[str, str] = {}
    rep = 0
    while len(done) < len(sides):
        for side in sides if rep % 2 == 0 else sides[::-1]:
            if side.name in done:
                continue
            time.sleep(SETTLE_S)
            for name, seconds in side.sample().items():
                method = side.method if name == side.name else "wall"
                found.setdefault(name, Measurement(policy, started, method)).add(seconds)
            why = found[side.name].stop_reason(time.perf_counter())
            if why:
                done[side.name] = why
        rep += 1
    return {name: m.timing(done.get(name.removesuffix("_cold"), "")) for name, m in
            found.items()}


def kernel_side(name: str, compiled: AccelCompiledPartition, inputs: dict[int, Array]
                ) -> Side:
    """A side timing `compiled`'s kernels: a warm run timed by profiling events (buffers
    from the partition's pool), as `name`, and a cold run on freshly allocated buffers by
    the host's clock (see the module docstring), as `name`_cold."""
    def sample() -> dict[str, float]:
        cold = compiled.time_launches(inputs, 1, fresh=True)[0]
        return {name: compiled.execute_timed(inputs), f"{name}_cold": cold}
    return Side(name, sample, "events")


def copy_side(variant: str, copy: CopyKernel) -> Side:
    return Side(variant, lambda: {variant: copy.run()}, "events")


def reference_side(part: Partition, inputs: dict[int, Array]) -> Side:
    return Side("reference", lambda: {"reference": _timed(lambda: execute(part, inputs))})


def medians(times: Mapping[str, Timing]) -> dict[str, float]:
    return {name: timing.median for name, timing in times.items()}


def timings_ms(times: Mapping[str, Timing]) -> dict[str, dict[str, object]]:
    """Every side's figures in milliseconds (method, repeats, min, median, interval,
    samples), for the JSON document."""
    return {name: timing.as_dict() for name, timing in times.items()}


def measure_chain(chain: ChainSetup, copy_s: float, copy: CopyKernel, policy: TimingPolicy
                  ) -> dict[str, Any]:
    """Kernel times of both modes and the reference's time, interleaved, with their medians."""
    want = execute(chain.partition, chain.inputs)
    diff = max(max_abs_diff(chain.fused.execute(chain.inputs), want),
               max_abs_diff(chain.opbyop.execute(chain.inputs), want))
    # Each sample stages the inputs again (outside the timed runs), so the sides alternate.
    times = alternate([kernel_side("fused", chain.fused, chain.inputs),
                       kernel_side("opbyop", chain.opbyop, chain.inputs),
                       reference_side(chain.partition, chain.inputs)], policy)
    med = medians(times)
    moved = partition_bytes(chain.partition)
    moved_opbyop = plans_bytes(chain.opbyop)
    fused_gbs = moved / med["fused"] / 1e9
    copy_gbs = copy.nbytes / copy_s / 1e9
    return dict(
        name=f"chain{chain.length}", ops=[op.kind for op in chain.partition.ops],
        kernels_fused=len(chain.fused.plans), kernels_opbyop=len(chain.opbyop.plans),
        bytes_moved_fused=moved, bytes_moved_opbyop=moved_opbyop,
        byte_ratio=moved_opbyop / moved, fused_ms=med["fused"] * 1e3,
        opbyop_ms=med["opbyop"] * 1e3, reference_ms=med["reference"] * 1e3,
        fused_cold_ms=med["fused_cold"] * 1e3, opbyop_cold_ms=med["opbyop_cold"] * 1e3,
        opbyop_over_fused=med["opbyop"] / med["fused"],
        cold_opbyop_over_fused=med["opbyop_cold"] / med["fused_cold"],
        reference_over_fused=med["reference"] / med["fused"], fused_gb_s=fused_gbs,
        opbyop_gb_s=moved_opbyop / med["opbyop"] / 1e9, copy_ms=copy_s * 1e3,
        fraction_of_copy=fused_gbs / copy_gbs, max_abs_diff=diff,
        timings_ms=timings_ms(times))


# -- compute-bound partitions ---------------------------------------------------------------

def matmul_graph(m: int, k: int, n: int) -> Graph:
    """MatMul (m x k by k x n) + BiasAdd (n) + GELU, f32: one fp.matmul_post_ops partition."""
    f32 = DataType.f32
    a, w = LogicalTensor(0, f32, (m, k)), LogicalTensor(1, f32, (k, n))
    bias = LogicalTensor(2, f32, (n,))
    mm, biased, out = (LogicalTensor(i, f32, (m, n)) for i in (3, 4, 5))
    return Graph([Op(0, "MatMul", inputs=(a, w), outputs=(mm,)),
                  Op(1, "BiasAdd", inputs=(mm, bias), outputs=(biased,)),
                  Op(2, "GELU", inputs=(biased,), outputs=(out,))]).finalize()


def conv_graph(batch: int, channels: int, hw: int) -> Graph:
    """Convolution 3x3 (padding 1, NCX/OIX) + BiasAdd + ReLU, f32: one fp.conv_post_ops
    partition."""
    f32 = DataType.f32
    shape = (batch, channels, hw, hw)
    attrs = {"strides": [1, 1], "pads_begin": [1, 1], "pads_end": [1, 1], "dilations": [1, 1],
             "data_format": "NCX", "weights_format": "OIX", "groups": 1}
    src, wei = LogicalTensor(0, f32, shape), LogicalTensor(1, f32, (channels, channels, 3, 3))
    bias = LogicalTensor(2, f32, (channels,))
    conv, biased, out = (LogicalTensor(i, f32, shape) for i in (3, 4, 5))
    return Graph([Op(0, "Convolution", inputs=(src, wei), outputs=(conv,), attrs=attrs),
                  Op(1, "BiasAdd", inputs=(conv, bias), outputs=(biased,),
                     attrs={"data_format": "NCX"}),
                  Op(2, "ReLU", inputs=(biased,), outputs=(out,))]).finalize()


def softmax_graph(rows: int, cols: int) -> Graph:
    """SoftMax over the last axis of a rows x cols f32 tensor."""
    src, dst = LogicalTensor(0, DataType.f32, (rows, cols)), \
        LogicalTensor(1, DataType.f32, (rows, cols))
    return Graph([Op(0, "SoftMax", inputs=(src,), outputs=(dst,),
                     attrs={"axis": -1})]).finalize()


@dataclass
class PartitionSetup:
    name: str
    partition: Partition
    inputs: dict[int, Array]
    fused: AccelCompiledPartition
    opbyop: AccelCompiledPartition | None  # None for a single-op partition
    flops: int  # multiply-adds count twice; 0 where no FLOP rate is reported
    gemm: tuple[int, int, int] | None = None  # (M, K, N) of NumPy's sgemm on the same product


def setup_partition(name: str, graph: Graph, device: Device, rng: np.random.Generator,
                    gemm: tuple[int, int, int] | None = None) -> PartitionSetup:
    part = single_partition(graph)
    opbyop = AccelOpByOpBackend().compile(part, device) if len(part.ops) > 1 else None
    flops = 0 if gemm is None else 2 * gemm[0] * gemm[1] * gemm[2]
    return PartitionSetup(name, part, chain_inputs(part, rng),
                          AccelBackend().compile(part, device), opbyop, flops, gemm)


def sgemm_side(shape: tuple[int, int, int], rng: np.random.Generator) -> Side:
    """NumPy's float32 matrix product (its BLAS sgemm) of an M x K by a K x N matrix."""
    m, k, n = shape
    a = rng.standard_normal((m, k)).astype(np.float32)
    b = rng.standard_normal((k, n)).astype(np.float32)
    out = np.empty((m, n), dtype=np.float32)
    return Side("sgemm", lambda: {"sgemm": _timed(lambda: np.matmul(a, b, out=out))})


def measure_partition(setup: PartitionSetup, policy: TimingPolicy) -> dict[str, Any]:
    """The fused kernels, op by op (when there are several ops) and the reference,
    interleaved, with their medians and the largest difference to the reference."""
    want = execute(setup.partition, setup.inputs)
    diff = max_abs_diff(setup.fused.execute(setup.inputs), want)
    sides = [kernel_side("fused", setup.fused, setup.inputs),
             reference_side(setup.partition, setup.inputs)]
    if setup.opbyop is not None:
        diff = max(diff, max_abs_diff(setup.opbyop.execute(setup.inputs), want))
        sides.insert(1, kernel_side("opbyop", setup.opbyop, setup.inputs))
    if setup.gemm is not None:
        sides.append(sgemm_side(setup.gemm, np.random.default_rng(1)))
    times = alternate(sides, policy)
    med = medians(times)
    result: dict[str, Any] = dict(
        name=setup.name, ops=[op.kind for op in setup.partition.ops],
        shapes=[list(t.shape or ()) for t in setup.partition.inputs],
        kernels_fused=len(setup.fused.plans), fused_ms=med["fused"] * 1e3,
        fused_cold_ms=med["fused_cold"] * 1e3, reference_ms=med["reference"] * 1e3,
        reference_over_fused=med["reference"] / med["fused"], max_abs_diff=diff,
        max_abs_reference=max(float(np.max(np.abs(v))) for v in want.values()),
        timings_ms=timings_ms(times))
    if "opbyop" in med:
        result.update(opbyop_ms=med["opbyop"] * 1e3, opbyop_cold_ms=med["opbyop_cold"] * 1e3,
                      opbyop_over_fused=med["opbyop"] / med["fused"])
    if setup.flops:
        result.update(fused_gflop_s=setup.flops / med["fused"] / 1e9,
                      reference_gflop_s=setup.flops / med["reference"] / 1e9,
                      sgemm_shape=list(setup.gemm or ()), sgemm_ms=med["sgemm"] * 1e3,
                      sgemm_gflop_s=setup.flops / med["sgemm"] / 1e9,
                      fused_over_sgemm=med["fused"] / med["sgemm"])
    return result


def _timed(fn: Callable[[], object]) -> float:
    start = time.perf_counter()
    fn()
    return time.perf_counter() - start


def run(elements: int, repeats: int, device_id: str | None, lengths: tuple[int, ...],
        matmul: tuple[int, int, int] | None = None, softmax: tuple[int, int] | None = None,
        conv: tuple[int, int, int] | None = None, budget_s: float = 2.0) -> dict[str, Any]:
    backend = AccelBackend(device_id)
    devices = backend.devices()
    if not devices:
        raise SystemExit(f"no OpenCL device: {backend.unavailable_reason()}")
    device = devices[0]
    info = select_device(device.id)
    rng = np.random.default_rng(0)
    copies = {variant: CopyKernel(runtime_for(info), elements, variant=variant)
              for variant in COPY_VARIANTS}
    if not all(copy.check() for copy in copies.values()):
        raise SystemExit("a copy kernel did not copy its input")
    chains = [setup_chain(n, elements, device, rng) for n in lengths]
    policy = policy_for(repeats, budget_s)
    copy_times = alternate([copy_side(v, c) for v, c in copies.items()], policy)
    copy_med = medians(copy_times)
    # The yardstick is the faster of the two direct copies (the grid-stride loop is shown only
    # for comparison).
    best = min(("scalar", "vector"), key=lambda v: copy_med[v])
    yardstick = copies[best]
    results = []
    for chain in chains:
        # The copy runs again next to each chain so that load drift affects both alike.
        local_copy = measure(yardstick.run, policy, method="events").median
        results.append(measure_chain(chain, local_copy, yardstick, policy))
    partitions = []
    if matmul is not None:
        m, k, n = matmul
        setup = setup_partition(f"MatMul {m}x{k}x{n} + BiasAdd + GELU",
                                matmul_graph(m, k, n), device, rng, gemm=(m, k, n))
        partitions.append(measure_partition(setup, policy))
    if conv is not None:
        batch, channels, hw = conv
        setup = setup_partition(f"Conv {batch}x{channels}x{hw}x{hw} 3x3 + BiasAdd + ReLU",
                                conv_graph(batch, channels, hw), device, rng,
                                gemm=(batch * hw * hw, 9 * channels, channels))
        partitions.append(measure_partition(setup, policy))
    if softmax is not None:
        rows, cols = softmax
        setup = setup_partition(f"SoftMax {rows}x{cols}", softmax_graph(rows, cols), device,
                                rng)
        partitions.append(measure_partition(setup, policy))
    nbytes = yardstick.nbytes
    return dict(device=device.id, device_name=info.name, driver=info.driver,
                platform=info.platform, compute_units=info.compute_units, elements=elements,
                repeats=repeats, budget_s=budget_s, load_average=list(os.getloadavg()),
                copy_ms=copy_med["scalar"] * 1e3, copy_gb_s=nbytes / copy_med["scalar"] / 1e9,
                vector_copy_ms=copy_med["vector"] * 1e3,
                vector_copy_gb_s=nbytes / copy_med["vector"] / 1e9,
                strided_copy_ms=copy_med["strided"] * 1e3,
                strided_copy_gb_s=nbytes / copy_med["strided"] / 1e9, yardstick=best,
                yardstick_gb_s=nbytes / copy_med[best] / 1e9,
                copy_timings_ms=timings_ms(copy_times), chains=results,
                partitions=partitions)


def _ints(text: str, count: int, what: str) -> tuple[int, ...] | None:
    """`count` comma-separated sizes, or None for "" / "off" (skip that partition)."""
    if text.strip().lower() in ("", "off", "none"):
        return None
    values = tuple(int(v) for v in text.split(","))
    if len(values) != count or min(values) < 1:
        raise SystemExit(f"--{what} takes {count} positive sizes, got {text!r}")
    return values


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=(__doc__ or "").split("\n\n")[0])
    parser.add_argument("--out", required=True, help="where to write the JSON results")
    parser.add_argument("--elements", type=int, default=16 * 2**20,
                        help="f32 elements per tensor (default 16Mi)")
    parser.add_argument("--repeats", type=int, default=15,
                        help="most timed runs per side (fewer once the median is known "
                             "within 2%%)")
    parser.add_argument("--budget", type=float, default=2.0,
                        help="seconds after which a side stops sampling (once it has "
                             "min(5, --repeats) runs)")
    parser.add_argument("--device", default=None, help="OpenCL device id (default: the first)")
    parser.add_argument("--lengths", default=",".join(map(str, CHAIN_LENGTHS)),
                        help="comma-separated chain lengths")
    parser.add_argument("--matmul", default="512,512,512",
                        help="M,K,N of the MatMul + BiasAdd + GELU partition ('off' skips it)")
    parser.add_argument("--conv", default="1,64,56",
                        help="N,C,HW of the 3x3 Convolution + BiasAdd + ReLU partition "
                             "('off' skips it)")
    parser.add_argument("--softmax", default="256,4096",
                        help="rows,columns of the SoftMax partition ('off' skips it)")
    args = parser.parse_args(argv)
    lengths = tuple(int(n) for n in args.lengths.split(",") if n)
    matmul = _ints(args.matmul, 3, "matmul")
    softmax = _ints(args.softmax, 2, "softmax")
    conv = _ints(args.conv, 3, "conv")
    doc = run(args.elements, args.repeats, args.device, lengths,
              matmul=None if matmul is None else (matmul[0], matmul[1], matmul[2]),
              softmax=None if softmax is None else (softmax[0], softmax[1]),
              conv=None if conv is None else (conv[0], conv[1], conv[2]), budget_s=args.budget)
    load = ", ".join(f"{v:.2f}" for v in doc["load_average"])
    print(f"device {doc['device_name']} ({doc['device']}), driver {doc['driver']}, "
          f"{doc['elements']} f32 elements, median of up to {doc['repeats']}, load average {load}")
    print(f"copy kernel: {doc['copy_ms']:.2f} ms, {doc['copy_gb_s']:.2f} GB/s; 8 per item: "
          f"{doc['vector_copy_ms']:.2f} ms, {doc['vector_copy_gb_s']:.2f} GB/s; as a "
          f"grid-stride loop: {doc['strided_copy_ms']:.2f} ms, "
          f"{doc['strided_copy_gb_s']:.2f} GB/s; yardstick: {doc['yardstick']}")
    print("warm: buffers touched by an earlier run; cold: first run on fresh buffers")
    header = (f"{'chain':<8}{'fused ms':>10}{'op-by-op ms':>13}{'ratio':>7}{'bytes':>7}"
              f"{'GB/s':>8}{'of copy':>9}{'cold ms':>9}{'cold op':>9}{'ratio':>7}"
              f"{'ref ms':>9}{'ref/fused':>11}")
    print(header)
    print("-" * len(header))
    for r in doc["chains"]:
        print(f"{r['name']:<8}{r['fused_ms']:>10.2f}{r['opbyop_ms']:>13.2f}"
              f"{r['opbyop_over_fused']:>7.2f}{r['byte_ratio']:>7.2f}{r['fused_gb_s']:>8.2f}"
              f"{r['fraction_of_copy']:>8.0%} {r['fused_cold_ms']:>9.2f}"
              f"{r['opbyop_cold_ms']:>9.2f}{r['cold_opbyop_over_fused']:>7.2f}"
              f"{r['reference_ms']:>9.2f}{r['reference_over_fused']:>11.2f}", flush=True)
    if doc["partitions"]:
        header = (f"{'partition':<40}{'fused ms':>10}{'op-by-op ms':>13}{'cold ms':>9}"
                  f"{'ref ms':>9}{'ref/fused':>11}{'GFLOP/s':>9}{'sgemm ms':>10}"
                  f"{'sgemm GFLOP/s':>15}{'max |diff|':>12}")
        print(header)
        print("-" * len(header))
        for r in doc["partitions"]:
            opbyop = f"{r['opbyop_ms']:>13.2f}" if "opbyop_ms" in r else f"{'-':>13}"
            rates = (f"{r['fused_gflop_s']:>9.1f}{r['sgemm_ms']:>10.2f}"
                     f"{r['sgemm_gflop_s']:>15.1f}") if "sgemm_ms" in r else \
                f"{'-':>9}{'-':>10}{'-':>15}"
            print(f"{r['name']:<40}{r['fused_ms']:>10.2f}{opbyop}{r['fused_cold_ms']:>9.2f}"
                  f"{r['reference_ms']:>9.2f}{r['reference_over_fused']:>11.2f}{rates}"
                  f"{r['max_abs_diff']:>12.2e}", flush=True)
    doc.update(python=platform.python_version(), numpy=np.__version__, cpus=os.cpu_count(),
               machine=platform.machine())
    write_json(args.out, doc)
    return 0


if __name__ == "__main__":
    sys.exit(main())
