"""A fast yes/no check of a JSON document against a JSON Schema (draft 2020-12), for the
keywords `results.schema.json` uses.

Checking a results document with jsonschema's validator walks every member through its generic
machinery (a few thousand verdict lines take seconds); a document read is almost always valid,
and then only the answer is wanted, not the error. `compile_schema` turns a schema into one
predicate made of plain closures that gives the same answer as jsonschema's
``Draft202012Validator(schema).is_valid`` for every instance: each keyword below is checked
exactly as jsonschema checks it (the same type rules, an integer-valued float being an
``integer``, ``minimum`` ignoring what is not a number, a ``oneOf`` needing exactly one match).
A schema with any other keyword is `Unsupported`, so a schema that grows a keyword this module
does not know is never half checked: the caller then uses jsonschema alone. The reader of a
results document uses the predicate first and asks jsonschema for the error message only when
the answer is no (`fusionspec.conformance.grade.results`).

Supported: ``type``, ``required``, ``properties``, ``additionalProperties``, ``propertyNames``,
``items`` (without ``prefixItems``), ``enum`` and ``const`` of strings, ``minimum``,
``pattern``, ``oneOf``, ``$ref`` to ``#/$defs/<name>``, boolean schemas, and the annotations
(``$schema``, ``$id``, ``$defs``, ``$comment``, ``title``, ``description``).
"""

from __future__ import annotations

import numbers
import re
from collections.abc import Callable, Mapping
from typing import Any

__all__ = ["Predicate", "Unsupported", "compile_schema"]

#: Whether an instance is valid.
Predicate = Callable[[Any], bool]

_ANNOTATIONS = frozenset({"$schema", "$id", "$defs", "$comment", "title", "description"})
_DEFS = "#/$defs/"


class Unsupported(ValueError):
    """A schema with a keyword (or a form of one) this module does not check."""


def _is_integer(value: object) -> bool:
    if isinstance(value, bool):
        return False
    return isinstance(value, int) or (isinstance(value, float) and value.is_integer())


def _is_number(value: object) -> bool:
    kind = type(value)
    if kind is int or kind is float:  # the usual answer, without an ABC's isinstance
        return True
    return not isinstance(value, bool) and isinstance(value, numbers.Number)


#: jsonschema's draft 2020-12 type checker, type by type.
_TYPES: Mapping[str, Predicate] = {
    "object": lambda v: isinstance(v, dict),
    "array": lambda v: isinstance(v, list),
    "string": lambda v: isinstance(v, str),
    "boolean": lambda v: isinstance(v, bool),
    "null": lambda v: v is None,
    "integer": _is_integer,
    "number": _is_number,
}


def compile_schema(schema: Mapping[str, Any]) -> Predicate:
    """The predicate of `schema` (the root; its ``$defs`` are what ``$ref`` names);
    `Unsupported` when it uses anything the module docstring does not list."""
    defs_data = schema.get("$defs", {})
    if not isinstance(defs_data, Mapping):
        raise Unsupported("$defs is not an object")
    defs: dict[str, Predicate] = {}
    for name, sub in defs_data.items():
        defs[name] = _compile(sub, defs_data, defs)
    return _compile(schema, defs_data, defs)


def _compile(schema: object, defs_data: Mapping[str, Any], defs: dict[str, Predicate]
             ) -> Predicate:
    if schema is True:
        return lambda v: True
    if schema is False:
        return lambda v: False
    if not isinstance(schema, Mapping):
        raise Unsupported(f"a schema is {type(schema).__name__}, not an object")
    checks: list[Predicate] = []
    for keyword, value in schema.items():
        if keyword in _ANNOTATIONS:
            continue
        checks.append(_keyword(keyword, value, schema, defs_data, defs))
    if not checks:
        return lambda v: True
    if len(checks) == 1:
        return checks[0]
    ordered = tuple(checks)
    return lambda v: all(check(v) for check in ordered)


def _keyword(keyword: str, value: Any, schema: Mapping[str, Any],
             defs_data: Mapping[str, Any], defs: dict[str, Predicate]) -> Predicate:
    """The predicate of one keyword of `schema`."""
    def sub(part: object) -> Predicate:
        return _compile(part, defs_data, defs)

    if keyword == "type":
        names = [value] if isinstance(value, str) else value
        if not isinstance(names, list) or not names or any(n not in _TYPES for n in names):
            raise Unsupported(f"type {value!r}")
        tests = tuple(_TYPES[n] for n in names)
        return tests[0] if len(tests) == 1 else (lambda v: any(t(v) for t in tests))
    if keyword == "required":
        if not isinstance(value, list) or not all(isinstance(k, str) for k in value):
            raise Unsupported(f"required {value!r}")
        keys = tuple(value)
        return lambda v: not isinstance(v, dict) or all(k in v for k in keys)
    if keyword == "properties":
        if not isinstance(value, Mapping):
            raise Unsupported("properties is not an object")
        props = tuple((name, sub(part)) for name, part in value.items())

        def properties(v: Any) -> bool:
            if isinstance(v, dict):
                for name, check in props:
                    if name in v and not check(v[name]):
                        return False
            return True
        return properties
    if keyword == "additionalProperties":
        if "patternProperties" in schema:
            raise Unsupported("patternProperties")
        known = frozenset(schema.get("properties", {}))
        rest = sub(value)

        def additional(v: Any) -> bool:
            if isinstance(v, dict):
                for key, item in v.items():
                    if key not in known and not rest(item):
                        return False
            return True
        return additional
    if keyword == "propertyNames":
        names_ok = sub(value)
        return lambda v: not isinstance(v, dict) or all(names_ok(key) for key in v)
    if keyword == "items":
        if "prefixItems" in schema:
            raise Unsupported("prefixItems")
        each = sub(value)

        def items(v: Any) -> bool:
            if isinstance(v, list):
                for item in v:
                    if not each(item):
                        return False
            return True
        return items
    if keyword in ("enum", "const"):
        allowed = value if keyword == "enum" else [value]
        if not isinstance(allowed, list) or not all(isinstance(a, str) for a in allowed):
            raise Unsupported(f"{keyword} of other than strings")
        # jsonschema compares a string with a string only, by equality.
        strings = frozenset(allowed)
        return lambda v: isinstance(v, str) and v in strings
    if keyword == "minimum":
        if not _is_number(value):
            raise Unsupported(f"minimum {value!r}")
        bound = value
        return lambda v: not _is_number(v) or not v < bound
    if keyword == "pattern":
        if not isinstance(value, str):
            raise Unsupported(f"pattern {value!r}")
        regex = re.compile(value)
        return lambda v: not isinstance(v, str) or regex.search(v) is not None
    if keyword == "oneOf":
        if not isinstance(value, list) or not value:
            raise Unsupported("oneOf is not a list of schemas")
        options = tuple(sub(part) for part in value)
        return lambda v: sum(1 for option in options if option(v)) == 1
    if keyword == "$ref":
        if not isinstance(value, str) or not value.startswith(_DEFS) \
                or value[len(_DEFS):] not in defs_data:
            raise Unsupported(f"$ref {value!r}")
        name = value[len(_DEFS):]
        # Looked up when used: a definition may refer to one compiled after it.
        return lambda v: defs[name](v)
    raise Unsupported(f"keyword {keyword!r}")
