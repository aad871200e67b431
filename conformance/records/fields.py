"""What a record's fields declare: each field of a `fusionspec.conformance.records.record.Record`
is one member of its JSON object, described by the field's type and its metadata.

The type says what the member holds: ``str``, ``int``, ``float``, ``bool``, ``list[T]`` or
``tuple[T, ...]`` for an array, ``dict[str, T]`` for an object of any keys, another record,
``Any`` for any JSON value, and unions of these (``X | None`` for a member that may be left
out). The metadata (`member`) says what the schema says beyond the type: a minimum, an enum
or a constant, a pattern, whether JSON ``null`` is a value of its own, whether the member is
required although the field has a default, and for a ``dict`` member the keys it must hold or
may hold. `Slot` is a field worked out once per record: its name, type and metadata, and what
reading and writing it take.
"""

from __future__ import annotations

import dataclasses
import types
from collections.abc import Mapping
from typing import Any, Union, get_args, get_origin, get_type_hints

__all__ = ["member", "Slot", "slots", "record_fields", "json_path", "describe", "present",
           "admits_none", "shown", "LEAF_KEYS"]

#: The metadata a container hands on to its items (a minimum holds for every number in it).
LEAF_KEYS = ("minimum",)
#: Fields every record may have that are not members of its JSON object.
_NOT_MEMBERS = ("extra", "keys")


def member(*, minimum: float | None = None, enum: tuple[str, ...] | None = None,
           const: object = None, pattern: str | None = None, nullable: bool = False,
           required: bool = False, with_keys: tuple[str, ...] = (),
           key_enum: tuple[str, ...] | None = None) -> dict[str, Any]:
    """The metadata of a field (`dataclasses.field(metadata=member(...))`): what its schema
    says beyond its type. `required`: the member must be there although the field has a
    default (a constant always must); `with_keys`: the keys a ``dict`` member must hold;
    `key_enum`: the only keys it may hold."""
    found: dict[str, Any] = {"minimum": minimum, "enum": enum, "const": const,
                             "pattern": pattern, "key_enum": key_enum}
    found = {k: v for k, v in found.items() if v is not None}
    if nullable:
        found["nullable"] = True
    if required:
        found["required"] = True
    if with_keys:
        found["with_keys"] = with_keys
    return found


def json_path(at: str, key: object) -> str:
    """The JSON path of member `key` (or item, for an int) of the value at `at`."""
    return f"{at}[{key}]" if isinstance(key, int) else f"{at}.{key}"


def admits_none(hint: Any) -> bool:
    return get_origin(hint) in (Union, types.UnionType) and type(None) in get_args(hint)


def present(hint: Any) -> Any:
    """The type of an optional member when it is there (`hint` without None)."""
    if admits_none(hint):
        choices = [c for c in get_args(hint) if c is not type(None)]
        if len(choices) == 1:
            return choices[0]
        return Union[tuple(choices)]  # noqa: UP007 - built from a tuple of types
    return hint


_WORDS = {str: "a string", int: "an integer", float: "a number", bool: "true or false"}


def describe(hint: Any) -> str:
    """What a value of type `hint` is, in words."""
    origin = get_origin(hint)
    if origin in (Union, types.UnionType):
        words = dict.fromkeys(describe(a) for a in get_args(hint))  # records alike: once
        return " or ".join(words)
    if hint is type(None):
        return "null"
    if hint is Any:
        return "a JSON value"
    if origin is dict or (isinstance(hint, type) and dataclasses.is_dataclass(hint)):
        return "an object"
    if origin in (list, tuple):
        return "an array"
    return _WORDS.get(hint, str(hint))


def shown(value: object) -> str:
    """`value` as a message shows it: as JSON writes a scalar, clipped."""
    if value is None or isinstance(value, bool):
        return {None: "null", True: "true", False: "false"}[value]
    text = repr(value)
    return text if len(text) <= 80 else text[:80] + "..."


@dataclasses.dataclass(frozen=True)
class Slot:
    """One field of a record as reading and writing it take it: `has_default` (the member
    may be left out), `required` (the schema requires it), `nullable` (JSON null is a value
    of its own), `writes_null` (None is written as null rather than left out)."""

    name: str
    hint: Any
    meta: Mapping[str, Any]
    has_default: bool
    required: bool
    nullable: bool
    writes_null: bool


def record_fields(cls: type) -> tuple[dataclasses.Field[Any], ...]:
    """The fields of a record that are members of its JSON object."""
    return tuple(f for f in dataclasses.fields(cls) if f.name not in _NOT_MEMBERS)


_SLOTS: dict[type, tuple[Slot, ...]] = {}


def slots(cls: type) -> tuple[Slot, ...]:
    """The members of record `cls`, worked out once per record."""
    found = _SLOTS.get(cls)
    if found is None:
        found = _SLOTS[cls] = _work_out(cls)
    return found


def _work_out(cls: type) -> tuple[Slot, ...]:
    hints = get_type_hints(cls)
    omitted: tuple[str, ...] = getattr(cls, "OMIT_NONE", ())
    nullable_optionals = bool(getattr(cls, "NULLABLE", False))
    out = []
    for f in record_fields(cls):
        hint = hints[f.name]
        has_default = not (f.default is dataclasses.MISSING
                           and f.default_factory is dataclasses.MISSING)
        nullable = bool(f.metadata.get("nullable")) or (nullable_optionals
                                                        and admits_none(hint))
        out.append(Slot(
            name=f.name, hint=hint, meta=f.metadata, has_default=has_default,
            required=not has_default or "const" in f.metadata
            or bool(f.metadata.get("required")),
            nullable=nullable,
            writes_null=nullable and f.name not in omitted and "*" not in omitted))
    return tuple(out)
