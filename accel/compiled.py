"""Executing kernel plans: the compiled partition of the OpenCL backend.

`AccelCompiledPartition` builds its plans' programs when it is created (so a build error
surfaces at compile time, as `KernelBuildError`) and uploads their tables (`TableArg`: the
per-channel and interpolation values a kernel takes as arguments) once; `execute` then:

1. checks each input array against its logical tensor (as the reference's executor does) and
   uploads it once: an array of the tensor's shape goes up dense, a flat 1-D buffer of a tensor
   with logical strides goes up as it is and is read through those strides;
2. takes a device buffer for each written tensor (dense, in its dtype's storage type) and each
   scratch buffer, binds every kernel parameter (`fusionspec.accel.plan`) and enqueues the
   launches, plan after plan; tensors passed between plans (op-by-op mode) stay on the device;
3. reads back the partition's outputs only, and gives its buffers back.

Buffers come from a pool kept by the compiled partition, keyed by size: the first `execute`
allocates, later ones reuse what the previous call gave back, so a partition run in a loop pays
no allocation and, on a CPU device, no first-touch page faults after its first call (a fresh
64 MiB output costs 11-17 ms of page faults there, more than the kernel that fills it).
`allocations` counts the device buffers the partition has allocated. The pool holds at most
what concurrent calls had in use at once; it goes with the compiled partition.

`execute_timed` stages a run as `execute` does and returns the seconds its kernels took on the
device, read from profiling events (the optional method of `fusionspec.backend.timing`).
Timing asks how fast repeated runs are, which is what the specialised kernels are for: a
partition the backend compiled in the table form (``form="auto"``: a program that pays for
itself when it runs once) is given `for_timing`, and `execute_timed` and `time_launches` run
the partition compiled in the specialised form instead (built on their first call), so the
benchmarks time the same kernels whatever the size.
`time_launches` does steps 1 and 2 once, then times repeated runs of the launches alone (for
the benchmarks, bench/bench_accel.py and bench/bench_onednn.py); with ``fresh=True`` its
buffers are newly allocated (and not pooled), so its first run shows the cold cost.
"""

from __future__ import annotations

import math
import threading
from collections.abc import Callable, Mapping, Sequence
from typing import Any

import numpy as np

from fusionspec.reference.dtypes import numpy_dtype
from fusionspec.reference.errors import InputMismatchError
from fusionspec.spec.graph import LogicalTensor, Partition, row_major_strides
from fusionspec.spec.types import Array

from .codegen.access import known_shape
from .codegen.types import HOST, check_supported, from_host, to_host
from .plan import (
    BufferArg,
    KernelPlan,
    Launch,
    LongsArg,
    Param,
    ScalarArg,
    ScratchArg,
    StrideArg,
    TableArg,
)
from .runtime import Runtime

__all__ = ["AccelCompiledPartition"]

_SCALARS: dict[str, type[np.generic]] = {"int": np.int32, "uint": np.uint32, "long": np.int64,
                                         "float": np.float32}


