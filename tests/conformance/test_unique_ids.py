"""Each case id is drawn once per profile. Where two routes of a draw reach the same graph with
the same values, the first case stays and takes the features of the others, so what every
route reached still counts towards coverage."""

from __future__ import annotations

from collections import Counter

import pytest
from testkit.cli import DRAWS

from fusionspec.conformance import suite
from fusionspec.conformance.cases import Case, CaseKind
from fusionspec.conformance.generate.coverage import case_items
from fusionspec.conformance.generate.ids import unique_cases
from fusionspec.conformance.selection import RunSettings, Selection
from fusionspec.conformance.suite import PROFILES, draw_cases, plan_cases
from fusionspec.spec.catalog import entry


def _case(case_id: str, **features: str | int) -> Case:
    return Case(case_id, CaseKind.valid, "p", None, features=features,  # type: ignore[arg-type]
                description=f"reached as {sorted(features)}")


def _twice(ids: list[str]) -> list[str]:
    return sorted(i for i, n in Counter(ids).items() if n > 1)


def test_a_repeated_id_is_kept_once_in_its_place_with_the_features_of_both() -> None:
    first = _case("p/valid/00000001", route="instance", rows="f32", count=1)
    other = _case("p/valid/00000002", route="draw")
    again = _case("p/valid/00000001", route="setting", rows="bf16,f32", count=1, extra="x")
    kept = unique_cases([first, other, again])
    assert [c.id for c in kept] == ["p/valid/00000001", "p/valid/00000002"], \
        f"each id once, where it first appeared: {[c.id for c in kept]}"
    assert kept[0].features == {"route": "instance,setting", "rows": "bf16,f32", "count": 1,
                                "extra": "x"}, \
        f"the kept case records what either route reached: {kept[0].features}"
    assert kept[0].description == first.description and kept[1] == other, \
        "the kept case is the first one otherwise, and cases seen once are untouched"


@pytest.mark.parametrize("pattern", ["fp.matmul_post_ops", "fp.binary_post_ops"])
def test_a_draw_whose_routes_meet_gives_each_id_once_and_loses_no_coverage(
        pattern: str, monkeypatch: pytest.MonkeyPatch) -> None:
    # Their ill-formed draws check dtype rules under the dtype of either operand, which for
    # many rows is one and the same graph.
    drawn = draw_cases(entry(pattern), CaseKind.ill_formed, PROFILES["ci"])
    ids = [c.id for c in drawn]
    assert not _twice(ids), f"{pattern}: ids drawn twice: {_twice(ids)[:5]}"
    monkeypatch.setattr(suite, "unique_cases", list)
    every = draw_cases(entry(pattern), CaseKind.ill_formed, PROFILES["ci"])
    assert set(ids) == {c.id for c in every}, "keeping each id once drops no id"
    reached = {item for c in drawn for item in case_items(c.features)}
    wanted = {item for c in every for item in case_items(c.features)}
    assert reached == wanted, \
        f"{pattern}: coverage items lost with the repeats: {sorted(wanted - reached)[:5]}"


@pytest.mark.slow
def test_the_ci_profile_draws_every_case_id_once(monkeypatch: pytest.MonkeyPatch) -> None:
    # The session's draw cache: the shard tests plan the same profile.
    monkeypatch.setenv("FUSIONSPEC_DRAW_CACHE", DRAWS)
    plan = plan_cases(RunSettings(Selection().validate(), PROFILES["ci"]), jobs=2)
    twice = _twice([p.case.id for p in plan.cases])
    assert not twice, f"{len(twice)} case ids of the ci profile are drawn twice: {twice[:5]}"
    assert all(p.occurrence == 1 for p in plan.cases), "no planned case is a repeat"


@pytest.mark.parametrize(("pattern", "kinds"), [
    ("fp.bn_relu", tuple(CaseKind)), ("int8.reorder_add", tuple(CaseKind)),
    ("fp.matmul_post_ops", (CaseKind.ill_formed,))])
def test_the_thorough_profile_draws_every_case_id_once(pattern: str,
                                                       kinds: tuple[CaseKind, ...]) -> None:
    # The thorough profile's budgets are five times the ci profile's: a few of its draws, not
    # the whole of it (fp.matmul_post_ops' ill-formed routes meet, see above).
    plan = plan_cases(RunSettings(Selection(patterns=(pattern,), kinds=kinds).validate(),
                                  PROFILES["thorough"]))
    twice = _twice([p.case.id for p in plan.cases])
    assert plan.cases and not twice, f"{pattern}: ids drawn twice: {twice[:5]}"
