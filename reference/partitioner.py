"""The reference partitioner: split a graph into partitions exactly as the spec says.

`partition(graph)` is the oracle every backend's partitioning is graded against. It is driven by
the catalog's pattern trees (see `fusionspec.reference.matcher` for what each construct of the
notation means along a graph); there is no hand-written matcher per pattern.

Choosing among overlapping matches
----------------------------------
Every op can head a match of every pattern whose main chain can start with its kind; a match
takes as many ops as the bounds allow and must pass the pattern's rules. Matches are then taken
greedily in this order, each one only if none of its ops is taken yet (a match that lost ops to
an earlier one is matched again on what is left):

1. the match covering more ops;
2. the match whose head is upstream: smaller depth, where an op's depth is the longest path from
   the graph's inputs to it;
3. catalog order: page 001's rows top to bottom, then page 000, then page 003;
4. the match entering its ops through lower input ports (src_0 before src_1).

Ops no match takes become single-op partitions with ``pattern=None``; an op the reference cannot
execute (a kind outside the pages) is ``supported=False``.

Examples (graph inputs omitted):

- ``ReLU -> Add -> Add`` is one partition of ``Unary + Binary^{0-3}`` (3 ops beat the 2 ops of
  ``Binary + [Unary | Binary]^{0-3}`` on the two Adds).
- ``Reciprocal -> Multiply -> Add`` gives {Reciprocal, Multiply} and {Add}: the two 2-op matches
  tie on size and {Reciprocal, Multiply} has the upstream head.
- ``Conv -> (BatchNormInference -> ReLU, Sigmoid) -> Add``, the Add taking ReLU and Sigmoid: the
  fan-out of Conv's output leaves Conv alone; {BatchNormInference, ReLU} and {Sigmoid, Add} tie
  on size and depth, and ``Unary + Binary`` comes before ``BatchNormInference + ReLU`` in the
  catalog, so the Add goes with Sigmoid and BatchNormInference keeps ReLU.

Partition inputs are the external tensors in pattern order (op by op, port by port); outputs are
the tensors consumed outside the partition or by no op, in pattern order. Partitions are
numbered in a dependency order that depends only on the graph's structure and tensor ids, not on
op ids or on the order ops were added.
"""

from __future__ import annotations

import gc
import heapq
import itertools
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from functools import cache

from fusionspec.spec.catalog import CATALOG
from fusionspec.spec.graph import Graph, LogicalTensor, Op, Partition
from fusionspec.spec.opschemas import SCHEMAS
from fusionspec.spec.validate import topological_order

from .matcher import Candidate, Matcher, graph_depths

__all__ = ["partition", "PartitionPlan", "plan_partitions"]


@dataclass(frozen=True)
class PartitionPlan:
    """The partitioner's working state, kept for `explain`: the chosen candidates and every
    op's owner (index into `groups`)."""

    graph: Graph
    matcher: Matcher
    groups: tuple[tuple[Op, ...], ...]
    chosen: tuple[Candidate | None, ...]
    owner: dict[int, int]


@cache
def _entries_headed_by(kind: str) -> tuple[int, ...]:
    """Catalog positions of the patterns whose main chain can start with an op of `kind`."""
    return tuple(i for i, entry in enumerate(CATALOG) if kind in Matcher.heads(entry))


def _key(cand: Candidate, depth: dict[int, int]) -> tuple[int, int, int, tuple[int, ...]]:
    return (-len(cand.ops), depth[cand.head.id], cand.index, cand.ports)


