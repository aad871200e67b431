"""Value boundaries: the points where each op's definition changes behaviour, as items.

(Being written: `boundary_items` and `boundary_cases` are the hooks the coverage model and the
catalog instances call.)
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from fusionspec.spec.catalog import PatternEntry

from ..cases import Case
from .instance_plans import Plan
from .model import Item

__all__ = ["boundary_items", "boundary_cases", "BOUNDARY_UNDRAWN"]

#: Boundary items no case can show, and why.
BOUNDARY_UNDRAWN: Mapping[Item, str] = {}


def boundary_items(entry: PatternEntry) -> tuple[Item, ...]:
    """The value-boundary items of `entry`."""
    return ()


def boundary_cases(entry: PatternEntry, plans: Sequence[Plan]) -> list[Case]:
    """The deterministic floor of `boundary_items`."""
    return []
