"""`interleave`: sides sampled in alternation on a fake clock."""

from __future__ import annotations

import pytest

from fusionspec.backend.timing import TimingError, TimingPolicy, interleave


class FakeClock:
    def __init__(self) -> None:
        self.now = 0.0

    def __call__(self) -> float:
        return self.now


def test_sides_alternate_forwards_then_backwards() -> None:
    clock, order, slept = FakeClock(), [], []

    def side(name: str, seconds: float):  # type: ignore[no-untyped-def]
        def sample() -> float:
            order.append(name)
            clock.now += seconds
            return seconds
        return sample

    policy = TimingPolicy(warmup=0, min_repeats=2, max_repeats=2, budget_s=10.0)
    found = interleave({"a": side("a", 1.0), "b": side("b", 2.0)}, policy,
                       methods={"a": "events"}, settle_s=0.5, clock=clock,
                       sleep=slept.append)
    assert order == ["a", "b", "b", "a"], f"one turn forwards, the next backwards: {order}"
    assert slept == [0.5] * 4, "an idle pause before every sample"
    assert found["a"].median == 1.0 and found["b"].median == 2.0, "each side its own samples"
    assert (found["a"].method, found["b"].method) == ("events", "wall"), \
        "methods as given, wall clock by default"
    assert found["a"].stopped == "repeats", "stopped at max_repeats"


def test_a_done_side_leaves_the_rotation() -> None:
    clock, order = FakeClock(), []

    def steady() -> float:
        order.append("steady")
        return 1.0

    noisy_values = iter([1.0, 3.0, 1.5, 2.5, 1.2, 2.8, 1.1, 2.9])

    def noisy() -> float:
        order.append("noisy")
        return next(noisy_values)

    policy = TimingPolicy(warmup=0, min_repeats=2, max_repeats=8, budget_s=100.0,
                          target_spread=0.01)
    found = interleave({"steady": steady, "noisy": noisy}, policy, clock=clock)
    assert found["steady"].stopped == "spread" and len(found["steady"].samples) == 2, \
        "identical samples meet the spread target at the minimum count"
    assert order.count("noisy") == 8 and found["noisy"].stopped == "repeats", \
        "the noisy side goes on alone until max_repeats"


def test_no_side_is_an_error() -> None:
    with pytest.raises(TimingError, match="no side"):
        interleave({})
