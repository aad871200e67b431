"""Every validation rule under every setting it reads: ill-formed cases and the valid ones just
inside each rule.

(Being written: `rule_setting_items`, `rule_setting_cases` and `inside_cases` are the hooks the
coverage model, the ill-formed floor and the catalog instances call.)
"""

from __future__ import annotations

from collections.abc import Mapping

from fusionspec.spec.catalog import PatternEntry

from ..cases import Case
from .model import Item

__all__ = ["rule_setting_items", "rule_setting_cases", "inside_cases", "RULE_UNDRAWN"]

#: Rule x setting items no case can show, and why.
RULE_UNDRAWN: Mapping[Item, str] = {}


def rule_setting_items(entry: PatternEntry) -> tuple[Item, ...]:
    """The rule x setting items of `entry`."""
    return ()


def rule_setting_cases(entry: PatternEntry) -> list[Case]:
    """One ill-formed case per rule x setting item of `entry`."""
    return []


def inside_cases(entry: PatternEntry) -> list[Case]:
    """The valid cases just inside each rule."""
    return []
