"""The graph-format method: every item drawn or listed undrawn with its reason, the cases
within their budget, each ill-formed case rejected for its rule, and the metamorphic
relations: the same graph written another way (ids, op order, op names) gets the same
partitions and the same values from the reference."""

from __future__ import annotations

from collections.abc import Mapping

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from fusionspec.conformance.cases import Case, CaseKind
from fusionspec.conformance.generate.coverage import case_items
from fusionspec.conformance.generate.format_rewrites import (
    renamed,
    renumber,
    reordered,
    tensor_ids,
)
from fusionspec.conformance.generate.graph_format import (
    FORMAT_UNDRAWN,
    format_cases,
    format_ill_formed_cases,
    format_items,
)
from fusionspec.conformance.generate.instance_plans import instance_plans
from fusionspec.conformance.generate.strategies import near_miss_cases, valid_cases
from fusionspec.reference import execute, fill_inputs, partition
from fusionspec.spec.catalog import CATALOG, entry, pattern_ids
from fusionspec.spec.errors import GraphError
from fusionspec.spec.graph import Graph

#: The most cases the method may add to the ci profile, valid and ill-formed together.
BUDGET = 200
PATTERNS = pattern_ids()


def _cases(pattern: str) -> list[Case]:
    found = entry(pattern)
    return format_cases(found, instance_plans(found)) + format_ill_formed_cases(found)


@pytest.mark.parametrize("pattern", PATTERNS)
def test_every_format_item_of_the_pattern_is_drawn_by_its_cases(pattern: str) -> None:
    drawn = {item for case in _cases(pattern) for item in case_items(case.features)}
    missing = sorted(set(format_items(entry(pattern))) - drawn)
    assert not missing, (f"{pattern}: graph-format items no case of the method draws (draw "
                         f"them, or list them in FORMAT_UNDRAWN with the reason): {missing}")


def test_undrawn_items_are_left_out_of_every_pattern_and_say_why() -> None:
    listed = {item for e in CATALOG for item in format_items(e)}
    assert not listed & set(FORMAT_UNDRAWN), \
        f"items listed undrawn are still asked of a pattern: {listed & set(FORMAT_UNDRAWN)}"
    short = [item for item, why in FORMAT_UNDRAWN.items() if len(why.split()) < 6]
    assert not short, f"an undrawn item needs a reason in words: {short}"


def test_the_method_stays_within_its_case_budget() -> None:
    total = sum(len(_cases(p)) for p in PATTERNS)
    assert total <= BUDGET, (f"the graph-format cases number {total}, over the budget of "
                             f"{BUDGET}: let one case show several items instead")


def test_the_ci_profile_draws_every_kind_of_format_item() -> None:
    keys = {key for e in CATALOG for key, _ in format_items(e)}
    want = {"graph.tensor sharing", "graph.property_type", "graph.layout_type",
            "graph.numbering", "graph.op order", "graph.op names", "graph.instances",
            "graph.outputs", "graph.ill-formed"}
    assert want <= keys, f"kinds of graph-format item the method no longer asks: {want - keys}"


@pytest.mark.parametrize("pattern", PATTERNS)
def test_each_ill_formed_format_case_is_rejected_for_its_own_rule(pattern: str) -> None:
    for case in format_ill_formed_cases(entry(pattern)):
        with pytest.raises(GraphError) as caught:
            case.graph.finalize()
        assert caught.value.rule == case.rule, \
            f"{case.id} ({case.description}) breaks {caught.value.rule}, not {case.rule}"


@pytest.mark.parametrize("pattern", PATTERNS)
def test_each_valid_format_case_is_valid_and_fuses(pattern: str) -> None:
    for case in format_cases(entry(pattern), instance_plans(entry(pattern))):
        assert case.kind is CaseKind.valid, f"{case.id} is not valid"
        parts = partition(case.graph.finalize())
        assert any(p.pattern is not None for p in parts), \
            f"{case.id} ({case.description}): the reference fuses nothing"


# -- the metamorphic relations ------------------------------------------------------------

_IDS = st.integers(0, 2**64 - 1)


@st.composite
def _written_otherwise(draw: st.DrawFn, graph: Graph,
                       ) -> tuple[Graph, dict[int, int], dict[int, int]]:
    """`graph` with ops and tensors renumbered (any ids the format can hold), its ops in any
    order and any names; with the op and tensor id maps."""
    ops = [op.id for op in graph.ops]
    tensors = tensor_ids(graph)
    op_ids = draw(st.lists(_IDS, min_size=len(ops), max_size=len(ops), unique=True),
                  label="op ids")
    new_tensors = draw(st.lists(_IDS, min_size=len(tensors), max_size=len(tensors),
                                unique=True), label="tensor ids")
    op_map, tensor_map = dict(zip(ops, op_ids)), dict(zip(tensors, new_tensors))
    order = draw(st.permutations(range(len(ops))), label="op order")
    names = draw(st.lists(st.sampled_from(["", "op", "a", "relu_0"]), min_size=len(ops),
                          max_size=len(ops)), label="op names")
    name_of = {op_map[op.id]: name for op, name in zip(graph.ops, names)}
    moved = renumber(graph, op_map, tensor_map)
    moved = renamed(reordered(moved, order), lambda op: name_of[op.id] or f"n{op.id}")
    return moved, op_map, tensor_map


def _split(graph: Graph, op_map: Mapping[int, int], tensor_map: Mapping[int, int],
           ) -> set[tuple[str | None, frozenset[int], frozenset[int], frozenset[int]]]:
    return {(p.pattern, frozenset(op_map.get(op.id, op.id) for op in p.ops),
             frozenset(tensor_map.get(t.id, t.id) for t in p.inputs),
             frozenset(tensor_map.get(t.id, t.id) for t in p.outputs))
            for p in partition(graph.finalize())}


@pytest.mark.parametrize("pattern", PATTERNS)
@settings(max_examples=4)
@given(data=st.data())
def test_the_reference_answers_alike_for_a_graph_written_another_way(
        pattern: str, data: st.DataObject) -> None:
    case = data.draw(valid_cases(pattern), label="case")
    _check_alike(case, data)


@pytest.mark.parametrize("pattern", PATTERNS)
@settings(max_examples=2)
@given(data=st.data())
def test_the_reference_splits_a_near_miss_alike_however_it_is_written(
        pattern: str, data: st.DataObject) -> None:
    # Near misses hold the structures where an order could decide: fan-outs, chains cut
    # short, ops that two patterns could both take.
    case = data.draw(near_miss_cases(pattern), label="case")
    _check_alike(case, data)


def _check_alike(case: Case, data: st.DataObject) -> None:
    other, op_map, tensor_map = data.draw(_written_otherwise(case.graph), label="rewrite")
    same = {}
    expected = _split(case.graph, op_map, tensor_map)
    got = _split(other, {}, {})
    assert got == expected, (f"{case.id}: renumbering, reordering or renaming the ops changed "
                             f"the reference's partitions: {sorted(map(str, expected))} became "
                             f"{sorted(map(str, got))}")
    inputs = fill_inputs(case.graph.finalize(), 0, case.values)
    before = execute(case.graph, inputs)
    after = execute(other, {tensor_map[k]: v for k, v in inputs.items()})
    for tid, value in before.items():
        same[tid] = np.array_equal(value, after[tensor_map[tid]], equal_nan=True)
    assert all(same.values()), (f"{case.id}: the same graph written another way computes "
                                f"other values for outputs "
                                f"{[t for t, ok in same.items() if not ok]}")
