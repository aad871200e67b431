"""Every validation rule under every setting it reads: ill-formed cases, and the valid cases
just inside each rule.

The settings a rule reads are found by probing the validator, not listed by hand
(`fusionspec.conformance.generate.probes`): on every catalog instance of a pattern, each op
gets every defect of a generic family, on the instance as it is and on each variation that
changes one setting of that op (an attribute value, an input's type, an optional input). Where
the same defect breaks rule ``r`` under one value of a setting ``Kind.s`` and not under
another, ``r`` reads ``Kind.s``, and that gives two items:

- ``("ill-formed r under Kind.s", value)`` where the defect breaks the rule: drawn as an
  ill-formed case (a backend that checks the rule only under the other value accepts it: a
  Binary that broadcasts under ``auto_broadcast="none"``, a TypeCast that checks its types only
  from f32);
- ``("inside r under Kind.s", value)`` where the same defect leaves the graph valid: drawn as a
  valid case (a backend that checks the rule under every value rejects it, or computes the new
  shape wrong: a lower-rank Binary operand under ``numpy``).

Every rule the family breaks at all is an item too (``("ill-formed rule", r)``), so each typed
error of the validator is drawn at least once; `RULE_UNDRAWN` lists the rules no defect of a
valid instance can break, with the reason. Two corners no one-op defect of the family
reaches are items too (`fusionspec.conformance.generate.rule_corners`): each op kind's output
declared with a wrong shape wherever the op sits in the pattern (``("ill-formed declared
output shape", Kind)``: the base op's as much as the last post-op's), and each integer
attribute just below its lower bound (``("ill-formed below the lower bound", Kind.attr)``:
groups 0, a stride 0, a pad -1, an axis -(rank + 1)). Each item is drawn once, by the first
pattern in catalog order whose instances show it (`owned_items`), so the floors add one case
per item. Their cases (`owned_cases`) depend on the suite's code alone: a run makes them once
and hands them to its drawing processes (`adopt`), and keeps them in the draw cache for the
next run.
"""

from __future__ import annotations

import hashlib
import pickle
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass, replace
from functools import cache

from fusionspec.spec.catalog import CATALOG, PatternEntry
from fusionspec.spec.errors import FusionspecError, GraphRule
from fusionspec.spec.graph import Graph, Op
from fusionspec.spec.onednn_json import dumps
from fusionspec.spec.opschemas import SCHEMAS

from .. import draw_cache
from ..cases import Case, CaseKind
from ..workers.transport import dumps as pickled
from .dtypes import headline_dtype
from .ids import case_id
from .instance_build import ACT_BY_RANK, ANY_RANK_HEADS, build_instance, grammar_features
from .instance_plans import instance_plans
from .model import Item
from .probes import Defect, defects, outcome, settings_of, variations
from .rule_corners import corner_examples
from .values import clean_plan, with_values

__all__ = ["rule_setting_items", "rule_setting_cases", "inside_cases", "RULE_UNDRAWN",
           "Example", "owned_items", "owned_cases", "adopt"]

#: Rules of the validator no one-op defect of a valid instance breaks, and why.
RULE_UNDRAWN: Mapping[Item, str] = {
    ("ill-formed rule", GraphRule.engine_kind): "a graph setting, not an op's: the graph JSON "
    "format's engine_kind is read before any op (tests/spec hold the check)",
    ("ill-formed rule", GraphRule.fpmath_mode): "a graph setting, not an op's: checked when "
    "the graph is read (tests/spec hold the check)",
    ("ill-formed rule", GraphRule.kind): "an op kind outside oneDNN's is refused by the graph "
    "JSON reader before validation, so no backend sees it as a graph",
    ("ill-formed rule", GraphRule.value_types): "ids and dims that are not integers cannot be "
    "written in the graph JSON format a backend reads",
    ("ill-formed rule", GraphRule.attr_finite): "NaN and infinity cannot be written in JSON, "
    "the format cases reach a backend in",
    ("ill-formed rule", GraphRule.acyclic): "needs two ops changed at once (the ill-formed "
    "draws make it: conformance.generate.ill_formed)",
}


@dataclass(frozen=True)
class Example:
    """One graph showing an item: `graph` with `defect` made on it (`rule`: the rule it breaks,
    None when the result is still valid)."""

    pattern: str
    graph: Graph
    defect: Defect
    rule: str | None
    #: For an ill-formed example: the same defect under the setting's other value is valid,
    #: so the case tells a backend that checks the rule under that value only (of a corner of
    #: `rule_corners`: the better example of its item). A sharp example replaces a blunt one.
    sharp: bool = False


