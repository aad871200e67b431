"""Frozen dataclasses as JSON objects: one reader, one writer and one JSON schema per record.

A `Record` subclass declares its members as dataclass fields with type hints (``str``,
``int``, ``float``, ``bool``, ``tuple[T, ...]`` for an array, ``dict[str, T]`` for an object
of any keys, another `Record`, unions of these; ``X | None`` for a member that may be absent)
and, in each field's metadata (`member`), what the schema says beyond the type: a minimum, an
enum or a constant, a pattern, whether JSON ``null`` is a value of its own. From that one
declaration:

- `Record.from_json` reads parsed JSON, refusing a member of the wrong type (or outside its
  enum, pattern or minimum) with a `PerfFormatError` that names the file and the member's JSON
  path (``perf.json: $.workloads[0].timings.fused.median: ...``);
- `Record.to_json` writes it back: the members in the order they were read (the order of the
  fields for a record built in code), absent ones left out, and the keys the record does not
  model (`Record.extra`) kept, so that a document read and written again is the same JSON;
- `fusionspec.conformance.perf.schema` builds the JSON schema of the records.
"""

from __future__ import annotations

import copy
import dataclasses
import math
import re
import types
from collections.abc import Mapping
from typing import Any, ClassVar, Self, Union, get_args, get_origin, get_type_hints

from fusionspec.spec.errors import FusionspecError
from fusionspec.spec.text import clean_text

__all__ = ["PerfFormatError", "Record", "member", "record_fields", "hints", "json_path",
           "is_required", "decode", "encode"]

#: The longest message a refused member gives.
_MESSAGE_LIMIT = 300


class PerfFormatError(FusionspecError):
    """A file that is not a performance results document of this version."""


def member(*, minimum: float | None = None, enum: tuple[str, ...] | None = None,
           const: object = None, pattern: str | None = None, nullable: bool = False,
           required: tuple[str, ...] = ()) -> dict[str, Any]:
    """The metadata of a field: what its schema says beyond its type (`required`: the keys a
    ``dict`` member must hold)."""
    found: dict[str, Any] = {"minimum": minimum, "enum": enum, "const": const,
                             "pattern": pattern}
    found = {k: v for k, v in found.items() if v is not None}
    if nullable:
        found["nullable"] = True
    if required:
        found["required"] = required
    return found


def json_path(at: str, key: object) -> str:
    return f"{at}[{key}]" if isinstance(key, int) else f"{at}.{key}"


_HINTS: dict[type, dict[str, Any]] = {}


def hints(cls: type) -> dict[str, Any]:
    """The resolved type hints of a record's fields (resolved once per record)."""
    if cls not in _HINTS:
        _HINTS[cls] = get_type_hints(cls)
    return _HINTS[cls]


def record_fields(cls: type) -> tuple[dataclasses.Field[Any], ...]:
    """The fields of a record that are members of its JSON object."""
    return tuple(f for f in dataclasses.fields(cls) if f.name not in ("extra", "keys"))


def is_required(f: dataclasses.Field[Any]) -> bool:
    """Whether every object of the record holds the member (one without a default, or a
    constant such as the document's format)."""
    return "const" in f.metadata or (f.default is dataclasses.MISSING
                                     and f.default_factory is dataclasses.MISSING)


def _describe(hint: Any) -> str:
    """What a value of type `hint` is, in words."""
    origin = get_origin(hint)
    if origin in (Union, types.UnionType):
        return " or ".join(_describe(a) for a in get_args(hint))
    if hint is type(None):
        return "null"
    if (isinstance(hint, type) and issubclass(hint, Record)) or origin is dict:
        return "an object"
    if origin is tuple:
        return "an array"
    return {str: "a string", int: "an integer", float: "a number",
            bool: "true or false"}.get(hint, str(hint))


def _present(hint: Any) -> Any:
    """The type of an optional member when it is there (`hint` without None)."""
    if get_origin(hint) in (Union, types.UnionType):
        choices = [c for c in get_args(hint) if c is not type(None)]
        if len(choices) == 1:
            return choices[0]
    return hint


def _fail(source: str, at: str, message: str) -> PerfFormatError:
    return PerfFormatError(clean_text(f"{source}: {at}: {message}", _MESSAGE_LIMIT))


def _shown(value: object) -> str:
    text = repr(value)
    return text if len(text) <= 80 else text[:80] + "..."


def _scalar(hint: Any, value: object) -> bool:
    if hint is bool:
        return type(value) is bool
    if hint is int:
        return isinstance(value, int) and not isinstance(value, bool)
    if hint is float:
        return isinstance(value, int | float) and not isinstance(value, bool)
    return hint is str and isinstance(value, str)


