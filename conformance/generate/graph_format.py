"""The graph-format method of the coverage model: what a graph and its logical tensors can
say beyond one op's attributes, as items, with the cases that draw them.

oneDNN's graph JSON (`fusionspec.spec.onednn_json`) describes a graph as a list of ops, each
naming its input and output logical tensors by id. What that lets a graph say, besides the
op schemas' attributes, is an item of this method:

=========================  ===================================================================
feature                    values
=========================  ===================================================================
graph.tensor sharing       one tensor on two ports of one op; one graph input read by two ops
                           of one partition
graph.property_type        undef, variable, constant
graph.layout_type          strided without strides; strided with row-major strides; strided
                           with permuted strides (a graph input with its last two axes swapped
                           in memory); any (what an op produces, the backend choosing);
                           undef (inner tensors, as oneDNN writes those it has not laid out)
graph.shapes               inner shapes left to inference; inner dims partly unknown (-1)
graph.fpmath_mode          strict (the other modes license narrower math: `FORMAT_UNDRAWN`)
graph.numbering            tensor ids overlapping op ids; sparse ids; ids above 2^31 and
                           above 2^63 (the format's ids are unsigned 64-bit); ids against
                           topological order
graph.op order             reverse topological; shuffled
graph.op names             one name for every op
graph.instances            two instances of the pattern; two instances sharing an input; more
                           than 256 instances side by side (`format_large`)
graph.outputs              a partition output read by two ops; input and output ports declared
graph.ill-formed           one op id on two ops; one tensor id with two dtypes; one tensor id
                           with two shapes; an op reading its own output; a cycle in a graph
                           of more than 256 ops
=========================  ===================================================================

The valid cases (`format_cases`, `fusionspec.conformance.generate.format_valid`) take a
pattern's longest catalog instance (and its shortest, where two go in one graph) and write it
another way; each records the items it shows, and its expected partitions and values come from
the reference like any other case's. Numbering, op order, names, properties and layouts must
not change the answer: a form that rewrites only those is kept only where the reference gives
the same partitions up to renaming (tests/conformance/test_graph_format.py holds the reference
to that for drawn cases of every pattern too). The ill-formed cases
(`format_ill_formed_cases`, `fusionspec.conformance.generate.format_ill_formed`) break a
graph rule the format can express: two of the defects a pattern, taken in turn across the
catalog, so each is drawn in about half the patterns.

`FORMAT_UNDRAWN` lists what the format can say that no case draws, with the reason.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import replace
from functools import cache

from fusionspec.spec.catalog import CATALOG, PatternEntry
from fusionspec.spec.dtypes import DataType
from fusionspec.spec.graph import Graph

from ..cases import Case, CaseKind
from .format_ill_formed import DEFECTS, ILL_FORMED, Defect
from .format_large import large_cases, large_items
from .format_valid import FPMATH, OUTPUTS, PROPERTY, Form, format_features, valid_forms
from .ids import case_id
from .instance_build import build_instance, instance_case
from .instance_plans import Plan, instance_plans
from .model import Item
from .values import clean_plan, with_values

__all__ = ["format_items", "format_cases", "format_ill_formed_cases", "FORMAT_UNDRAWN",
           "same_partitions", "DEFECTS_PER_PATTERN"]

#: Graph-format items no case can show, and why.
FORMAT_UNDRAWN: Mapping[Item, str] = {
    **{(FPMATH, mode): "licenses f32 math in a narrower type, an error the bounds do not "
       "model: a case would fail a backend that takes the licence (a suite limitation, as "
       "MatMul.accumulation_mode = f16)" for mode in ("bf16", "f16", "tf32", "any")},
    (PROPERTY, "host_scalar"): "a scalar passed by the host: the pages name no port of a "
    "pattern's ops that takes one",
    (OUTPUTS, "a tensor inside a partition declared a graph output"): "the pages do not say "
    "whether a declared output ends a fused chain, and the library never sees output_ports "
    "(only benchdnn's files carry them): no answer to hold a backend to",
    (ILL_FORMED, "an id outside 0 to 2^64-1"): "the format's reader refuses it before any "
    "graph exists (a JsonFormatError, not a graph rule a backend is handed)",
    (ILL_FORMED, "a declared port naming no tensor"): "the format's reader refuses it; a "
    "graph handed to a backend has no ports of its own to check",
}
#: Ill-formed defects per pattern, taken in turn across the catalog.
DEFECTS_PER_PATTERN = 2


def _plans(entry: PatternEntry, plans: Sequence[Plan] | None = None) -> tuple[Plan, Plan]:
    """(the longest plan, the shortest plan that fuses two ops or more) of `entry`."""
    found = list(plans) if plans else instance_plans(entry)
    fused = [p for p in found if len(p.kinds) > 1] or found
    return (max(found, key=lambda p: len(p.kinds)), min(fused, key=lambda p: len(p.kinds)))


@cache
def _forms(pattern: str) -> tuple[tuple[Form, Graph], ...]:
    """The forms of `pattern`'s instance the reference still fuses, and where the form must
    not change the answer, splits as it splits the instance."""
    from fusionspec.reference.partitioner import partition

    entry = next(e for e in CATALOG if e.id == pattern)
    longest, shortest = _plans(entry)
    base = build_instance(entry, longest)
    kept = []
    for form, graph in valid_forms(base, build_instance(entry, shortest), pattern):
        if not any(p.pattern is not None for p in partition(graph)):
            continue
        if form.invariant and not same_partitions(base, graph):
            continue
        kept.append((form, graph))
    return tuple(kept)


@cache
def _ill_formed(pattern: str) -> tuple[tuple[Defect, Graph, str], ...]:
    """The defects `pattern`'s longest instance takes: `DEFECTS_PER_PATTERN` of them, in turn
    across the catalog, skipping those it cannot show."""
    entry = next(e for e in CATALOG if e.id == pattern)
    base = build_instance(entry, _plans(entry)[0])
    found = []
    for index in _defects(entry):
        made = DEFECTS[index].apply(base)
        if made is not None:
            found.append((DEFECTS[index], *made))
        if len(found) == DEFECTS_PER_PATTERN:
            break
    return tuple(found)


def _defects(entry: PatternEntry) -> list[int]:
    start = [e.id for e in CATALOG].index(entry.id) * DEFECTS_PER_PATTERN
    return [(start + k) % len(DEFECTS) for k in range(len(DEFECTS))]


@cache
def _items(pattern: str) -> tuple[Item, ...]:
    found: list[Item] = []
    for form, graph in _forms(pattern):
        found += form.items
        found += [(k, v) for k, joined in format_features(graph).items()
                  for v in joined.split(",")]
    found += [(ILL_FORMED, defect.value) for defect, _, _ in _ill_formed(pattern)]
    found += large_items(next(e for e in CATALOG if e.id == pattern))
    return tuple(dict.fromkeys(found))


def format_items(entry: PatternEntry) -> tuple[Item, ...]:
    """The graph-format items of `entry`: those its forms and defects can show."""
    return tuple(item for item in _items(entry.id) if item not in FORMAT_UNDRAWN)


def same_partitions(a: Graph, b: Graph) -> bool:
    """Whether the reference splits `a` and `b` alike: the same partitions by kinds in pattern
    order, with the same patterns, however their ops and tensors are numbered."""
    from fusionspec.reference.partitioner import partition

    def shape(g: Graph) -> list[tuple[str | None, tuple[str, ...]]]:
        return sorted((p.pattern, tuple(op.kind for op in p.ops)) for p in partition(g))
    return shape(a) == shape(b)


def format_cases(entry: PatternEntry, plans: Sequence[Plan]) -> list[Case]:
    """The valid cases of the graph-format floor: each form of the pattern's longest instance
    (`_forms`), with the items it shows, filled with clean values."""
    longest, _ = _plans(entry, plans)
    cases = []
    for form, graph in _forms(entry.id):
        case = instance_case(entry, graph, f"graph format: {form.name}; catalog instance: "
                                           f"{longest.describe()}")
        features = {**case.features, "source": "graph format", **format_features(graph)}
        for key, value in form.items:
            features[key] = ",".join(sorted({*str(features.get(key, "")).split(","), value}
                                            - {""}))
        cases.append(with_values(replace(case, features=features), clean_plan(graph)))
    return cases + large_cases(entry, plans)


def format_ill_formed_cases(entry: PatternEntry) -> list[Case]:
    """The ill-formed cases of the graph-format floor: `DEFECTS_PER_PATTERN` defects of
    `format_ill_formed.DEFECTS`, taken in turn across the catalog, each made in the pattern's
    longest instance."""
    longest, _ = _plans(entry)
    cases: list[Case] = []
    for defect, graph, kind in _ill_formed(entry.id):
        quantized = any(t.dtype in (DataType.u8, DataType.s8)
                        for op in graph.ops for t in (*op.inputs, *op.outputs))
        features: dict[str, str | int] = {"source": "graph format", "rule": defect.rule.value,
                                          "defect_op": kind, ILL_FORMED: defect.value}
        cases.append(Case(case_id(entry.id, CaseKind.ill_formed, graph, defect.rule),
                          CaseKind.ill_formed, entry.id, graph, defect.rule.value,
                          "int8" if quantized else "f32", features,
                          f"ill-formed [{defect.rule.value}]: {defect.value}; in the catalog "
                          f"instance {longest.describe()}"))
    return cases
