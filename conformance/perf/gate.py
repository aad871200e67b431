"""The performance gate: is a run slower than its baseline, beyond what noise explains?

Two performance documents (`fusionspec.conformance.perf.document`) are compared workload by
workload (by workload id). A machine's speed drifts between runs far more than within one (on
a shared machine, tens of percent for seconds at a time: another job's burst slows both sides
of whatever workload is being timed), and each side's confidence interval only covers the
noise within its run. Between runs of one build the level of a side moves too, and about as
far as that run's own spread: ten `small` runs of the whole catalog on PoCL (2 shared cores)
had one fused kernel steady at 1.11 ms in one run and at 1.46 ms, its interval 17% wide, in
another. So the gate first widens each side's interval [l, h] by its own ratio h/l at each
end (`widen`, default 1: [l^2/h, h^2/l]; a steady side's interval stays narrow, an unsteady
one's widens), then asks two questions, each of which the widened intervals must support in
their most favourable reading:

- **fused against op by op** (`threshold`, default 10%): did the fused side slow down
  relative to the op-by-op side timed in alternation with it? Load falls on both alike, so
  this ratio is steady between runs of one build, and a slower fused kernel moves it::

      (new.fused.low / new.opbyop.high) > (old.fused.high / old.opbyop.low) * (1 + threshold)

- **absolute** (`absolute_threshold`, default 150%): did a side (fused or op by op) slow
  down beyond the run-wide drift (the median new/old ratio of every side compared) more than
  2.5 times: ``new.low / old.high / drift > 1 + absolute_threshold``. This catches what slows
  both sides at once (a slower kernel the fused and single-op partitions share), at a
  threshold above what one workload's level does between runs of one build: on PoCL (2
  shared cores) both sides of a workload ran twice as fast in some runs' processes as in
  others, steadily within each (1.2 against 2.4 ms), which a 50% threshold took for a
  regression.

What the gate can catch thus depends on how steady the workload is: each widened end lies a
factor r^1.5 from the median for an interval of ratio r, and the relative question takes
four ends, so a slowdown must exceed (1 + threshold) * r^6. With every interval spanning at
most 2.5% of its median a fused side 30% slower is caught (1.1 * 1.025^6 = 1.28); a workload
whose intervals span 10% needs about 1.1 * 1.1^6 = 1.95x.

A workload that was measured in the baseline and fails to run in the new document is a
regression too. Speedups (the mirror images) and changed verdicts are listed, not gated.
"""

from __future__ import annotations

import statistics
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from .document import PerfFormatError

__all__ = ["DEFAULT_THRESHOLD", "DEFAULT_ABSOLUTE_THRESHOLD", "DEFAULT_WIDEN", "SIDES",
           "Change", "PerfDiff", "compare"]

#: The slowdown of the fused side against op by op that the gate flags (10%).
DEFAULT_THRESHOLD = 0.10
#: The slowdown of a side beyond the run-wide drift that the gate flags (x2.5).
DEFAULT_ABSOLUTE_THRESHOLD = 1.50
#: How far the gate widens each side's interval before comparing: by the interval's own
#: high/low ratio at each end (1: an interval [l, h] is read as [l^2/h, h^2/l]).
DEFAULT_WIDEN = 1.0
#: The sides the gate compares.
SIDES = ("fused", "opbyop")


@dataclass(frozen=True)
class Change:
    """One side of one workload (or its fused side against op by op) whose time moved beyond
    the threshold: the fused or side's medians in ms and the smallest ratio (new over old)
    that the intervals allow (largest for a speedup)."""

    workload: str
    pattern: str
    side: str
    old_ms: float
    new_ms: float
    bound: float

    def describe(self) -> str:
        return (f"{self.workload} ({self.side}): {self.old_ms:.4g} ms -> {self.new_ms:.4g} ms, "
                f"x{self.new_ms / self.old_ms:.2f} (intervals allow at least x{self.bound:.2f})"
                if self.old_ms > 0 else f"{self.workload} ({self.side})")


@dataclass
class PerfDiff:
    """The comparison of a new run with its baseline (see the module docstring)."""

    threshold: float
    regressions: list[Change] = field(default_factory=list)
    speedups: list[Change] = field(default_factory=list)
    broken: list[str] = field(default_factory=list)  # measured before, an error now
    verdicts: list[tuple[str, str, str]] = field(default_factory=list)
    only_old: list[str] = field(default_factory=list)
    only_new: list[str] = field(default_factory=list)
    compared: int = 0
    drift: float = 1.0  # the run-wide median new/old ratio
    note: str = ""

    @property
    def failed(self) -> bool:
        return bool(self.regressions or self.broken)

    @property
    def patterns(self) -> list[str]:
        """The patterns with a regression, in order of first appearance."""
        return list(dict.fromkeys(c.pattern for c in self.regressions))