def _roots(entry: PatternEntry) -> Iterator[tuple[Graph, dict[int, Graph]]]:
    """Each catalog instance of `entry`, with the same plan built at each other rank its head
    takes. (The variations reach the other data types; instances built in bf16 and f16 as well
    would triple the probing for a handful of items.)"""
    for plan in instance_plans(entry):
        graph = build_instance(entry, plan).finalize()
        ranks: dict[int, Graph] = {}
        if plan.kinds[0] in ANY_RANK_HEADS:
            for rank in sorted(ACT_BY_RANK):
                try:
                    ranks[rank] = build_instance(entry, plan, rank=rank).finalize()
                except (FusionspecError, ValueError, IndexError):
                    continue  # a plan whose ops do not all take that rank
        yield graph, ranks


def _signature(graph: Graph, op: Op) -> str:
    """What the outcomes of `op`'s defects depend on: the op, its tensors, which of them are
    free, and the producers of the others."""
    parts = [op.kind, repr(sorted(op.attrs.items()))]
    for t in op.inputs:
        made = graph.producers.get(t.id)
        producer = made[0] if made else None
        parts.append(f"{t.dtype}{t.shape}{len(graph.consumers.get(t.id, ()))}"
                     + (f"<{producer.kind}{sorted(producer.attrs.items())}"
                        f"{[x.dtype for x in producer.inputs]}" if producer else ""))
    parts += [f"{t.dtype}{t.shape}{t.id in graph.consumers}" for t in op.outputs]
    return "|".join(parts)


#: The rule each defect breaks (by name), per op signature.
_OUTCOMES: dict[str, dict[str, str | None]] = {}


def _outcomes(graph: Graph, op: Op) -> dict[str, tuple[Defect, str | None]]:
    """Each defect of `op` by name, with the rule it breaks; the rules are computed once per
    op signature (the defects themselves are listed on `graph`, whose ids they use)."""
    listed = defects(graph, op)
    sig = _signature(graph, op)
    if sig not in _OUTCOMES:
        _OUTCOMES[sig] = {d.name: outcome(graph, d) for d in listed}
    rules = _OUTCOMES[sig]
    return {d.name: (d, rules[d.name]) for d in listed if d.name in rules}


def _broken(rule: str | None) -> bool:
    """Whether an outcome names a rule (not valid, not an error without a rule, not a crash)."""
    return rule is not None and rule != "?" and not rule.startswith("crash")


#: One side of a comparison: the setting's value, the graph, the defect made on it and the
#: rule it breaks there.
_Side = tuple[str, Graph, Defect, str | None]


def _differences(setting: str, here: _Side, there: _Side) -> Iterator[tuple[Item, Example]]:
    """The items of one defect made under two values of `setting` (see the module docstring):
    where it breaks a rule, and where the other value's rule lets it through."""
    if here[3] == there[3] or "?" in (here[3], there[3]):
        return
    for (value, graph, defect, rule), other in ((here, there[3]), (there, here[3])):
        if rule is not None and not rule.startswith("crash"):
            yield (f"ill-formed {rule} under {setting}", value), Example(
                "", graph, defect, rule, other is None)
    for (value, graph, defect, rule), other in ((here, there[3]), (there, here[3])):
        if rule is None and other is not None and not other.startswith("crash"):
            yield (f"inside {other} under {setting}", value), Example("", graph, defect, None)


def _probe(graph: Graph, op: Op, seen: set[str]) -> Iterator[tuple[Item, Example]]:
    """The items one op of one instance shows, each with its example."""
    sig = _signature(graph, op)
    if sig in seen:
        return
    seen.add(sig)
    base = _outcomes(graph, op)
    for d, rule in base.values():
        if _broken(rule):
            yield ("ill-formed rule", str(rule)), Example("", graph, d, rule)
    before = settings_of(graph, op)
    for setting, value, varied in variations(graph, op):
        again = _outcomes(varied, varied.op_by_id[op.id])
        for name, (d, rule) in base.items():
            if name not in again:
                continue
            d2, other = again[name]
            if _broken(other):
                yield ("ill-formed rule", str(other)), Example("", varied, d2, other)
            yield from _differences(setting, (before.get(setting, ""), graph, d, rule),
                                    (value, varied, d2, other))


