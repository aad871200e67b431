"""Why the reference partitioner did not fuse an op with its neighbour.

`explain(graph)` looks at every producer -> consumer edge that crosses a partition boundary and
at every op left in a single-op partition without a pattern, and says which pattern came
closest and what stopped it, with a reason id:

- ``bound``: a repetition was full ("Convolution 0 + 4 post-ops: the bound is 0-3, post-op 4
  starts a new partition");
- ``fan-out``: the producer's output has several consumers, so the chain ends there;
- ``port``: the chain would enter Subtract or Divide on src_1;
- ``kind``: the consumer's kind cannot follow in any pattern the producer's partition fits;
- ``overlap``: another match took the op (larger, upstream, or earlier in the catalog);
- a rule id (``softmax.f32_dst`` ...): the longer instance breaks that catalog rule;
- ``no-pattern``: an op no pattern can take in this graph.
"""

from __future__ import annotations

from dataclasses import dataclass

from fusionspec.spec.catalog import CATALOG
from fusionspec.spec.graph import Graph, Op
from fusionspec.spec.opschemas import COMMUTATIVE_KINDS
from fusionspec.spec.pattern_tree import Node, Repeat, op_kinds, walk

from .matcher import Candidate
from .partitioner import PartitionPlan, plan_partitions

__all__ = ["Explanation", "explain"]


@dataclass(frozen=True)
class Explanation:
    """Op `op_id` is not in the partition of its neighbour `neighbour_id` (None for an op left
    alone with no neighbour to blame); `pattern` came closest; `reason` is the reason id."""

    op_id: int
    neighbour_id: int | None
    pattern: str | None
    reason: str
    message: str

    def to_dict(self) -> dict[str, object]:
        return {"op": self.op_id, "neighbour": self.neighbour_id, "pattern": self.pattern,
                "reason": self.reason, "message": self.message}


def explain(graph: Graph) -> list[Explanation]:
    """One explanation per partition boundary edge and per op left without a pattern."""
    plan = plan_partitions(graph)
    graph = plan.graph
    found: list[Explanation] = []
    for i, group in enumerate(plan.groups):
        for producer in group:
            for out in producer.outputs:
                for consumer, port in graph.consumers.get(out.id, ()):
                    if plan.owner[consumer.id] != i and plan.chosen[i] is not None:
                        found.append(_edge(plan, i, producer, consumer, port))
        if plan.chosen[i] is None:
            found.append(_alone(plan, group[0]))
    return found


def _label(op: Op) -> str:
    return f"{op.kind} {op.id}"


def _edge(plan: PartitionPlan, i: int, producer: Op, consumer: Op, port: int) -> Explanation:
    graph = plan.graph
    cand = plan.chosen[i]
    pattern = cand.entry.id if cand is not None else None
    users = graph.consumers.get(producer.outputs[0].id, ()) if producer.outputs else ()
    if len(users) > 1:
        return Explanation(consumer.id, producer.id, pattern, "fan-out",
                           f"{_label(producer)}'s output feeds {len(users)} ops, so a chain "
                           f"ends at it; {_label(consumer)} starts another partition")
    if port == 1 and consumer.kind not in COMMUTATIVE_KINDS:
        return Explanation(consumer.id, producer.id, pattern, "port",
                           f"the chain would enter {_label(consumer)} on src_1; {consumer.kind}"
                           " is not commutative, so only src_0 continues a chain")
    assert cand is not None  # edges out of pattern-less ops are explained by _alone
    return _why_not_extended(plan, cand, producer, consumer)


