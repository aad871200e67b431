"""`AccelBackend`: the OpenCL implementation of the spec, behind the suite's `Backend` protocol.

- ``devices()``: every OpenCL device (`fusionspec.accel.devices`) that passed its probe
  (`fusionspec.accel.probe`: it built and ran every kernel family in another process), in
  discovery order, the one selected by ``AccelBackend(device=...)`` or
  ``FUSIONSPEC_ACCEL_DEVICE`` before the rest; an empty tuple on a machine without a usable
  OpenCL device, so the suite lists the backend as unavailable. ``device_problems()`` says why
  each device left out failed its probe.
- ``partition(graph)``: the spec's partitions, from the reference partitioner (it also rejects an
  ill-formed graph with the `GraphError` naming the rule).
- ``compile(partition, device)``: the first kernel family that matches the partition
  (`fusionspec.accel.families`) generates one fused kernel plan; the returned
  `AccelCompiledPartition` holds the built program and exposes ``kernel_source``. A partition no
  family handles raises `UnsupportedPartitionError` naming its pattern. A reduction whose axes
  come from an input is compiled when they arrive (`fusionspec.accel.axes_input`).

Kernel forms (``AccelBackend(form=...)``, else ``FUSIONSPEC_ACCEL_FORM``, else ``auto``): a
partition is either generated into its own specialised program, or runs in the table form's
programs, whose text every partition shares: element-wise ops as instructions of one
interpreter (`fusionspec.accel.families.elementwise_table`), and the main ops (GEMM, pool,
reduction, interpolation, SoftMax, the training ops) as index maps and dtype codes for one
gathering program (`fusionspec.accel.families.table_gather`). ``auto`` takes the table form
for problems of at most `TABLE_LIMIT` elements (multiply-adds for a GEMM;
`fusionspec.accel.families.forms`), where building a program costs far more than running it
(a conformance run), and the specialised form above it; a partition compiled in the table
form is timed (``execute_timed``, ``time_launches``: the benchmarks) in the specialised form,
so kernel figures do not depend on the size. ``table`` and ``specialised`` force one form
wherever it fits.

``AccelBackend(fused=False)`` (or `AccelOpByOpBackend`) is the unfused baseline: each op of a
partition runs as its own kernel, intermediates in global device buffers in their declared
dtypes, as a library without fusion would run them; the benchmark compares the two.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Sequence

from fusionspec.backend import Device, Limitation
from fusionspec.reference.partitioner import partition as reference_partition
from fusionspec.spec.graph import Graph, Partition

from .axes_input import DeferredAxesPartition, axes_inputs
from .codegen.epilogue import ordered_ops
from .compiled import AccelCompiledPartition
from .devices import discover, discovery_problem, order_with_selected, select_device
from .errors import AccelError
from .families import BuildContext, family_for
from .families.forms import FORMS
from .plan import KernelPlan
from .probe import health
from .runtime import all_stats, runtime_for
from .tune import tune_if_asked

__all__ = ["AccelBackend", "AccelOpByOpBackend", "single_op_partitions", "FORM_ENV"]

#: The environment variable that picks the kernel form when ``form=`` is not given.
FORM_ENV = "FUSIONSPEC_ACCEL_FORM"


def single_op_partitions(partition: Partition) -> list[Partition]:
    """`partition` split into one partition per op, producers first (op-by-op mode)."""
    parts: list[Partition] = []
    for index, op in enumerate(ordered_ops(partition.ops)):
        inputs = tuple({t.id: t for t in op.inputs}.values())
        parts.append(Partition(index, (op,), inputs, op.outputs, pattern=None,
                               supported=partition.supported))
    return parts


class AccelBackend:
    """fusionspec's OpenCL backend: one generated kernel per partition (see module doc)."""

    name = "accel"
    #: Declared, so the suite reports these cases as unsupported (with the reason) rather than
    #: as errors; the conformance report lists them apart from failures.
    limitations: Sequence[Limitation] = (
        Limitation("the OpenCL dtype policy has no storage for f8_e4m3/f8_e5m2 yet (Quantize "
                   "to f8 needs round-to-odd division)", tensor_dtypes=("f8_e4m3", "f8_e5m2")),
    )

    def __init__(self, device: str | None = None, *, fused: bool = True,
                 form: str | None = None) -> None:
        self._device = device
        self.fused = fused
        chosen = form or os.environ.get(FORM_ENV, "").strip() or "auto"
        if chosen not in FORMS:
            raise AccelError(f"unknown kernel form {chosen!r} (from "
                             f"{'form=' if form else FORM_ENV}); choose one of "
                             f"{', '.join(FORMS)}")
        #: Which kernel form element-wise partitions get (module docstring).
        self.form = chosen

    def devices(self) -> Sequence[Device]:
        return tuple(info.as_device() for info in order_with_selected(self._device)
                     if health(info).ok)

    def device_problems(self) -> dict[str, str]:
        """Device id -> why the device failed its probe (shown by ``fusionspec conform --list``
        and in the report's header)."""
        return {info.id: found.reason for info in discover()
                if not (found := health(info)).ok}

    def unavailable_reason(self) -> str:
        """Why `devices()` is empty (shown by ``fusionspec conform --list``)."""
        problems = "; ".join(f"{ident}: {why}" for ident, why in self.device_problems().items())
        return problems or discovery_problem() or "no OpenCL device found"

    def counters(self) -> dict[str, int]:
        """Programs this process built and took from the caches (the results document keeps
        them: `programs_built` is what a cold run pays the compiler for)."""
        stats = all_stats()
        return {"programs_built": stats.builds, "programs_from_disk": stats.disk_hits,
                "programs_from_memory": stats.memory_hits,
                "programs_rebuilt_fresh": stats.fresh_rebuilds,
                "binaries_discarded": stats.discarded}

    def partition(self, graph: Graph) -> list[Partition]:
        return reference_partition(graph)

    def plans(self, partition: Partition, device: Device, *,
              work_group_limit: int | None = None) -> list[KernelPlan]:
        """The kernel plans `compile` would build (code generation only, no OpenCL build);
        `work_group_limit` caps the work groups the families choose."""
        ctx = BuildContext.for_device(select_device(device.id), work_group_limit,
                                      form=self.form)
        parts = [partition] if self.fused else single_op_partitions(partition)
        return [family_for(part).build(part, ctx) for part in parts]

    def compile(self, partition: Partition, device: Device,
                ) -> AccelCompiledPartition | DeferredAxesPartition:
        if axes_inputs(partition):
            # The axes are data: the kernel is generated once they arrive.
            return DeferredAxesPartition(partition, lambda part: self.compile(part, device))
        info = select_device(device.id)
        runtime = runtime_for(info)
        tune_if_asked(info)  # only with FUSIONSPEC_ACCEL_TUNE=1 (fusionspec.accel.tune)
        timing = self._for_timing(partition, device)
        compiled = AccelCompiledPartition(partition, runtime, self.plans(partition, device),
                                          for_timing=timing)
        # A kernel's own work-group limit is known only once it is built (registers, local
        # memory): if a launch exceeds it, generate the partition again within that limit.
        limit = compiled.work_group_overrun()
        if limit is not None:
            compiled = AccelCompiledPartition(partition, runtime, self.plans(
                partition, device, work_group_limit=limit), for_timing=timing)
            if compiled.work_group_overrun() is not None:
                raise AccelError(f"the kernels of {partition.pattern or 'a partition'} exceed "
                                 f"their work-group limit ({limit}) even when generated "
                                 "within it")
        return compiled


    def _for_timing(self, partition: Partition, device: Device
                    ) -> Callable[[], AccelCompiledPartition] | None:
        """With ``form="auto"``, what timing the partition runs: its specialised compilation
        (`fusionspec.accel.compiled`); None with a form asked for explicitly."""
        if self.form != "auto":
            return None
        specialised = AccelBackend(self._device, fused=self.fused, form="specialised")

        def make() -> AccelCompiledPartition:
            made = specialised.compile(partition, device)
            assert isinstance(made, AccelCompiledPartition), "axes inputs are deferred earlier"
            return made

        return make


class AccelOpByOpBackend(AccelBackend):
    """The unfused baseline as a zero-argument backend (``--backend
    fusionspec.accel.backend:AccelOpByOpBackend``)."""

    name = "accel-opbyop"

    def __init__(self, device: str | None = None) -> None:
        super().__init__(device, fused=False)
