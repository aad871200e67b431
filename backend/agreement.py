"""How closely two runs of one partition must agree where no error bound is computed.

The conformance verdicts never use this: they grade each output against the reference with
bounds computed per op and per element. Two other checks only need to know that two
implementations compute the same thing: the bench, before timing a fused kernel against the
same ops run one by one (and each against the reference, `slack` wider), and the OpenCL
backend's tuner, before timing a candidate kernel. A side that computes something else (a
wrong formula, a missing op, garbage) lies orders of magnitude outside these figures; two
correct sides lie inside them.

`AGREEMENT` is the largest difference allowed, relative to the output's largest magnitude, by
output dtype:

- **f32:** sums of products taken in another order. A sum of K products differs by up to about
  K units of f32's epsilon (1.2e-7) relative to its largest term, and the workloads sum up to
  several thousand (a BERT feed-forward layer: 3,072; a 3x3 convolution over 512 channels:
  4,608): 8e-4 is K = 6,700.
- **f16 and bf16:** about 32 units of the type's epsilon (f16 9.8e-4, bf16 7.8e-3). A fused
  kernel keeps a chain's intermediates in f32 where the same ops one by one round each of them
  to the narrow type: one rounding per intermediate, each of which the next op may amplify
  (an Exp multiplies a relative error by its input's magnitude, a Divide by a small divisor
  adds its own).

Integer outputs (requantized values) may differ by one step (two with a `slack` above 1): a
value on a rounding tie goes either way after intermediates rounded differently.
"""

from __future__ import annotations

from typing import Any

import numpy as np

__all__ = ["AGREEMENT", "agreement"]

AGREEMENT: dict[str, float] = {"f32": 8e-4, "f16": 3.2e-2, "bf16": 0.24}


def agreement(got: Any, want: Any, dtype: str, *, slack: float = 1.0) -> tuple[bool, float]:
    """Whether `got` agrees with `want` (arrays of one output, its spec dtype named `dtype`)
    within `slack` times `AGREEMENT`, and the difference found: relative to `want`'s largest
    magnitude for a float dtype, in steps for the others. NaN agrees with NaN; a shape
    mismatch or a non-finite difference never agrees."""
    a = np.asarray(got, dtype=np.float64)
    b = np.asarray(want, dtype=np.float64)
    if a.shape != b.shape:
        return False, float("inf")
    if a.size == 0:
        return True, 0.0
    diff = np.where(np.isnan(a) & np.isnan(b), 0.0, np.abs(a - b))
    if not np.isfinite(diff).all():
        return False, float("inf")
    if dtype in AGREEMENT:
        scale = max(float(np.nanmax(np.abs(b))), 1e-30) if np.isfinite(b).any() else 1.0
        found = float(np.max(diff)) / scale
        return found <= slack * AGREEMENT[dtype], found
    found = float(np.max(diff))
    return found <= (1.0 if slack <= 1 else 2.0), found
