"""Shards split a run by its draws: a shard draws its own draws only, the shards' draws are
every draw of the run once, their cases together are the unsharded run's cases with the same
plan indices, and the split is about even in cases."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
from testkit.cli import DRAWS

from fusionspec.conformance import suite
from fusionspec.conformance.cases import Case, CaseKind
from fusionspec.conformance.selection import RunSettings, Selection, Shard
from fusionspec.conformance.suite import PROFILES, Plan, plan_cases

CI = PROFILES["ci"]


def _stand_in(draw: suite._Draw, *_: object) -> list[Case]:
    """A few cases a draw could give, with ids of the draw's shape and no graph (planning
    reads nothing else)."""
    rule = draw.rule or ("layout.bound" if draw.kind is CaseKind.ill_formed else None)
    head = f"{draw.pattern}/{draw.kind.value}" + (f"/{rule}" if rule else "")
    return [Case(f"{head}/{n:08x}", draw.kind, draw.pattern, None, rule)  # type: ignore[arg-type]
            for n in range(1 + suite._expected(draw) % 5)]


def _pairs(plan: Plan) -> set[tuple[int, str]]:
    return {(p.index, p.case.id) for p in plan.cases}


@pytest.mark.parametrize("count", [1, 2, 3, 4, 7])
def test_a_shard_draws_its_own_draws_and_the_shards_make_the_whole_run(
        count: int, monkeypatch: pytest.MonkeyPatch) -> None:
    made: list[suite._Draw] = []

    def spy(draw: suite._Draw, *rest: object) -> list[Case]:
        made.append(draw)
        return _stand_in(draw)

    monkeypatch.setattr(suite, "_run_draw", spy)
    selection = Selection().validate()
    whole = plan_cases(RunSettings(selection, CI))
    every = list(made)
    assert len(set(every)) == len(every), "the unsharded run makes each draw once"
    seen: list[suite._Draw] = []
    parts: list[set[tuple[int, str]]] = []
    for k in range(1, count + 1):
        made.clear()
        part = plan_cases(RunSettings(selection, CI, shard=Shard(k, count)))
        assert part.shard == Shard(k, count), "the plan names its shard"
        assert made, f"shard {k}/{count} has draws of its own"
        seen += made
        parts.append(_pairs(part))
    assert sorted(map(repr, seen)) == sorted(map(repr, every)), \
        f"the {count} shards make every draw of the run, each in one shard"
    assert set().union(*parts) == _pairs(whole), \
        "the shards' cases are the run's cases, each with the index the run gives it"
    assert sum(map(len, parts)) == len(whole.cases), "no case is in two shards"


def test_the_split_puts_the_heaviest_first_on_the_lightest_shard() -> None:
    assert Shard.split([], 3) == [], "nothing to split, nothing split"
    assert Shard.split([3, 3, 3], 5) == [1, 2, 3], "more shards than units: some get none"
    assert Shard.split([1, 9, 1, 1, 1, 5, 2], 2) == [2, 1, 2, 1, 2, 2, 2], \
        "9 and 5 open the shards, each unit after them goes to the lighter: 9+1 and 5+2+1+1+1"
    weights = [(7 * n) % 23 + 1 for n in range(60)]
    for count in (2, 3, 4):
        owners = Shard.split(weights, count)
        loads = [sum(w for w, o in zip(weights, owners) if o == k) for k in range(1, count + 1)]
        assert max(loads) - min(loads) <= max(weights), \
            f"no shard is heavier than another by more than one unit: {loads}"


@pytest.fixture(scope="module")
def ci_plans() -> Iterator[dict[str, Plan]]:
    """The ci profile's whole plan, then every shard of 2, 3 and 4, through one draw cache
    (the test session's, which the other full-profile tests share)."""
    with pytest.MonkeyPatch.context() as patch:
        patch.setenv("FUSIONSPEC_DRAW_CACHE", DRAWS)
        selection = Selection().validate()
        plans = {"whole": plan_cases(RunSettings(selection, CI), jobs=2)}
        plans.update({f"{k}/{n}": plan_cases(RunSettings(selection, CI, shard=Shard(k, n)))
                      for n in (1, 2, 3, 4) for k in range(1, n + 1)})
        assert Path(DRAWS).is_dir(), "the draws went through the cache"
        yield plans


@pytest.mark.slow
@pytest.mark.parametrize("count", [1, 2, 3, 4])
def test_the_ci_shards_together_are_the_ci_profile(count: int,
                                                   ci_plans: dict[str, Plan]) -> None:
    whole = _pairs(ci_plans["whole"])
    parts = [_pairs(ci_plans[f"{k}/{count}"]) for k in range(1, count + 1)]
    ids = [case_id for part in parts for _, case_id in part]
    assert len(ids) == len(set(ids)), f"no case id is in two of the {count} shards"
    assert set().union(*parts) == whole, \
        f"the {count} shards hold the ci profile's cases, with its indices"
    assert sum(ci_plans[f"{k}/{count}"].selected for k in range(1, count + 1)) == len(whole), \
        "the shards' planned counts add up to the run's"
    sizes = [len(p) for p in parts]
    assert max(sizes) <= 1.1 * len(whole) / count, \
        f"no shard holds more than 10% over its even share of the cases: {sizes}"
