"""One way to time a compiled partition (or anything else), for every benchmark of the project.

A figure is only as good as the way it was taken, and a GPU makes a careless way wrong by
large factors: a kernel of 0.05 ms timed by the host's clock around its launch and the wait
for the queue measures the launch and the wait, not the kernel. So:

- **Device time where the backend can give it.** A compiled partition may offer the optional
  method ``execute_timed(inputs) -> float`` (`DeviceTimed`): one run of its kernels, and the
  seconds they took on the device (the OpenCL backend reads them from profiling events).
  Otherwise `time_partition` falls back to the host's clock around ``execute``, which then
  includes moving the inputs and outputs (`Timing.method` says which).
- **Warm-up.** The first runs (`TimingPolicy.warmup`) are not kept: they pay for first
  touches of memory, lazily built state and clocks ramping up.
- **As many runs as the figure needs.** Runs are taken until the median's confidence
  interval is narrower than `TimingPolicy.target_spread` of the median (after at least
  `min_repeats`), or the time budget is spent, or `max_repeats` are in.
- **Minimum, median and a confidence interval.** The interval is the distribution-free one of
  the median (order statistics of the sorted samples; `median_interval`), which assumes
  nothing of the shape of the timing noise.

`Measurement` is the incremental form, for a benchmark that interleaves several sides (each
side's samples alternate with the others', so that drifting load affects all alike);
`interleave` runs such a rotation (forwards, then backwards, with an optional idle pause before
each sample, for runtimes whose worker threads keep spinning after a call); `measure` times one
side in a block. Both take the clock as an argument, so tests run on a fake clock.
"""

from __future__ import annotations

import math
import statistics
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Protocol, runtime_checkable

from fusionspec.spec.types import Array

__all__ = ["TimingPolicy", "Timing", "Measurement", "DeviceTimed", "measure", "wall_clock",
           "median_interval", "time_partition", "TimingError", "interleave"]

Clock = Callable[[], float]


class TimingError(ValueError):
    """A timing policy or sample that cannot give a figure (the message says which)."""


@dataclass(frozen=True)
class TimingPolicy:
    """How long to measure: `warmup` runs not kept; at least `min_repeats` and at most
    `max_repeats` kept; more runs until the median's `confidence` interval spans at most
    `target_spread` of the median or `budget_s` seconds of the clock are spent (warm-up
    included)."""

    warmup: int = 2
    min_repeats: int = 5
    max_repeats: int = 100
    budget_s: float = 2.0
    target_spread: float = 0.02
    confidence: float = 0.95

    def __post_init__(self) -> None:
        if self.warmup < 0:
            raise TimingError(f"warmup must be 0 or more, got {self.warmup}")
        if not 1 <= self.min_repeats <= self.max_repeats:
            raise TimingError(f"need 1 <= min_repeats <= max_repeats, got {self.min_repeats} "
                              f"and {self.max_repeats}")
        if not self.budget_s > 0 or not self.target_spread >= 0:
            raise TimingError(f"budget_s must be positive and target_spread not negative, got "
                              f"{self.budget_s} and {self.target_spread}")
        if not 0 < self.confidence < 1:
            raise TimingError(f"confidence must lie strictly between 0 and 1, got "
                              f"{self.confidence}")


def median_interval(ordered: list[float], confidence: float) -> tuple[float, float]:
    """The distribution-free `confidence` interval of the median of sorted samples: the
    order statistics x(j) and x(n-j+1) with j the largest rank for which the binomial(n, 1/2)
    tail below j stays within (1 - confidence) / 2. With too few samples for that, the whole
    range (whose coverage is then less than asked)."""
    n = len(ordered)
    if n == 0:
        raise TimingError("no samples to take an interval of")
    alpha = (1.0 - confidence) / 2
    tail, j = 0.0, 0
    # tail = P(B <= j - 1); grow j while P(B <= j) still fits in alpha.
    while j < n // 2:
        nxt = tail + math.comb(n, j) / 2.0 ** n
        if nxt > alpha:
            break
        tail, j = nxt, j + 1
    low = max(j, 1) - 1
    return ordered[low], ordered[n - 1 - low]


