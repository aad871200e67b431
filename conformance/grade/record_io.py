"""Reading and writing the results document's records: `Reader` reads one JSON object field by
field with typed errors (`ResultsFormatError` naming the JSON path of a field of the wrong
type), `Record` writes a record back as JSON. The document's records
(`fusionspec.conformance.grade.document`) and a verdict's details
(`fusionspec.conformance.grade.details`) are built on these two, so every part of a document is
read and written one way.
"""

from __future__ import annotations

import functools
import operator
import types
import typing
from collections.abc import Callable, Mapping, Sequence
from dataclasses import fields
from typing import Any, ClassVar, Self, TypeVar

from fusionspec.spec.errors import FusionspecError

from ..cases import Status

__all__ = ["ResultsFormatError", "Reader", "Record", "FieldReaders", "Json", "STATUSES",
           "kind_of"]


class ResultsFormatError(FusionspecError):
    """A results document or failure folder that cannot be read."""


Json = dict[str, Any]
R = TypeVar("R")

#: The statuses a case can have.
STATUSES: tuple[str, ...] = tuple(s.value for s in Status)


def kind_of(value: object) -> str:
    names = {dict: "an object", list: "a list", str: "a string", int: "a number",
             float: "a number", bool: "true/false", type(None): "null"}
    return names.get(type(value), type(value).__name__)


