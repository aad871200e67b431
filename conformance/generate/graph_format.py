"""What the graph format can say beyond one op's attributes, as items.

(Being written: `format_items`, `format_cases` and `format_ill_formed_cases` are the hooks the
coverage model, the catalog instances and the ill-formed floor call.)
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from fusionspec.spec.catalog import PatternEntry

from ..cases import Case
from .instance_plans import Plan
from .model import Item

__all__ = ["format_items", "format_cases", "format_ill_formed_cases", "FORMAT_UNDRAWN"]

#: Graph-format items no case can show, and why.
FORMAT_UNDRAWN: Mapping[Item, str] = {}


def format_items(entry: PatternEntry) -> tuple[Item, ...]:
    """The graph-format items of `entry`."""
    return ()


def format_cases(entry: PatternEntry, plans: Sequence[Plan]) -> list[Case]:
    """The valid cases of the graph-format floor."""
    return []


def format_ill_formed_cases(entry: PatternEntry) -> list[Case]:
    """The ill-formed cases of the graph-format floor (what the spec forbids)."""
    return []
