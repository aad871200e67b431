"""Pairwise coverage: each dtype row of a pattern with each value of its base op's attributes.

A backend's kernels are chosen by the data types and by the layout and mode attributes
together (a bf16 NXC convolution takes another path than an f32 NCX one), so the coverage
model pairs them. For a pattern, the attributes are the enumerated ones (allowed strings,
booleans) that every op kind its base op can be has (`Role.base`: the Convolution of
fp.conv_post_ops; the reductions' ``keep_dims``; a pool's ``auto_pad``), each value in effect
(what the op holds, or the schema's default); the rows are its `required_rows`. An item is
``("dtype_row x K.a", "row x value")``, with ``K`` the base kinds joined by ``|``.

`pair_design(entry)` is the deterministic floor of these items: a schedule of choices, one
per valid case drawn, that forces the ``dtype row`` and each attribute (by the label the
generator draws it with, which is its name) so that the first rows x (most values of any
attribute) cases hold every pair (`steered` applies one). The ci profile draws 60 valid cases
a pattern; `ci_pairs` are the pairs the first 60 choices hold, the thorough profile's 300
hold them all.

>>> [v for k, v in pair_items(catalog_entry("fp.reduction_post_ops"))][:2]
['f32 x false', 'bf16 x false']
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from functools import cache
from typing import Any

from hypothesis import strategies as st
from hypothesis.strategies._internal.strategies import SampledFromStrategy

from fusionspec.spec.attrs import attr_value_or_none
from fusionspec.spec.catalog import PatternEntry
from fusionspec.spec.catalog import entry as catalog_entry
from fusionspec.spec.graph import AttrValue, Graph
from fusionspec.spec.match import Role
from fusionspec.spec.opschemas import SCHEMAS
from fusionspec.spec.pattern_tree import leaves, op_kinds
from fusionspec.spec.schema import AttrKind

from .dtypes import required_rows
from .model import UNDRAWN, Item

__all__ = ["value_text", "base_kinds", "pair_attributes", "pair_items", "pair_design",
           "ci_pairs", "case_pairs", "steered", "CI_VALID"]
#: Valid cases the ci profile draws per pattern (`fusionspec.conformance.suite.PROFILES`).
CI_VALID = 60


@cache
def base_kinds(pattern: str) -> tuple[str, ...]:
    """The op kinds the base op of `pattern` can be."""
    found = catalog_entry(pattern)
    return tuple(sorted({kind for path, leaf in leaves(found.tree)
                         if found.roles.get(path) is Role.base for kind in op_kinds(leaf)}))


def value_text(value: AttrValue) -> str:
    """An attribute value as the pair items spell it."""
    return ("true" if value else "false") if isinstance(value, bool) else str(value)


@cache
def pair_attributes(pattern: str) -> tuple[tuple[str, tuple[AttrValue, ...]], ...]:
    """(attribute, its values) of the enumerated attributes every base kind has, less the
    values the model leaves undrawn."""
    kinds = base_kinds(pattern)
    if not kinds or any(k not in SCHEMAS for k in kinds):
        return ()
    found = []
    for spec in SCHEMAS[kinds[0]].attrs:
        others = [SCHEMAS[k].attr_spec(spec.name) for k in kinds[1:]]
        if any(o is None or o.kind is not spec.kind for o in others):
            continue
        values: tuple[AttrValue, ...]
        if spec.kind is AttrKind.boolean:
            values = (False, True)
        elif spec.kind is AttrKind.string and spec.allowed:
            values = tuple(v for v in spec.allowed
                           if all((f"{k}.{spec.name}", v) not in UNDRAWN for k in kinds))
        else:
            continue
        found.append((spec.name, values))
    return tuple(found)


def _key(pattern: str, attr: str) -> str:
    return f"dtype_row x {'|'.join(base_kinds(pattern))}.{attr}"


def pair_items(entry: PatternEntry) -> tuple[Item, ...]:
    """Every (dtype row, attribute value) pair of `entry` (see the module docstring)."""
    rows = required_rows(entry)
    return tuple((_key(entry.id, attr), f"{row} x {value_text(v)}")
                 for attr, values in pair_attributes(entry.id) for v in values for row in rows)


@cache
def pair_design(pattern: str) -> tuple[Mapping[str, Any], ...]:
    """The forced choices of the first valid cases of `pattern`: case i takes row i mod R and,
    for each attribute, value (i div R) mod its count, so the first R x (largest count) cases
    hold every pair."""
    rows = required_rows(catalog_entry(pattern))
    attrs = pair_attributes(pattern)
    if not attrs:
        return ()
    size = len(rows) * max(len(values) for _, values in attrs)
    return tuple({"dtype row": rows[i % len(rows)],
                  **{attr: values[(i // len(rows)) % len(values)] for attr, values in attrs}}
                 for i in range(size))


def ci_pairs(entry: PatternEntry) -> tuple[Item, ...]:
    """The pairs the choices of the ci profile's valid cases hold."""
    found: list[Item] = []
    for choice in pair_design(entry.id)[:CI_VALID]:
        row = choice["dtype row"]
        found += [(_key(entry.id, attr), f"{row} x {value_text(choice[attr])}")
                  for attr, _ in pair_attributes(entry.id)]
    return tuple(dict.fromkeys(found))


def case_pairs(pattern: str, row: str, graph: Graph) -> dict[str, str]:
    """The pair items a valid case of `pattern` in dtype row `row` shows: one per attribute,
    for each op of a base kind (its value, or the schema's default)."""
    kinds = set(base_kinds(pattern))
    found: dict[str, set[str]] = {}
    for op in graph.ops:
        if op.kind not in kinds:
            continue
        for attr, _ in pair_attributes(pattern):
            value = attr_value_or_none(op, attr)
            if value is not None:
                found.setdefault(_key(pattern, attr), set()).add(
                    f"{row} x {value_text(value)}")
    return {key: ",".join(sorted(values)) for key, values in sorted(found.items())}


def _offers(strategy: st.SearchStrategy[Any], value: object) -> bool:
    elements = getattr(strategy, "elements", None)
    if elements is not None:
        return any(type(e) is type(value) and e == value for e in elements)
    return isinstance(value, bool) and "booleans()" in repr(strategy)


#: One `sampled_from` strategy per sequence of values (by the values' types and reprs).
_SAMPLED: dict[tuple[type, str, object, object], st.SearchStrategy[Any]] = {}


def _shared(strategy: st.SearchStrategy[Any]) -> st.SearchStrategy[Any]:
    """The first `sampled_from` strategy seen with the same values as `strategy` (or
    `strategy` itself): hypothesis validates each new strategy object on its first draw, and
    the steered runs draw thousands of instances, each building its strategies afresh. A
    strategy that only samples draws what any other sampling the same values draws."""
    transformations: object = getattr(strategy, "_transformations", None)
    if type(strategy) is not SampledFromStrategy or transformations != ():
        return strategy
    elements = strategy.elements
    key = (type(elements), repr(elements), strategy.force_repr, strategy.force_repr_braces)
    return _SAMPLED.setdefault(key, strategy)


def steered(draw: st.DrawFn, forced: Mapping[str, Any]) -> Callable[..., Any]:
    """`draw`, answering the labels of `forced` with their values where the strategy offers
    them (it still draws, so the rest of the choices stay where they were)."""
    def choose(strategy: st.SearchStrategy[Any], label: object = None) -> Any:
        strategy = _shared(strategy)
        value = draw(strategy, label=label)
        wanted = forced.get(label) if isinstance(label, str) else None
        return wanted if wanted is not None and _offers(strategy, wanted) else value
    return choose
