"""Drawing does each piece of work once: the rule x setting cases are made by the planning
process and handed to the drawing processes (and kept in the draw cache for the next run), a
clean value plan partitions its graph once, a pair-design case makes the value plan of the
draw it keeps only, and a steered draw samples through one strategy per list of values."""

from __future__ import annotations

import importlib
import pickle
from collections.abc import Callable, Iterator
from concurrent.futures import Future
from pathlib import Path
from typing import Any, ClassVar

import pytest
from hypothesis import strategies as st

from fusionspec.conformance import suite
from fusionspec.conformance.cases import Case, CaseKind
from fusionspec.conformance.generate import pairs, rule_settings, values
from fusionspec.conformance.generate.strategies import _examples, design_cases
from fusionspec.conformance.selection import Selection
from fusionspec.conformance.suite import PROFILES
from fusionspec.conformance.workers.transport import dumps
from fusionspec.spec import DataType, Graph, LogicalTensor, Op
from fusionspec.spec.catalog import CATALOG
from fusionspec.spec.catalog import entry as catalog_entry

#: The first pattern in catalog order: its rule x setting cases probe it alone.
FIRST = CATALOG[0].id


def _no_probing(*_: object) -> object:
    raise AssertionError("the catalog was probed again")


@pytest.fixture
def fresh_cases(monkeypatch: pytest.MonkeyPatch) -> None:
    """This process starts with no rule x setting cases made or handed to it."""
    monkeypatch.setattr(rule_settings, "_CASES", {})


class _Recorder:
    """A pool that runs nothing: it records what each draw was submitted with, in order."""

    submitted: ClassVar[list[tuple[Any, ...]]] = []

    def __init__(self, **_: object) -> None:
        _Recorder.submitted = []

    def __enter__(self) -> _Recorder:
        return self

    def __exit__(self, *_: object) -> None:
        return None

    def submit(self, fn: Callable[..., bytes], *args: Any) -> Future[bytes]:
        _Recorder.submitted.append(args)
        done: Future[bytes] = Future()
        done.set_result(dumps([]))
        return done


class _NoLifeline:
    @staticmethod
    def context() -> None:
        return None

    @staticmethod
    def ticket(_: object) -> None:
        return None

    @staticmethod
    def hold(*_: object) -> None:
        return None


def test_the_planning_process_hands_each_floor_draw_its_rule_x_setting_cases(
        monkeypatch: pytest.MonkeyPatch, fresh_cases: None) -> None:
    monkeypatch.setattr(suite, "ProcessPoolExecutor", _Recorder)
    monkeypatch.setattr(suite, "lifeline", _NoLifeline)
    selection = Selection(patterns=(FIRST,)).validate()
    draws = [d for kind in selection.kinds
             for d in suite._draws(catalog_entry(FIRST), kind, PROFILES["ci"], selection)]
    assert len(draws) >= 4, f"{FIRST} makes enough draws to be drawn in processes: {draws}"
    list(suite._drawn(draws, PROFILES["ci"], 0, None, jobs=2))
    submitted = _Recorder.submitted
    assert len(submitted) == len(draws), f"every draw is submitted once: {len(submitted)}"
    handed = {args[0]: args[4] if len(args) > 4 else None for args in submitted}
    for draw in draws:
        if draw.kind is CaseKind.near_miss:
            assert handed[draw] is None, f"a near-miss draw needs no probing: {draw}"
            continue
        assert handed[draw] is not None, f"the floor draw {draw} is handed its cases"
        given: list[Case] = pickle.loads(handed[draw])
        made = rule_settings.owned_cases(catalog_entry(FIRST), draw.kind)
        assert [c.id for c in given] == [c.id for c in made] and given, \
            f"the floor draw {draw} is handed the rule x setting cases of its pattern"
    order = [args[0].kind is CaseKind.near_miss for args in submitted]
    assert order == sorted(order, reverse=True), \
        "the drawing processes start on the draws that need no probing"


def test_a_drawing_process_draws_from_the_cases_it_is_handed(
        monkeypatch: pytest.MonkeyPatch, fresh_cases: None) -> None:
    entry = catalog_entry(FIRST)
    made = rule_settings.owned_cases(entry, CaseKind.ill_formed)
    monkeypatch.setattr(rule_settings, "_CASES", {})
    monkeypatch.setattr(rule_settings, "_OWNED", {})
    monkeypatch.setattr(rule_settings, "_pattern_examples", _no_probing)
    monkeypatch.setattr(suite, "_claimed_draw", lambda draw, *_, **__: (
        rule_settings.rule_setting_cases(catalog_entry(draw.pattern))))
    draw = suite._Draw(FIRST, CaseKind.ill_formed, None, 15, True)
    drawn: list[Case] = pickle.loads(
        suite._draw_in_child(draw, PROFILES["ci"], 0, None, dumps(made)))
    assert [c.id for c in drawn] == [c.id for c in made], \
        "the drawing process draws the handed cases without probing the catalog"


