"""The performance results document as typed records: what `fusionspec bench` writes, read.

`PerfDocument` is the document (`fusionspec.conformance.perf.document` says what each key
means); each nested object is a record of its own: `Device`, `Selection`, `Policy`,
`Environment`, `Yardsticks`, and per workload a `WorkloadRecord` with its `OutputCheck`, the
`SideTiming` of each side and its `Roofline` figures. Every record reads parsed JSON
(`from_json`, a `PerfFormatError` naming the JSON path of a member of the wrong type) and
writes it back (`to_json`: the same JSON, key order included, keys it does not model kept in
`extra`); the declarations also give the JSON schema (`fusionspec.conformance.perf.schema`).

A member that a document may leave out is ``None`` when it does; ``shard`` and the
environment's ``cpus`` may also be JSON ``null`` (an unsharded run, a machine that does not
say), which a document read keeps apart from an absent key.
"""

from __future__ import annotations

import dataclasses
from dataclasses import field
from typing import Any, ClassVar

from .fields import PerfFormatError, Record, member

__all__ = ["PERF_FORMAT", "PERF_VERSION", "PerfFormatError", "Device", "Selection", "Policy",
           "Environment", "Yardsticks", "SideTiming", "OutputCheck", "Roofline",
           "WorkloadRecord", "PerfDocument", "RECORDS"]

PERF_FORMAT = "fusionspec-perf"
PERF_VERSION = 1

#: The sides every measured workload has.
_SIDES = ("fused", "opbyop")


@dataclasses.dataclass(frozen=True, kw_only=True)
class Device(Record):
    """The device the run measured on."""

    id: str
    kind: str
    name: str | None = None
    driver: str | None = None
    runtime: str | None = None


@dataclasses.dataclass(frozen=True, kw_only=True)
class Selection(Record):
    """How many workloads the run was given before ``--shard`` and a digest of their ids."""

    workloads: int = field(metadata=member(minimum=0))
    sha256: str = field(metadata=member(pattern="^[0-9a-f]{64}$"))


@dataclasses.dataclass(frozen=True, kw_only=True)
class Policy(Record):
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
class Environment(Record):
    """The machine the run measured on, and its settings that change timings."""

    python: str | None = None
    numpy: str | None = None
    machine: str | None = None
    cpus: int | None = field(default=None, metadata=member(nullable=True))
    load_average: tuple[float, ...] | None = None
    settings: dict[str, str] | None = None


@dataclasses.dataclass(frozen=True, kw_only=True)
class Yardsticks(Record):
    """On a CPU device: NumPy's copy bandwidth and sgemm rate on this machine, best and
    median (a script may add the device's own under other keys)."""

    copy_gb_s: float | None = None
    gemm_gflop_s: float | None = None
    gemm_shape: tuple[int, ...] | None = None
    copy_median_gb_s: float | None = None
    gemm_median_gflop_s: float | None = None


@dataclasses.dataclass(frozen=True, kw_only=True)
class SideTiming(Record):
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


@dataclasses.dataclass(frozen=True, kw_only=True)
class OutputCheck(Record):
    """Whether the two sides' outputs agree with each other and with the reference; a
    difference that is not finite reads ``"inf"``."""

    agree: bool
    max_difference: float | str
    reference_difference: float | str | None = None


@dataclasses.dataclass(frozen=True, kw_only=True)
class Roofline(Record):
    """The fused side's achieved rates and their shares of the yardsticks; any other key is
    a figure of 0 or more too."""

    EXTRA: ClassVar[Any] = float
    EXTRA_MEMBER: ClassVar[dict[str, Any]] = member(minimum=0)

    gflop_s: float | None = field(default=None, metadata=member(minimum=0))
    gb_s: float | None = field(default=None, metadata=member(minimum=0))
    copy_share: float | None = field(default=None, metadata=member(minimum=0))
    gemm_share: float | None = field(default=None, metadata=member(minimum=0))


@dataclasses.dataclass(frozen=True, kw_only=True)
class WorkloadRecord(Record):
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
                                                   metadata=member(required=_SIDES))
    ratio: float | None = field(default=None, metadata=member(minimum=0))
    verdict: str | None = field(default=None, metadata=member(
        enum=("fusion pays", "fusion does not pay", "not fused")))
    roofline: Roofline | None = None
    error: str | None = None
    unsupported: str | None = None
    rerun: str | None = None

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
class PerfDocument(Record):
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

    @property
    def label(self) -> str:
        """The run as people name it: its backend on its device."""
        return f"{self.backend} on {self.device.id}"


#: Every record of the document, the document first.
RECORDS: tuple[type[Record], ...] = (PerfDocument, Device, Selection, Policy, Environment,
                                     Yardsticks, WorkloadRecord, OutputCheck, SideTiming,
                                     Roofline)
