"""The op categories the pattern notation uses: Unary, Binary and Reduction.

Page 001 ("Supported Fusion Patterns") defines each category as an alternation of op kinds. The
table below is that definition, member for member and in the page's order; the parser, the
catalog and every tool derived from them read the categories from here and nowhere else.

Pow is a member of Unary because the page lists it, even though oneDNN neither fuses nor
implements it (see the catalog's recorded decisions).
"""

from __future__ import annotations

from collections.abc import Mapping
from types import MappingProxyType

__all__ = ["CATEGORIES", "UNARY", "BINARY", "REDUCTION", "category_of", "is_category"]

UNARY: tuple[str, ...] = (
    "Abs", "Clamp", "Elu", "Exp", "GELU", "HardSwish", "LeakyReLU", "Log", "Sigmoid",
    "SoftPlus", "Pow", "ReLU", "Round", "Sqrt", "Square", "Tanh",
)
BINARY: tuple[str, ...] = ("Add", "Divide", "Maximum", "Minimum", "Multiply", "Subtract")
REDUCTION: tuple[str, ...] = (
    "ReduceL1", "ReduceL2", "ReduceMax", "ReduceMean", "ReduceMin", "ReduceProd", "ReduceSum",
)

#: Category name -> member op kinds, in the order page 001 lists them.
CATEGORIES: Mapping[str, tuple[str, ...]] = MappingProxyType({
    "Unary": UNARY,
    "Binary": BINARY,
    "Reduction": REDUCTION,
})


def is_category(name: str) -> bool:
    """Whether `name` is a category name of the notation (case-sensitive, as the page writes)."""
    return name in CATEGORIES


def category_of(kind: str) -> str | None:
    """The category an op kind belongs to, or None when it belongs to none."""
    for name, kinds in CATEGORIES.items():
        if kind in kinds:
            return name
    return None
