"""The base of every record: reading parsed JSON into a record by its fields' declarations
(`fusionspec.conformance.records.fields`), and writing it back.

`Record.from_json` (or `Record.read`, for an object at a JSON path inside a document) reads a
JSON object member by member, each as its field's type and metadata say, and refuses anything
else with the error class of its family (`Record.ERROR`), naming the source, the JSON path of
the bad member, the value and what it should be::

    perf.json: $.workloads[0].timings.fused.median: '1' is not a number

`Record.to_json` writes it back: nested records as objects, arrays as lists, the keys the
record does not model (its ``extra`` field, where it has one) beside its own; a record with a
``keys`` field writes its members in the order they were read, so a document read and written
again is the same JSON. A union of records is told apart by each record's kind (`WHAT`,
written first as ``what``).

A family of records says how lenient its reading is: with `NULLABLE`, a member whose type
admits None admits JSON null too (and None is written as null, but for the fields in
`OMIT_NONE`); with `LENIENT`, a null or absent member reads as its field's default, even one
the schema requires (the schema is what checks a file for its required members).
"""

from __future__ import annotations

import dataclasses
import math
import re
import types
from collections.abc import Callable, Mapping
from typing import Any, ClassVar, Self, Union, get_args, get_origin

from fusionspec.spec.errors import FusionspecError
from fusionspec.spec.text import clean_text

from .fields import (
    LEAF_KEYS,
    Slot,
    admits_none,
    describe,
    json_path,
    present,
    shown,
    slots,
)

__all__ = ["Record", "Context", "encode"]

#: The longest message a refused member gives.
_MESSAGE_LIMIT = 300


@dataclasses.dataclass(frozen=True)
class Context:
    """Where a reading is: the source named in errors, and the family's error class."""

    source: str
    error: type[FusionspecError]

    def fail(self, at: str, message: str) -> FusionspecError:
        return self.error(clean_text(f"{self.source}: {at}: {message}", _MESSAGE_LIMIT))


#: Reads one JSON value at a JSON path.
Decoder = Callable[[object, str, Context], Any]


class Record:
    """A JSON object as a frozen dataclass (see the module docstring); subclasses are
    dataclasses, this base is not (it adds no field)."""

    #: The error a reading of this family raises.
    ERROR: ClassVar[type[FusionspecError]] = FusionspecError
    #: Its name under the schema's ``$defs`` (None: written inline where it is used).
    DEF: ClassVar[str | None] = None
    #: Its kind, by which a union of records tells it apart (written first as ``what``).
    WHAT: ClassVar[str] = ""
    #: The type of the keys it does not model (None: any JSON value), and their metadata.
    EXTRA: ClassVar[Any] = None
    EXTRA_MEMBER: ClassVar[Mapping[str, Any]] = {}
    #: What its schema holds beyond its members (a title, a ``oneOf``, ...).
    SCHEMA: ClassVar[Mapping[str, Any]] = {}
    #: The fields left out of the JSON when None (``"*"``: every field).
    OMIT_NONE: ClassVar[tuple[str, ...]] = ()
    #: The family's leniency (see the module docstring).
    NULLABLE: ClassVar[bool] = False
    LENIENT: ClassVar[bool] = False

    @classmethod
    def read(cls, data: object, source: str, at: str) -> Self:
        """The record of `data` at JSON path `at` of `source` (`ERROR` when a member is
        missing or is not what its field declares)."""
        found: Self = _reader(cls)(data, at, Context(source, cls.ERROR))
        return found

    @classmethod
    def from_json(cls, data: object, source: str = "document") -> Self:
        """The record of parsed JSON `data` from `source` (named in errors)."""
        return cls.read(data, source, "$")

    def defect(self) -> tuple[str, str] | None:
        """What is wrong with the record beyond its members' types, if anything: the JSON path
        below the record (``""``: the record itself) and the sentence (none by default)."""
        return None

    def to_json(self) -> dict[str, Any]:
        """The JSON object (see the module docstring); what `from_json` reads back to an equal
        record."""
        cls = type(self)
        out: dict[str, Any] = {"what": cls.WHAT} if cls.WHAT else {}
        order: tuple[str, ...] = getattr(self, "keys", ())
        for slot in slots(cls):
            value = getattr(self, slot.name)
            if value is None and not (slot.writes_null and (not order or slot.name in order)):
                continue
            out[slot.name] = encode(value)
        extra: Mapping[str, Any] | None = getattr(self, "extra", None)
        if extra:
            out.update((k, encode(v)) for k, v in extra.items() if k not in out)
        if not order:
            return out
        ordered = {k: out[k] for k in order if k in out}
        ordered.update((k, v) for k, v in out.items() if k not in ordered)
        return ordered


