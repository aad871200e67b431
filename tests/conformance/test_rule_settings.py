"""Every validation rule under every setting it reads: the probes find the settings, the items
name them, and the floors draw each with a case that shows it.

Also the validator's contract with the executor: a graph the validator accepts is one the
reference can run (every defect of the probe family that validation lets through executes),
and no defect makes the validator crash instead of naming a rule.
"""

from __future__ import annotations

import warnings
from collections.abc import Iterator

import numpy as np
import pytest

from fusionspec.conformance.cases import CaseKind
from fusionspec.conformance.generate.instance_build import build_instance
from fusionspec.conformance.generate.instance_plans import instance_plans
from fusionspec.conformance.generate.probes import defects, outcome
from fusionspec.conformance.generate.rule_settings import (
    RULE_UNDRAWN,
    inside_cases,
    owned_items,
    rule_setting_cases,
    rule_setting_items,
)
from fusionspec.reference import execute, fill_inputs
from fusionspec.spec.catalog import CATALOG
from fusionspec.spec.errors import FusionspecError, GraphError, GraphRule
from fusionspec.spec.graph import Graph, Op
from fusionspec.spec.opschemas import SCHEMAS


def _probed() -> Iterator[tuple[str, Graph, Op]]:
    for entry in CATALOG:
        for plan in instance_plans(entry):
            graph = build_instance(entry, plan).finalize()
            for op in graph.ops:
                yield entry.id, graph, op


def test_no_defect_makes_the_validator_crash() -> None:
    crashes = {(op.kind, d.name): rule for _, graph, op in _probed()
               for d in defects(graph, op)
               if (rule := outcome(graph, d)) is not None and rule.startswith("crash")}
    assert not crashes, f"the validator raised a raw exception instead of a typed error: " \
                        f"{list(crashes.items())[:5]}"


def test_what_validation_accepts_the_reference_runs() -> None:
    seen: set[tuple[str, str]] = set()
    gaps: list[str] = []
    for pattern, graph, op in _probed():
        for d in defects(graph, op):
            if (op.kind, d.name) in seen or outcome(graph, d) is not None:
                continue
            seen.add((op.kind, d.name))
            changed = d.apply(graph).finalize()
            try:
                with np.errstate(all="ignore"), warnings.catch_warnings():
                    warnings.simplefilter("ignore")
                    execute(changed, fill_inputs(changed, 0))
            except FusionspecError as exc:
                gaps.append(f"{pattern}: {op.kind} {d.name}: {exc}")
    assert not gaps, f"{len(gaps)} graphs validate but the reference refuses to run them " \
                     f"(validation must check what execution checks): {gaps[:5]}"


def _every_rule() -> set[str]:
    found = {str(rule) for rule in GraphRule}
    found |= {c.rule for schema in SCHEMAS.values() for c in schema.constraints}
    return found


def test_every_rule_of_the_validator_is_drawn_or_listed_with_a_reason() -> None:
    drawn = {value for items in owned_items().values() for (key, value), _ in items
             if key == "ill-formed rule"}
    listed = {value for key, value in RULE_UNDRAWN if key == "ill-formed rule"}
    missing = sorted(_every_rule() - drawn - listed)
    assert not missing, f"validation rules no probe defect breaks and RULE_UNDRAWN does not " \
                        f"explain: {missing}"
    assert all(reason for reason in RULE_UNDRAWN.values()), "an undrawn rule without a reason"


@pytest.mark.parametrize(("item", "why"), [
    (("ill-formed schema.shape.infer under Add.auto_broadcast", "none"),
     "operands that broadcast under numpy but differ under none"),
    (("inside schema.shape.infer under Add.auto_broadcast", "numpy"),
     "the same operands under numpy, valid"),
    (("ill-formed schema.dtype.typecast under TypeCast.src dtype", "bf16"),
     "a bf16 source cast to f16"),
    (("ill-formed schema.dtype.typecast under TypeCast.src dtype", "f16"),
     "an f16 source cast to f16 or bf16"),
    (("ill-formed schema.shape.infer under Quantize.qtype", "per_channel"),
     "a per-channel scale count that does not match the axis"),
])
def test_the_settings_the_rules_read_are_found(item: tuple[str, str], why: str) -> None:
    items = {i for entry in CATALOG for i in rule_setting_items(entry)}
    assert item in items, f"{item} ({why}) is not among the rule x setting items"


def test_each_example_shows_its_item() -> None:
    for pattern, items in owned_items().items():
        for (key, value), example in items:
            changed = example.defect.apply(example.graph)
            try:
                changed.finalize()
                raised = None
            except GraphError as exc:
                raised = str(exc.rule)
            if example.rule is None:
                assert raised is None, f"{pattern}: the inside example of {key} = {value} " \
                                       f"is rejected ({raised})"
            else:
                assert raised == example.rule, f"{pattern}: the example of {key} = {value} " \
                                               f"breaks {raised}, not {example.rule}"


def test_each_item_is_drawn_once_by_one_pattern() -> None:
    owners: dict[tuple[str, str], str] = {}
    for pattern, items in owned_items().items():
        for item, _ in items:
            assert item not in owners, f"{item} drawn by {owners.get(item)} and {pattern}"
            owners[item] = pattern


def test_the_floors_draw_one_case_per_item_and_record_it() -> None:
    for entry in CATALOG:
        items = rule_setting_items(entry)
        cases = rule_setting_cases(entry) + inside_cases(entry)
        assert len(cases) == len(items), f"{entry.id}: {len(items)} items, {len(cases)} cases"
        for case in cases:
            shown = [(k, v) for k, v in case.features.items() if (k, v) in set(items)]
            assert shown, f"{case.id} records none of the items of {entry.id}"
            if case.kind is CaseKind.ill_formed:
                assert case.rule, f"{case.id}: an ill-formed case without its rule"


def test_inside_cases_run_on_the_reference() -> None:
    for entry in CATALOG:
        for case in inside_cases(entry):
            graph = case.graph.finalize()
            with np.errstate(all="ignore"), warnings.catch_warnings():
                warnings.simplefilter("ignore")
                outputs = execute(graph, fill_inputs(graph, 0, case.values))
            assert outputs, f"{case.id}: the reference gave no output"