def test_a_later_run_reads_the_rule_x_setting_cases_from_the_draw_cache(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch, fresh_cases: None) -> None:
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path))
    monkeypatch.setenv("FUSIONSPEC_DRAW_CACHE", "on")
    entry = catalog_entry(FIRST)
    made = {kind: rule_settings.owned_cases(entry, kind)
            for kind in (CaseKind.valid, CaseKind.ill_formed)}
    assert list((tmp_path / "fusionspec" / "draws").glob("*.pickle")), \
        "the rule x setting cases are kept in the draw cache"
    monkeypatch.setattr(rule_settings, "_CASES", {})
    monkeypatch.setattr(rule_settings, "_OWNED", {})
    monkeypatch.setattr(rule_settings, "_pattern_examples", _no_probing)
    for kind, cases in made.items():
        again = rule_settings.owned_cases(entry, kind)
        assert [repr(c) for c in again] == [repr(c) for c in cases], \
            f"a later run reads the same {kind} cases from the cache without probing"


def _relu() -> Graph:
    x = LogicalTensor(0, DataType.f32, (2, 8))
    y = LogicalTensor(1, DataType.f32, (2, 8))
    return Graph([Op(0, "ReLU", inputs=(x,), outputs=(y,))])


def test_a_clean_plan_partitions_its_graph_once(monkeypatch: pytest.MonkeyPatch) -> None:
    calls: list[int] = []
    real = values.partition

    def counted(graph: Graph) -> Any:
        calls.append(1)
        return real(graph)

    monkeypatch.setattr(values, "partition", counted)
    # The package exports its execute function under the module's name.
    monkeypatch.setattr(importlib.import_module("fusionspec.reference.execute"), "partition",
                        counted)
    plan = values.clean_plan(_relu())
    assert plan.features.get("signal") == "clean", f"a clean plan: {plan}"
    assert len(calls) == 1, f"the graph is partitioned once, not {len(calls)} times"


def _counting_plans(monkeypatch: pytest.MonkeyPatch) -> list[int]:
    calls: list[int] = []
    real = values.clean_plan

    def counted(graph: Graph, base: str = "grid") -> values.ValuePlan:
        calls.append(1)
        return real(graph, base)

    monkeypatch.setattr(values, "clean_plan", counted)
    return calls


def test_a_pair_design_case_makes_the_value_plan_of_its_own_draw_only(
        monkeypatch: pytest.MonkeyPatch) -> None:
    calls = _counting_plans(monkeypatch)
    cases = design_cases("fp.bn_relu", 6)
    assert cases, "the pair design of fp.bn_relu gives cases"
    assert len(calls) <= len(cases), \
        f"{len(calls)} clean plans made for {len(cases)} cases: one at most per case kept"


def test_the_plan_of_a_drawn_choice_is_the_plan_drawn() -> None:
    graph = _relu()
    for key in range(8):
        drawn = _examples(values.draw_values(graph), key, 2)
        choices = _examples(values.value_choices(graph), key, 2)
        assert drawn[-1] == values.values_for(graph, choices[-1]), \
            f"seed {key}: the choice drawn alone gives the plan draw_values draws"


def _steered_draws(forced: dict[str, Any]) -> Iterator[st.SearchStrategy[Any]]:
    seen: list[st.SearchStrategy[Any]] = []

    def draw(strategy: st.SearchStrategy[Any], label: object = None) -> Any:
        seen.append(strategy)
        return None

    choose = pairs.steered(draw, forced)
    for _ in range(3):
        choose(st.sampled_from(("NCX", "NXC")), label="data_format")
        choose(st.sampled_from((0, 1)), label="groups")
        choose(st.sampled_from((False, True)), label="use_dst")
        choose(st.sampled_from((0, 1)).map(lambda v: v + 1), label="shifted")
    yield from seen


def test_a_steered_draw_samples_each_list_of_values_through_one_strategy() -> None:
    seen = list(_steered_draws({}))
    by_label = [seen[i::4] for i in range(4)]
    for label, strategies in zip(("data_format", "groups", "use_dst"), by_label):
        assert all(s is strategies[0] for s in strategies), \
            f"the {label} draws share one strategy, validated once"
    assert by_label[1][0] is not by_label[2][0], \
        "(0, 1) and (False, True) are different values: never one strategy"
    assert len({id(s) for s in by_label[3]}) == 3, \
        "a mapped strategy is drawn as it is given (its function may differ)"