class AccelCompiledPartition:
    """A partition compiled to OpenCL kernels (one plan when fused, one per op otherwise)."""

    def __init__(self, partition: Partition, runtime: Runtime, plans: Sequence[KernelPlan],
                 *, for_timing: Callable[[], AccelCompiledPartition] | None = None) -> None:
        self.partition = partition
        self.runtime = runtime
        self.plans = tuple(plans)
        # What `execute_timed` and `time_launches` run instead, made on first use (module doc).
        self._for_timing = for_timing
        self._timed: AccelCompiledPartition | None = None
        #: Device buffers this partition has allocated for inputs, outputs and scratch.
        self.allocations = 0
        self._pool: dict[int, list[Any]] = {}
        self._pool_lock = threading.Lock()
        self._kernels: list[list[Any]] = []
        # Tables are constant for the partition: uploaded now, bound on every execute.
        self._tables: dict[TableArg | LongsArg, Any] = {}
        for plan in self.plans:
            program = runtime.program(plan.source, plan.options,
                                      kernels=[launch.kernel for launch in plan.launches])
            self._kernels.append([runtime.kernel(program, launch.kernel)
                                  for launch in plan.launches])
            for launch in plan.launches:
                for param in launch.params:
                    table = param.binding
                    if isinstance(table, TableArg) and table not in self._tables:
                        host = np.asarray(table.values, dtype=np.int32 if table.ctype == "int"
                                          else np.float32)
                        self._tables[table] = _buffer(runtime.context, host.nbytes, host)
                    elif isinstance(table, LongsArg) and table.constant and \
                            table not in self._tables:
                        host = _longs(table, {})
                        self._tables[table] = _buffer(runtime.context, host.nbytes, host)

    def work_group_overrun(self) -> int | None:
        """None when every launch's work group fits its kernel; else the smallest
        CL_KERNEL_WORK_GROUP_SIZE among the kernels whose launch asks for more (the backend
        then rebuilds the partition within it)."""
        over: list[int] = []
        for plan, kernels in zip(self.plans, self._kernels):
            for launch, kernel in zip(plan.launches, kernels):
                if launch.local_size is None:
                    continue  # the driver picks a size the kernel can run
                limit = self.runtime.kernel_work_group_size(kernel)
                if math.prod(launch.local_size) > limit:
                    over.append(limit)
        return min(over) if over else None

    @property
    def kernel_source(self) -> str:
        """The generated OpenCL source of every plan (what a failure report shows)."""
        if len(self.plans) == 1:
            return self.plans[0].source
        return "\n".join(f"/* ---- kernel {i} ({plan.family}) ---- */\n{plan.source}"
                         for i, plan in enumerate(self.plans))

    @property
    def families(self) -> tuple[str, ...]:
        return tuple(plan.family for plan in self.plans)

    def execute(self, inputs: Mapping[int, Array]) -> dict[int, Array]:
        import pyopencl as cl

        queue = self.runtime.queue
        taken: list[tuple[int, Any]] = []
        try:
            buffers, calls = self._stage(inputs, taken, fresh=False)
            for kernel, launch, args in calls:
                kernel.set_args(*args)
                cl.enqueue_nd_range_kernel(queue, kernel, launch.global_size,
                                           launch.local_size)
            results: dict[int, Array] = {}
            for tensor in self.partition.outputs:
                shape = known_shape(tensor)
                raw = np.empty(math.prod(shape), dtype=HOST[tensor.dtype])
                if raw.size:
                    cl.enqueue_copy(queue, raw, buffers[tensor.id])
                results[tensor.id] = from_host(raw, tensor.dtype).reshape(shape)
        finally:
            queue.finish()  # nothing may still use a buffer that goes back to the pool
            self._give(taken)
        return results

    def timed(self) -> AccelCompiledPartition:
        """The compiled partition whose kernels timing measures: this one, or the one made by
        `for_timing` (the backend's specialised form), built once on first use."""
        if self._for_timing is None:
            return self
        if self._timed is None:
            made = self._for_timing()
            same = [p.source for p in made.plans] == [p.source for p in self.plans]
            self._timed = self if same else made
        return self._timed

    def time_launches(self, inputs: Mapping[int, Array], repeats: int, *,
                      fresh: bool = False) -> list[float]:
        """Seconds each of `repeats` runs of the partition's kernels takes, inputs uploaded once
        beforehand and outputs left on the device (what a benchmark of the kernels wants).

        Each run enqueues every launch of every plan and waits for the queue to drain; the
        time is wall clock around that, so it includes the enqueue overhead of each launch.
        The buffers come from the pool, as in `execute` (after a first call, no run touches a
        fresh page); with `fresh` they are allocated anew for this call, so the first run
        also pays for touching the output, intermediate and scratch buffers for the first
        time (page faults, on a CPU device).
        """
        if self.timed() is not self:
            return self.timed().time_launches(inputs, repeats, fresh=fresh)
        import time

        import pyopencl as cl

        queue = self.runtime.queue
        taken: list[tuple[int, Any]] = []
        times: list[float] = []
        try:
            _, calls = self._stage(inputs, taken, fresh=fresh)
            queue.finish()  # the uploads are not part of any run
            for _ in range(repeats):
                start = time.perf_counter()
                for kernel, launch, args in calls:
                    kernel.set_args(*args)
                    cl.enqueue_nd_range_kernel(queue, kernel, launch.global_size,
                                               launch.local_size)
                queue.finish()
                times.append(time.perf_counter() - start)
        finally:
            queue.finish()
            if not fresh:
                self._give(taken)
        return times

    def execute_timed(self, inputs: Mapping[int, Array]) -> float:
        """Seconds one run of the partition's kernels takes on the device, from OpenCL
        profiling events: from the start of the first launch to the end of the last, so gaps
        between launches count (as they do for a caller) and the host's enqueue and wait do
        not. Inputs are uploaded before and outputs left on the device; buffers come from the
        pool, as in `execute` (`fusionspec.backend.timing` uses this method)."""
        if self.timed() is not self:
            return self.timed().execute_timed(inputs)
        import pyopencl as cl

        queue = self.runtime.profiling_queue
        taken: list[tuple[int, Any]] = []
        try:
            _, calls = self._stage(inputs, taken, fresh=False)
            self.runtime.queue.finish()  # the uploads went to the other queue
            events = []
            for kernel, launch, args in calls:
                kernel.set_args(*args)
                events.append(cl.enqueue_nd_range_kernel(queue, kernel, launch.global_size,
                                                         launch.local_size))
            queue.finish()
            if not events:
                return 0.0
            return float(events[-1].profile.end - events[0].profile.start) * 1e-9
        finally:
            queue.finish()
            self._give(taken)

    def _take(self, nbytes: int, taken: list[tuple[int, Any]], fresh: bool) -> Any:
        """A device buffer of `nbytes` (at least 16: OpenCL forbids empty buffers), from the
        pool unless `fresh`; recorded in `taken`."""
        size = max(nbytes, 16)
        found = None
        if not fresh:
            with self._pool_lock:
                free = self._pool.get(size)
                if free:
                    found = free.pop()
        if found is None:
            import pyopencl as cl

            found = cl.Buffer(self.runtime.context, cl.mem_flags.READ_WRITE, size=size)
            self.allocations += 1
        taken.append((size, found))
        return found

    def _give(self, taken: list[tuple[int, Any]]) -> None:
        with self._pool_lock:
            for size, buffer in taken:
                self._pool.setdefault(size, []).append(buffer)
        taken.clear()

    def _stage(self, inputs: Mapping[int, Array], taken: list[tuple[int, Any]], *, fresh: bool
               ) -> tuple[dict[int, Any], list[tuple[Any, Launch, list[Any]]]]:
        """Upload the inputs, take a buffer for every written tensor and scratch buffer (each
        recorded in `taken`), and bind each launch's arguments: (device buffers by tensor id,
        the launches in order). The uploads are enqueued, not waited for: the caller waits
        for the queue before its buffers or `inputs` change hands."""
        import pyopencl as cl

        missing = [t.id for t in self.partition.inputs if t.id not in inputs]
        if missing:
            raise InputMismatchError(f"no array given for partition {self.partition.id} "
                                     f"input(s) {missing}", tensor_id=missing[0])
        queue = self.runtime.queue
        buffers: dict[int, Any] = {}
        layouts: dict[int, tuple[int, ...]] = {}
        for tensor in self.partition.inputs:
            host, strides = _host_input(tensor, inputs[tensor.id])
            buffers[tensor.id] = self._take(host.nbytes, taken, fresh)
            if host.nbytes:
                cl.enqueue_copy(queue, buffers[tensor.id], np.ascontiguousarray(host),
                                is_blocking=False)
            layouts[tensor.id] = strides
        calls: list[tuple[Any, Launch, list[Any]]] = []
        for plan, kernels in zip(self.plans, self._kernels):
            for tensor in plan.writes:
                if tensor.id not in buffers:
                    shape = known_shape(tensor)
                    check_supported(tensor.dtype, f"output tensor {tensor.id}")
                    buffers[tensor.id] = self._take(
                        math.prod(shape) * HOST[tensor.dtype].itemsize, taken, fresh)
                    layouts[tensor.id] = row_major_strides(shape)
            scratch = {s.name: self._take(s.nbytes, taken, fresh) for s in plan.scratch}
            for launch, kernel in zip(plan.launches, kernels):
                calls.append((kernel, launch, [
                    _bind(p, buffers, layouts, scratch, self._tables, self.runtime.context)
                    for p in launch.params]))
        return buffers, calls

