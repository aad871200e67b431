"""The report's error, and typed reading of the JSON documents it takes that are not results
documents.

`ReportError` is what every part of the report raises for a document, a baseline or an option it
cannot use. A results document is read into its records
(`fusionspec.conformance.grade.results.load_document`), which check every field; the
mutation-score document (`fusionspec.reports.mutation`) is plain JSON, written by the suite's
tests or by any other tool, and is read through `Doc`, so a field of the wrong shape ends in a
`ReportError` naming the file and the field (``x.json: outcomes[0] is a list, not an
object``), never in a KeyError or TypeError deep inside a template.

>>> doc = Doc({"outcomes": [{"mutant": "m1", "caught": True}]}, "mutation.json")
>>> [o.text("mutant") for o in doc.objects("outcomes")]
['m1']
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from fusionspec.spec.errors import FusionspecError

__all__ = ["ReportError", "Doc"]


class ReportError(FusionspecError):
    """A results document, a baseline or an option the report cannot use."""


_TYPE_NAMES = {dict: "an object", list: "a list", str: "a string", int: "a number",
               float: "a number", bool: "true/false", type(None): "null"}


def _kind(value: object) -> str:
    return _TYPE_NAMES.get(type(value), type(value).__name__)


@dataclass(frozen=True)
class Doc:
    """A JSON object from `source` (a file, for messages), found at `path` (keys from the
    document's top)."""

    data: Mapping[str, Any]
    source: str
    path: str = ""

    def _at(self, key: str) -> str:
        if key.startswith("["):
            return self.path + key
        return f"{self.path}.{key}" if self.path else key

    def fail(self, key: str, message: str) -> ReportError:
        return ReportError(f"{self.source}: {self._at(key)} {message}")

    def raw(self, key: str, default: object = None) -> Any:
        return self.data.get(key, default)

    def obj(self, key: str, *, required: bool = False) -> Doc:
        """The object under `key` (an empty one when absent and not `required`)."""
        value = self.data.get(key)
        if value is None and not required:
            return Doc({}, self.source, self._at(key))
        if not isinstance(value, Mapping):
            raise self.fail(key, f"is {_kind(value)}, not an object")
        return Doc(value, self.source, self._at(key))

    def objects(self, key: str) -> list[Doc]:
        """The list of objects under `key` (empty when absent)."""
        value = self.data.get(key)
        if value is None:
            return []
        if not isinstance(value, list):
            raise self.fail(key, f"is {_kind(value)}, not a list")
        found = []
        for index, item in enumerate(value):
            if not isinstance(item, Mapping):
                raise self.fail(f"{key}[{index}]", f"is {_kind(item)}, not an object")
            found.append(Doc(item, self.source, self._at(f"{key}[{index}]")))
        return found

    def text(self, key: str, default: str = "") -> str:
        """A string field; numbers are written out, null and absence give `default`."""
        value = self.data.get(key)
        if value is None:
            return default
        if isinstance(value, str):
            return value
        if isinstance(value, int | float) and not isinstance(value, bool):
            return str(value)
        raise self.fail(key, f"is {_kind(value)}, not a string")

    def texts(self, key: str) -> list[str]:
        """A list of strings (empty when absent)."""
        value = self.data.get(key)
        if value is None:
            return []
        if not isinstance(value, list) or not all(isinstance(v, str) for v in value):
            raise self.fail(key, "is not a list of strings")
        return list(value)

    def counts(self, key: str) -> dict[str, int]:
        """A ``{status: count}`` object (empty when absent)."""
        value = self.data.get(key)
        if value is None:
            return {}
        if not isinstance(value, Mapping):
            raise self.fail(key, f"is {_kind(value)}, not an object of counts")
        bad = [k for k, v in value.items()
               if isinstance(v, bool) or not isinstance(v, int) or v < 0]
        if bad:
            raise self.fail(key, f"has a count that is not a whole number >= 0 at {bad[0]!r}")
        return {str(k): int(v) for k, v in value.items()}

    def count_table(self, key: str) -> dict[str, dict[str, int]]:
        """An object of ``{status: count}`` objects, such as ``by_dtype``."""
        table = self.obj(key)
        return {name: table.counts(name) for name in table.data}