class Reader:
    """One JSON object of a document, at `where`, read field by field with typed errors."""

    def __init__(self, data: object, where: str) -> None:
        if type(data) is not dict and not isinstance(data, Mapping):
            raise ResultsFormatError(f"{where} is {kind_of(data)}, not an object")
        self.data: Mapping[str, Any] = data
        self.where = where

    def _fail(self, key: str, what: str) -> ResultsFormatError:
        return ResultsFormatError(f"{self.where}.{key} is {kind_of(self.data.get(key))}, "
                                  f"not {what}")

    def text(self, key: str, default: str = "") -> str:
        value = self.data.get(key)
        if value is None:
            return default
        if not isinstance(value, str):
            raise self._fail(key, "a string")
        return value

    def opt_text(self, key: str) -> str | None:
        return None if self.data.get(key) is None else self.text(key)

    def status(self, key: str = "status") -> str:
        """A case's status: one of `STATUSES`."""
        value = self.text(key)
        if value not in STATUSES:
            raise ResultsFormatError(f"{self.where}.{key} is {value[:80]!r}, not a status of "
                                     f"the suite ({', '.join(STATUSES)})")
        return value

    def status_counts(self, key: str) -> dict[str, int]:
        """`counts` keyed by status."""
        found = self.counts(key)
        unknown = next((k for k in found if k not in STATUSES), None)
        if unknown is not None:
            raise ResultsFormatError(f"{self.where}.{key}.{unknown[:80]} is not a status of "
                                     f"the suite ({', '.join(STATUSES)})")
        return found

    def number(self, key: str, default: int = 0) -> int:
        value = self.data.get(key)
        if value is None:
            return default
        if isinstance(value, bool) or not isinstance(value, int):
            raise self._fail(key, "a whole number")
        return value

    def opt_number(self, key: str) -> int | None:
        return None if self.data.get(key) is None else self.number(key)

    def real(self, key: str) -> float | None:
        value = self.data.get(key)
        if value is None:
            return None
        if isinstance(value, bool) or not isinstance(value, int | float):
            raise self._fail(key, "a number")
        return float(value)

    def flag(self, key: str) -> bool:
        value = self.data.get(key, False)
        if not isinstance(value, bool):
            raise self._fail(key, "true/false")
        return value

    def obj(self, key: str) -> dict[str, Any]:
        value = self.data.get(key)
        if value is None:
            return {}
        if not isinstance(value, Mapping):
            raise self._fail(key, "an object")
        return dict(value)

    def opt_obj(self, key: str) -> dict[str, Any] | None:
        return None if self.data.get(key) is None else self.obj(key)

    def strings(self, key: str) -> dict[str, str]:
        found = self.obj(key)
        if not all(isinstance(v, str) for v in found.values()):
            raise self._fail(key, "an object of strings")
        return found

    def counts(self, key: str) -> dict[str, int]:
        found = self.obj(key)
        if any(isinstance(v, bool) or not isinstance(v, int) or v < 0 for v in found.values()):
            raise self._fail(key, "an object of counts")
        return found

    def count_table(self, key: str) -> dict[str, dict[str, int]]:
        table = Reader(self.obj(key), f"{self.where}.{key}")
        return {name: table.counts(name) for name in table.data}

    def records(self, key: str, read: Callable[[Reader], R]) -> list[R]:
        value = self.data.get(key)
        if value is None:
            return []
        if not isinstance(value, list):
            raise self._fail(key, "a list")
        return [read(Reader(item, f"{self.where}.{key}[{i}]")) for i, item in enumerate(value)]

    def opt_flag(self, key: str) -> bool | None:
        return None if self.data.get(key) is None else self.flag(key)

    def figure(self, key: str) -> float | str | None:
        """A measured value: a number, or NaN and the infinities as the text JSON lacks them
        in (``"nan"``, ``"inf"``)."""
        value = self.data.get(key)
        if isinstance(value, str):
            return value
        return self.real(key)

    def opt_list(self, key: str, item: Callable[[object], bool], what: str) -> list[Any] | None:
        """The list under `key` (None when absent), each item passing `item`."""
        value = self.data.get(key)
        if value is None:
            return None
        if not isinstance(value, list) or not all(item(v) for v in value):
            raise self._fail(key, what)
        return list(value)

    def whole_numbers(self, key: str) -> list[int]:
        return self.opt_list(key, _whole, "a list of whole numbers") or []

    def opt_whole_numbers(self, key: str) -> list[int] | None:
        return self.opt_list(key, _whole, "a list of whole numbers")

    def texts(self, key: str) -> list[str]:
        return self.opt_list(key, _text, "a list of strings") or []

    def opt_texts(self, key: str) -> list[str] | None:
        return self.opt_list(key, _text, "a list of strings")

    def record(self, key: str, read: Callable[[Reader], R]) -> R | None:
        """The object under `key` read by `read` (None when absent)."""
        value = self.data.get(key)
        return None if value is None else read(Reader(value, f"{self.where}.{key}"))

    def opt_records(self, key: str, read: Callable[[Reader], R]) -> list[R] | None:
        return None if self.data.get(key) is None else self.records(key, read)

    def rest(self, record: type) -> dict[str, Any]:
        """The keys `record` does not model."""
        known = {f.name for f in fields(record)} - {"extra"}
        return {k: v for k, v in self.data.items() if k not in known}


def _whole(value: object) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)


def _text(value: object) -> bool:
    return isinstance(value, str)


def _json(record: object, *, omit_none: Sequence[str] = ()) -> Json:
    """A record's fields as JSON (nested records too), its `extra` keys beside them; the fields
    named in `omit_none` are left out when None (every field, for ``"*"``)."""
    out: Json = {}
    for f in fields(record):  # type: ignore[arg-type]
        value = getattr(record, f.name)
        if f.name == "extra":
            continue
        if value is None and (f.name in omit_none or "*" in omit_none):
            continue
        out[f.name] = _plain(value)
    extra = getattr(record, "extra", None)
    if extra:
        out.update({k: v for k, v in extra.items() if k not in out})
    return out


_SCALARS = (str, int, float, bool, type(None))


def _plain(value: Any) -> Any:
    if type(value) in _SCALARS:  # most values: no need for the checks below
        return value
    if hasattr(value, "to_json"):
        return value.to_json()
    if isinstance(value, list | tuple):
        return [_plain(v) for v in value]
    if isinstance(value, Mapping):
        return {k: _plain(v) for k, v in value.items()}
    return value


