"""Shared helpers of the OpenCL backend tests: the skip marker, and running a graph on the
backend partition by partition next to the reference, compared within the suite's error
bounds."""

from __future__ import annotations

from collections.abc import Mapping

import pytest

from fusionspec.accel.backend import AccelBackend
from fusionspec.accel.compiled import AccelCompiledPartition
from fusionspec.accel.devices import DeviceInfo, select_device
from fusionspec.accel.families import BuildContext, family_for
from fusionspec.accel.runtime import runtime_for
from fusionspec.backend import Device
from fusionspec.conformance.grade.bounds import output_bounds
from fusionspec.conformance.grade.tolerances import compare
from fusionspec.reference import execute
from fusionspec.reference.partitioner import external_tensors, partition
from fusionspec.spec.graph import Graph, Partition
from fusionspec.spec.types import Array

# Only devices that passed their probe (a compiler that crashes or returns broken programs is
# reported, with the reason, as the skip reason, not met inside a test).
_BACKEND = AccelBackend()
HAVE_DEVICE = bool(_BACKEND.devices())
requires_device = pytest.mark.skipif(
    not HAVE_DEVICE, reason=f"no usable OpenCL device to run kernels on "
    f"({_BACKEND.unavailable_reason() if not HAVE_DEVICE else ''}); install the accel extra "
    "(pip install 'fusionspec[accel]') to run these tests")


def first_device() -> Device:
    return _BACKEND.devices()[0]


def first_info() -> DeviceInfo:
    """The OpenCL description of `first_device` (the first device that passed its probe)."""
    return select_device(first_device().id)


class OnDevice:
    """A graph compiled by the backend (once), runnable on many inputs."""

    def __init__(self, graph: Graph, *, fused: bool = True, whole: bool = False,
                 ctx: BuildContext | None = None, form: str | None = None) -> None:
        """`whole`: compile all ops as one partition, whatever the partitioner says (to test
        kernels for op combinations the patterns do not fuse). `ctx`: generate each (fused)
        partition with this build context instead of the backend's (another kernel form or
        tuned choice on the first device: its `device` must describe that device). `form`:
        the backend's kernel form (`AccelBackend(form=...)`; None: its default)."""
        self.graph = graph.finalize() if not graph.finalized else graph
        backend = AccelBackend(fused=fused, form=form)
        device = first_device()
        if whole:
            ins, outs = external_tensors(self.graph, self.graph.ops)
            self.parts = [Partition(0, self.graph.ops, tuple(ins), tuple(outs))]
        else:
            self.parts = partition(self.graph)
        if ctx is None:
            self.compiled: list[AccelCompiledPartition] = [backend.compile(p, device)
                                                           for p in self.parts]
        else:
            runtime = runtime_for(first_info())
            self.compiled = [AccelCompiledPartition(p, runtime, [family_for(p).build(p, ctx)])
                             for p in self.parts]

    def plans_of(self, index: int) -> tuple[object, ...]:
        return self.compiled[index].plans

    def run(self, inputs: Mapping[int, Array]) -> dict[int, Array]:
        values: dict[int, Array] = dict(inputs)
        for part, compiled in zip(self.parts, self.compiled):
            values.update(compiled.execute({t.id: values[t.id] for t in part.inputs}))
        return {t.id: values[t.id] for t in self.graph.output_tensors}

    def check(self, inputs: Mapping[int, Array], *, label: str = "") -> None:
        """Assert that every graph output matches the reference within the suite's error
        bound for it (ties of Quantize and TypeCast on exact inputs round half to even)."""
        got = self.run(inputs)
        want = execute(self.graph, inputs)
        bounds = output_bounds(self.graph, inputs)
        for tensor in self.graph.output_tensors:
            result = compare(want[tensor.id], got[tensor.id], bounds[tensor.id])
            assert result.passed, (f"{label} output {tensor.id}: {result.reason}; worst "
                                   f"{[w.record().to_json() for w in result.worst]}\nsource:\n"
                                   f"{self.compiled[-1].kernel_source}")
