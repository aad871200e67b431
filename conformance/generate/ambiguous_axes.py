"""The ambiguous-axes method of the coverage model: instances whose axes cannot be told apart
by their lengths, so that a backend picking the wrong axis cannot hide behind a shape mismatch.

Where an attribute picks an axis and the schema gives it a default (`instance_build.AXIS_ATTRS`:
a Quantize's or Dequantize's ``axis``, SoftMax's ``axis``, ``data_format``, ``weights_format``,
MatMul's transposes), a backend may assume another default (the first axis, the last, the
channel of the other layout). Where a binary op's other operand runs along one axis (per
channel), a backend may lay it along another (dimension 1, as for a convolution, where a
MatMul's channels are last). Either mistake computes a wrong result of the right shape as soon
as the axes it confuses are as long as each other. So this method builds catalog instances
with every data dim `instance_build.AMBIGUOUS_SIZE` long (the weights' and kernels' too),
every Quantize/Dequantize per channel along its default axis (or its weights' output
channels), every binary operand per channel, the attributes that pick an axis once left to
their defaults and once written (`instance_build.build_instance(..., ambiguous=...)`).

Its items (key `AMBIGUOUS`), read off the graphs it builds:

- ``K.attr left to its default`` and ``K.attr written``, for each op kind K of the pattern and
  each attribute of `AXIS_ATTRS` its schema has a default for (a Quantize's or Dequantize's
  axis counted where it is per channel only: a per-tensor op reads no axis);
- ``per-channel binary operand after K``: a binary op's other operand along one axis of the
  output of a chain headed by K (an op kind, or the category of a Unary, Binary or Reduction
  head: they lay out their outputs alike).

`ambiguous_cases` takes, per pattern and way of writing the attributes, the fewest plans whose
instances show every item the pattern's plans can show (greedily, the plan showing most new
items first), and keeps each the reference still fuses into one partition.
"""

from __future__ import annotations

from dataclasses import replace
from functools import cache
from typing import get_args

from fusionspec.spec.catalog import CATALOG, PatternEntry
from fusionspec.spec.categories import BINARY, CATEGORIES
from fusionspec.spec.graph import Graph

from ..cases import Case
from .instance_build import Ambiguous, axis_attrs, build_instance, instance_case
from .instance_plans import Plan, instance_plans
from .model import Item
from .values import clean_plan, with_values

__all__ = ["AMBIGUOUS", "ambiguous_items", "ambiguous_cases", "graph_items"]

#: The feature key of the method's items.
AMBIGUOUS = "ambiguous axes"


def graph_items(graph: Graph) -> tuple[Item, ...]:
    """The ambiguous-axes items `graph` shows (see the module docstring)."""
    found: list[Item] = []
    for op in graph.ops:
        for name in axis_attrs(op.kind):
            if name == "axis" and op.kind in ("Quantize", "Dequantize") and (
                    op.attrs.get("qtype") != "per_channel"):
                continue
            how = "written" if name in op.attrs else "left to its default"
            found.append((AMBIGUOUS, f"{op.kind}.{name} {how}"))
        if op.kind in BINARY and len(op.inputs) == 2:
            out, other = op.outputs[0].shape or (), op.inputs[1].shape or ()
            if len(out) >= 2 and len(other) == len(out) and sum(d > 1 for d in other) == 1:
                found.append((AMBIGUOUS, f"per-channel binary operand after {_head(graph)}"))
    return tuple(dict.fromkeys(found))


def _head(graph: Graph) -> str:
    """The kind of the first op of an instance graph past its Dequantize and Quantize ops (an
    instance builds its ops in chain order, each side subgraph before its reader)."""
    kind = next((op.kind for op in graph.ops if op.kind not in ("Dequantize", "Quantize")),
                graph.ops[0].kind)
    return next((name for name, kinds in CATEGORIES.items() if kind in kinds), kind)


@cache
def _chosen(pattern: str) -> tuple[tuple[Ambiguous, Plan, Graph, tuple[Item, ...]], ...]:
    """The instances the method builds for `pattern`, with the items each shows."""
    from fusionspec.reference.partitioner import partition

    entry = next(e for e in CATALOG if e.id == pattern)
    plans = instance_plans(entry)
    chosen = []
    for how in get_args(Ambiguous):
        built = [(plan, build_instance(entry, plan, ambiguous=how)) for plan in plans]
        shown = [(plan, graph, graph_items(graph)) for plan, graph in built]
        seen: set[Item] = set()
        while True:
            best = max(shown, key=lambda s: (len(set(s[2]) - seen), -len(s[0].kinds)),
                       default=None)
            if best is None or not set(best[2]) - seen:
                break
            seen |= set(best[2])
            shown.remove(best)
            parts = partition(best[1].finalize())
            # One partition, of this pattern or of an earlier catalog row taking its instances.
            if len(parts) == 1 and parts[0].pattern is not None:
                chosen.append((how, best[0], best[1], best[2]))
    return tuple(chosen)


def ambiguous_items(entry: PatternEntry) -> tuple[Item, ...]:
    """The ambiguous-axes items of `entry`: those its chosen instances show."""
    return tuple(dict.fromkeys(item for *_, items in _chosen(entry.id) for item in items))


def ambiguous_cases(entry: PatternEntry) -> list[Case]:
    """The valid cases of the method for `entry` (module docstring), each filled with dense
    values: the grid's few values could repeat along a per-channel operand's three elements
    and hide the axis it was laid along."""
    cases = []
    for how, plan, graph, items in _chosen(entry.id):
        words = "left to their defaults" if how == "defaults" else "written"
        case = instance_case(entry, graph, f"ambiguous axes (every dim alike, the attributes "
                                           f"picking an axis {words}); catalog instance: "
                                           f"{plan.describe()}")
        features = {**case.features, "source": AMBIGUOUS,
                    AMBIGUOUS: ",".join(sorted(v for _, v in items))}
        cases.append(with_values(replace(case, features=features), clean_plan(graph, "dense")))
    return cases