# -- reading a record by its fields' types ------------------------------------------------------

def _optional(hint: object) -> tuple[object, bool]:
    """`hint` without None, and whether it admitted None."""
    if typing.get_origin(hint) in (types.UnionType, typing.Union):
        args = typing.get_args(hint)
        rest = tuple(a for a in args if a is not type(None))
        if len(rest) < len(args):
            return (rest[0] if len(rest) == 1 else functools.reduce(operator.or_, rest)), True
    return hint, False


def _field_reader(hint: object) -> Callable[[Reader, str], Any]:
    """How a field of type `hint` is read (the `Reader` method its type calls for)."""
    inner, optional = _optional(hint)
    args = typing.get_args(inner)
    if inner is str:
        return Reader.opt_text if optional else Reader.text
    if inner is bool:
        return Reader.opt_flag if optional else Reader.flag
    if inner is int:
        return Reader.opt_number if optional else Reader.number
    if inner is float:
        return Reader.real
    if set(args) == {float, str}:
        return Reader.figure
    if isinstance(inner, type) and issubclass(inner, Record):
        read = inner.read
        return lambda r, key: r.record(key, read)
    if typing.get_origin(inner) is list:
        item = args[0]
        if item is int:
            return Reader.opt_whole_numbers if optional else Reader.whole_numbers
        if item is str:
            return Reader.opt_texts if optional else Reader.texts
        if isinstance(item, type) and issubclass(item, Record):
            read = item.read
            return (lambda r, key: r.opt_records(key, read)) if optional else \
                (lambda r, key: r.records(key, read))
    if typing.get_origin(inner) is dict:
        if args[1] is str:
            return (lambda r, key: None if r.data.get(key) is None else r.strings(key)) \
                if optional else Reader.strings
        return Reader.opt_obj if optional else Reader.obj
    raise TypeError(f"no reader for a field of type {hint!r}")


_READERS: dict[type, tuple[tuple[str, Callable[[Reader, str], Any]], ...]] = {}


def _field_readers(record: type) -> tuple[tuple[str, Callable[[Reader, str], Any]], ...]:
    """Each field of `record` (but ``extra``) with its reader, worked out once per record."""
    if record not in _READERS:
        _READERS[record] = _work_out_readers(record)
    return _READERS[record]


def _work_out_readers(record: type) -> tuple[tuple[str, Callable[[Reader, str], Any]], ...]:
    hints = typing.get_type_hints(record)
    special: FieldReaders = getattr(record, "SPECIAL", {})
    return tuple((f.name, special.get(f.name) or _field_reader(hints[f.name]))
                 for f in fields(record) if f.name != "extra")


#: Field name -> how to read it from a `Reader` (given the field's key).
FieldReaders = Mapping[str, Callable[["Reader", str], Any]]


class Record:
    """What every record shares: read field by field as its fields' types say (`read`; a field
    whose reading the type cannot say is in `SPECIAL`), written as JSON by `_json`, the fields
    named in `OMIT_NONE` left out when None."""

    OMIT_NONE: ClassVar[tuple[str, ...]] = ()
    #: Field name -> its reader, for the fields whose type alone does not say how to read them.
    SPECIAL: ClassVar[FieldReaders] = {}

    @classmethod
    def read(cls, r: Reader) -> Self:
        """The record in `r`, each field read by the `Reader` method its type calls for; the
        keys no field models kept in ``extra`` where the record has one."""
        values = {name: read(r, name) for name, read in _field_readers(cls)}
        if any(f.name == "extra" for f in fields(cls)):  # type: ignore[arg-type]
            values["extra"] = r.rest(cls)
        return cls(**values)

    def to_json(self) -> Json:
        """The record as JSON-ready data (what its ``read`` reads back to an equal one)."""
        return _json(self, omit_none=self.OMIT_NONE)