def _by_rank(graph: Graph, ranks: Mapping[int, Graph], op: Op,
             ) -> Iterator[tuple[Item, Example]]:
    """The items of the setting ``Kind.rank``: the same defect on the op of the same id in
    the instance built at another rank, where it breaks another rule (or none)."""
    if op.kind not in SCHEMAS or not op.inputs or op.inputs[0].shape is None:
        return
    here = len(op.inputs[0].shape)
    base = _outcomes(graph, op)
    for rank, other in ranks.items():
        twin = other.op_by_id.get(op.id)
        if rank == here or twin is None or twin.kind != op.kind:
            continue
        again = _outcomes(other, twin)
        for name, (d, rule) in base.items():
            if name in again:
                d2, rule2 = again[name]
                yield from _differences(f"{op.kind}.rank", (str(here), graph, d, rule),
                                        (str(rank), other, d2, rule2))


#: Rules whose defects cannot be written in the graph JSON format (see `RULE_UNDRAWN`).
_UNWRITABLE = frozenset({GraphRule.attr_finite, GraphRule.value_types, GraphRule.kind})


def _drawable(item: Item, example: Example) -> bool:
    rule = example.rule or item[0].split()[1]
    return item not in RULE_UNDRAWN and rule not in _UNWRITABLE and not rule.startswith(
        "crash")


@cache
def _pattern_examples(pattern: str) -> tuple[tuple[Item, Example], ...]:
    entry = next(e for e in CATALOG if e.id == pattern)
    seen: set[str] = set()
    found: dict[Item, Example] = {}
    for graph, ranks in _roots(entry):
        for op in graph.ops:
            shown = [*_probe(graph, op, seen), *_by_rank(graph, ranks, op)]
            settled = {item for item, example in found.items() if example.sharp}
            shown += [(item, Example("", form, defect, rule, sharp)) for item, form, defect,
                      rule, sharp in corner_examples(graph, op, _signature(graph, op), settled)]
            for item, example in shown:
                # The first example of an item, or the first sharp one after a blunt one.
                better = item not in found or (example.sharp and not found[item].sharp)
                if better and _drawable(item, example):
                    found[item] = replace(example, pattern=pattern)
    return tuple(found.items())


#: The fold of `owned_items` as far as it has gone: each pattern's items, in catalog order.
_OWNED: dict[str, tuple[tuple[Item, Example], ...]] = {}
_TAKEN: set[Item] = set()


def _owned_of(pattern: str) -> tuple[tuple[Item, Example], ...]:
    """The items `pattern` owns, with their examples: the catalog is probed in order only as
    far as `pattern` (its items depend on the patterns before it, not on those after)."""
    for entry in CATALOG:
        if pattern in _OWNED:
            break
        if entry.id in _OWNED:
            continue
        mine = [(item, ex) for item, ex in _pattern_examples(entry.id) if item not in _TAKEN]
        _TAKEN.update(item for item, _ in mine)
        _OWNED[entry.id] = tuple(mine)
        if len(_OWNED) == len(CATALOG):  # the whole catalog probed: its items for the report
            _keep_keys(_OWNED)
    return _OWNED[pattern]


@cache
def owned_items() -> dict[str, tuple[tuple[Item, Example], ...]]:
    """Per pattern, the items it is the first in catalog order to show, with their examples."""
    return {entry.id: _owned_of(entry.id) for entry in CATALOG}


_ITEMS_KEY = "rule x setting items"


@cache
def _owned_keys() -> dict[str, tuple[Item, ...]]:
    """The items of `owned_items` without their examples, kept beside the draws in the draw
    cache (`fusionspec.conformance.draw_cache`, whose key covers the suite's sources): the
    report and the coverage tests ask for the items of every pattern, and probing the
    validator again for them costs seconds."""
    key = draw_cache.draw_key(_ITEMS_KEY) if draw_cache.enabled() else None
    found = draw_cache.load_draw(key) if key is not None else None
    if isinstance(found, dict) and set(found) == {e.id for e in CATALOG} and all(
            isinstance(v, tuple) and all(isinstance(i, tuple) and len(i) == 2
                                         and all(isinstance(x, str) for x in i) for i in v)
            for v in found.values()):
        return found
    return {pattern: tuple(item for item, _ in shown) for pattern, shown in owned_items().items()}


def _keep_keys(owned: Mapping[str, tuple[tuple[Item, Example], ...]]) -> None:
    """Store the items of `owned` for `_owned_keys` (a run that draws the floors of the whole
    catalog probes it anyway; the report then reads them)."""
    if draw_cache.enabled():
        items = {pattern: tuple(item for item, _ in shown) for pattern, shown in owned.items()}
        draw_cache.store_draw(draw_cache.draw_key(_ITEMS_KEY), pickle.dumps(items))