_SCALARS = (str, int, float, bool, type(None))


def encode(value: object) -> Any:
    """A member's value as JSON-ready data (its containers new ones)."""
    if type(value) in _SCALARS:  # most values: none of the checks below
        return value
    if isinstance(value, Record):
        return value.to_json()
    if isinstance(value, list | tuple):
        return [encode(v) for v in value]
    if isinstance(value, Mapping):
        return {k: encode(v) for k, v in value.items()}
    return value


# -- reading ------------------------------------------------------------------------------------

def _is_record(hint: object) -> bool:
    return isinstance(hint, type) and issubclass(hint, Record)


_READERS: dict[type, Decoder] = {}


def _reader(cls: type[Record]) -> Decoder:
    """How a record of `cls` is read, worked out once per record."""
    found = _READERS.get(cls)
    if found is None:
        found = _READERS[cls] = _record_reader(cls)
    return found


def _record_reader(cls: type[Record]) -> Decoder:
    # Each member's path suffix made once: a document's thousands of records need no more.
    members = tuple((s, f".{s.name}", _decoder(s.hint, s.meta)) for s in slots(cls))
    names = {slot.name for slot, _, _ in members} | ({"what"} if cls.WHAT else set())
    fields = {f.name for f in dataclasses.fields(cls)}  # type: ignore[arg-type]
    keeps_extra, keeps_order = "extra" in fields, "keys" in fields
    extra = _decoder(Any if cls.EXTRA is None else cls.EXTRA, cls.EXTRA_MEMBER)
    lenient = cls.LENIENT

    def read(data: object, at: str, ctx: Context) -> Any:
        if type(data) is not dict and not isinstance(data, Mapping):
            raise ctx.fail(at, f"{shown(data)} is not an object")
        if cls.WHAT and data.get("what", cls.WHAT) != cls.WHAT:
            raise ctx.fail(json_path(at, "what"), f"{shown(data['what'])} is not "
                                                  f"{cls.WHAT!r}")
        values: dict[str, Any] = {}
        for slot, dotted, decode in members:
            value = data.get(slot.name)
            if value is None:
                if _absent(slot, slot.name in data, lenient, at, ctx):
                    continue
                values[slot.name] = None
                continue
            values[slot.name] = decode(value, at + dotted, ctx)
        if keeps_extra:
            values["extra"] = {k: extra(v, json_path(at, k), ctx) for k, v in data.items()
                               if k not in names}
        if keeps_order:
            values["keys"] = tuple(data)
        record = cls(**values)
        wrong = record.defect()
        if wrong is not None:
            raise ctx.fail(at + wrong[0], wrong[1])
        return record
    return read


def _absent(slot: Slot, given: bool, lenient: bool, at: str, ctx: Context) -> bool:
    """For a member that is null (`given`) or absent: True to let the field take its default,
    False to make it None; `ctx.fail` when it may be neither."""
    where = json_path(at, slot.name)
    if given and slot.nullable:
        return False
    if slot.has_default and (lenient or (not given and not slot.required)):
        return True
    if given:
        raise ctx.fail(where, f"null is not {describe(present(slot.hint))}")
    raise ctx.fail(where, f"missing; it must be {describe(present(slot.hint))}")


def _decoder(hint: Any, meta: Mapping[str, Any]) -> Decoder:
    """How a value of type `hint` with metadata `meta` is read."""
    if hint is Any:
        return _any
    if _is_record(hint):
        return lambda value, at, ctx: _reader(hint)(value, at, ctx)
    origin = get_origin(hint)
    if origin in (Union, types.UnionType):
        return _union(hint, meta)
    leaf = {k: v for k, v in meta.items() if k in LEAF_KEYS}
    if origin in (list, tuple):
        item = _decoder(get_args(hint)[0], leaf)
        make: Callable[[Any], Any] = tuple if origin is tuple else list

        def array(value: object, at: str, ctx: Context) -> Any:
            if type(value) is not list:
                raise ctx.fail(at, f"{shown(value)} is not an array")
            return make([item(v, f"{at}[{i}]", ctx) for i, v in enumerate(value)])
        return array
    if origin is dict:
        return _mapping(_decoder(get_args(hint)[1], leaf), meta)
    return _scalar(hint, meta)