def plan_partitions(graph: Graph) -> PartitionPlan:
    """Match and select; the groups of ops that become partitions, before numbering."""
    if not graph.finalized:
        graph = graph.finalize()
    order = topological_order(graph.ops)
    depth = graph_depths(graph, order)
    matcher = Matcher(graph, order, depth)
    heap: list[tuple[tuple[int, int, int, tuple[int, ...]], int, int, int]] = []
    best: dict[tuple[int, int], Candidate] = {}
    tick = itertools.count()  # keeps heap entries comparable without comparing candidates
    for op in order:
        for index in _entries_headed_by(op.kind):
            cand, _ = matcher.best_match(CATALOG[index], index, op)
            if cand is not None:
                best[(op.id, index)] = cand
                heapq.heappush(heap, (_key(cand, depth), op.id, index, next(tick)))
    chosen: list[Candidate] = []
    while heap:
        _, head_id, index, _ = heapq.heappop(heap)
        cand = best[(head_id, index)]
        if cand.op_ids & matcher.claimed:
            fresh, _ = matcher.best_match(cand.entry, index, cand.head)
            if fresh is not None:
                best[(head_id, index)] = fresh
                heapq.heappush(heap, (_key(fresh, depth), head_id, index, next(tick)))
            continue
        chosen.append(cand)
        matcher.claimed |= cand.op_ids
    groups: list[tuple[Op, ...]] = [c.ops for c in chosen]
    plans: list[Candidate | None] = list(chosen)
    for op in order:
        if op.id not in matcher.claimed:
            groups.append((op,))
            plans.append(None)
    owner = {op.id: i for i, group in enumerate(groups) for op in group}
    return PartitionPlan(graph, matcher, tuple(groups), tuple(plans), owner)


@contextmanager
def _gc_paused() -> Iterator[None]:
    # Matching allocates many short-lived tuples and no reference cycles; on graphs of tens of
    # thousands of ops the collector's passes over the long-lived graph objects would dominate.
    enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if enabled:
            gc.enable()


def partition(graph: Graph) -> list[Partition]:
    """Split `graph` (finalized here if it is not) into partitions, in dependency order."""
    with _gc_paused():
        return _number(plan_partitions(graph))


def _number(plan: PartitionPlan) -> list[Partition]:
    graph, groups = plan.graph, plan.groups
    depth = plan.matcher.depth
    deps: list[set[int]] = [set() for _ in groups]
    users: list[set[int]] = [set() for _ in groups]
    for i, group in enumerate(groups):
        for op in group:
            for pred in graph.predecessors(op):
                j = plan.owner[pred.id]
                if j != i:
                    deps[i].add(j)
                    users[j].add(i)

    def rank(i: int) -> tuple[int, tuple[int, ...]]:
        # Structure and tensor ids only: independent of op ids and of op insertion order.
        tensors = sorted(t.id for op in groups[i] for t in (*op.outputs, *op.inputs))
        return (min(depth[op.id] for op in groups[i]), tuple(tensors))

    ready = [(rank(i), i) for i in range(len(groups)) if not deps[i]]
    heapq.heapify(ready)
    waiting = [len(d) for d in deps]
    result: list[Partition] = []
    while ready:
        _, i = heapq.heappop(ready)
        group = groups[i]
        cand = plan.chosen[i]
        # The reference executes every kind the pages name (a test holds the registry to it).
        supported = all(op.kind in SCHEMAS for op in group)
        inputs, outputs = external_tensors(graph, group)
        result.append(Partition(len(result), group, inputs, outputs,
                                cand.entry.id if cand is not None else None, supported))
        for j in users[i]:
            waiting[j] -= 1
            if waiting[j] == 0:
                heapq.heappush(ready, (rank(j), j))
    if len(result) != len(groups):  # convex chains cannot form a cycle; guard anyway
        raise AssertionError("partitions depend on each other in a cycle")
    return result


def external_tensors(graph: Graph, ops: Sequence[Op],
                     ) -> tuple[tuple[LogicalTensor, ...], tuple[LogicalTensor, ...]]:
    """(inputs, outputs) of a set of ops: tensors from outside, and tensors leaving it."""
    inside = {op.id for op in ops}
    produced = {t.id for op in ops for t in op.outputs}
    declared_outputs = set(graph.output_ports or ())
    inputs: dict[int, LogicalTensor] = {}
    outputs: dict[int, LogicalTensor] = {}
    for op in ops:
        for t in op.inputs:
            if t.id not in produced:
                inputs.setdefault(t.id, t)
        for t in op.outputs:
            users = graph.consumers.get(t.id, ())
            if not users or t.id in declared_outputs or any(u.id not in inside for u, _ in users):
                outputs.setdefault(t.id, t)
    return tuple(inputs.values()), tuple(outputs.values())