def rule_setting_items(entry: PatternEntry) -> tuple[Item, ...]:
    """The rule x setting items `entry` draws (those it is the first to show)."""
    return _owned_keys()[entry.id]


def _features(entry: PatternEntry, example: Example, item: Item, graph: Graph
              ) -> dict[str, str | int]:
    op = example.graph.op_by_id[example.defect.op_id]
    features: dict[str, str | int] = {"source": "rule x setting", "defect_op": op.kind,
                                      item[0]: item[1]}
    if example.rule is not None:
        features["rule"] = example.rule
    else:
        features.update(grammar_features(entry, graph))
    return features


def rule_setting_cases(entry: PatternEntry) -> list[Case]:
    """One ill-formed case per ill-formed item `entry` owns: its example's graph with its
    defect."""
    return owned_cases(entry, CaseKind.ill_formed)


def inside_cases(entry: PatternEntry) -> list[Case]:
    """One valid case per inside item `entry` owns: the defect that the other value of the
    setting makes ill-formed, here still valid."""
    return owned_cases(entry, CaseKind.valid)


#: The cases of `owned_cases` by (pattern, kind), made here or handed over (`adopt`).
_CASES: dict[tuple[str, CaseKind], tuple[Case, ...]] = {}
_CASES_KEY = "rule x setting cases"


def owned_cases(entry: PatternEntry, kind: CaseKind) -> list[Case]:
    """The cases of the rule x setting items `entry` owns: ill-formed (`rule_setting_cases`)
    or valid (`inside_cases`). They depend on the suite's code alone, not on a profile or a
    seed: made once per process, kept in the draw cache
    (`fusionspec.conformance.draw_cache`) for the next run, and handed by the process that
    made them to the drawing processes (`adopt`), so a run probes the catalog once."""
    key = (entry.id, kind)
    if key not in _CASES:
        cached = draw_cache.draw_key(_CASES_KEY, entry.id, kind.value) \
            if draw_cache.enabled() else None
        found = draw_cache.load_draw(cached) if cached is not None else None
        if isinstance(found, list):  # the entry holds the cases its header names
            _CASES[key] = tuple(found)
        else:
            made = _ill_formed_cases(entry) if kind is CaseKind.ill_formed else \
                _inside_cases(entry)
            if cached is not None:
                draw_cache.store_draw(cached, pickled(made), ids=[c.id for c in made])
            _CASES[key] = tuple(made)
    return list(_CASES[key])


def adopt(pattern: str, kind: CaseKind, cases: Sequence[Case]) -> None:
    """Take `cases` as what `owned_cases` gives for `pattern` and `kind` in this process: a
    drawing process is handed them by the process that planned the run."""
    _CASES[(pattern, kind)] = tuple(cases)


def _ill_formed_cases(entry: PatternEntry) -> list[Case]:
    cases: list[Case] = []
    for item, example in _owned_of(entry.id):
        if example.rule is None:
            continue
        graph = example.defect.apply(example.graph)
        op = example.graph.op_by_id[example.defect.op_id]
        cases.append(Case(case_id(entry.id, CaseKind.ill_formed, graph, example.rule),
                          CaseKind.ill_formed, entry.id, graph, example.rule,
                          headline_dtype(example.graph), _features(entry, example, item, graph),
                          f"ill-formed [{example.rule}]: {op.kind} {op.id} "
                          f"{example.defect.name}; {item[0]} = {item[1]}"))
    return cases


def _inside_cases(entry: PatternEntry) -> list[Case]:
    cases: list[Case] = []
    for item, example in _owned_of(entry.id):
        if example.rule is not None:
            continue
        graph = example.defect.apply(example.graph).finalize()
        op = example.graph.op_by_id[example.defect.op_id]
        digest = hashlib.sha256(dumps(graph, indent=None).encode()).hexdigest()[:8]
        case = Case(f"{entry.id}/valid/inside-{digest}", CaseKind.valid, entry.id, graph,
                    dtype=headline_dtype(graph),
                    features=_features(entry, example, item, graph),
                    description=f"just inside a rule: {op.kind} {op.id} "
                                f"{example.defect.name}; {item[0]} = {item[1]}")
        cases.append(with_values(case, clean_plan(graph)))
    return cases