@dataclass(frozen=True)
class Timing:
    """The kept samples (seconds) of one side and what they say."""

    samples: tuple[float, ...]
    method: str = "wall"  # "events": device time from the backend; "wall": the host's clock
    confidence: float = 0.95
    stopped: str = ""  # why sampling stopped: "spread", "budget" or "repeats"

    def __post_init__(self) -> None:
        if not self.samples:
            raise TimingError("a timing needs at least one sample")

    @property
    def minimum(self) -> float:
        return min(self.samples)

    @property
    def median(self) -> float:
        return statistics.median(self.samples)

    @property
    def interval(self) -> tuple[float, float]:
        return median_interval(sorted(self.samples), self.confidence)

    @property
    def relative_spread(self) -> float:
        """The median interval's width over the median (inf for a median of 0)."""
        low, high = self.interval
        return (high - low) / self.median if self.median > 0 else math.inf

    def as_dict(self, scale: float = 1e3) -> dict[str, object]:
        """The figures for a JSON document, times multiplied by `scale` (ms by default)."""
        low, high = self.interval
        return {"method": self.method, "repeats": len(self.samples),
                "min": self.minimum * scale, "median": self.median * scale,
                "ci_low": low * scale, "ci_high": high * scale,
                "confidence": self.confidence, "stopped": self.stopped,
                "samples": [s * scale for s in self.samples]}


@dataclass
class Measurement:
    """Samples of one side taken one at a time under `policy` (see the module docstring);
    `started` is the clock reading the budget counts from."""

    policy: TimingPolicy
    started: float
    method: str = "wall"
    seen: int = 0
    samples: list[float] = field(default_factory=list)

    def add(self, seconds: float) -> None:
        """Record one run (warm-up runs are counted and dropped)."""
        if not math.isfinite(seconds) or seconds < 0:
            raise TimingError(f"a run took {seconds!r} seconds: not a duration")
        self.seen += 1
        if self.seen > self.policy.warmup:
            self.samples.append(seconds)

    def stop_reason(self, now: float) -> str:
        """Why to take no more runs ("" to go on): enough repeats, a narrow enough interval,
        or the budget spent (after at least min_repeats)."""
        policy, kept = self.policy, len(self.samples)
        if kept >= policy.max_repeats:
            return "repeats"
        if kept < policy.min_repeats:
            return ""
        if self.timing().relative_spread <= policy.target_spread:
            return "spread"
        return "budget" if now - self.started >= policy.budget_s else ""

    def timing(self, stopped: str = "") -> Timing:
        return Timing(tuple(self.samples), self.method, self.policy.confidence, stopped)


def wall_clock(run: Callable[[], object], clock: Clock = time.perf_counter
               ) -> Callable[[], float]:
    """A sampler that times `run` by `clock`."""
    def sample() -> float:
        start = clock()
        run()
        return clock() - start
    return sample


def measure(sample: Callable[[], float], policy: TimingPolicy | None = None, *,
            method: str = "wall", clock: Clock = time.perf_counter) -> Timing:
    """Time one side: call `sample` (which runs once and returns its seconds) until `policy`
    says stop (see the module docstring)."""
    policy = policy or TimingPolicy()
    found = Measurement(policy, clock(), method)
    while True:
        found.add(sample())
        why = found.stop_reason(clock())
        if why:
            return found.timing(why)


def interleave(sides: Mapping[str, Callable[[], float]], policy: TimingPolicy | None = None, *,
               methods: Mapping[str, str] | None = None, settle_s: float = 0.0,
               clock: Clock = time.perf_counter,
               sleep: Callable[[float], None] = time.sleep) -> dict[str, Timing]:
    """Time several sides in alternation: one sample of each in turn (forwards, then
    backwards), each after `settle_s` of idle time, until each side's own figure is good
    enough under `policy`; a side that is done leaves the rotation. `methods` names each
    side's method ("wall" where not given)."""
    policy = policy or TimingPolicy()
    if not sides:
        raise TimingError("no side to time")
    names = list(sides)
    started = clock()
    found = {name: Measurement(policy, started, (methods or {}).get(name, "wall"))
             for name in names}
    done: dict[str, str] = {}
    turn = 0
    while len(done) < len(names):
        for name in names if turn % 2 == 0 else names[::-1]:
            if name in done:
                continue
            if settle_s > 0:
                sleep(settle_s)
            found[name].add(sides[name]())
            why = found[name].stop_reason(clock())
            if why:
                done[name] = why
        turn += 1
    return {name: found[name].timing(done[name]) for name in names}


@runtime_checkable
class DeviceTimed(Protocol):
    """A compiled partition that can time its own kernels on the device."""

    def execute_timed(self, inputs: Mapping[int, Array]) -> float: ...


class _Executes(Protocol):
    def execute(self, inputs: Mapping[int, Array]) -> Mapping[int, Array]: ...


def time_partition(compiled: _Executes, inputs: Mapping[int, Array],
                   policy: TimingPolicy | None = None, *, clock: Clock = time.perf_counter
                   ) -> Timing:
    """Time a compiled partition on `inputs`: by its ``execute_timed`` where it has one
    (method "events"), else by `clock` around ``execute`` (method "wall")."""
    if isinstance(compiled, DeviceTimed):
        timed = compiled
        return measure(lambda: timed.execute_timed(inputs), policy, method="events",
                       clock=clock)
    return measure(wall_clock(lambda: compiled.execute(inputs), clock), policy, clock=clock)
