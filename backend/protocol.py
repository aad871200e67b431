"""The protocol a backend implements to be graded.

A backend follows oneDNN's programming model: it partitions a graph, compiles each partition
for a device, and executes compiled partitions on NumPy arrays keyed by logical-tensor id::

    class MyBackend:
        name = "mybackend"
        def devices(self) -> Sequence[Device]: ...
        def partition(self, graph: Graph) -> list[Partition]: ...
        def compile(self, partition: Partition, device: Device) -> CompiledPartition: ...

A backend rejects an ill-formed graph by raising from `partition` (ideally a
`fusionspec.spec.errors.GraphError` naming the rule). It may declare `limitations`: cases it
knowingly does not support, which the suite then reports as ``unsupported`` with the reason
instead of failing them. Optional methods, read through `device_problems` and `counters`:

- ``unavailable_reason() -> str``: why `devices()` is empty;
- ``device_problems() -> Mapping[str, str]``: device id -> why that device is left out (its
  compiler failed a probe, say); ``fusionspec conform --list`` and the report show them;
- ``counters() -> Mapping[str, int]``: what the backend did (the OpenCL backend: programs built
  and taken from its caches); the results document records it.

A compiled partition may offer ``execute_timed(inputs) -> float`` (device time of one run of
its kernels), which the benchmarks' timing method uses (`fusionspec.backend.timing`).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from fnmatch import fnmatchcase
from typing import Protocol, runtime_checkable

from fusionspec.spec.graph import Graph, Partition
from fusionspec.spec.types import Array

__all__ = ["Device", "Limitation", "CompiledPartition", "Backend", "device_problems",
           "counters", "unavailable_reason"]


@dataclass(frozen=True)
class Device:
    """One device of a backend. `id` is what ``--device`` selects (``pocl-cpu``); `kind` is
    ``cpu`` or ``gpu``; `driver` and `runtime` are versions for the report; `extras` holds
    anything else worth recording (extensions, memory sizes)."""

    id: str
    kind: str = "cpu"
    name: str = ""
    driver: str = ""
    runtime: str = ""
    extras: Mapping[str, str] = field(default_factory=dict)


@dataclass(frozen=True)
class Limitation:
    """A case family the backend declares it does not support. A field left None (or empty)
    matches anything: pattern, the case's headline dtype, device kind, case kind, and
    `tensor_dtypes` — data types of which any tensor of the graph makes the case covered
    (``("f8_e4m3", "f8_e5m2")``). Every field is a glob, as in an expectations file
    (``pattern="fp.conv_*"``, ``tensor_dtypes=("f8_*",)``); when the backend loads, a field
    that matches no name the suite knows is an error naming the limitation. `reason` is one
    line, shown in the report; a declared limitation that turns out to pass is reported too."""

    reason: str
    pattern: str | None = None
    dtype: str | None = None
    device_kind: str | None = None
    case_kind: str | None = None
    tensor_dtypes: tuple[str, ...] = ()

    def covers(self, *, pattern: str, dtype: str, device_kind: str, case_kind: str,
               tensor_dtypes: frozenset[str] = frozenset()) -> bool:
        """Whether this limitation covers a case with these properties: every field given
        matches (as a glob, ``fp.conv_*``), and, with `tensor_dtypes`, some tensor of the
        case has a data type one of its globs matches."""
        if self.tensor_dtypes and not any(fnmatchcase(got, want) for want in self.tensor_dtypes
                                          for got in tensor_dtypes):
            return False
        return all(not want or fnmatchcase(got, want) for want, got in (
            (self.pattern, pattern), (self.dtype, dtype), (self.device_kind, device_kind),
            (self.case_kind, case_kind)))


@runtime_checkable
class CompiledPartition(Protocol):
    def execute(self, inputs: Mapping[int, Array]) -> dict[int, Array]: ...


@runtime_checkable
class Backend(Protocol):
    name: str

    def devices(self) -> Sequence[Device]: ...

    def partition(self, graph: Graph) -> list[Partition]: ...

    def compile(self, partition: Partition, device: Device) -> CompiledPartition: ...


def device_problems(backend: object) -> dict[str, str]:
    """The backend's optional ``device_problems()`` (device id -> why it is left out), or {}."""
    explain = getattr(backend, "device_problems", None)
    found = explain() if callable(explain) else {}
    return {str(k): str(v) for k, v in found.items()} if isinstance(found, Mapping) else {}


def counters(backend: object) -> dict[str, int]:
    """The backend's optional ``counters()`` (what it did, by name), or {}."""
    report = getattr(backend, "counters", None)
    found = report() if callable(report) else {}
    return {str(k): int(v) for k, v in found.items()} if isinstance(found, Mapping) else {}


def unavailable_reason(backend: object) -> str:
    """The backend's optional ``unavailable_reason()``, or ''."""
    explain = getattr(backend, "unavailable_reason", None)
    return str(explain()) if callable(explain) else ""