def _mapping(item: Decoder, meta: Mapping[str, Any]) -> Decoder:
    must: tuple[str, ...] = meta.get("with_keys", ())
    allowed: tuple[str, ...] | None = meta.get("key_enum")

    def mapping(value: object, at: str, ctx: Context) -> Any:
        if not isinstance(value, Mapping):
            raise ctx.fail(at, f"{shown(value)} is not an object")
        for key in must:
            if key not in value:
                raise ctx.fail(json_path(at, key), "missing; the object must hold it")
        if allowed is not None:
            for key in value:
                if key not in allowed:
                    raise ctx.fail(at, f"the key {shown(key)} is not one of "
                                       f"{', '.join(map(repr, allowed))}")
        return {k: item(v, json_path(at, k), ctx) for k, v in value.items()}
    return mapping


def _union(hint: Any, meta: Mapping[str, Any]) -> Decoder:
    """A union: the first choice whose kind of JSON value `value` is (records told apart by
    their ``what``)."""
    choices = [c for c in get_args(hint) if c is not type(None)]
    if len(choices) == 1:  # an optional member: null is the caller's to judge
        return _decoder(choices[0], meta)
    tagged = {c.WHAT: _decoder(c, meta) for c in choices if _is_record(c) and c.WHAT}
    options = [(c, _decoder(c, meta)) for c in choices if not (_is_record(c) and c.WHAT)]
    takes_none = admits_none(hint)

    def union(value: object, at: str, ctx: Context) -> Any:
        if value is None and takes_none:
            return None
        if tagged and isinstance(value, Mapping):
            what = value.get("what")
            decode = tagged.get(what) if isinstance(what, str) else None
            if decode is None:
                raise ctx.fail(json_path(at, "what"), f"{shown(what)} is not one of "
                                                      f"{', '.join(map(repr, tagged))}")
            return decode(value, at, ctx)
        for choice, decode in options:
            if _fits(choice, value):
                return decode(value, at, ctx)
        raise ctx.fail(at, f"{shown(value)} is not {describe(hint)}")
    return union


def _fits(hint: Any, value: object) -> bool:
    """Whether `value` is the kind of JSON value a `hint` is read from."""
    origin = get_origin(hint)
    if hint is Any:
        return True
    if _is_record(hint) or origin is dict:
        return isinstance(value, Mapping)
    if origin in (list, tuple):
        return type(value) is list
    return _TESTS[hint](value)


def _whole(value: object) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)


def _number(value: object) -> bool:
    return isinstance(value, int | float) and not isinstance(value, bool)


_TESTS: dict[object, Callable[[object], bool]] = {
    str: lambda v: isinstance(v, str), int: _whole, float: _number,
    bool: lambda v: type(v) is bool}


def _scalar(hint: Any, meta: Mapping[str, Any]) -> Decoder:
    test = _TESTS.get(hint)
    if test is None:
        raise TypeError(f"no reader for a member of type {hint!r}")
    what = describe(hint)
    checks = _checks(meta)

    def scalar(value: object, at: str, ctx: Context) -> Any:
        if not test(value):
            raise ctx.fail(at, f"{shown(value)} is not {what}")
        if isinstance(value, float) and not math.isfinite(value):
            raise ctx.fail(at, f"{value} is not a finite number")
        for check in checks:
            wrong = check(value)
            if wrong is not None:
                raise ctx.fail(at, f"{shown(value)} {wrong}")
        return value
    return scalar


def _checks(meta: Mapping[str, Any]) -> tuple[Callable[[Any], str | None], ...]:
    """What the metadata asks of a scalar of the right type: each check gives what is wrong
    with a value (None: nothing)."""
    found: list[Callable[[Any], str | None]] = []
    if "const" in meta:
        const = meta["const"]
        found.append(lambda v: None if v == const else f"is not {const!r}")
    if "enum" in meta:
        allowed = tuple(meta["enum"])
        found.append(lambda v: None if v in allowed
                     else f"is not one of {', '.join(map(repr, allowed))}")
    if "pattern" in meta:
        regex, text = re.compile(meta["pattern"]), meta["pattern"]
        found.append(lambda v: None if regex.search(v) else f"does not match {text!r}")
    if "minimum" in meta:
        low = meta["minimum"]
        found.append(lambda v: None if v >= low else f"is less than the minimum of {low}")
    return tuple(found)


def _any(value: object, at: str, ctx: Context) -> Any:
    """Any JSON value, copied; a number that is not finite is refused (JSON has none)."""
    if value is None or isinstance(value, str | int | float):  # a str enum's member too
        if isinstance(value, float) and not math.isfinite(value):
            raise ctx.fail(at, f"{value} is not a finite number")
        return value
    if isinstance(value, list | tuple):
        return [_any(v, f"{at}[{i}]", ctx) for i, v in enumerate(value)]
    if isinstance(value, Mapping):
        return {k: _any(v, json_path(at, k), ctx) for k, v in value.items()}
    raise ctx.fail(at, f"{shown(value)} is not a JSON value")
