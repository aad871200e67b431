"""The neighbouring-kinds method of the coverage model: a side input of a pattern fed by an op
whose kind name sorts right next to the one the pattern names there.

A pattern's side subgraphs (the weights' ``Quantize^? + Dequantize``, a binary post-op's
``Dequantize_{>t2}``) are matched backwards from the op reading them, comparing each producer's
kind with the one the pattern names. A matcher comparing kind names by order rather than by
equality (``<=`` where ``==`` was meant) takes a producer of another kind for the side op, and
fuses it. Only a graph whose side input comes from an op of a kind sorting before (or after)
the named one shows that. So for each side op of a pattern's instances whose inputs are graph
inputs, this method replaces it by a stand-in: the op of the nearest kind in sort order, before
and after, that reads fresh graph inputs of the side op's output type and shape and keeps the
graph valid (a shape-keeping unary or binary op, Reciprocal, Reorder).

Where the side op was optional (a ``Dequantize_{>t2}^{0-3}``, the weights' ``Quantize^?``),
the result is a valid graph: the instance without it, and the stand-in outside, feeding it; the
reference fuses the instance alone, and a backend fusing the stand-in is a fusion mismatch.
Those are this method's valid cases (`neighbour_cases`), one per side kind and direction, on
the shortest plan holding the side op. Where it was required (the weights' ``Dequantize``, the
``Dequantize_{>t1}`` of int8.pool_add), the result is a near miss, and a backend fusing the
stand-in there computes the same values: the suite would grade it an extension, not a failure,
so this method draws those as no case (the near-miss draws replace ops too: `near_miss`).

Its items (key `NEIGHBOURS`): ``K side input fed by N (sorting before|after)``.
"""

from __future__ import annotations

from bisect import bisect_left
from dataclasses import replace
from functools import cache

from fusionspec.spec.catalog import CATALOG, PatternEntry
from fusionspec.spec.categories import BINARY, UNARY
from fusionspec.spec.errors import GraphError
from fusionspec.spec.graph import Graph, LogicalTensor, Op
from fusionspec.spec.opschemas import SCHEMAS

from ..cases import Case
from .instance_build import UNARY_ATTRS, build_instance, instance_case
from .instance_plans import instance_plans
from .model import Item
from .values import clean_plan, with_values

__all__ = ["NEIGHBOURS", "STAND_INS", "neighbour_items", "neighbour_cases", "stand_in"]

#: The feature key of the method's items.
NEIGHBOURS = "neighbouring kinds"
#: Kinds a stand-in may take: each reads tensors of its output's shape.
STAND_INS = frozenset({*UNARY, *BINARY, "Reciprocal", "Reorder"})
_KINDS = tuple(sorted(SCHEMAS))


def _side_ops(graph: Graph) -> list[Op]:
    """The Quantize/Dequantize ops of an instance that read graph inputs only and feed another
    op on a port past the first (weights, a binary's other operand) or a Dequantize."""
    found = []
    for op in graph.ops:
        if op.kind not in ("Quantize", "Dequantize") or any(
                t.id in graph.producers for t in op.inputs):
            continue
        users = graph.consumers.get(op.outputs[0].id, ())
        if users and all(port > 0 or user.kind == "Dequantize" for user, port in users):
            found.append(op)
    return found


def stand_in(graph: Graph, side: Op, direction: int) -> Graph | None:
    """`graph` with `side` replaced by an op of the nearest kind of `STAND_INS` sorting before
    (`direction` -1) or after (+1) its own that keeps the graph valid, reading fresh graph
    inputs; None where there is none."""
    out = side.outputs[0]
    start = bisect_left(_KINDS, side.kind)
    index = start + direction
    fresh = max(t.id for op in graph.ops for t in (*op.inputs, *op.outputs)) + 1
    while 0 <= index < len(_KINDS):
        kind = _KINDS[index]
        index += direction
        if kind not in STAND_INS:
            continue
        arity = 2 if kind in BINARY else 1
        inputs = tuple(LogicalTensor(fresh + i, out.dtype, out.shape) for i in range(arity))
        op = Op(side.id, kind, inputs, side.outputs, dict(UNARY_ATTRS.get(kind, {})))
        candidate = graph.replace_ops(op if o.id == side.id else o for o in graph.ops)
        try:
            candidate.finalize()
        except GraphError:
            continue
        return candidate
    return None


@cache
def _chosen(pattern: str) -> tuple[tuple[Graph, str, str], ...]:
    """(graph, item value, plan words) of each valid stand-in case of `pattern`."""
    from fusionspec.reference.partitioner import partition

    entry = next(e for e in CATALOG if e.id == pattern)
    found: dict[str, tuple[Graph, str, str]] = {}
    for plan in sorted(instance_plans(entry), key=lambda p: len(p.kinds)):
        base = build_instance(entry, plan)
        fused = [set(op.id for op in p.ops) for p in partition(base.finalize())
                 if p.pattern is not None]
        if len(fused) != 1:
            continue
        for side in _side_ops(base):
            for direction, words in ((-1, "before"), (1, "after")):
                graph = stand_in(base, side, direction)
                if graph is None:
                    continue
                kind = graph.op_by_id[side.id].kind
                value = f"{side.kind} side input fed by {kind} (sorting {words})"
                parts = [set(op.id for op in p.ops) for p in partition(graph.finalize())
                         if p.pattern is not None]
                # Valid: the instance fused without its side op, the stand-in left out.
                if value not in found and fused[0] - {side.id} in parts:
                    found[value] = (graph, value, plan.describe())
    return tuple(found.values())


def neighbour_items(entry: PatternEntry) -> tuple[Item, ...]:
    """The neighbouring-kinds items of `entry`: those its stand-in cases show."""
    return tuple((NEIGHBOURS, value) for _, value, _ in _chosen(entry.id))


def neighbour_cases(entry: PatternEntry) -> list[Case]:
    """The valid stand-in cases of `entry` (module docstring), each with clean values."""
    cases = []
    for graph, value, words in _chosen(entry.id):
        case = instance_case(entry, graph, f"neighbouring kinds: {value}; catalog instance: "
                                           f"{words}")
        features = {**case.features, "source": NEIGHBOURS, NEIGHBOURS: value}
        cases.append(with_values(replace(case, features=features), clean_plan(graph)))
    return cases