def decode(hint: Any, value: object, source: str, at: str) -> Any:
    """`value` read as type `hint` (numbers keep their JSON type: 2 stays 2, so that it is
    written back as it was read)."""
    origin = get_origin(hint)
    if hint is Any:
        return copy.deepcopy(value)
    if isinstance(hint, type) and issubclass(hint, Record):
        return hint.read(value, source, at)
    if origin in (Union, types.UnionType):
        choices = [c for c in get_args(hint) if c is not type(None)]
        if value is None and len(choices) < len(get_args(hint)):
            return None
        if len(choices) == 1:  # an optional member: its own error says where
            return decode(choices[0], value, source, at)
        for choice in choices:  # a union of scalars: the first the value is
            if _scalar(choice, value):
                return decode(choice, value, source, at)
        raise _fail(source, at, f"{_shown(value)} is not {_describe(hint)}")
    if origin is tuple:
        if not isinstance(value, list):
            raise _fail(source, at, f"{_shown(value)} is not an array")
        (item, _) = get_args(hint)
        return tuple(decode(item, v, source, json_path(at, i)) for i, v in enumerate(value))
    if origin is dict:
        if not isinstance(value, dict):
            raise _fail(source, at, f"{_shown(value)} is not an object")
        item = get_args(hint)[1]
        return {k: decode(item, v, source, json_path(at, k)) for k, v in value.items()}
    if not _scalar(hint, value):
        raise _fail(source, at, f"{_shown(value)} is not {_describe(hint)}")
    if isinstance(value, float) and not math.isfinite(value):
        raise _fail(source, at, f"{value} is not a finite number")
    return value


def _check(meta: Mapping[str, Any], value: object, source: str, at: str) -> None:
    """What the field's metadata asks of a value of the right type."""
    if "const" in meta and value != meta["const"]:
        raise _fail(source, at, f"{_shown(value)} is not {meta['const']!r}")
    if "enum" in meta and value not in meta["enum"]:
        raise _fail(source, at, f"{_shown(value)} is not one of {list(meta['enum'])}")
    if "pattern" in meta and isinstance(value, str) and not re.search(meta["pattern"], value):
        raise _fail(source, at, f"{_shown(value)} does not match {meta['pattern']!r}")
    numbers = value if isinstance(value, tuple | dict) else (value,)
    items = numbers.values() if isinstance(numbers, dict) else numbers
    if "minimum" in meta and any(isinstance(v, int | float) and v < meta["minimum"]
                                 for v in items):
        raise _fail(source, at, f"{_shown(value)} is less than the minimum of "
                                f"{meta['minimum']}")
    for key in meta.get("required", ()):
        if isinstance(value, dict) and key not in value:
            raise _fail(source, at, f"{key!r} is a required property")


def encode(value: object) -> Any:
    """A record's member as JSON."""
    if isinstance(value, Record):
        return value.to_json()
    if isinstance(value, tuple):
        return [encode(v) for v in value]
    if isinstance(value, dict):
        return {k: encode(v) for k, v in value.items()}
    return value


@dataclasses.dataclass(frozen=True, kw_only=True)
class Record:
    """A JSON object as a frozen dataclass (see the module docstring). `extra` holds the keys
    the record does not model, `keys` the order its members were read in (none for a record
    built in code: the fields' order)."""

    #: Its name under the schema's ``$defs`` (None: written inline where it is used).
    DEF: ClassVar[str | None] = None
    #: The type of the keys it does not model (None: any JSON value), and their metadata.
    EXTRA: ClassVar[Any] = None
    EXTRA_MEMBER: ClassVar[dict[str, Any]] = {}

    extra: dict[str, Any] = dataclasses.field(default_factory=dict)
    keys: tuple[str, ...] = dataclasses.field(default=(), compare=False, repr=False)

    @classmethod
    def read(cls, data: object, source: str, at: str) -> Self:
        """The record of `data` at JSON path `at` of `source` (`PerfFormatError` when a member
        is missing or of the wrong type)."""
        if not isinstance(data, dict):
            raise _fail(source, at, f"{_shown(data)} is not an object")
        types_ = hints(cls)
        values: dict[str, Any] = {}
        names = set()
        for f in record_fields(cls):
            names.add(f.name)
            where = json_path(at, f.name)
            if f.name not in data:
                if is_required(f):
                    raise _fail(source, at, f"{f.name!r} is a required property")
                continue
            value = data[f.name]
            if value is None and not f.metadata.get("nullable"):
                raise _fail(source, where, f"null is not {_describe(_present(types_[f.name]))}")
            values[f.name] = decode(types_[f.name], value, source, where)
            if value is not None:
                _check(f.metadata, values[f.name], source, where)
        extra = {}
        for key, value in data.items():
            if key not in names:
                hint = Any if cls.EXTRA is None else cls.EXTRA
                extra[key] = decode(hint, value, source, json_path(at, key))
                _check(cls.EXTRA_MEMBER, extra[key], source, json_path(at, key))
        return cls(**values, extra=extra, keys=tuple(data))

    @classmethod
    def from_json(cls, data: object, source: str = "document") -> Self:
        """The record of parsed JSON `data` from `source` (named in errors)."""
        return cls.read(data, source, "$")

    def to_json(self) -> dict[str, Any]:
        """The JSON object, members in the order they were read (see the module docstring)."""
        present: dict[str, Any] = {}
        for f in record_fields(type(self)):
            value = getattr(self, f.name)
            if value is None and not (f.metadata.get("nullable")
                                      and (not self.keys or f.name in self.keys)):
                continue
            present[f.name] = encode(value)
        present.update(copy.deepcopy(self.extra))
        order = [k for k in self.keys if k in present]
        order += [k for k in present if k not in self.keys]
        return {k: present[k] for k in order}
