"""Whether a fusion pays, decided from the confidence intervals of the two sides.

A workload's verdict compares the fused side with the op-by-op side on the same backend:

- ``not fused``: the backend did not form one partition of all the workload's ops (it split
  what the spec fuses); the figures then say what the split costs against op by op;
- ``fusion pays``: the fused side's median interval lies wholly below the op-by-op side's
  (its upper end under the other's lower end, by at least `margin` of it): faster beyond the
  noise of either;
- ``fusion does not pay``: otherwise: not faster, or not provably so, or slower.

The intervals are those `fusionspec.backend.timing` computes for the median (distribution-free,
95% by default), so a verdict never rests on a single lucky run.

`fusion_costs` is the mirror image of ``fusion pays``: the fused interval wholly above the
op-by-op one, slower beyond the noise of either. It is no verdict of its own (a fusion that
costs does not pay), but the perf gate asks it of a fusion that paid in the baseline
(`fusionspec.conformance.perf.gate`).

Both read each side's interval from its `SideTiming` record (any unit).
"""

from __future__ import annotations

from .records import SideTiming

__all__ = ["FUSION_PAYS", "DOES_NOT_PAY", "NOT_FUSED", "VERDICTS", "verdict", "fusion_costs"]

FUSION_PAYS = "fusion pays"
DOES_NOT_PAY = "fusion does not pay"
NOT_FUSED = "not fused"
#: Every verdict, in the order reports list them.
VERDICTS = (FUSION_PAYS, DOES_NOT_PAY, NOT_FUSED)


def verdict(fused: SideTiming, opbyop: SideTiming, *, formed_whole: bool,
            margin: float = 0.0) -> str:
    """The verdict of one workload from the two sides' timing figures (``ci_low`` and
    ``ci_high`` as `Timing.as_dict` gives them, any unit) and whether the backend formed one
    partition of every op."""
    if not formed_whole:
        return NOT_FUSED
    if float(fused.ci_high) < float(opbyop.ci_low) * (1.0 - margin):
        return FUSION_PAYS
    return DOES_NOT_PAY


def fusion_costs(fused: SideTiming, opbyop: SideTiming) -> bool:
    """Whether the fused side's median interval lies wholly above the op-by-op side's (its
    lower end over the other's upper end): slower than op by op beyond the noise of either."""
    return float(fused.ci_low) > float(opbyop.ci_high)
