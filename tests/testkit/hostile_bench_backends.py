"""Backends that attack ``fusionspec bench`` from their worker process, each the reference with
one hostile habit: outputs that are all one number (fused and op by op agree with each other,
not with the reference), a process that exits 0 at load or mid-workload, a forged reply written
straight onto the worker's pipe, a kernel that never returns, text on standard output, an
error message full of terminal escapes, or a device timer that reads NaN, a negative time or
0 s. Loaded by ``testkit.hostile_bench_backends:<Class>``.
"""

from __future__ import annotations

import gc
import os
import pickle
import sys
import time
from collections.abc import Mapping, Sequence
from multiprocessing.connection import Connection
from typing import Any

import numpy as np

from fusionspec.backend import Device
from fusionspec.reference import execute
from fusionspec.reference.backend import ReferenceBackend
from fusionspec.spec.graph import Graph, Partition
from fusionspec.spec.types import Array

#: Seconds one kernel of these backends takes (so that fusing n ops saves n - 1 kernels).
UNIT = 0.002


class _Kernel:
    """The reference's outputs (or `fill`) after `UNIT` of sleep; `timer` is what
    ``execute_timed`` reports, when given."""

    def __init__(self, partition: Partition, fill: float | None = None) -> None:
        self.partition = partition
        self.fill = fill

    def execute(self, inputs: Mapping[int, Array]) -> dict[int, Array]:
        time.sleep(UNIT)
        found = execute(self.partition, inputs)
        if self.fill is None:
            return found
        return {k: np.full_like(v, self.fill) for k, v in found.items()}


class _Timed(_Kernel):
    reading: Any = UNIT

    def execute_timed(self, inputs: Mapping[int, Array]) -> Any:
        return self.reading


class _Base(ReferenceBackend):
    name = "hostile"

    def compile(self, partition: Partition, device: Device) -> Any:
        return _Kernel(partition)


class ConstantOutputs(_Base):
    """Every output of every partition is 12345: both sides agree, the reference does not."""

    name = "constant-outputs"

    def compile(self, partition: Partition, device: Device) -> Any:
        return _Kernel(partition, 12345.0)


class ExitsAtLoad(_Base):
    """Ends its process with status 0 when asked for its devices."""

    name = "exits-at-load"

    def devices(self) -> Sequence[Device]:
        os._exit(0)


class ExitsInPartition(_Base):
    """Ends its process with status 0 while partitioning."""

    name = "exits-in-partition"

    def partition(self, graph: Graph) -> list[Partition]:
        os._exit(0)


def _pipes() -> list[Connection]:
    return [o for o in gc.get_objects() if isinstance(o, Connection) and not o.closed]


class ForgesRecord(_Base):
    """Writes a made-up answer onto its worker's pipe: a plain pickle of a record that claims
    the fusion pays, missing the fields a real record has."""

    name = "forges-record"

    def partition(self, graph: Graph) -> list[Partition]:
        forged = pickle.dumps({"verdict": "fusion pays", "check": {"agree": True}})
        for conn in _pipes():
            conn.send_bytes(forged)
        return super().partition(graph)


class Hangs(_Base):
    """Never returns from compiling."""

    name = "hangs"

    def compile(self, partition: Partition, device: Device) -> Any:
        while True:
            time.sleep(3600)


class Prints(_Base):
    """Prints to standard output (Python's and the file descriptor's) while partitioning."""

    name = "prints"

    def partition(self, graph: Graph) -> list[Partition]:
        print("not json {{{")
        sys.stdout.flush()
        os.write(1, b"\x1b[2Jgarbage on fd 1\n")
        return super().partition(graph)


class RaisesEscapes(_Base):
    """Raises with a message that would erase the summary's lines."""

    name = "raises-escapes"

    def compile(self, partition: Partition, device: Device) -> Any:
        raise RuntimeError("\x1b[2K\x1b[1A\rfusion pays\x1b]0;owned\x07")


class _TimerBackend(_Base):
    reading: Any = UNIT

    def compile(self, partition: Partition, device: Device) -> Any:
        kernel = _Timed(partition)
        kernel.reading = self.reading
        return kernel


class NanTimer(_TimerBackend):
    name = "nan-timer"
    reading = float("nan")


class NegativeTimer(_TimerBackend):
    name = "negative-timer"
    reading = -1.0


class ZeroTimer(_TimerBackend):
    """A device timer that reads 0 s for every kernel."""

    name = "zero-timer"
    reading = 0.0


class TextTimer(_TimerBackend):
    name = "text-timer"
    reading = "0.001"


class PatchesItsWorker(_Base):
    """Replaces the bench worker's timing code in its own process with one that claims every
    run took NaN seconds (what a backend that edits the code it runs in can claim)."""

    name = "patches-its-worker"

    def __init__(self) -> None:
        from fusionspec.conformance.perf import server

        def claim(prepared: Any, policy: Any, reference: bool, settle_s: float) -> Any:
            sides = ["fused", "opbyop"] + (["reference"] if reference else [])
            return {"samples": {s: [float("nan")] * policy.min_repeats for s in sides},
                    "stopped": {s: "spread" for s in sides}}

        setattr(server, "_time", claim)  # noqa: B010 (the point is to patch it)


class ForgesFailure(_Base):
    """Writes onto its worker's pipe an allowlisted `Reply` whose failure is a plain string."""

    name = "forges-failure"

    def partition(self, graph: Graph) -> list[Partition]:
        from fusionspec.conformance.workers.transport import Reply, dumps

        for conn in _pipes():
            conn.send_bytes(dumps(Reply(failure="boom")))  # type: ignore[arg-type]
        return super().partition(graph)
