"""Graph-size corners (`format_large`): the ci profile draws a valid graph of more than 256
partitions and an ill-formed cyclic graph of more than 256 ops, past the ints CPython shares,
where a count or an index compared by identity instead of value goes wrong (the validator's
cycle check, the partitioner's dependency pass)."""

from __future__ import annotations

import inspect
import textwrap
from collections.abc import Callable
from functools import cache
from typing import Any

import pytest

from fusionspec.conformance.cases import Case, CaseKind
from fusionspec.conformance.generate.format_large import MANY, MANY_INSTANCES, large_owner
from fusionspec.conformance.generate.format_valid import INSTANCES
from fusionspec.conformance.generate.graph_format import format_ill_formed_cases
from fusionspec.conformance.suite import PROFILES, draw_cases
from fusionspec.reference import partitioner
from fusionspec.spec import validate
from fusionspec.spec.catalog import CATALOG, entry
from fusionspec.spec.errors import GraphError, GraphRule

CYCLE = "a cycle in a graph of more than 256 ops"


@cache
def _large_case() -> Case:
    drawn = draw_cases(entry(large_owner()), CaseKind.valid, PROFILES["ci"])
    found = [c for c in drawn if c.features.get(INSTANCES) == MANY_INSTANCES]
    assert len(found) == 1, f"the ci profile draws {len(found)} cases of {MANY_INSTANCES} " \
                            f"for {large_owner()}, not one"
    return found[0]


def _mutated(module: Any, name: str, old: str, new: str) -> Callable[..., Any]:
    """`module.name` with `old` replaced by `new` in its source: a planted bug."""
    source = textwrap.dedent(inspect.getsource(getattr(module, name)))
    assert old in source, f"{module.__name__}.{name} no longer reads {old!r}"
    scope = dict(vars(module))
    exec(source.replace(old, new), scope)  # the planted bug: our own function, one token changed
    mutant: Callable[..., Any] = scope[name]
    return mutant


@pytest.mark.slow
def test_the_ci_profile_draws_a_valid_graph_of_more_than_256_partitions() -> None:
    case = _large_case()
    parts = partitioner.partition(case.graph.finalize())
    assert len(parts) >= MANY and len(case.graph.ops) > 256, \
        f"{case.id}: {len(parts)} partitions of {len(case.graph.ops)} ops, want {MANY}+"
    inner = [i for i, p in enumerate(parts) if i > 256 and len(p.ops) > 1]
    assert inner, f"{case.id}: no partition of two ops or more past index 256, where an " \
                  "identity comparison of indices goes wrong"


@pytest.mark.slow
def test_the_large_case_catches_identity_comparisons(monkeypatch: pytest.MonkeyPatch) -> None:
    graph = _large_case().graph
    monkeypatch.setattr(validate, "topological_order", _mutated(
        validate, "topological_order", "len(order) != len(ops)", "len(order) is not len(ops)"))
    with pytest.raises(Exception):  # noqa: B017 - any failure tells the mutant apart
        graph.finalize()
    monkeypatch.undo()
    final = graph.finalize()
    monkeypatch.setattr(partitioner, "_number", _mutated(
        partitioner, "_number", "if j != i:", "if j is not i:"))
    try:
        mutant = [tuple(op.id for op in p.ops) for p in partitioner.partition(final)]
    except AssertionError:
        return  # the mutant finds a partition depending on itself
    monkeypatch.undo()
    right = [tuple(op.id for op in p.ops) for p in partitioner.partition(final)]
    assert mutant != right, "a partitioner comparing indices by identity splits the large " \
                            "graph as the reference does"


def test_a_cycle_in_a_graph_of_more_than_256_ops_is_drawn_and_rejected() -> None:
    owners = [e.id for e in CATALOG if any(c.features.get("graph.ill-formed") == CYCLE
                                           for c in format_ill_formed_cases(e))]
    assert owners, f"no pattern draws {CYCLE!r}"
    drawn = draw_cases(entry(owners[0]), CaseKind.ill_formed, PROFILES["ci"])
    found = [c for c in drawn if c.features.get("graph.ill-formed") == CYCLE]
    assert found, f"the ci profile draws no {CYCLE!r} case for {owners[0]}"
    case = found[0]
    assert len(case.graph.ops) > 256, f"{case.id} holds {len(case.graph.ops)} ops, not 257+"
    with pytest.raises(GraphError) as caught:
        case.graph.finalize()
    assert caught.value.rule == GraphRule.acyclic == case.rule, \
        f"{case.id} is rejected by {caught.value.rule}, not graph.acyclic"
