"""The project's one timing method (fusionspec.backend.timing), on a fake clock: warm-up runs
are dropped, sampling stops on a narrow interval, a spent budget or the repeat cap, the median's
interval is the order-statistic one, and a compiled partition is timed by its device clock
when it has one, else by the host's clock around execute."""

from __future__ import annotations

import statistics
from collections.abc import Mapping

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from fusionspec.backend.timing import (
    DeviceTimed,
    Measurement,
    Timing,
    TimingError,
    TimingPolicy,
    measure,
    median_interval,
    time_partition,
    wall_clock,
)
from fusionspec.spec.types import Array


class FakeClock:
    """A clock that moves only when a fake run advances it."""

    def __init__(self) -> None:
        self.now = 100.0

    def __call__(self) -> float:
        return self.now


class Runs:
    """A sampler whose n-th run takes `durations[n]` seconds of `clock` (the last repeats)."""

    def __init__(self, clock: FakeClock, durations: list[float]) -> None:
        self.clock, self.durations, self.calls = clock, durations, 0

    def __call__(self) -> float:
        seconds = self.durations[min(self.calls, len(self.durations) - 1)]
        self.calls += 1
        self.clock.now += seconds
        return seconds


def test_warm_up_runs_are_dropped_and_a_steady_side_stops_on_its_spread() -> None:
    clock = FakeClock()
    sampler = Runs(clock, [5.0, 4.0, 1.0])  # two slow first runs, then steady
    policy = TimingPolicy(warmup=2, min_repeats=5, max_repeats=50, budget_s=100.0,
                          target_spread=0.01)
    found = measure(sampler, policy, clock=clock)
    assert found.samples == (1.0,) * 5, f"the warm-up runs are not kept: {found.samples}"
    assert found.stopped == "spread", f"identical runs stop at min_repeats: {found.stopped}"
    assert sampler.calls == 7, f"2 warm-up + 5 kept runs, got {sampler.calls}"
    assert (found.minimum, found.median, found.interval) == (1.0, 1.0, (1.0, 1.0)), \
        f"figures of identical runs: {found.as_dict(1.0)}"


def test_a_noisy_side_runs_until_its_budget_is_spent() -> None:
    clock = FakeClock()
    noisy = [1.0, 3.0, 0.5, 2.0, 4.0, 1.5]
    sampler = Runs(clock, noisy * 100)
    policy = TimingPolicy(warmup=0, min_repeats=3, max_repeats=1000, budget_s=30.0,
                          target_spread=0.01)
    found = measure(sampler, policy, clock=clock)
    assert found.stopped == "budget", f"a spread never reached ends on the budget: {found}"
    assert clock.now - 100.0 >= 30.0 and clock.now - 100.0 < 30.0 + max(noisy), \
        f"it stops on the first run past the budget: {clock.now - 100.0} s spent"
    assert found.minimum == 0.5, f"the minimum of the kept runs: {found.minimum}"


def test_the_repeat_cap_ends_sampling() -> None:
    clock = FakeClock()
    policy = TimingPolicy(warmup=1, min_repeats=2, max_repeats=4, budget_s=1e9,
                          target_spread=0.0)
    found = measure(Runs(clock, [1.0, 2.0, 1.0, 3.0, 1.0, 2.0]), policy, clock=clock)
    assert found.stopped == "repeats" and len(found.samples) == 4, \
        f"at most max_repeats kept: {found.samples}, stopped by {found.stopped!r}"


def test_the_minimum_repeats_come_before_the_budget() -> None:
    clock = FakeClock()
    policy = TimingPolicy(warmup=0, min_repeats=4, max_repeats=10, budget_s=0.5,
                          target_spread=0.0)
    found = measure(Runs(clock, [1.0, 2.0]), policy, clock=clock)
    assert len(found.samples) == 4 and found.stopped == "budget", \
        f"a run longer than the budget still gets min_repeats: {found.samples}"


def test_wall_clock_times_a_run_by_the_clock() -> None:
    clock = FakeClock()

    def run() -> None:
        clock.now += 0.25
    assert wall_clock(run, clock)() == 0.25, "the run's time on the clock"


