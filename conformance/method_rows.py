"""The coverage model's methods as the report and BENCHMARKS.md read them: one `MethodRow` per
method (`fusionspec.conformance.generate.methods`), with every item it asks of the catalog and
the items it leaves out, each with its reason.

The rows are kept in the coverage model's cache entry (`fusionspec.conformance.coverage_cache`)
as JSON; `MethodRow.from_json` reads one back and says what is wrong with one that is not a row.
This module needs no hypothesis, so a report reads the rows without the generator.
"""

from __future__ import annotations

from dataclasses import dataclass

__all__ = ["MethodRow", "MethodRowError"]

#: A coverage item: (feature, value).
Item = tuple[str, str]


class MethodRowError(ValueError):
    """A method row read back from JSON is not one: the message says which part."""


@dataclass(frozen=True)
class MethodRow:
    """One method: its name and sentence, the items it asks for (sorted), and the items it
    leaves out (their text ``feature = value``) with the reason, sorted by text."""

    name: str
    summary: str
    items: tuple[Item, ...]
    left: tuple[tuple[str, str], ...] = ()

    def to_json(self) -> dict[str, object]:
        return {"name": self.name, "summary": self.summary,
                "items": [list(item) for item in self.items], "left": dict(self.left)}

    @staticmethod
    def from_json(data: object) -> MethodRow:
        """The row in `data` (parsed JSON); `MethodRowError` naming the part that is wrong."""
        if not isinstance(data, dict):
            raise MethodRowError("a method is not an object")
        name, summary = data.get("name"), data.get("summary")
        if not isinstance(name, str) or not isinstance(summary, str):
            raise MethodRowError("a method has no name or no summary")
        items, left = data.get("items"), data.get("left")
        if not isinstance(items, list) or not all(
                isinstance(i, list) and len(i) == 2 and all(isinstance(s, str) for s in i)
                for i in items):
            raise MethodRowError(f"method {name!r}: its items are not (feature, value) pairs")
        if not isinstance(left, dict) or not all(isinstance(v, str) for v in left.values()):
            raise MethodRowError(f"method {name!r}: what it leaves out has no reasons")
        return MethodRow(name, summary, tuple((f, v) for f, v in items),
                         tuple(sorted(left.items())))
