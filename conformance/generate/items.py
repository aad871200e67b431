"""Everything the coverage model asks of the suite, per pattern and for the ci profile.

The model's items come from its methods (`fusionspec.conformance.generate.methods`: the op
schemas' items, the tensor value classes, the dtype row x attribute pairs, the layout settings,
each validation rule under each setting it reads, the graph format, the value boundaries).
`all_items(entry)` is all of them for one pattern (the report's per-pattern charts count
them); `required_items()` what the ci profile must draw between all its cases: every
pattern's items less the pairs its 60 valid cases a pattern are too few to hold
(`thorough_only`, each with the reason; the thorough profile draws them all).
"""

from __future__ import annotations

from fusionspec.spec.catalog import CATALOG, PatternEntry

from .methods import METHODS, undrawn
from .model import Item
from .pairs import CI_VALID, ci_pairs, pair_design, pair_items

__all__ = ["all_items", "required_items", "thorough_only"]


def all_items(entry: PatternEntry) -> tuple[Item, ...]:
    """The items of every method of the coverage model (`methods.METHODS`) for `entry`, less
    those no case can show (`methods.undrawn`)."""
    left_out = undrawn()
    return tuple(dict.fromkeys(item for method in METHODS for item in method.items(entry)
                               if item not in left_out))


def thorough_only() -> dict[Item, str]:
    """Pairs the ci profile's valid cases are too few to hold, and why (the thorough profile
    draws them all)."""
    found: dict[Item, str] = {}
    for entry in CATALOG:
        held = set(ci_pairs(entry))
        reason = (f"{entry.id} needs {len(pair_design(entry.id))} valid cases to pair each of "
                  f"its dtype rows with each value; the ci profile draws {CI_VALID}, the "
                  f"thorough profile all of them")
        found.update({item: reason for item in pair_items(entry) if item not in held})
    return found


def required_items() -> frozenset[Item]:
    """What the ci profile must draw between all its cases: every pattern's items, less the
    pairs only the thorough profile draws (`thorough_only`)."""
    left_out = thorough_only()
    return frozenset(item for entry in CATALOG for item in all_items(entry)
                     if item not in left_out)
