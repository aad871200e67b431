"""Everything the coverage model asks of the suite, per pattern and for the ci profile.

The model's items come from three places: the op schemas and the tensor value classes
(`fusionspec.conformance.generate.model.model_items`), the dtype row x attribute pairs
(`fusionspec.conformance.generate.pairs.pair_items`) and the ill-formed rule x layout
settings (`fusionspec.conformance.generate.ill_formed.setting_items`). `all_items(entry)` is
the three for one pattern (the report's per-pattern charts count them); `required_items()`
what the ci profile must draw between all its cases: every pattern's items less the pairs
its 60 valid cases a pattern are too few to hold (`thorough_only`, each with the reason; the
thorough profile draws them all).
"""

from __future__ import annotations

from fusionspec.spec.catalog import CATALOG, PatternEntry

from .ill_formed import setting_items
from .model import UNDRAWN, Item, model_items
from .pairs import CI_VALID, ci_pairs, pair_design, pair_items

__all__ = ["all_items", "required_items", "thorough_only"]


def all_items(entry: PatternEntry) -> tuple[Item, ...]:
    """The model items of `entry`, its pairs and its ill-formed settings, less `UNDRAWN`."""
    return tuple(item for item in (*model_items(entry), *pair_items(entry),
                                   *setting_items(entry)) if item not in UNDRAWN)


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
