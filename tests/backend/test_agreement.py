"""Two runs of one partition agree within the one table of `fusionspec.backend.agreement`
(the bench's fused against op-by-op check, the tuner's candidate check): correct sides agree,
a side that computes something else does not."""

from __future__ import annotations

import numpy as np
import pytest

from fusionspec.backend.agreement import AGREEMENT, agreement


@pytest.mark.parametrize("dtype", sorted(AGREEMENT))
def test_a_difference_inside_the_figure_agrees_and_outside_does_not(dtype: str) -> None:
    want = np.linspace(-4.0, 4.0, 64)
    inside = want + 0.5 * AGREEMENT[dtype] * 4.0
    outside = want + 2.0 * AGREEMENT[dtype] * 4.0
    ok, found = agreement(inside, want, dtype)
    assert ok and found == pytest.approx(0.5 * AGREEMENT[dtype]), \
        f"{dtype}: half the figure, relative to the largest magnitude, agrees: {found}"
    assert not agreement(outside, want, dtype)[0], f"{dtype}: twice the figure does not agree"
    assert agreement(outside, want, dtype, slack=4.0)[0], f"{dtype}: slack widens the figure"


def test_integers_agree_within_one_step_two_with_slack() -> None:
    want = np.array([0, 10, -5], dtype=np.int8)
    assert agreement(want + np.int8(1), want, "s8") == (True, 1.0), "one step agrees"
    assert not agreement(want + np.int8(2), want, "s8")[0], "two steps do not"
    assert agreement(want + np.int8(2), want, "s8", slack=2.0)[0], "two steps agree with slack"


def test_nan_agrees_with_nan_and_nothing_else_non_finite_does() -> None:
    want = np.array([np.nan, 1.0])
    assert agreement(np.array([np.nan, 1.0]), want, "f32")[0], "NaN where the other has NaN"
    assert agreement(np.array([np.inf, 1.0]), want, "f32") == (False, float("inf")), \
        "inf against NaN is no agreement"


def test_a_shape_mismatch_never_agrees() -> None:
    assert agreement(np.zeros(3), np.zeros(4), "f32") == (False, float("inf")), \
        "different shapes cannot agree"
