"""The conformance strategies: valid cases fuse, near misses do not, ill-formed cases fail.

For every catalog pattern: a valid case finalizes and the reference partitioner puts all its
ops in one partition of its pattern (or of an earlier catalog row the same ops instantiate); a
near miss is well-formed and is not fused as its pattern, and `explain` names the break where it
can; an ill-formed case makes `Graph.finalize()` raise exactly the rule it is labelled with.
"""

from __future__ import annotations

import re
import warnings
from collections.abc import Sequence

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from fusionspec.conformance.cases import STRUCTURAL_RULES, Case, CaseKind
from fusionspec.conformance.generate.coverage import case_items, coverage_items
from fusionspec.conformance.generate.dtypes import headline_dtype, required_rows
from fusionspec.conformance.generate.ill_formed import ILL_FORMED_RULES, ill_formed
from fusionspec.conformance.generate.near_miss import near_miss_rules, near_misses
from fusionspec.conformance.generate.plan import feature_keys, post_op_repeats
from fusionspec.conformance.generate.strategies import (
    accepted_patterns,
    case_id,
    ill_formed_cases,
    near_miss_cases,
    valid_builds,
    valid_case,
    valid_cases,
)
from fusionspec.reference import execute, explain, fill_inputs, numpy_dtype, partition
from fusionspec.spec.catalog import CATALOG, PatternEntry
from fusionspec.spec.dtypes import DataType
from fusionspec.spec.errors import GraphError
from fusionspec.spec.graph import Graph, LogicalTensor, Op, Partition
from fusionspec.spec.onednn_json import dumps, loads
from fusionspec.spec.pattern_tree import op_kinds
from fusionspec.spec.rules import RuleKind, rules_for

FEW = settings(max_examples=25)
HEADLINES = {"f32", "bf16", "f16", "int8", "f8"}
ID = re.compile(r"[a-z0-9_.]+/(valid|near-miss|ill-formed)(/[a-z0-9_.]+)?/[0-9a-f]{8}")


def _pid(entry: PatternEntry) -> str:
    return entry.id


def _groups(parts: Sequence[Partition]) -> list[tuple[str | None, list[str]]]:
    return [(p.pattern, [f"{op.kind}{op.id}" for op in p.ops]) for p in parts]


# -- valid cases ----------------------------------------------------------------------------

@pytest.mark.parametrize("entry", CATALOG, ids=_pid)
@FEW
@given(data=st.data())
def test_valid_cases_fuse_into_one_partition_of_their_pattern(entry: PatternEntry,
                                                              data: st.DataObject) -> None:
    built = data.draw(valid_builds(entry), label="instance")
    case = valid_case(built)
    graph = case.graph.finalize()
    parts = partition(graph)
    where = f"[{case.id}: {case.description}]"
    assert len(parts) == 1 and len(parts[0].ops) == len(graph.ops), \
        f"a valid instance must be one partition, got {_groups(parts)} {where}"
    part = parts[0]
    allowed = accepted_patterns(entry, part.ops)
    assert part.pattern in allowed, \
        f"partition pattern {part.pattern}, expected one of {sorted(allowed)} {where}"
    assert {t.id for t in part.inputs} == {t.id for t in graph.input_tensors}, \
        f"partition inputs {[t.id for t in part.inputs]} are not the graph's inputs {where}"
    assert {t.id for t in part.outputs} == {t.id for t in graph.output_tensors}, \
        f"partition outputs {[t.id for t in part.outputs]} are not the graph's outputs {where}"


@pytest.mark.parametrize("entry", CATALOG, ids=_pid)
@FEW
@given(data=st.data())
def test_valid_cases_are_labelled_from_the_catalog(entry: PatternEntry,
                                                   data: st.DataObject) -> None:
    case = valid_case(data.draw(valid_builds(entry), label="instance"))
    assert ID.fullmatch(case.id) and case.id.startswith(f"{entry.id}/valid/"), \
        f"case id {case.id!r} is not '<pattern>/valid/<8 hex digits>'"
    assert case.id == case_id(entry.id, CaseKind.valid, case.graph), \
        f"case id {case.id} is not the hash of the case's graph JSON"
    assert (case.kind, case.pattern, case.rule) == (CaseKind.valid, entry.id, None), \
        f"valid case labelled {case.kind}/{case.pattern}/{case.rule} [{case.id}]"
    assert case.dtype == headline_dtype(case.graph) and case.dtype in HEADLINES, \
        f"headline dtype {case.dtype!r} [{case.id}]"
    row = case.features.get("dtype_row")
    assert row in required_rows(entry), \
        f"dtype row {row!r} is none of {entry.id}'s rows {required_rows(entry)} [{case.id}]"
    grammar = set(feature_keys(entry.id).values())
    allowed = set(coverage_items(entry))
    outside = [item for item in case_items(case.features)
               if (item[0] in grammar or item[0] == "dtype_row") and item not in allowed]
    assert not outside, f"features outside {entry.id}'s grammar: {outside} [{case.id}]"
    assert case.description and case.description.endswith(str(row)), \
        f"description {case.description!r} should end with the dtype row [{case.id}]"