def _buffer(context: Any, nbytes: int, host: Array | None) -> Any:
    import pyopencl as cl

    flags = cl.mem_flags.READ_WRITE
    if host is not None and nbytes:
        return cl.Buffer(context, flags | cl.mem_flags.COPY_HOST_PTR, hostbuf=host)
    return cl.Buffer(context, flags, size=max(nbytes, 16))  # OpenCL forbids empty buffers


def _longs(binding: LongsArg, layouts: Mapping[int, tuple[int, ...]]) -> Array:
    return np.asarray([layouts[e.tensor_id][e.dim] if isinstance(e, StrideArg) else e.value
                       for e in binding.entries], dtype=np.int64)


def _bind(param: Param, buffers: Mapping[int, Any], layouts: Mapping[int, tuple[int, ...]],
          scratch: Mapping[str, Any], tables: Mapping[TableArg | LongsArg, Any],
          context: Any) -> Any:
    binding = param.binding
    if isinstance(binding, LongsArg):
        found = tables.get(binding)
        if found is not None:
            return found
        host = _longs(binding, layouts)  # an input's runtime strides: this execution's
        return _buffer(context, host.nbytes, host)
    if isinstance(binding, BufferArg):
        return buffers[binding.tensor_id]
    if isinstance(binding, StrideArg):
        return np.int64(layouts[binding.tensor_id][binding.dim])
    if isinstance(binding, ScratchArg):
        return scratch[binding.name]
    if isinstance(binding, TableArg):
        return tables[binding]
    assert isinstance(binding, ScalarArg)
    if isinstance(binding.value, tuple):  # a divisor's uint4: its 16 bytes go by value
        assert binding.ctype == "uint4"
        return np.asarray(binding.value, dtype=np.uint32)
    return _SCALARS[binding.ctype](binding.value)