@pytest.mark.parametrize("n, ranks", [(5, (0, 4)), (10, (1, 8)), (20, (5, 14)), (3, (0, 2))])
def test_the_median_interval_is_the_order_statistic_one(n: int, ranks: tuple[int, int]) -> None:
    """Known 95% ranks (1-based x(1)..x(5) for n=5 is the whole range; x(2), x(9) for 10;
    x(6), x(15) for 20)."""
    ordered = [float(i) for i in range(n)]
    assert median_interval(ordered, 0.95) == (float(ranks[0]), float(ranks[1])), \
        f"the 95% interval of the median of {n} samples"


@settings(max_examples=200, deadline=None)
@given(st.lists(st.floats(min_value=1e-6, max_value=10.0), min_size=1, max_size=60),
       st.floats(min_value=0.5, max_value=0.999))
def test_the_interval_holds_the_median(values: list[float], confidence: float) -> None:
    timing = Timing(tuple(values), confidence=confidence)
    low, high = timing.interval
    assert min(values) <= low <= timing.median <= high <= max(values), \
        f"interval {low}..{high} around median {timing.median} of {sorted(values)}"
    assert timing.median == statistics.median(values), "the median of the samples"


def test_more_samples_give_a_narrower_interval() -> None:
    few = Timing(tuple(float(i) for i in range(10)))
    many = Timing(tuple(float(i) for i in range(10)) * 10)
    assert many.relative_spread < few.relative_spread, \
        f"{many.relative_spread} with 100 samples vs {few.relative_spread} with 10"


def test_bad_policies_and_samples_are_named() -> None:
    with pytest.raises(TimingError, match="min_repeats"):
        TimingPolicy(min_repeats=5, max_repeats=2)
    with pytest.raises(TimingError, match="confidence"):
        TimingPolicy(confidence=1.0)
    with pytest.raises(TimingError, match="budget_s"):
        TimingPolicy(budget_s=0.0)
    with pytest.raises(TimingError, match="not a duration"):
        Measurement(TimingPolicy(), 0.0).add(float("nan"))
    with pytest.raises(TimingError, match="at least one sample"):
        Timing(())


def test_as_dict_reports_milliseconds() -> None:
    said = Timing((0.001, 0.002, 0.003), method="events", stopped="spread").as_dict()
    assert said["median"] == pytest.approx(2.0) and said["min"] == pytest.approx(1.0), \
        f"milliseconds by default: {said}"
    assert said["method"] == "events" and said["repeats"] == 3, f"the method and count: {said}"


class WallOnly:
    def __init__(self, clock: FakeClock) -> None:
        self.clock, self.calls = clock, 0

    def execute(self, inputs: Mapping[int, Array]) -> Mapping[int, Array]:
        self.calls += 1
        self.clock.now += 0.5
        return dict(inputs)


class EventTimed(WallOnly):
    def execute_timed(self, inputs: Mapping[int, Array]) -> float:
        self.clock.now += 0.5  # the host waits longer than the kernels ran
        return 0.125


def test_a_partition_is_timed_by_its_device_clock_when_it_has_one() -> None:
    clock = FakeClock()
    policy = TimingPolicy(warmup=1, min_repeats=3, max_repeats=3)
    timed = EventTimed(clock)
    assert isinstance(timed, DeviceTimed), "execute_timed makes a partition device-timed"
    found = time_partition(timed, {}, policy, clock=clock)
    assert (found.method, found.median) == ("events", 0.125), \
        f"the device's figure, not the host's: {found.as_dict(1.0)}"
    assert timed.calls == 0, "execute is not called when execute_timed exists"
    plain = WallOnly(clock)
    assert not isinstance(plain, DeviceTimed), "execute alone is not device-timed"
    found = time_partition(plain, {}, policy, clock=clock)
    assert (found.method, found.median, plain.calls) == ("wall", 0.5, 4), \
        f"the host's clock around execute, warm-up included in the calls: {found.as_dict(1.0)}"
