"""The performance gate: is a run slower than its baseline, beyond what noise explains?

Two performance documents (`fusionspec.conformance.perf.document`) are compared workload by
workload (by workload id), side by side (`SIDES`: the fused side, what the backend delivers for
the pattern, and the op-by-op side). A side is a **regression** when even the most favourable
reading of both confidence intervals shows a slowdown beyond the threshold: the new run's
lower bound exceeds the baseline's upper bound by more than `threshold` of it::

    new.ci_low > old.ci_high * (1 + threshold)

so that the gate speaks only where the intervals support it: two runs of the same build differ
by noise, which the intervals cover, and do not trip it. A **speedup** is the mirror image. A
workload that was measured in the baseline and fails to run in the new document is a
regression too; a changed verdict (a fusion that stopped paying) is listed, not gated.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from .document import PerfFormatError

__all__ = ["DEFAULT_THRESHOLD", "SIDES", "Change", "PerfDiff", "compare"]

#: The slowdown beyond the intervals that the gate flags, as a fraction (10%).
DEFAULT_THRESHOLD = 0.10
#: The sides the gate compares.
SIDES = ("fused", "opbyop")


@dataclass(frozen=True)
class Change:
    """One side of one workload whose time moved beyond the threshold: medians in ms and the
    smallest ratio (new over old) that both intervals allow (largest for a speedup)."""

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
    note: str = ""

    @property
    def failed(self) -> bool:
        return bool(self.regressions or self.broken)

    @property
    def patterns(self) -> list[str]:
        """The patterns with a regression, in order of first appearance."""
        return list(dict.fromkeys(c.pattern for c in self.regressions))


def _side(old: Mapping[str, Any], new: Mapping[str, Any], record: Mapping[str, Any],
          side: str, threshold: float) -> tuple[str, Change] | None:
    before, after = old["timings"].get(side), new["timings"].get(side)
    if before is None or after is None:
        return None
    slow = float(after["ci_low"]) / float(before["ci_high"]) if before["ci_high"] > 0 else 0.0
    fast = float(after["ci_high"]) / float(before["ci_low"]) if before["ci_low"] > 0 else 1.0
    change = (record["id"], record["pattern"], side, float(before["median"]),
              float(after["median"]))
    if slow > 1.0 + threshold:
        return "slower", Change(*change, slow)
    if fast * (1.0 + threshold) < 1.0:
        return "faster", Change(*change, fast)
    return None


def compare(old: Mapping[str, Any], new: Mapping[str, Any], threshold: float = DEFAULT_THRESHOLD,
            sides: Sequence[str] = SIDES) -> PerfDiff:
    """Compare two checked performance documents; `PerfFormatError` when they measured
    different sizes (their figures do not compare)."""
    if not threshold >= 0:
        raise PerfFormatError(f"the threshold must be 0 or more, got {threshold}")
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
    for ident, record in after.items():
        base = before.get(ident)
        if base is None or "error" in base:
            continue
        if "error" in record:
            diff.broken.append(f"{ident}: {record['error']}")
            continue
        diff.compared += 1
        for side in sides:
            found = _side(base, record, record, side, threshold)
            if found is not None:
                (diff.regressions if found[0] == "slower" else diff.speedups).append(found[1])
        if base.get("verdict") != record.get("verdict"):
            diff.verdicts.append((ident, str(base.get("verdict")), str(record.get("verdict"))))
    return diff