@pytest.mark.parametrize("entry", CATALOG, ids=_pid)
@settings(max_examples=4)
@given(data=st.data())
def test_valid_cases_run_on_the_reference(entry: PatternEntry, data: st.DataObject) -> None:
    case = valid_case(data.draw(valid_builds(entry), label="instance"))
    graph = case.graph.finalize()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)  # log/sqrt of negatives give NaN
        outputs = execute(graph, fill_inputs(graph, seed=3))
    for tensor in graph.output_tensors:
        got = outputs.get(tensor.id)
        assert isinstance(got, np.ndarray), f"no output {tensor.id} [{case.id}]"
        assert got.shape == tensor.shape and got.dtype == numpy_dtype(tensor.dtype), \
            f"output {tensor.id} is {got.dtype}{list(got.shape)}, declared " \
            f"{tensor.dtype}{list(tensor.shape or ())} [{case.id}]"


@settings(max_examples=30)
@given(data=st.data())
def test_case_ids_survive_a_json_round_trip(data: st.DataObject) -> None:
    entry = data.draw(st.sampled_from(CATALOG), label="pattern")
    case = data.draw(valid_cases(entry), label="case")
    again = loads(dumps(case.graph))
    assert case_id(entry.id, CaseKind.valid, again, values=case.values) == case.id, \
        f"the id of {case.id} changes when its graph is written to JSON and read back"


def _graph(*dtypes: DataType) -> Graph:
    ops = [Op(i, "ReLU", (LogicalTensor(2 * i, dt, (2, 2)),),
              (LogicalTensor(2 * i + 1, dt, (2, 2)),)) for i, dt in enumerate(dtypes)]
    return Graph(ops)


@pytest.mark.parametrize(("dtypes", "headline"), [
    ((DataType.f32,), "f32"), ((DataType.f32, DataType.bf16), "bf16"),
    ((DataType.f16,), "f16"), ((DataType.u8, DataType.bf16), "int8"), ((DataType.s8,), "int8"),
    ((DataType.f8_e4m3, DataType.f32), "f8")])
def test_headline_dtype(dtypes: tuple[DataType, ...], headline: str) -> None:
    got = headline_dtype(_graph(*dtypes))
    assert got == headline, f"tensors of {[d.value for d in dtypes]} give {got}, want {headline}"


# -- near misses ----------------------------------------------------------------------------

NEAR_MISSES = [(e, rule) for e in CATALOG for rule in near_miss_rules(e)]


@pytest.mark.parametrize(("entry", "rule"), NEAR_MISSES,
                         ids=[f"{e.id}-{r}" for e, r in NEAR_MISSES])
@settings(max_examples=8)
@given(data=st.data())
def test_near_misses_are_not_fused_as_their_pattern(entry: PatternEntry, rule: str,
                                                    data: st.DataObject) -> None:
    miss = data.draw(near_misses(entry, rule), label="near miss")
    case = miss.case
    where = f"[{case.id}: {case.description}]"
    assert (case.kind, case.pattern, case.rule) == (CaseKind.near_miss, entry.id, rule), \
        f"near miss labelled {case.kind}/{case.pattern}/{case.rule} {where}"
    assert ID.fullmatch(case.id) and f"/near-miss/{rule}/" in case.id, f"case id {where}"
    graph = case.graph.finalize()  # a near miss is well-formed: this must not raise
    parts = partition(graph)
    everything = {op.id for op in graph.ops}
    assert not any(set(p.op_ids) == everything for p in parts), \
        f"the reference fuses the whole near miss: {_groups(parts)} {where}"
    together = [p for p in parts if p.pattern == entry.id and miss.apart <= set(p.op_ids)]
    assert not together, \
        f"ops {sorted(miss.apart)} are fused as {entry.id} despite {rule}: " \
        f"{_groups(together)} {where}"
    if miss.reasons:
        said = {e.reason for e in explain(graph)}
        assert said & miss.reasons, \
            f"explain gives {sorted(said)}, expected one of {sorted(miss.reasons)} {where}"


