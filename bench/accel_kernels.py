"""Building blocks of the OpenCL measurements outside `fusionspec bench`: graphs of single
partitions (element-wise chains, MatMul + BiasAdd + GELU, a 3x3 convolution + BiasAdd + ReLU,
SoftMax) and the device copy kernels whose time by profiling events is a device's copy
bandwidth, the roof of a memory-bound kernel. `bench_accel.py` measures the copy with them
and `tools/gpu_check.py` builds its GPU rows from them; the fused-against-op-by-op figures
themselves come from `fusionspec.conformance.perf`.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

import numpy as np

from fusionspec.accel.backend import AccelBackend, AccelOpByOpBackend
from fusionspec.accel.compiled import AccelCompiledPartition
from fusionspec.accel.runtime import Runtime, launch_1d
from fusionspec.reference.partitioner import partition as reference_partition
from fusionspec.spec.dtypes import DataType
from fusionspec.spec.graph import Graph, LogicalTensor, Op, Partition
from fusionspec.spec.types import Array

if TYPE_CHECKING:
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


def max_abs_diff(a: dict[int, Array], b: dict[int, Array]) -> float:
    return max(float(np.max(np.abs(a[k].astype(np.float64) - b[k].astype(np.float64))))
               for k in a)


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
    """A single partition compiled fused and (for several ops) op by op, with its inputs."""

    name: str
    partition: Partition
    inputs: dict[int, Array]
    fused: AccelCompiledPartition
    opbyop: AccelCompiledPartition | None  # None for a single-op partition


def setup_partition(name: str, graph: Graph, device: Device, rng: np.random.Generator
                    ) -> PartitionSetup:
    part = single_partition(graph)
    opbyop = AccelOpByOpBackend().compile(part, device) if len(part.ops) > 1 else None
    return PartitionSetup(name, part, chain_inputs(part, rng),
                          AccelBackend().compile(part, device), opbyop)
