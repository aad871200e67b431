"""The protocol a backend implements to be graded.

A backend follows oneDNN's programming model: it partitions a graph, compiles each partition
for a device, and executes compiled partitions on NumPy arrays keyed by logical-tensor id::

    class MyBackend:
        name = "mybackend"
        def devices(self) -> Sequence[Device]: ...
        def partition(self, graph: Graph) -> list[Partition]: ...
        def compile(self, partition: Partition, device: Device) -> CompiledPartition: ...

The contract is in the docstrings of `Backend` (what each method must do, what it may
raise, what the suite does with it, and the optional members ``limitations``,
``rejection_errors``, ``unavailable_reason``, ``device_problems`` and ``counters``),
`CompiledPartition` (with the optional ``execute_timed`` and ``kernel_source``), `Device`
and `Limitation`: ``help(fusionspec.backend.Backend)`` shows it. The functions at the end
read the optional methods of any backend, tolerating one that lacks them.
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
    """One device of a backend: what ``--device`` selects and what the report records.

    Attributes:
        id: the name ``--device`` selects (``pocl-cpu``); unique among the backend's devices
            and stable across runs, since replay commands and expectations entries name it.
        kind: ``cpu`` or ``gpu``; `Limitation.device_kind` and expectations entries match it.
        name: the device as its vendor names it, for people.
        driver, runtime: versions of what computes on it, recorded in every results document
            so that runs on different stacks are told apart.
        extras: anything else worth recording (extensions, memory sizes), strings to strings.
    """

    id: str
    kind: str = "cpu"
    name: str = ""
    driver: str = ""
    runtime: str = ""
    extras: Mapping[str, str] = field(default_factory=dict)


@dataclass(frozen=True)
class Limitation:
    """A family of cases the backend declares it does not support.

    A covered case still runs; it is reported ``unsupported`` with `reason` instead of failing
    (and the report notes a covered case that passes anyway). Every field but `reason` is a
    glob, as in an expectations file, and a field left None (or empty) matches anything. When
    the backend loads, a field that matches no name the suite knows (a misspelt pattern) is a
    `BackendError` naming the limitation, so a limitation never silently covers nothing.

    Attributes:
        reason: one line saying why, shown in the results and the report.
        pattern: catalog pattern ids (``fp.conv_*``).
        dtype: the case's headline dtype (``f32``, ``bf16``, ``f16``, ``f8``, ``int8``).
        device_kind: the device's `Device.kind` (``gpu``); not checked against the catalog.
        case_kind: ``valid``, ``near-miss`` or ``ill-formed``.
        tensor_dtypes: data types of which any tensor of the graph makes the case covered
            (``("f8_e4m3", "f8_e5m2")``, ``("f8_*",)``).
    """

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
    """What `Backend.compile` returns: one partition made ready to run on one device.

    The suite calls `execute` once per case (and again when it isolates the culprit of a
    numeric mismatch), always from the process that compiled it. Optional members, looked up
    by name:

    - ``execute_timed(inputs) -> float``: one run of the partition's kernels and the seconds
      they took on the device, from the runtime's own timers (OpenCL profiling events, say).
      The benchmarks' timing method (`fusionspec.backend.timing.time_partition`) prefers it
      to timing `execute` by the host's clock; the conformance run never calls it.
    - ``kernel_source: str``: the generated source code of the partition; the report shows it
      beside a numeric mismatch. An attribute that raises is ignored.
    """

    def execute(self, inputs: Mapping[int, Array]) -> dict[int, Array]:
        """Run the partition on `inputs` and return its outputs.

        `inputs` maps the id of every input tensor of the partition (`Partition.inputs`) to a
        NumPy array of that tensor's shape and storage type (bf16 as ``ml_dtypes.bfloat16``,
        see `fusionspec.reference.numpy_dtype`); the arrays belong to the suite: copy them
        before keeping them. Return a dict with an array for every output tensor of the
        partition (`Partition.outputs`), in the output's declared data type: a missing output,
        or one of another dtype or shape, is a ``numeric-mismatch``.

        Any exception is reported as the case's ``error`` with its message and the end of its
        traceback; a hang is ended by the case's time limit (``timeout``) and a crash of the
        process becomes an ``error`` quoting the last lines written to standard error.
        """
        ...


@runtime_checkable
class Backend(Protocol):
    """A backend the suite grades: it partitions a graph, compiles each partition for a
    device, and runs the compiled partitions (oneDNN Graph's programming model).

    The suite makes the backend with no arguments (through its entry point in the group
    ``fusionspec.backends``, or a ``module:attr`` factory) in each worker process, so
    construction should be cheap and must not fail on a machine without the backend's
    hardware: report that through `devices` (empty) and ``unavailable_reason`` instead.
    An exception raised while loading stops the run with exit code 3.

    Attributes:
        name: the backend's own name, recorded in results documents and shown in reports.

    Optional members, looked up by name (a backend without them is graded all the same):

    - ``limitations``: a sequence of `Limitation`, the cases the backend knowingly does not
      support. They are checked against the catalog when the backend loads (a limitation
      that can match no case is a `BackendError` naming it); a covered case still runs, and is
      reported ``unsupported`` with the limitation's reason, noting whether it passed anyway.
    - ``rejection_errors``: a tuple of exception types that count, besides
      `fusionspec.spec.errors.GraphError`, as rejecting an ill-formed graph when `partition`
      or `compile` raises them.
    - ``unavailable_reason() -> str``: why `devices` is empty (a missing driver, say); shown
      by ``fusionspec conform --list`` and written into the results document of a run that
      cannot start.
    - ``device_problems() -> Mapping[str, str]``: device id -> why the backend left that device
      out (its compiler failed a probe); listed and reported like ``unavailable_reason``, and
      asking for such a device with ``--device`` exits 3 with that reason.
    - ``counters() -> Mapping[str, int]``: what the backend did, by name (programs built,
      cache hits); the results document records them, summed over worker processes.
    """

    name: str

    def devices(self) -> Sequence[Device]:
        """The devices this backend can run on here, the default one (taken when ``--device``
        is not given) first. Empty when none is usable, which makes the run exit 3 with
        ``unavailable_reason``; it should not raise. It may probe the hardware; each worker
        process of the suite calls it once, so a slow probe is worth caching on disk."""
        ...

    def partition(self, graph: Graph) -> list[Partition]:
        """Split `graph` into partitions as the backend would fuse it.

        `graph` is a `fusionspec.spec.graph.Graph`, not necessarily valid: ill-formed cases
        break one rule of the spec on purpose. Return `fusionspec.spec.graph.Partition`
        objects that together hold every op of the graph exactly once, each with its external
        input and output tensors (`Partition.inputs`, `Partition.outputs`; tensors crossing
        between partitions are outputs of one and inputs of the next). Give a fused partition
        the catalog id of its pattern in `Partition.pattern` if known (it is shown, not
        graded), and leave `Partition.supported` True for every partition the backend will
        compile: a partition marked ``supported=False`` (oneDNN's way of saying "I will not run
        this") is graded ``rejected-valid`` in a valid or near-miss case.

        The suite compares the op sets with the reference partitioner's
        (`fusionspec.reference.partition`): any other grouping of a valid case is a
        ``fusion-mismatch``; merging what the spec keeps apart in a near miss, and computing
        it right, is an ``extension``.

        Raise `fusionspec.spec.errors.GraphError` (naming the rule broken, ideally), or one
        of ``rejection_errors``, to reject an ill-formed graph: that is the pass of an
        ill-formed case and ``rejected-valid`` for a valid one. Any other exception is an
        ``error``.
        """
        ...

    def compile(self, partition: Partition, device: Device) -> CompiledPartition:
        """Compile one partition this backend returned from `partition` for `device` (one of
        `devices`) and return something to run it with.

        The suite compiles and runs the partitions of a case one by one in dependency order.
        Raising `GraphError` or one of ``rejection_errors`` counts as rejecting the graph, as
        in `partition` (``rejected-valid`` in a valid case); any other exception is the case's
        ``error``.
        """
        ...


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
