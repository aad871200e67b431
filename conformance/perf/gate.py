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

On a loaded machine that bar can stand higher than the slowdowns that matter: Add + ReLU's
fused side made 50% slower moved its op-by-op over fused ratio from 1.08 to 0.62 (x1.74), and
with intervals 10% wide the widened reading needs x1.95. A verdict that flips is therefore
judged apart from the widening:

- **a fusion that paid and now costs**: the baseline's verdict is ``fusion pays`` (its fused
  interval wholly below op by op's) and the new run's fused interval lies wholly above op by
  op's (`fusion_costs`). Both runs' intervals then clear the verdict's boundary, on opposite
  sides, and the relative question is asked of the bare intervals (no widening): the change
  must still exceed `threshold`. A flip that only straddles the boundary (new intervals that
  overlap) is noise the verdict itself admits, and is listed, not gated;
- **a fusion that paid and is no longer formed** (``not fused``): partitioning does not depend
  on timing, so no noise rule applies.

Each comparison also says what it could have caught (`Reach`, one per workload compared): the
smallest slowdown of the fused side that would have been flagged had the new run measured the
fused side that much slower than the baseline's fused/op-by-op ratio predicts, with the spreads
both runs measured: ``(1 + threshold) * S`` for the relative question, where S is the product
of the four (widened) ends' distances from their medians; ``(1 + absolute_threshold)`` times
the two fused ends' for the absolute one; and, for a fusion that paid, the slowdown that makes
its bare intervals flip. `PerfDiff.detectable` sums it up over the run.

A workload that was measured in the baseline and fails to run in the new document is a
regression too. Speedups (the mirror images) and the other changed verdicts are listed, not
gated; a workload the backend now declares unsupported is listed, and one of either run that
was declared unsupported is not compared.

What a comparison cannot vouch for fails it too:

- **an invalid measurement**: a fused or op-by-op side whose median interval starts at 0 s
  (a backend's timer may read 0) in either run. Such an interval would lie below any other,
  so it is refused and listed, never compared (the loader already refuses NaN, infinite,
  negative and inverted intervals);
- **a narrower run**: workloads of the baseline that the new run does not hold at all (a
  narrower selection, a shard, renamed workloads). ``allow_narrower`` accepts that on
  purpose; the workloads are listed either way;
- **an incomplete run**: a new document that says it is ``incomplete`` (a merge that lacks a
  shard), or a comparison that compared no workload at all.
"""

from __future__ import annotations

import math
import statistics
from collections.abc import Sequence
from dataclasses import dataclass, field

from .records import PerfDocument, PerfFormatError, SideTiming, WorkloadRecord
from .verdicts import DOES_NOT_PAY, FUSION_PAYS, NOT_FUSED, fusion_costs

__all__ = ["DEFAULT_THRESHOLD", "DEFAULT_ABSOLUTE_THRESHOLD", "DEFAULT_WIDEN", "SIDES",
           "RELATIVE", "Change", "Reach", "Detectable", "PerfDiff", "compare"]

#: The slowdown of the fused side against op by op that the gate flags (10%).
DEFAULT_THRESHOLD = 0.10
#: The slowdown of a side beyond the run-wide drift that the gate flags (x2.5).
DEFAULT_ABSOLUTE_THRESHOLD = 1.50
#: How far the gate widens each side's interval before comparing: by the interval's own
#: high/low ratio at each end (1: an interval [l, h] is read as [l^2/h, h^2/l]).
DEFAULT_WIDEN = 1.0
#: The sides the gate compares.
SIDES = ("fused", "opbyop")
#: The `Change.side` of the fused side's change against op by op.
RELATIVE = "fused against op by op"


@dataclass(frozen=True)
class Change:
    """One side of one workload (or its fused side against op by op) whose time moved beyond
    the threshold: the fused or side's medians in ms and the smallest ratio (new over old)
    that the intervals allow (largest for a speedup); `why` names the rule when it is a
    flipped verdict rather than the widened intervals."""

    workload: str
    pattern: str
    side: str
    old_ms: float
    new_ms: float
    bound: float
    why: str = ""

    def describe(self) -> str:
        text = (f"{self.workload} ({self.side}): {self.old_ms:.4g} ms -> {self.new_ms:.4g} ms, "
                f"x{self.new_ms / self.old_ms:.2f} (intervals allow at least x{self.bound:.2f})"
                if self.old_ms > 0 else f"{self.workload} ({self.side})")
        return f"{text}; {self.why}" if self.why else text


@dataclass(frozen=True)
class Reach:
    """The smallest slowdown of one workload's fused side that each rule would have flagged in
    this comparison (see the module docstring); `flip` only for a fusion that paid in the
    baseline. Infinite where an interval does not lie above zero."""

    workload: str
    relative: float
    absolute: float
    flip: float | None = None

    @property
    def least(self) -> float:
        return min(x for x in (self.relative, self.absolute, self.flip) if x is not None)


@dataclass(frozen=True)
class Detectable:
    """`Reach.least` over the workloads of one comparison: the median, the steadiest workload's
    and the least steady one's (named)."""

    median: float
    best: float
    worst: float
    worst_workload: str
    workloads: int

    def describe(self) -> str:
        if self.workloads == 1:
            return f"a fused side x{self.median:.2f} slower or more ({self.worst_workload})"
        return (f"a fused side x{self.median:.2f} slower or more (median of {self.workloads} "
                f"workloads; x{self.best:.2f} on the steadiest, x{self.worst:.2f} on "
                f"{self.worst_workload})")


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
    unsupported: list[str] = field(default_factory=list)  # declared so by either run
    reach: list[Reach] = field(default_factory=list)
    compared: int = 0
    drift: float = 1.0  # the run-wide median new/old ratio
    note: str = ""
    invalid: list[str] = field(default_factory=list)  # intervals that start at 0 s
    allow_narrower: bool = False
    incomplete: str = ""  # why the comparison cannot vouch for the new run

    @property
    def narrowed(self) -> str:
        """What the new run left out of the baseline ("" when nothing)."""
        if not self.only_old:
            return ""
        return (f"{len(self.only_old)} workload(s) of the baseline are not in the new run "
                f"(first: {self.only_old[0]})")

    @property
    def failed(self) -> bool:
        return bool(self.regressions or self.broken or self.invalid or self.incomplete
                    or (self.narrowed and not self.allow_narrower))

    @property
    def patterns(self) -> list[str]:
        """The patterns with a regression, in order of first appearance."""
        return list(dict.fromkeys(c.pattern for c in self.regressions))

    @property
    def detectable(self) -> Detectable | None:
        """What this comparison could have caught, over its workloads (None without any)."""
        if not self.reach:
            return None
        least = [(r.least, r.workload) for r in self.reach]
        worst = max(least)
        return Detectable(statistics.median(x for x, _ in least), min(least)[0], worst[0],
                          worst[1], len(least))


def _side(record: WorkloadRecord, side: str) -> SideTiming:
    """The timing of `side` of a measured workload (`PerfFormatError` without one)."""
    found = record.side(side)
    if found is None:
        raise PerfFormatError(f"workload {record.id!r} has no {side} timing")
    return found


def _span(timing: SideTiming, widen: float) -> tuple[float, float]:
    """The side's median interval, widened by its own ratio (high over low) to the power
    `widen` at each end: between runs the level moves about as far as the run's own spread
    (0, 0 for an interval that does not lie above zero)."""
    low, high = float(timing.ci_low), float(timing.ci_high)
    if low <= 0 or high < low:
        return 0.0, 0.0
    stretch = (high / low) ** widen
    return low / stretch, high * stretch


def _ends(timing: SideTiming, widen: float) -> tuple[float, float]:
    """How far the (widened) interval's lower and upper ends lie from the median, as factors
    of 1 or more (infinite for an interval that does not lie above zero)."""
    low, high = _span(timing, widen)
    median = float(timing.median)
    if low <= 0 or median <= 0:
        return math.inf, math.inf
    return max(median / low, 1.0), max(high / median, 1.0)


def _bounds(before: SideTiming, after: SideTiming, widen: float = 0.0
            ) -> tuple[float, float]:
    """The smallest and the largest new/old ratio the two (widened) intervals allow."""
    old, new = _span(before, widen), _span(after, widen)
    slow = new[0] / old[1] if old[1] > 0 else 0.0
    fast = new[1] / old[0] if old[0] > 0 else float("inf")
    return slow, fast


def _relative(old: WorkloadRecord, new: WorkloadRecord, widen: float = 0.0
              ) -> tuple[float, float]:
    """The smallest and largest change of fused over op by op the (widened) intervals
    allow."""
    of, oo = (_span(_side(old, s), widen) for s in SIDES)
    nf, no = (_span(_side(new, s), widen) for s in SIDES)
    if min(of[0], oo[0], no[0], nf[0]) <= 0:
        return 1.0, 1.0
    low = (nf[0] / no[1]) / (of[1] / oo[0])
    high = (nf[1] / no[0]) / (of[0] / oo[1])
    return low, high


def _spread(old: WorkloadRecord, new: WorkloadRecord, widen: float) -> float:
    """The product of the distances of the four ends the relative question reads from their
    medians: the factor by which its bound lies below the change of the medians."""
    of, oo = (_ends(_side(old, s), widen) for s in SIDES)
    nf, no = (_ends(_side(new, s), widen) for s in SIDES)
    return of[1] * oo[0] * nf[0] * no[1]


def _paid_now_costs(old: WorkloadRecord, new: WorkloadRecord) -> bool:
    """Whether a fusion that paid in the baseline is slower than op by op now, each run's
    intervals clearing the verdict's boundary (see the module docstring)."""
    return (old.verdict == FUSION_PAYS and new.verdict == DOES_NOT_PAY
            and fusion_costs(new.fused, new.opbyop))


def _reach(old: WorkloadRecord, new: WorkloadRecord, threshold: float,
           absolute_threshold: float, widen: float) -> Reach:
    """What a fused slowdown had to be for the gate to flag it (see the module docstring)."""
    relative = (1.0 + threshold) * _spread(old, new, widen)
    fused_old, fused_new = (_ends(d.fused, widen) for d in (old, new))
    absolute = (1.0 + absolute_threshold) * fused_old[1] * fused_new[0]
    flip = None
    if old.verdict == FUSION_PAYS and new.verdict != NOT_FUSED:
        # Centred on the baseline's ratio, the new fused interval clears the op-by-op one
        # once it has moved up past the op-by-op side's upper end.
        nf, no = (_ends(_side(new, s), 0.0) for s in SIDES)
        of_median, oo_median = (float(_side(old, s).median) for s in SIDES)
        clears = oo_median / of_median * nf[0] * no[1] if of_median > 0 else math.inf
        flip = max(clears, (1.0 + threshold) * _spread(old, new, 0.0))
    return Reach(new.id, relative, absolute, flip)


def _drift(pairs: Sequence[tuple[WorkloadRecord, WorkloadRecord]],
           sides: Sequence[str]) -> float:
    """The median new/old ratio of the medians of every side compared (1 without any)."""
    ratios = sorted(float(_side(n, s).median) / float(_side(o, s).median)
                    for o, n in pairs for s in sides
                    if o.side(s) is not None and n.side(s) is not None
                    and _side(o, s).median > 0)
    return statistics.median(ratios) if ratios else 1.0


def _fused_change(diff: PerfDiff, base: WorkloadRecord, record: WorkloadRecord,
                  widen: float) -> None:
    """The relative question, and the flipped verdicts that are judged apart from it."""
    threshold = diff.threshold
    fused = (float(base.fused.median), float(record.fused.median))
    change = (record.id, record.pattern, RELATIVE, *fused)
    low, high = _relative(base, record, widen)
    bare = _relative(base, record)[0]
    if low > 1.0 + threshold:
        diff.regressions.append(Change(*change, low))
    elif _paid_now_costs(base, record) and bare > 1.0 + threshold:
        diff.regressions.append(Change(*change, bare, "the fusion paid in the baseline and "
                                       "is slower than op by op now, beyond both intervals"))
    elif high * (1.0 + threshold) < 1.0:
        diff.speedups.append(Change(*change, high))
    if base.verdict == FUSION_PAYS and record.verdict == NOT_FUSED:
        diff.regressions.append(Change(record.id, record.pattern, "partitions", *fused,
                                       bare, "the fusion paid in the baseline and the backend "
                                       "no longer forms it"))


def _invalid(record: WorkloadRecord, run: str) -> str:
    """Why `record`'s fused or op-by-op interval is no measurement ("" when it is one)."""
    for side in SIDES:
        timing = record.side(side)
        if timing is not None and (float(timing.ci_low) <= 0 or float(timing.median) <= 0):
            return (f"{record.id}: the {side} side of the {run} measured 0 s (interval "
                    f"[{timing.ci_low}, {timing.ci_high}] ms): an invalid measurement")
    return ""


def compare(old: PerfDocument, new: PerfDocument, threshold: float = DEFAULT_THRESHOLD,
            sides: Sequence[str] = SIDES,
            absolute_threshold: float = DEFAULT_ABSOLUTE_THRESHOLD,
            widen: float = DEFAULT_WIDEN, *, allow_narrower: bool = False) -> PerfDiff:
    """Compare two checked performance documents; `PerfFormatError` when they measured
    different sizes (their figures do not compare). `allow_narrower` accepts a new run that
    leaves out workloads of the baseline."""
    if not threshold >= 0 or not absolute_threshold >= 0 or not widen >= 0:
        raise PerfFormatError(f"the thresholds and the widening must be 0 or more, got "
                              f"{threshold}, {absolute_threshold} and {widen}")
    if old.size != new.size:
        raise PerfFormatError(f"the baseline measured size {old.size!r} and the new run "
                              f"{new.size!r}: only runs of the same size compare")
    diff = PerfDiff(threshold, allow_narrower=allow_narrower)
    where = [d.label for d in (old, new)]
    if where[0] != where[1]:
        diff.note = f"comparing {where[1]} against {where[0]}"
    before = {r.id: r for r in old.workloads}
    after = {r.id: r for r in new.workloads}
    diff.only_old = [i for i in before if i not in after]
    diff.only_new = [i for i in after if i not in before]
    pairs: list[tuple[WorkloadRecord, WorkloadRecord]] = []
    for ident, record in after.items():
        base = before.get(ident)
        if base is None:
            continue
        if base.unsupported is not None or record.unsupported is not None:
            # A declared limitation is the backend's word, as in a conformance run.
            run, why = ("new run", record.unsupported) if record.unsupported is not None \
                else ("baseline", base.unsupported)
            diff.unsupported.append(f"{ident}: declared unsupported in the {run}: {why}")
            continue
        if base.error is not None:
            continue
        if record.error is not None:
            diff.broken.append(f"{ident}: {record.error}")
            continue
        why = _invalid(base, "baseline") or _invalid(record, "new run")
        if why:
            diff.invalid.append(why)
            continue
        pairs.append((base, record))
        if base.verdict != record.verdict:
            diff.verdicts.append((ident, str(base.verdict), str(record.verdict)))
    diff.invalid += [why for r in new.workloads if r.id not in before and r.timings is not None
                     for why in [_invalid(r, "new run")] if why]
    diff.compared = len(pairs)
    if new.incomplete:
        diff.incomplete = f"the new run is incomplete: {new.incomplete}"
    elif not pairs and not diff.broken and not diff.invalid:
        diff.incomplete = "no workload was measured in both runs: nothing was compared"
    diff.drift = _drift(pairs, sides)
    for base, record in pairs:
        _fused_change(diff, base, record, widen)
        diff.reach.append(_reach(base, record, threshold, absolute_threshold, widen))
        for side in sides:
            b, a = base.side(side), record.side(side)
            if b is None or a is None:
                continue
            slow, fast = _bounds(b, a, widen)
            if slow / diff.drift > 1.0 + absolute_threshold:
                diff.regressions.append(Change(record.id, record.pattern, side,
                                               float(b.median), float(a.median), slow))
            elif fast / diff.drift * (1.0 + absolute_threshold) < 1.0:
                diff.speedups.append(Change(record.id, record.pattern, side,
                                            float(b.median), float(a.median), fast))
    return diff
