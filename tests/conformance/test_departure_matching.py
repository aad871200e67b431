"""Matching a backend's declared departures against a verdict: from its facts and the case
graph, every matcher must hold, a cut side may name a category, and a numeric departure
matches only where its substitute reproduced the backend's values."""

from __future__ import annotations

from itertools import pairwise
from pathlib import Path
from typing import Any

from hypothesis import given
from hypothesis import strategies as st

from fusionspec.backend import Departure, OpMatch
from fusionspec.conformance.cases import Case, CaseKind, Status
from fusionspec.conformance.grade.departures import matching_departures
from fusionspec.conformance.grade.details import Details, Facts
from fusionspec.conformance.grade.facts import first_cut, reason
from fusionspec.conformance.workers import Runner
from fusionspec.spec.dtypes import DataType
from fusionspec.spec.graph import Graph, LogicalTensor, Op, Partition


def _chain(*kinds: str, attrs: dict[str, Any] | None = None) -> Graph:
    tensors = [LogicalTensor(i, DataType.f32, (2, 3)) for i in range(len(kinds) + 1)]
    ops = [Op(i, kind, (tensors[i],), (tensors[i + 1],), dict(attrs or {}) if i == 0 else {})
           for i, kind in enumerate(kinds)]
    return Graph(ops)  # not finalized: matching reads the ops only


def _case(graph: Graph, pattern: str = "fp.unary_binary") -> Case:
    return Case("c1", CaseKind.valid, pattern, graph, rule="fp.unary_binary.post_op_count")


def _ids(departures: list[Departure], case: Case, status: Status,
         details: dict[str, object]) -> list[str]:
    """The ids of the departures that match `details`, given as a results document writes
    them."""
    return [d.id for d in matching_departures(departures, case, status, Details.of(details))]


def test_a_cut_matches_by_kind_category_or_wildcard() -> None:
    graph = _chain("ReLU", "Abs", "Exp")
    ops = graph.ops
    expected = [Partition(0, tuple(ops), (), ())]
    formed = [Partition(0, (ops[0],), (), ()), Partition(1, tuple(ops[1:]), (), ())]
    cut = first_cut(expected, formed, "r")
    assert cut is not None and (cut.before, cut.after) == ("ReLU", "Abs"), \
        f"the first cut lies between the first two ops, in different partitions: {cut}"
    details: dict[str, object] = {"facts": {"what": "fusion", "cut": cut.to_json()}}
    declared = [Departure("by-kind", "s", cut=("ReLU", "Abs")),
                Departure("by-category", "s", cut=("Unary", "Unary")),
                Departure("wildcard", "s", cut=("*", "Abs")),
                Departure("other", "s", cut=("Binary", "*")),
                Departure("wrong-status", "s", cut=("*", "*"), statuses=("numeric-mismatch",))]
    assert _ids(declared, _case(graph), Status.fusion_mismatch, details) == \
        ["by-kind", "by-category", "wildcard"], "a cut side matches its kind, category or *"


def test_every_matcher_must_hold() -> None:
    graph = _chain("AvgPool", attrs={"rounding_type": "ceil"})
    details: dict[str, object] = {"facts": {"what": "unsupported", "kinds": ["AvgPool"]}}
    ceil = OpMatch("AvgPool", (("rounding_type", "ceil"),))
    floor = OpMatch("AvgPool", (("rounding_type", "floor"),))
    declared = [Departure("ceil", "s", unsupported=("AvgPool",), ops=(ceil,)),
                Departure("floor", "s", unsupported=("AvgPool",), ops=(floor,)),
                Departure("bf16", "s", unsupported=("AvgPool",), dtypes=("bf16",)),
                Departure("pattern", "s", patterns=("fp.*",), rules=("*post_op_count",)),
                Departure("no-pattern", "s", patterns=("int8.*",))]
    assert _ids(declared, _case(graph), Status.rejected_valid, details) == ["ceil", "pattern"], \
        "attribute values, dtypes, pattern and rule globs all have to hold"


