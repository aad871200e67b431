"""The protocol a backend implements to be graded, and the registry that finds backends.

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
instead of failing them. Two optional methods explain missing devices:
``unavailable_reason() -> str`` (why `devices()` is empty) and
``device_problems() -> Mapping[str, str]`` (device id -> why that device is left out, e.g. its
compiler failed a probe); ``fusionspec conform --list`` and the report show them. An optional
``counters() -> Mapping[str, int]`` reports what the backend did (the OpenCL backend: programs
built, taken from its caches); the results document records it.

Backends are found through the entry-point group ``fusionspec.backends``: each entry point names
a zero-argument callable (usually the class) returning a backend. ``reference`` is built in.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from importlib.metadata import entry_points
from typing import Protocol, runtime_checkable

import numpy as np

from fusionspec.spec.errors import FusionspecError
from fusionspec.spec.graph import Graph, Partition

__all__ = ["Device", "Limitation", "CompiledPartition", "Backend", "BackendError",
           "BackendUnavailableError", "ENTRY_POINT_GROUP", "available_backends", "load_backend",
           "device_problems", "counters"]

ENTRY_POINT_GROUP = "fusionspec.backends"


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
    (``("f8_e4m3", "f8_e5m2")``). `reason` is one line, shown in the report; a declared
    limitation that turns out to pass is reported too."""

    reason: str
    pattern: str | None = None
    dtype: str | None = None
    device_kind: str | None = None
    case_kind: str | None = None
    tensor_dtypes: tuple[str, ...] = ()

    def covers(self, *, pattern: str, dtype: str, device_kind: str, case_kind: str,
               tensor_dtypes: frozenset[str] = frozenset()) -> bool:
        if self.tensor_dtypes and not set(self.tensor_dtypes) & tensor_dtypes:
            return False
        return all(want is None or want == got for want, got in (
            (self.pattern, pattern), (self.dtype, dtype), (self.device_kind, device_kind),
            (self.case_kind, case_kind)))


@runtime_checkable
class CompiledPartition(Protocol):
    def execute(self, inputs: Mapping[int, np.ndarray]) -> dict[int, np.ndarray]: ...


@runtime_checkable
class Backend(Protocol):
    name: str

    def devices(self) -> Sequence[Device]: ...

    def partition(self, graph: Graph) -> list[Partition]: ...

    def compile(self, partition: Partition, device: Device) -> CompiledPartition: ...


class BackendError(FusionspecError):
    """A backend cannot be found, loaded, or has no such device."""


class BackendUnavailableError(BackendError):
    """The backend loads but has no usable device (or the device asked for is unusable):
    `reason` says why, e.g. its compiler failed a probe."""

    def __init__(self, message: str, *, reason: str = "") -> None:
        self.reason = reason or message
        super().__init__(message)


def _entry_points() -> dict[str, Callable[[], object]]:
    found: dict[str, Callable[[], object]] = {}
    for ep in entry_points(group=ENTRY_POINT_GROUP):
        found.setdefault(ep.name, ep.load)
    return found


def available_backends() -> list[str]:
    """Names of every registered backend (``reference`` first)."""
    names = set(_entry_points()) | {"reference"}
    return sorted(names, key=lambda n: (n != "reference", n))


def load_backend(name: str) -> Backend:
    """Instantiate the backend registered as `name`; BackendError names the known ones."""
    if name == "reference":
        from .reference_backend import ReferenceBackend

        return ReferenceBackend()
    loaders = _entry_points()
    if name not in loaders:
        raise BackendError(f"no backend {name!r}; registered: {', '.join(available_backends())}")
    try:
        factory = loaders[name]()
        backend = factory() if callable(factory) else factory
    except Exception as exc:  # a third-party plugin may fail in any way; report, don't crash
        raise BackendError(f"backend {name!r} failed to load: {type(exc).__name__}: {exc}") \
            from exc
    if not isinstance(backend, Backend):
        raise BackendError(f"backend {name!r} does not implement the Backend protocol "
                           "(name, devices, partition, compile)")
    return backend


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