def _span(timing: Mapping[str, Any], widen: float) -> tuple[float, float]:
    """The side's median interval, widened by its own ratio (high over low) to the power
    `widen` at each end: between runs the level moves about as far as the run's own spread
    (0, 0 for an interval that does not lie above zero)."""
    low, high = float(timing["ci_low"]), float(timing["ci_high"])
    if low <= 0 or high < low:
        return 0.0, 0.0
    stretch = (high / low) ** widen
    return low / stretch, high * stretch


def _bounds(before: Mapping[str, Any], after: Mapping[str, Any], widen: float = 0.0
            ) -> tuple[float, float]:
    """The smallest and the largest new/old ratio the two (widened) intervals allow."""
    old, new = _span(before, widen), _span(after, widen)
    slow = new[0] / old[1] if old[1] > 0 else 0.0
    fast = new[1] / old[0] if old[0] > 0 else float("inf")
    return slow, fast


def _relative(old: Mapping[str, Any], new: Mapping[str, Any], widen: float = 0.0
              ) -> tuple[float, float]:
    """The smallest and largest change of fused over op by op the (widened) intervals
    allow."""
    of, oo = (_span(old["timings"][s], widen) for s in SIDES)
    nf, no = (_span(new["timings"][s], widen) for s in SIDES)
    if min(of[0], oo[0], no[0], nf[0]) <= 0:
        return 1.0, 1.0
    low = (nf[0] / no[1]) / (of[1] / oo[0])
    high = (nf[1] / no[0]) / (of[0] / oo[1])
    return low, high


def _drift(pairs: Sequence[tuple[Mapping[str, Any], Mapping[str, Any]]],
           sides: Sequence[str]) -> float:
    """The median new/old ratio of the medians of every side compared (1 without any)."""
    ratios = sorted(float(n["timings"][s]["median"]) / float(o["timings"][s]["median"])
                    for o, n in pairs for s in sides
                    if s in o["timings"] and s in n["timings"]
                    and o["timings"][s]["median"] > 0)
    return statistics.median(ratios) if ratios else 1.0


def compare(old: Mapping[str, Any], new: Mapping[str, Any], threshold: float = DEFAULT_THRESHOLD,
            sides: Sequence[str] = SIDES,
            absolute_threshold: float = DEFAULT_ABSOLUTE_THRESHOLD,
            widen: float = DEFAULT_WIDEN) -> PerfDiff:
    """Compare two checked performance documents; `PerfFormatError` when they measured
    different sizes (their figures do not compare)."""
    if not threshold >= 0 or not absolute_threshold >= 0 or not widen >= 0:
        raise PerfFormatError(f"the thresholds and the widening must be 0 or more, got "
                              f"{threshold}, {absolute_threshold} and {widen}")
    if old["size"] != new["size"]:
        raise PerfFormatError(f"the baseline measured size {old['size']!r} and the new run "
                              f"{new['size']!r}: only runs of the same size compare")
    diff = PerfDiff(threshold)
    where = [f"{d['backend']} on {d['device']['id']}" for d in (old, new)]
    if where[0] != where[1]:
        diff.note = f"comparing {where[1]} against {where[0]}"
    before = {r["id"]: r for r in old["workloads"]}
    after = {r["id"]: r for r in new["workloads"]}
    diff.only_old = [i for i in before if i not in after]
    diff.only_new = [i for i in after if i not in before]
    pairs = []
    for ident, record in after.items():
        base = before.get(ident)
        if base is None or "error" in base:
            continue
        if "error" in record:
            diff.broken.append(f"{ident}: {record['error']}")
            continue
        pairs.append((base, record))
        if base.get("verdict") != record.get("verdict"):
            diff.verdicts.append((ident, str(base.get("verdict")), str(record.get("verdict"))))
    diff.compared = len(pairs)
    diff.drift = _drift(pairs, sides)
    for base, record in pairs:
        low, high = _relative(base, record, widen)
        fused = (float(base["timings"]["fused"]["median"]),
                 float(record["timings"]["fused"]["median"]))
        if low > 1.0 + threshold:
            diff.regressions.append(Change(record["id"], record["pattern"],
                                           "fused against op by op", *fused, low))
        elif high * (1.0 + threshold) < 1.0:
            diff.speedups.append(Change(record["id"], record["pattern"],
                                        "fused against op by op", *fused, high))
        for side in sides:
            b, a = base["timings"].get(side), record["timings"].get(side)
            if b is None or a is None:
                continue
            slow, fast = _bounds(b, a, widen)
            if slow / diff.drift > 1.0 + absolute_threshold:
                diff.regressions.append(Change(record["id"], record["pattern"], side,
                                               float(b["median"]), float(a["median"]), slow))
            elif fast / diff.drift * (1.0 + absolute_threshold) < 1.0:
                diff.speedups.append(Change(record["id"], record["pattern"], side,
                                            float(b["median"]), float(a["median"]), fast))
    return diff