def test_errors_match_by_kind_and_structured_fields() -> None:
    facts = {"what": "rejection", "kind": "rejection", "stage": "partition", "type": "E",
             "message": "m", "fields": {"function": "add_op", "status": "invalid"}}
    declared = [Departure("add", "s", error_fields=(("function", "add_op"),)),
                Departure("compile", "s", error_fields=(("function", "compile"),)),
                Departure("crash", "s", error_kinds=("crash",))]
    case = _case(_chain("ReLU"))
    assert _ids(declared, case, Status.rejected_valid, {"facts": facts}) == ["add"], \
        "a rejection matches the departure naming its API call"
    assert _ids(declared, case, Status.error, {"facts": {"what": "error", "kind": "crash"}}) \
        == ["crash"], "a crash matches the departure naming that error kind"


def test_a_numeric_departure_needs_its_substitute_to_reproduce() -> None:
    declared = [Departure("nan", "s", substitute="select-max")]
    case = _case(_chain("ReLU"))
    facts = {"what": "numeric", "chain": ["ReLU"], "dtype": "f32"}
    assert _ids(declared, case, Status.numeric_mismatch, {"facts": facts}) == [], \
        "no substitute reproduced the values: the departure explains nothing"
    assert _ids(declared, case, Status.numeric_mismatch,
                {"facts": facts, "reproduced": ["select-max"]}) == ["nan"], \
        "the substitute reproduced the values: the departure explains them"


def _facts(data: dict[str, object]) -> Facts:
    """The facts a results document writes as `data`."""
    found = Details.of({"facts": data}).facts
    assert found is not None, f"facts read from {data}"
    return found


def test_reasons_are_rendered_from_facts() -> None:
    said = reason(_facts({"what": "fusion",
                          "expected": [{"ops": [0, 1], "kinds": ["ReLU", "Add"]}],
                          "formed": [{"ops": [0], "kinds": ["ReLU"]},
                                     {"ops": [1], "kinds": ["Add"]}]}))
    assert said == "expected partition(s) [ReLU->Add]; the backend formed [ReLU], [Add]", \
        f"a fusion mismatch reads as before: {said!r}"
    assert reason(_facts({"what": "unsupported", "kinds": ["Reciprocal"]})) == \
        "the backend marks partition [Reciprocal] unsupported", "an unsupported partition"


def test_declarations_cross_the_worker_boundary_as_checked_data() -> None:
    tests = str(Path(__file__).resolve().parents[1])
    with Runner("testkit.mutants:MaximumDropsFirstNaNDeclared", timeout_s=30,
                sys_path=[tests]) as runner:
        declared = runner.departures
    assert [(d.id, d.substitute) for d in declared] == [("nan-select-max", "select-max")], \
        f"the worker's ready message carries the backend's departures: {declared}"


@given(st.lists(st.sampled_from(["ReLU", "Abs", "Add", "Multiply", "Exp"]), min_size=2,
                max_size=6),
       st.data())
def test_the_first_cut_is_the_first_split_boundary(kinds: list[str],
                                                    data: st.DataObject) -> None:
    ops = _chain(*kinds).ops
    splits = sorted(data.draw(st.sets(st.integers(1, len(ops) - 1), min_size=1), label="splits"))
    bounds = [0, *splits, len(ops)]
    formed = [Partition(n, tuple(ops[a:b]), (), ()) for n, (a, b) in
              enumerate(pairwise(bounds))]
    cut = first_cut([Partition(0, tuple(ops), (), ())], formed, None)
    first = splits[0]
    assert cut is not None and (cut.before, cut.after) == (kinds[first - 1], kinds[first]), \
        f"a chain split at {splits} is first cut between ops {first - 1} and {first}: {cut}"
    assert cut.partition == kinds, "the cut names the expected partition it falls in"
