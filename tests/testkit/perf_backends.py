"""Backends with planted speeds for the performance tests, built on the reference.

Each compiled partition computes the reference's outputs once per set of input arrays (later
runs on the same arrays return them again) and then sleeps, so that its time is the sleep:
deterministic enough for the verdicts to be tested on a shared machine. The device-timed
ones also report their kernels' time themselves (``execute_timed``), as a GPU backend reads
it from events: the host's load cannot move it, which the gate's test of a planted slowdown
needs. `UNIT` is the time of one kernel. Loaded by ``testkit.perf_backends:<Class>``.
"""

from __future__ import annotations

import os
import signal
import time
from collections.abc import Mapping

from fusionspec.backend import Device
from fusionspec.reference import execute, single_op_partitions
from fusionspec.reference.backend import ReferenceBackend
from fusionspec.spec.graph import Partition
from fusionspec.spec.types import Array

#: Seconds one kernel of a paced backend takes.
UNIT = 0.01
#: The pattern whose fused kernel `DeviceTimedSlowPatternBackend` makes 30% slower.
SLOW_PATTERN = "fp.binary_post_ops"


class _Paced:
    """The reference's outputs (remembered per set of input arrays) after `seconds` of sleep."""

    def __init__(self, partition: Partition, seconds: float) -> None:
        self.partition = partition
        self.seconds = seconds
        self.memo: dict[tuple[tuple[int, int], ...], dict[int, Array]] = {}

    def execute(self, inputs: Mapping[int, Array]) -> dict[int, Array]:
        key = tuple(sorted((k, id(v)) for k, v in inputs.items()))
        if key not in self.memo:
            self.memo[key] = execute(self.partition, inputs)
        time.sleep(self.seconds)
        return self.memo[key]


class _DeviceTimed(_Paced):
    """A `_Paced` kernel that also reports its time as a device timer would
    (``execute_timed``): exactly its `seconds`, whatever the load on the host, so a bench of
    it times the planted speeds and nothing else (`fusionspec.backend.timing.DeviceTimed`)."""

    def execute_timed(self, inputs: Mapping[int, Array]) -> float:
        key = tuple(sorted((k, id(v)) for k, v in inputs.items()))
        if key not in self.memo:
            self.memo[key] = execute(self.partition, inputs)
        return self.seconds


class _OneByOne:
    """A "fused" partition that runs its ops one by one, each a paced kernel."""

    def __init__(self, partition: Partition) -> None:
        self.parts = [_Paced(p, UNIT) for p in single_op_partitions(partition.as_graph())]

    def execute(self, inputs: Mapping[int, Array]) -> dict[int, Array]:
        values = dict(inputs)
        for part in self.parts:
            values.update(part.execute({t.id: values[t.id] for t in part.partition.inputs}))
        return values


class PacedBackend(ReferenceBackend):
    """Every partition is one kernel of `UNIT`: fusing n ops saves n - 1 kernels."""

    name = "paced"

    def compile(self, partition: Partition, device: Device) -> _Paced | _OneByOne:
        return _Paced(partition, UNIT)


class OneByOneBackend(PacedBackend):
    """Forms the spec's partitions but runs each one op by op: fusion cannot pay."""

    name = "one-by-one"

    def compile(self, partition: Partition, device: Device) -> _Paced | _OneByOne:
        return _OneByOne(partition) if len(partition.ops) > 1 else _Paced(partition, UNIT)


class DeviceTimedBackend(PacedBackend):
    """`PacedBackend` timed by its own device timer: every kernel reports `UNIT`."""

    name = "device-timed"

    def compile(self, partition: Partition, device: Device) -> _Paced | _OneByOne:
        return _DeviceTimed(partition, UNIT)


class DeviceTimedSlowPatternBackend(DeviceTimedBackend):
    """`DeviceTimedBackend` with the fused kernel of `SLOW_PATTERN` reporting 30% more time."""

    def compile(self, partition: Partition, device: Device) -> _Paced | _OneByOne:
        slow = partition.pattern == SLOW_PATTERN and len(partition.ops) > 1
        return _DeviceTimed(partition, UNIT * (1.3 if slow else 1.0))


class SplittingBackend(PacedBackend):
    """Never fuses: every op its own partition (the spec's partitions are not formed)."""

    name = "splitting"

    def partition(self, graph: object) -> list[Partition]:
        from fusionspec.spec.graph import Graph

        assert isinstance(graph, Graph)
        return single_op_partitions(graph.finalize() if not graph.finalized else graph)


class CrashingBackend(PacedBackend):
    """`PacedBackend` whose process dies (SIGSEGV, as a native library's fault would) when it
    compiles the fused partition of `SLOW_PATTERN`."""

    name = "crashing"

    def compile(self, partition: Partition, device: Device) -> _Paced | _OneByOne:
        if partition.pattern == SLOW_PATTERN and len(partition.ops) > 1:
            os.kill(os.getpid(), signal.SIGSEGV)
        return super().compile(partition, device)