def _host_input(tensor: LogicalTensor, array: object) -> tuple[Array, tuple[int, ...]]:
    """The bytes to upload for `tensor` and the strides (in elements) to read them with."""
    if not isinstance(array, np.ndarray):
        raise InputMismatchError(f"expected a NumPy array, got {type(array).__name__}",
                                 tensor_id=tensor.id)
    check_supported(tensor.dtype, f"input tensor {tensor.id}")
    want = numpy_dtype(tensor.dtype)
    if array.dtype != want:
        raise InputMismatchError(f"dtype {array.dtype} does not match the tensor's "
                                 f"{tensor.dtype} (NumPy {want})", tensor_id=tensor.id)
    shape = known_shape(tensor)
    if array.shape == shape:
        return to_host(array, tensor.dtype), row_major_strides(shape)
    if tensor.strides is not None and array.ndim == 1 and len(tensor.strides) == len(shape):
        strides = tensor.strides
        if any(s < 0 for s in strides):
            raise InputMismatchError(f"negative strides {list(strides)} are not supported",
                                     tensor_id=tensor.id)
        needed = 0 if 0 in shape else 1 + sum((d - 1) * s for d, s in zip(shape, strides))
        if array.shape[0] < needed:
            raise InputMismatchError(
                f"a flat buffer of {array.shape[0]} elements is too short for shape "
                f"{list(shape)} with strides {list(strides)} (needs {needed})",
                tensor_id=tensor.id)
        return to_host(array, tensor.dtype), tuple(strides)
    raise InputMismatchError(f"shape {list(array.shape)} does not match the tensor's "
                             f"{list(shape)}", tensor_id=tensor.id)