def _why_not_extended(plan: PartitionPlan, cand: Candidate, producer: Op,
                      consumer: Op) -> Explanation:
    entry = cand.entry
    owner = plan.chosen[plan.owner[consumer.id]]
    # What would the pattern take at this head if no other partition were in the way?
    alone, rejected = _unclaimed(plan, cand)
    if alone is not None and consumer.id in alone.op_ids:
        by = owner.entry.id if owner is not None else "a single-op partition"
        return Explanation(consumer.id, producer.id, entry.id, "overlap",
                           f"{_label(consumer)} fits {entry.id} after {_label(producer)} but "
                           f"went to {by}, which wins the overlap (more ops, an upstream head, "
                           "or an earlier catalog row)")
    if rejected is not None and consumer.id in rejected.op_ids and rejected.failures:
        rule = rejected.failures[0]
        rule_id = rule[rule.rfind("[") + 1:rule.rfind("]")] if "[" in rule else "rule"
        return Explanation(consumer.id, producer.id, entry.id, rule_id,
                           f"{entry.id} with {_label(consumer)} breaks a rule: {rule}")
    bound = _full_repeat(entry.tree, cand, consumer)
    if bound is not None:
        repeat, used = bound
        head = cand.head
        return Explanation(consumer.id, producer.id, entry.id, "bound",
                           f"{_label(head)} + {used + 1} post-ops: the bound is "
                           f"{repeat.low}-{repeat.high}, post-op {used + 1} "
                           f"({_label(consumer)}) starts a new partition")
    return Explanation(consumer.id, producer.id, entry.id, "kind",
                       f"{consumer.kind} cannot follow {producer.kind} in {entry.notation}")


def _unclaimed(plan: PartitionPlan, cand: Candidate) -> tuple[Candidate | None,
                                                                 Candidate | None]:
    """`best_match` at `cand`'s head as if no other partition had taken any op."""
    saved = plan.matcher.claimed
    plan.matcher.claimed = set()
    try:
        return plan.matcher.best_match(cand.entry, cand.index, cand.head)
    finally:
        plan.matcher.claimed = saved


def _full_repeat(tree: Node, cand: Candidate, consumer: Op) -> tuple[Repeat, int] | None:
    """The repetition `consumer` would extend, when it already holds its maximum."""
    for path, node in walk(tree):
        if not isinstance(node, Repeat) or consumer.kind not in op_kinds(node.body):
            continue
        used = sum(1 for p in cand.paths if p[:len(path)] == path)
        if used >= node.high:
            return node, used
    return None


def _alone(plan: PartitionPlan, op: Op) -> Explanation:
    """An op no pattern took: find the largest instance around it that was turned down (by a
    rule, or because other partitions took some of its ops) and say why."""
    best: Candidate | None = None
    saved = plan.matcher.claimed
    plan.matcher.claimed = set()
    try:
        for head in _neighbourhood(plan.graph, op, _RADIUS):
            for index, entry in enumerate(CATALOG):
                if head.kind not in plan.matcher.heads(entry):
                    continue
                for cand in plan.matcher.candidates(entry, index, head):
                    if op.id in cand.op_ids and len(cand.ops) > 1 and (
                            best is None or len(cand.ops) > len(best.ops)):
                        best = cand
    finally:
        plan.matcher.claimed = saved
    if best is None:
        return Explanation(op.id, None, None, "no-pattern",
                           f"{_label(op)} is alone: no pattern of the pages fits around it "
                           "in this graph")
    failures = best.entry.check(best.match)
    if failures:
        rule = failures[0]
        rule_id = rule[rule.rfind("[") + 1:rule.rfind("]")]
        return Explanation(op.id, None, best.entry.id, rule_id,
                           f"{_label(op)} is alone: the {best.entry.id} instance around it "
                           f"breaks a rule: {rule}")
    taken = sorted(i for i in best.op_ids & plan.matcher.claimed if i != op.id)
    return Explanation(op.id, None, best.entry.id, "overlap",
                       f"{_label(op)} is alone: the {best.entry.id} instance around it lost "
                       f"ops {taken} to other partitions that win the overlap")


#: How far (in ops) from a lone op to look for the head of a pattern instance containing it.
_RADIUS = 8


def _neighbourhood(graph: Graph, op: Op, radius: int) -> list[Op]:
    """Ops within `radius` steps of `op`, upstream or downstream, nearest first."""
    seen = {op.id: op}
    frontier = [op]
    for _ in range(radius):
        nxt: list[Op] = []
        for cur in frontier:
            for other in (*graph.predecessors(cur), *graph.successors(cur)):
                if other.id not in seen:
                    seen[other.id] = other
                    nxt.append(other)
        frontier = nxt
    return list(seen.values())
