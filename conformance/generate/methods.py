"""The coverage model by method: each method is a way of reaching every corner of one kind,
with the items it asks for and the ones it cannot draw (each with its reason).

=====================  =========================================================================
method                 what it enumerates
=====================  =========================================================================
schema items           each attribute's value classes, each optional port, each rank the op
                       schemas allow (`model.op_items`)
value classes          NaN and inf into the ops where implementations part ways, inexact bf16
                       and f16 fills (`model.tensor_items`)
dtype x attribute      each dtype row with each value of the base op's enumerated attributes
                       (`pairs.pair_items`)
layout settings        each shape rule under each value of the layout attribute that moves the
                       axis it checks (`ill_formed.setting_items`)
rule x setting         each validation rule under each setting it reads, ill-formed and just
                       inside (`rule_settings`)
side input types       each type a side subgraph's Dequantize may read, at each place a
                       pattern puts one (`side_types`)
graph format           what a graph and a logical tensor can express beyond one op's attributes
                       (`graph_format`)
value boundaries       where each op's definition changes behaviour (`boundaries`)
ambiguous axes         each attribute that picks an axis, left to its default and written, and
                       each per-channel operand, on axes of one length (`ambiguous_axes`)
neighbouring kinds     each side input fed by an op of the kind sorting next to the one the
                       pattern names there, before and after (`neighbours`)
=====================  =========================================================================

`fusionspec.conformance.generate.items` joins the methods into what the ci profile must draw;
the report and BENCHMARKS.md count each method's items apart (`method_counts`).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass

from fusionspec.spec.catalog import CATALOG, PatternEntry

from ..cases import Case
from ..method_rows import MethodRow
from .ambiguous_axes import ambiguous_items
from .boundaries import BOUNDARY_UNDRAWN, boundary_items
from .graph_format import FORMAT_UNDRAWN, format_ill_formed_cases, format_items
from .ill_formed import setting_cases, setting_items
from .model import UNDRAWN, Item, schema_items, tensor_items
from .neighbours import neighbour_items
from .pairs import pair_items
from .rule_settings import RULE_UNDRAWN, rule_setting_cases, rule_setting_items
from .side_types import side_type_items

__all__ = ["Method", "METHODS", "ill_formed_floor", "undrawn", "method_table"]


@dataclass(frozen=True)
class Method:
    """One way of enumerating coverage items: its name, a sentence, the items of a pattern and
    the items it leaves out with their reasons."""

    name: str
    summary: str
    items: Callable[[PatternEntry], tuple[Item, ...]]
    undrawn: Mapping[Item, str]


METHODS: tuple[Method, ...] = (
    Method("schema items", "each attribute value class, optional port and rank the op schemas "
           "allow", schema_items, UNDRAWN),
    Method("value classes", "NaN and inf into the ops where implementations part ways; "
           "inexact bf16/f16 fills", tensor_items, UNDRAWN),
    Method("dtype x attribute", "each dtype row with each value of the base op's enumerated "
           "attributes", pair_items, UNDRAWN),
    Method("layout settings", "each shape rule under each layout attribute value",
           setting_items, UNDRAWN),
    Method("rule x setting", "each validation rule under each setting it reads, ill-formed "
           "and just inside", rule_setting_items, RULE_UNDRAWN),
    Method("side input types", "each type a side subgraph's Dequantize may read, at each "
           "place a pattern puts one", side_type_items, {}),
    Method("graph format", "what a graph and its tensors can express beyond one op's "
           "attributes", format_items, FORMAT_UNDRAWN),
    Method("value boundaries", "where each op's definition changes behaviour",
           boundary_items, BOUNDARY_UNDRAWN),
    Method("ambiguous axes", "each attribute picking an axis, left to its default and "
           "written, and each per-channel operand, on axes of one length", ambiguous_items, {}),
    Method("neighbouring kinds", "each side input fed by an op of a kind sorting next to the "
           "one the pattern names there", neighbour_items, {}),
)


def undrawn() -> dict[Item, str]:
    """Every method's items no case can show, with the reason."""
    found: dict[Item, str] = {}
    for method in METHODS:
        found.update(method.undrawn)
    return found


def ill_formed_floor(entry: PatternEntry, count: int) -> tuple[list[Case], list[Case]]:
    """The deterministic ill-formed cases of `entry`: (the layout settings, which take the place
    of as many of the `count` random draws; the rule x setting and graph-format cases, which
    come on top of them)."""
    return (setting_cases(entry, count),
            rule_setting_cases(entry) + format_ill_formed_cases(entry))


def method_table(left_out: Mapping[Item, str] | None = None) -> tuple[MethodRow, ...]:
    """Per method, as a row for the report and BENCHMARKS.md: its name and sentence, every item
    it asks of the catalog, and the items it leaves out with the reason (those no case can
    show, and `left_out`, those the ci profile leaves to the thorough profile)."""
    rows: list[MethodRow] = []
    for method in METHODS:
        found_set = {item for entry in CATALOG for item in method.items(entry)}
        if method.undrawn is not UNDRAWN:
            # A method's own list of what it cannot draw names items of that method only.
            found_set |= set(method.undrawn)
        found = sorted(found_set)
        left = {f"{k} = {v}": method.undrawn[(k, v)] for k, v in found
                if (k, v) in method.undrawn}
        left.update({f"{k} = {v}": (left_out or {})[(k, v)] for k, v in found
                     if (k, v) in (left_out or {})})
        rows.append(MethodRow(method.name, method.summary, tuple(found),
                              tuple(sorted(left.items()))))
    return tuple(rows)
