"""The JSON schema (draft 2020-12) of a document, built from its root record.

`document_schema` walks a root record (`fusionspec.conformance.records.record.Record`): each
record's fields, their types and metadata (`fusionspec.conformance.records.fields.member`)
become the properties of one object schema, a record with a `Record.DEF` name one definition
under ``$defs`` that its uses refer to. Unions are written as a list of types where each
choice is a bare type, else as ``oneOf`` (the choices never overlap: null, a list, a string,
records told apart by their ``what``), which the quick checker of results documents knows
(`fusionspec.conformance.grade.schema_check`). A test holds each shipped schema equal to the
one its records give; ``python -m fusionspec.conformance.schemas`` writes them again.
"""

from __future__ import annotations

import json
import types
from collections.abc import Mapping
from typing import Any, Union, get_args, get_origin

from .fields import LEAF_KEYS, slots
from .record import Record

__all__ = ["document_schema", "schema_text", "DIALECT"]

DIALECT = "https://json-schema.org/draft/2020-12/schema"
_TYPES = {str: "string", int: "integer", float: "number", bool: "boolean",
          type(None): "null"}
#: The annotations of a root record's `Record.SCHEMA` that head the schema.
_HEAD = ("$id", "title", "description")


def _member(hint: Any, meta: Mapping[str, Any], nullable: bool, defs: dict[str, Any]
            ) -> dict[str, Any]:
    """The schema of a member of type `hint` with metadata `meta`."""
    if "const" in meta:
        return {"const": meta["const"]}
    if "enum" in meta:
        return {"enum": list(meta["enum"])}
    choices: list[Any] = [hint]
    if get_origin(hint) in (Union, types.UnionType):
        choices = [c for c in get_args(hint) if c is not type(None)]
    if nullable:
        choices.append(type(None))
    leaf = {k: v for k, v in meta.items() if k in LEAF_KEYS}
    if len(choices) == 1:
        found = _single(choices[0], meta, defs)
    elif all(c in _TYPES for c in choices):
        found = {"type": [_TYPES[c] for c in choices], **leaf}
    else:
        options = [_single(c, meta, defs) for c in choices]
        if all(set(o) == {"type"} for o in options):
            found = {"type": [o["type"] for o in options]}
        else:
            found = {"oneOf": options}
    if "pattern" in meta:
        found["pattern"] = meta["pattern"]
    return found


def _single(hint: Any, meta: Mapping[str, Any], defs: dict[str, Any]) -> dict[str, Any]:
    origin = get_origin(hint)
    leaf = {k: v for k, v in meta.items() if k in LEAF_KEYS}
    if hint is Any:
        return {}
    if isinstance(hint, type) and issubclass(hint, Record):
        return _record(hint, defs)
    if origin in (list, tuple):
        return {"type": "array", "items": _member(get_args(hint)[0], leaf, False, defs)}
    if origin is dict:
        found: dict[str, Any] = {"type": "object"}
        if meta.get("with_keys"):
            found["required"] = list(meta["with_keys"])
        if meta.get("key_enum") is not None:
            found["propertyNames"] = {"enum": list(meta["key_enum"])}
        values = _member(get_args(hint)[1], leaf, False, defs)
        if values:
            found["additionalProperties"] = values
        return found
    if hint is type(None):
        return {"type": "null"}
    return {"type": _TYPES[hint], **leaf}


def _record(cls: type[Record], defs: dict[str, Any]) -> dict[str, Any]:
    """A reference to the record's definition, or its schema inline."""
    if cls.DEF is None:
        return _object(cls, defs)
    if cls.DEF not in defs:
        defs[cls.DEF] = {}  # taken before it is built: a record may hold itself
        defs[cls.DEF] = _object(cls, defs)
    return {"$ref": f"#/$defs/{cls.DEF}"}


def _object(cls: type[Record], defs: dict[str, Any]) -> dict[str, Any]:
    members = slots(cls)
    found: dict[str, Any] = {"type": "object"}
    required = [s.name for s in members if s.required]
    properties = {s.name: _member(s.hint, s.meta, s.nullable, defs) for s in members}
    if cls.WHAT:
        required.insert(0, "what")
        properties = {"what": {"const": cls.WHAT}, **properties}
    if required:
        found["required"] = required
    found["properties"] = properties
    if cls.EXTRA is not None:
        found["additionalProperties"] = _member(cls.EXTRA, cls.EXTRA_MEMBER, False, defs)
    if cls.__doc__:
        found["description"] = " ".join(cls.__doc__.split())
    found.update(cls.SCHEMA)
    return found


def document_schema(root: type[Record]) -> dict[str, Any]:
    """The JSON schema of a document whose root record is `root` (see the module
    docstring)."""
    defs: dict[str, Any] = {}
    body = _object(root, defs)
    head = {k: body.pop(k) for k in _HEAD if k in body}
    return {"$schema": DIALECT, **head, **body, "$defs": defs}


def schema_text(root: type[Record]) -> str:
    """The schema of `root` as the package ships it."""
    return json.dumps(document_schema(root), indent=2) + "\n"
