"""The JSON schema of the performance document, built from its records.

`perf_schema` walks the records of `fusionspec.conformance.perf.records` (their fields, the
fields' types and metadata) and gives the JSON schema (draft 2020-12) that ``perf.schema.json``
ships, so that the schema and the reader cannot drift apart: a test holds the shipped file
equal to the generated one. Run this module to write the file again after changing a record::

    python -m fusionspec.conformance.perf.schema
"""

from __future__ import annotations

import json
import types
from collections.abc import Mapping
from pathlib import Path
from typing import Any, Union, get_args, get_origin

from .fields import Record, hints, is_required, record_fields
from .records import PerfDocument

__all__ = ["perf_schema", "schema_text", "SCHEMA_PATH"]

#: Where the package keeps the schema.
SCHEMA_PATH = Path(__file__).with_name("perf.schema.json")
_DIALECT = "https://json-schema.org/draft/2020-12/schema"
_TYPES = {str: "string", int: "integer", float: "number", bool: "boolean"}


def _type(hint: Any, meta: Mapping[str, Any], defs: dict[str, Any]) -> dict[str, Any]:
    """The schema of a member of type `hint` with metadata `meta`."""
    if "const" in meta:
        return {"const": meta["const"]}
    if "enum" in meta:
        return {"enum": list(meta["enum"])}
    origin = get_origin(hint)
    choices: list[Any] = [hint]
    if origin in (Union, types.UnionType):
        choices = [c for c in get_args(hint) if c is not type(None)]
    if len(choices) == 1 and not meta.get("nullable"):
        found = _single(choices[0], meta, defs)
    else:
        names = [_TYPES[c] for c in choices] + (["null"] if meta.get("nullable") else [])
        found = {"type": names}
        if "minimum" in meta:
            found["minimum"] = meta["minimum"]
    if "pattern" in meta:
        found["pattern"] = meta["pattern"]
    return found


def _single(hint: Any, meta: Mapping[str, Any], defs: dict[str, Any]) -> dict[str, Any]:
    origin = get_origin(hint)
    items = {k: v for k, v in meta.items() if k == "minimum"}
    if isinstance(hint, type) and issubclass(hint, Record):
        return _record(hint, defs)
    if origin is tuple:
        return {"type": "array", "items": _type(get_args(hint)[0], items, defs)}
    if origin is dict:
        found: dict[str, Any] = {"type": "object"}
        if meta.get("required"):
            found["required"] = list(meta["required"])
        found["additionalProperties"] = _type(get_args(hint)[1], items, defs)
        return found
    return {"type": _TYPES[hint], **items}


def _record(cls: type[Record], defs: dict[str, Any]) -> dict[str, Any]:
    """A reference to the record's definition, or its schema inline."""
    if cls.DEF is None:
        return _object(cls, defs)
    if cls.DEF not in defs:
        defs[cls.DEF] = {}  # taken before it is built: a record may hold itself
        defs[cls.DEF] = _object(cls, defs)
    return {"$ref": f"#/$defs/{cls.DEF}"}


def _object(cls: type[Record], defs: dict[str, Any]) -> dict[str, Any]:
    fields = record_fields(cls)
    found: dict[str, Any] = {"type": "object"}
    required = [f.name for f in fields if is_required(f)]
    if required:
        found["required"] = required
    found["properties"] = {f.name: _type(hints(cls)[f.name], f.metadata, defs)
                           for f in fields}
    if cls.EXTRA is not None:
        found["additionalProperties"] = _type(cls.EXTRA, cls.EXTRA_MEMBER, defs)
    found.update(getattr(cls, "SCHEMA", {}))
    return found


def perf_schema() -> dict[str, Any]:
    """The JSON schema of a performance document (see the module docstring)."""
    defs: dict[str, Any] = {}
    body = _object(PerfDocument, defs)
    head: dict[str, Any] = {k: body.pop(k) for k in ("title", "description") if k in body}
    return {"$schema": _DIALECT, **head, **body, "$defs": defs}


def schema_text() -> str:
    """The schema as the package ships it."""
    return json.dumps(perf_schema(), indent=2) + "\n"


if __name__ == "__main__":
    SCHEMA_PATH.write_text(schema_text(), encoding="utf-8")
    print(f"wrote {SCHEMA_PATH}")
