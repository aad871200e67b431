"""Graph-size corners of the graph-format method: graphs holding more ops, and more partitions,
than CPython keeps one shared int object for (-5 to 256).

A check that compares two counts or two indices by identity (``is``) where it means equality
(``==``) holds on every graph up to that size and goes wrong past it: the validator's cycle
check compares the number of ops it could order with the number of ops, the partitioner's
dependency pass compares partition indices. Two cases reach past it:

- valid: `MANY` instances of a pattern's shortest fused instance side by side, so `MANY`
  partitions, each of two ops or more (a dependency inside a partition of index 257),
  drawn once in the catalog, by the pattern `large_owner` names (one whose instance is
  elementwise ops only, so the case costs a backend least to run);
- ill-formed: `copies` of an instance past `MANY` ops with an op reading its own output
  (`fusionspec.conformance.generate.format_ill_formed`).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import replace
from functools import cache

from fusionspec.spec.catalog import CATALOG, PatternEntry
from fusionspec.spec.categories import BINARY, UNARY
from fusionspec.spec.graph import Graph

from ..cases import Case
from .format_rewrites import renumber, tensor_ids
from .format_valid import INSTANCES
from .instance_build import build_instance, instance_case
from .instance_plans import Plan, instance_plans
from .model import Item
from .values import clean_plan, with_values

__all__ = ["MANY", "MANY_INSTANCES", "ELEMENTWISE", "copies", "large_owner", "large_items",
           "large_cases"]

#: Past the largest int CPython shares (256): counts from 257 on are fresh objects each time
#: they are computed, and `MANY` partitions, numbered from 0, put one at index 257.
MANY = 258
MANY_INSTANCES = "more than 256 instances side by side"
ELEMENTWISE = frozenset({*UNARY, *BINARY})


def copies(graph: Graph, ops: int) -> Graph:
    """As many copies of `graph` side by side as make `ops` ops or more (every id of a copy
    moved past the ids of the copies before it)."""
    count = -(-ops // len(graph.ops))
    op_step = max(op.id for op in graph.ops) + 1
    ids = tensor_ids(graph)
    tensor_step = max(ids) + 1
    found = []
    for k in range(count):
        moved = renumber(graph, {op.id: op.id + k * op_step for op in graph.ops},
                         {t: t + k * tensor_step for t in ids})
        found += list(moved.ops)
    return graph.replace_ops(found)


def _shortest_fused(entry: PatternEntry, plans: Sequence[Plan] | None = None) -> Plan:
    found = list(plans) if plans else instance_plans(entry)
    fused = [p for p in found if len(p.kinds) > 1] or found
    return min(fused, key=lambda p: len(p.kinds))


@cache
def large_owner() -> str:
    """The pattern that draws the `MANY` instances case: the first in catalog order whose
    shortest instance fusing two ops or more holds elementwise ops only (unary and binary:
    the partitions a backend builds and runs cheapest, and the case runs `MANY` of them);
    else the first whose shortest instance fuses two ops or more."""
    fused = [(entry, _shortest_fused(entry)) for entry in CATALOG]
    fused = [(entry, plan) for entry, plan in fused if len(plan.kinds) > 1]
    cheap = [entry for entry, plan in fused if set(plan.kinds) <= ELEMENTWISE]
    return (cheap or [entry for entry, _ in fused])[0].id


def large_items(entry: PatternEntry) -> tuple[Item, ...]:
    """The graph-size items `entry` draws: `MANY_INSTANCES` for `large_owner` only."""
    return ((INSTANCES, MANY_INSTANCES),) if entry.id == large_owner() else ()


def large_cases(entry: PatternEntry, plans: Sequence[Plan] | None = None) -> list[Case]:
    """The valid case of `large_items`: `MANY` copies of the shortest fused instance of
    `entry`, filled with clean values (none for a pattern other than `large_owner`)."""
    if not large_items(entry):
        return []
    plan = _shortest_fused(entry, plans)
    graph = copies(build_instance(entry, plan), MANY * len(plan.kinds))
    case = instance_case(entry, graph, f"graph format: {MANY} instances side by side; "
                                       f"catalog instance: {plan.describe()}")
    features = {**case.features, "source": "graph format", INSTANCES: MANY_INSTANCES}
    return [with_values(replace(case, features=features), clean_plan(graph))]
