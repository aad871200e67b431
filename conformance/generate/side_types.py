"""Side input types: every type a side subgraph's Dequantize may read, at each place a pattern
puts one.

The quantized patterns read the base op's weights, or a binary post-op's other operand, through
a Dequantize of their own (the ``<t1`` and ``<t2`` side subgraphs). That Dequantize may read
any type its schema allows (u8, s8, f8_e4m3, f8_e5m2: page 001 names no narrower set, decision
dec.int8_types), and what the fused kernel must handle changes with it: weights that are u8
need their zero point subtracted, f8 weights have none. The catalog instances read s8 weights
and u8 operands only, so a backend whose fused kernel takes s8 weights alone (and falls back to
op by op otherwise) would pass them.

Each place is an item key ``K.<port> via Dequantize`` (``Convolution.weights via
Dequantize``, ``Binary.src_1 via Dequantize`` for any member of the Binary category) with one
value per type; `side_type_cases` builds, for each, the shortest catalog
instance with a Dequantize there and retypes that Dequantize's src.
"""

from __future__ import annotations

import hashlib
from collections.abc import Iterator, Sequence
from dataclasses import replace
from functools import cache

from fusionspec.spec.catalog import PatternEntry
from fusionspec.spec.catalog import entry as catalog_entry
from fusionspec.spec.categories import category_of
from fusionspec.spec.dtypes import DataType
from fusionspec.spec.graph import Graph, LogicalTensor, Op
from fusionspec.spec.onednn_json import dumps
from fusionspec.spec.opschemas import SCHEMAS

from ..cases import Case
from .instance_build import build_instance, instance_case
from .instance_plans import Plan, instance_plans
from .model import Item
from .values import clean_plan, with_values

__all__ = ["side_type_items", "side_type_cases", "side_sites"]

#: The zero points a retyped Dequantize gets (f8 quantization takes none).
_ZPS: dict[DataType, tuple[int, ...]] = {DataType.u8: (2,), DataType.s8: (0,)}


def _types() -> tuple[DataType, ...]:
    return tuple(sorted(SCHEMAS["Dequantize"].types["T1"], key=lambda d: d.value))


def side_sites(graph: Graph) -> Iterator[tuple[str, Op]]:
    """(item key, the Dequantize) for each Dequantize of a graph input that feeds another op's
    second or later input."""
    for op in graph.ops:
        for port, t in enumerate(op.inputs):
            made = graph.producers.get(t.id)
            if port == 0 or made is None or made[0].kind != "Dequantize" or op.kind not in SCHEMAS:
                continue
            dq = made[0]
            if dq.inputs[0].id in graph.producers:
                continue  # weights quantized by the pattern's own Quantize: f32 weights
            name = SCHEMAS[op.kind].inputs[port].name
            yield f"{category_of(op.kind) or op.kind}.{name} via Dequantize", dq


@cache
def _plans(pattern: str) -> tuple[tuple[str, Plan], ...]:
    """Each site key of the pattern with the shortest plan showing it."""
    entry = catalog_entry(pattern)
    found: dict[str, Plan] = {}
    for plan in sorted(instance_plans(entry), key=lambda p: len(p.kinds)):
        for key, _ in side_sites(build_instance(entry, plan)):
            found.setdefault(key, plan)
    return tuple(sorted(found.items()))


def side_type_items(entry: PatternEntry) -> tuple[Item, ...]:
    """Every (site, type) of `entry`."""
    return tuple((key, dtype.value) for key, _ in _plans(entry.id) for dtype in _types())


def _retyped(graph: Graph, dq: Op, dtype: DataType) -> Graph:
    src = dq.inputs[0]
    new_src = LogicalTensor(src.id, dtype, src.shape, src.strides, src.layout_type,
                            src.property_type)
    attrs = {**dq.attrs, "zps": _ZPS.get(dtype, ())}
    changed = Op(dq.id, dq.kind, (new_src,), dq.outputs, attrs, dq.name)
    return graph.replace_ops([changed if o.id == dq.id else o for o in graph.ops])


def side_type_cases(entry: PatternEntry, plans: Sequence[Plan] = ()) -> list[Case]:
    """For each item of `entry`: the shortest instance with a Dequantize at that site, its
    src of that type (the instance's own type included, so that each case names its item)."""
    cases: list[Case] = []
    for key, plan in _plans(entry.id):
        graph = build_instance(entry, plan)
        dq = next(d for k, d in side_sites(graph) if k == key)
        for dtype in _types():
            typed = _retyped(graph, dq, dtype)
            case = instance_case(entry, typed, f"catalog instance: {plan.describe()}, {key} "
                                               f"from {dtype}")
            digest = hashlib.sha256(dumps(typed, indent=None).encode()).hexdigest()[:8]
            case = replace(case, id=f"{entry.id}/valid/side-{digest}",
                           features={**case.features, key: dtype.value})
            cases.append(with_values(case, clean_plan(typed)))
    return cases