def test_near_miss_labels_are_catalog_or_structural_rules() -> None:
    for entry in CATALOG:
        for label in near_miss_rules(entry):
            assert label in STRUCTURAL_RULES or label in entry.rule_ids, \
                f"{entry.id}: near miss label {label!r} is neither structural nor its rule"


@pytest.mark.parametrize("entry", CATALOG, ids=_pid)
def test_every_rule_of_a_pattern_has_a_near_miss(entry: PatternEntry) -> None:
    labels = set(near_miss_rules(entry))
    checked = {r.id for r in rules_for(entry.id) if r.kind is not RuleKind.note}
    missing = checked - labels
    assert not missing, f"{entry.id}: no near miss for its rules {sorted(missing)}"
    main = entry.tree.parts[-1] if hasattr(entry.tree, "parts") else entry.tree
    expect = {"structure.fan_out", "structure.kind"}
    if "BiasAdd" in op_kinds(main) and not any(r.endswith("bias_first") for r in checked):
        expect.add("structure.bias_first")
    if post_op_repeats(entry.id) and not any(r.endswith("post_op_count") for r in checked):
        expect.add("structure.bound")
    assert expect <= labels, f"{entry.id}: missing structural near misses {expect - labels}"


@settings(max_examples=20)
@given(data=st.data())
def test_near_miss_cases_draw_the_rules_of_their_pattern(data: st.DataObject) -> None:
    entry = data.draw(st.sampled_from(CATALOG), label="pattern")
    case = data.draw(near_miss_cases(entry), label="near miss")
    assert case.rule in near_miss_rules(entry) and case.kind is CaseKind.near_miss, \
        f"{entry.id} near miss labelled {case.rule!r} [{case.id}]"


# -- ill-formed cases -----------------------------------------------------------------------

def _assert_rejected(case_rule: str | None, graph_text: str, where: str) -> None:
    with pytest.raises(GraphError) as caught:
        loads(graph_text).finalize()
    assert caught.value.rule == case_rule, \
        f"finalize() raised {caught.value.rule} ({caught.value}), expected {case_rule} {where}"


@pytest.mark.parametrize("entry", CATALOG, ids=_pid)
@FEW
@given(data=st.data())
def test_ill_formed_cases_raise_exactly_their_rule(entry: PatternEntry,
                                                   data: st.DataObject) -> None:
    case = data.draw(ill_formed_cases(entry), label="ill-formed")
    where = f"[{case.id}: {case.description}]"
    assert case.kind is CaseKind.ill_formed and case.rule in ILL_FORMED_RULES, f"label {where}"
    assert ID.fullmatch(case.id) and f"/ill-formed/{case.rule}/" in case.id, f"case id {where}"
    with pytest.raises(GraphError) as caught:
        case.graph.finalize()
    assert caught.value.rule == case.rule, \
        f"finalize() raised {caught.value.rule} ({caught.value}), expected {case.rule} {where}"


@pytest.mark.parametrize("rule", ILL_FORMED_RULES)
@settings(max_examples=12)
@given(data=st.data())
def test_every_ill_formed_rule_is_made(rule: str, data: st.DataObject) -> None:
    entry = data.draw(st.sampled_from(CATALOG), label="pattern")
    defect = data.draw(ill_formed(entry, rule), label="ill-formed")
    # Through JSON, as a backend would read it: the defect must survive serialisation.
    _assert_rejected(defect.case.rule, dumps(defect.case.graph),
                     f"[{defect.case.id}: {defect.case.description}]")


@settings(max_examples=10)
@given(ill_formed_cases())
def test_ill_formed_cases_of_any_pattern(case: Case) -> None:
    assert case.kind is CaseKind.ill_formed and case.rule in ILL_FORMED_RULES, \
        f"ill-formed case labelled {case.kind}/{case.rule} [{case.id}]"
    with pytest.raises(GraphError) as caught:
        case.graph.finalize()
    assert caught.value.rule == case.rule, \
        f"finalize() raised {caught.value.rule}, expected {case.rule} [{case.id}]"
