"""The performance results document as typed records: what `fusionspec bench` writes, read.

`PerfDocument` is the document (`fusionspec.conformance.perf.document` says what each key
means); each nested object is a record of its own: `Device`, `Selection`, `Policy`,
`Environment`, `Yardsticks`, and per workload a `WorkloadRecord` with its `OutputCheck`, the
`SideTiming` of each side and its `Roofline` figures. Every record reads parsed JSON
(`from_json`, a `PerfFormatError` naming the JSON path of a member of the wrong type) and
writes it back (`to_json`: the same JSON, key order included, keys it does not model kept in
`extra`), by the one mechanism of records (`fusionspec.conformance.records`); the declarations
also give the JSON schema, ``perf.schema.json``.

Reading a document checks what its schema cannot say too: every number is finite, each
workload id appears once, a shard ``K/N`` has ``K <= N``, each side's interval holds its median
(``ci_low <= median <= ci_high``, ``min <= median``), and a workload holds exactly one of an
error, a declared limitation or its measurement; so what the gate and the report read is a
measurement or is refused.

A member that a document may leave out is ``None`` when it does; ``shard`` and the
environment's ``cpus`` may also be JSON ``null`` (an unsharded run, a machine that does not
say), which a document read keeps apart from an absent key.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping
from dataclasses import field
from typing import Any, ClassVar, Self

from fusionspec.spec.errors import FusionspecError
from fusionspec.spec.text import clean_text

from ..records.fields import member
from ..records.record import Record

__all__ = ["PERF_FORMAT", "PERF_VERSION", "PerfFormatError", "PerfRecord", "Device",
           "Selection", "Policy", "Environment", "Yardsticks", "SideTiming", "OutputCheck",
           "Roofline", "WorkloadRecord", "PerfDocument", "RECORDS"]

PERF_FORMAT = "fusionspec-perf"
PERF_VERSION = 1

#: The sides every measured workload has.
_SIDES = ("fused", "opbyop")


class PerfFormatError(FusionspecError):
    """A file that is not a performance results document of this version."""


@dataclasses.dataclass(frozen=True, kw_only=True)
class PerfRecord(Record):
    """A record of the performance document: read strictly (JSON null only where a field
    says so), `extra` holding the keys it does not model, `keys` the order its members were
    read in (none for a record built in code: the fields' order)."""

    ERROR: ClassVar[type[FusionspecError]] = PerfFormatError

    extra: dict[str, Any] = field(default_factory=dict)
    keys: tuple[str, ...] = field(default=(), compare=False, repr=False)


@dataclasses.dataclass(frozen=True, kw_only=True)
class Device(PerfRecord):
    """The device the run measured on."""

    id: str
    kind: str
    name: str | None = None
    driver: str | None = None
    runtime: str | None = None


@dataclasses.dataclass(frozen=True, kw_only=True)
class Selection(PerfRecord):
    """How many workloads the run was given before ``--shard`` and a digest of their ids."""

    workloads: int = field(metadata=member(minimum=0))
    sha256: str = field(metadata=member(pattern="^[0-9a-f]{64}$"))


@dataclasses.dataclass(frozen=True, kw_only=True)
class Policy(PerfRecord):
    """The timing policy (`fusionspec.backend.timing.TimingPolicy`) and how the run used it;
    any other key is a number too."""

    EXTRA: ClassVar[Any] = float

    warmup: int
    min_repeats: int
    max_repeats: int
    budget_s: float
    target_spread: float
    confidence: float
    settle_s: float | None = None
    jobs: int | None = None
    timeout_s: float | None = None


@dataclasses.dataclass(frozen=True, kw_only=True)
class Environment(PerfRecord):
    """The machine the run measured on, and its settings that change timings."""

    python: str | None = None
    numpy: str | None = None
    machine: str | None = None
    cpus: int | None = field(default=None, metadata=member(nullable=True))
    load_average: tuple[float, ...] | None = None
    settings: dict[str, str] | None = None


@dataclasses.dataclass(frozen=True, kw_only=True)
class Yardsticks(PerfRecord):
    """On a CPU device: NumPy's copy bandwidth and sgemm rate on this machine, best and
    median (a script may add the device's own under other keys)."""

    copy_gb_s: float | None = None
    gemm_gflop_s: float | None = None
    gemm_shape: tuple[int, ...] | None = None
    copy_median_gb_s: float | None = None
    gemm_median_gflop_s: float | None = None


@dataclasses.dataclass(frozen=True, kw_only=True)
class SideTiming(PerfRecord):
    """One side's timing in milliseconds: the median, its confidence interval, the fastest
    run and, where recorded, every sample."""

    DEF: ClassVar[str | None] = "timing"

    method: str = field(metadata=member(enum=("wall", "events")))
    repeats: int = field(metadata=member(minimum=1))
    min: float = field(metadata=member(minimum=0))
    median: float = field(metadata=member(minimum=0))
    ci_low: float = field(metadata=member(minimum=0))
    ci_high: float = field(metadata=member(minimum=0))
    confidence: float
    stopped: str | None = None
    samples: tuple[float, ...] | None = field(default=None, metadata=member(minimum=0))

    def defect(self) -> tuple[str, str] | None:
        if self.ci_low <= self.median <= self.ci_high and self.min <= self.median:
            return None
        return "", (f"the interval [{self.ci_low}, {self.ci_high}] does not hold the median "
                    f"{self.median} (or the minimum {self.min} exceeds it): not a measurement")


@dataclasses.dataclass(frozen=True, kw_only=True)
class OutputCheck(PerfRecord):
    """Whether the two sides' outputs agree with each other and with the reference; a
    difference that is not finite reads ``"inf"``."""

    agree: bool
    max_difference: float | str
    reference_difference: float | str | None = None


@dataclasses.dataclass(frozen=True, kw_only=True)
class Roofline(PerfRecord):
    """The fused side's achieved rates and their shares of the yardsticks; any other key is
    a figure of 0 or more too."""

    EXTRA: ClassVar[Any] = float
    EXTRA_MEMBER: ClassVar[dict[str, Any]] = member(minimum=0)

    gflop_s: float | None = field(default=None, metadata=member(minimum=0))
    gb_s: float | None = field(default=None, metadata=member(minimum=0))
    copy_share: float | None = field(default=None, metadata=member(minimum=0))
    gemm_share: float | None = field(default=None, metadata=member(minimum=0))


@dataclasses.dataclass(frozen=True, kw_only=True)
class WorkloadRecord(PerfRecord):
    """One workload of the run: what it is, and either its measurement (the output check,
    the timings, the ratio, the verdict, the roofline), or the ``error`` that kept it from
    being measured, or the declared limitation (``unsupported``) that covers it."""

    DEF: ClassVar[str | None] = "workload"
    SCHEMA: ClassVar[dict[str, Any]] = {
        "oneOf": [{"required": ["error"]}, {"required": ["unsupported"]},
                  {"required": ["timings", "verdict", "check"]}]}

    id: str
    pattern: str
    name: str
    source: str
    dtype: str
    ops: tuple[str, ...]
    partitions: tuple[tuple[str, ...], ...] | None = None
    fused_whole: bool | None = None
    check: OutputCheck | None = None
    flops: int | None = field(default=None, metadata=member(minimum=0))
    bytes_fused: int | None = field(default=None, metadata=member(minimum=0))
    bytes_opbyop: int | None = field(default=None, metadata=member(minimum=0))
    timings: dict[str, SideTiming] | None = field(default=None,
                                                   metadata=member(with_keys=_SIDES))
    ratio: float | None = field(default=None, metadata=member(minimum=0))
    verdict: str | None = field(default=None, metadata=member(
        enum=("fusion pays", "fusion does not pay", "not fused")))
    roofline: Roofline | None = None
    error: str | None = None
    unsupported: str | None = None
    rerun: str | None = None

    def defect(self) -> tuple[str, str] | None:
        measured = None not in (self.timings, self.verdict, self.check)
        if (self.error is not None) + (self.unsupported is not None) + measured == 1:
            return None
        return "", ("a workload holds exactly one of an error, a declared limitation "
                    "(unsupported), or its measurement (timings, verdict and check)")

    def side(self, name: str) -> SideTiming | None:
        """The timing of side `name` (``fused``, ``opbyop``, ``reference``), if timed."""
        return None if self.timings is None else self.timings.get(name)

    @property
    def fused(self) -> SideTiming:
        """The fused side of a measured workload (`PerfFormatError` when it has none)."""
        return self._measured("fused")

    @property
    def opbyop(self) -> SideTiming:
        """The op-by-op side of a measured workload (`PerfFormatError` when it has none)."""
        return self._measured("opbyop")

    def _measured(self, name: str) -> SideTiming:
        found = self.side(name)
        if found is None:
            raise PerfFormatError(f"workload {self.id!r} has no {name} timing")
        return found


@dataclasses.dataclass(frozen=True, kw_only=True)
class PerfDocument(PerfRecord):
    """One bench run of one backend on one device (see the module docstring)."""

    SCHEMA: ClassVar[dict[str, Any]] = {
        "title": "fusionspec performance results",
        "description": "One fusionspec bench run: per workload, the fused and op-by-op "
                       "timings on one backend and device, the roofline figures and the "
                       "verdict."}

    format: str = field(default=PERF_FORMAT, metadata=member(const=PERF_FORMAT))
    version: int = field(default=PERF_VERSION, metadata=member(const=PERF_VERSION))
    backend: str
    backend_spec: str
    device: Device
    size: str = field(metadata=member(enum=("small", "full")))
    seed: int = field(metadata=member(minimum=0))
    shard: str | None = field(default=None, metadata=member(
        nullable=True, pattern="^[1-9][0-9]{0,5}/[1-9][0-9]{0,5}$"))
    command: str | None = None
    selection: Selection | None = None
    policy: Policy
    environment: Environment
    workloads: tuple[WorkloadRecord, ...]
    yardsticks: Yardsticks | None = None
    incomplete: str | None = None

    @classmethod
    def from_json(cls, data: object, source: str = "document") -> Self:
        """The document of parsed JSON `data` from `source`, once it says it is a performance
        document of this version (`PerfFormatError` naming what is wrong otherwise)."""
        if not isinstance(data, Mapping):
            raise PerfFormatError(f"{source}: a performance document is a JSON object, got "
                                  f"{type(data).__name__}")
        if data.get("format") != PERF_FORMAT:
            raise PerfFormatError(clean_text(
                f"{source}: not a performance document (format {data.get('format')!r}, "
                f"expected {PERF_FORMAT!r})", 300))
        if data.get("version") != PERF_VERSION:
            raise PerfFormatError(clean_text(
                f"{source}: performance document version {data.get('version')!r}, this "
                f"fusionspec reads {PERF_VERSION}", 300))
        return cls.read(data, source, "$")

    def defect(self) -> tuple[str, str] | None:
        if self.shard is not None:
            index, _, count = self.shard.partition("/")
            if int(index) > int(count):
                return ".shard", f"{self.shard!r} is not K/N with K <= N"
        seen: set[str] = set()
        for n, record in enumerate(self.workloads):
            if record.id in seen:
                return f".workloads[{n}]", f"workload {record.id!r} appears twice"
            seen.add(record.id)
        return None

    @property
    def label(self) -> str:
        """The run as people name it: its backend on its device."""
        return f"{self.backend} on {self.device.id}"


#: Every record of the document, the document first.
RECORDS: tuple[type[PerfRecord], ...] = (PerfDocument, Device, Selection, Policy, Environment,
                                     Yardsticks, WorkloadRecord, OutputCheck, SideTiming,
                                     Roofline)
