"""The JSON schema of a verdict's details and of a failure's replay, generated from their
records (`fusionspec.conformance.grade.details`, `ReplayRecord`): each record's fields, with
their types, become one definition of ``results.schema.json``, so the schema cannot drift from
what the reader reads.

`generated_definitions()` gives those definitions; a test checks that the shipped
``results.schema.json`` holds exactly them, and ``python -m
fusionspec.conformance.grade.schema_gen`` writes them into it after a record changes.
"""

from __future__ import annotations

import json
import types
import typing
from dataclasses import MISSING, fields, is_dataclass
from importlib import resources
from pathlib import Path
from typing import Any

from .details import DETAIL_RECORDS, FACT_KINDS
from .document import ReplayRecord

__all__ = ["GENERATED", "generated_definitions", "write_schema", "SCHEMA_FILE"]

SCHEMA_FILE = "results.schema.json"

#: Definition name -> record, for every definition this module generates.
GENERATED: dict[str, type] = {**DETAIL_RECORDS, "replay": ReplayRecord}
_NAMES = {cls: name for name, cls in GENERATED.items()}

_SCALARS: dict[object, str] = {str: "string", int: "integer", float: "number", bool: "boolean"}


def _schema_of(hint: object) -> dict[str, Any]:
    """The JSON schema of a field whose type is `hint`."""
    if hint is Any or hint is object:
        return {}
    if hint is type(None):
        return {"type": "null"}
    if hint in _SCALARS:
        return {"type": _SCALARS[hint]}
    if isinstance(hint, type) and hint in _NAMES:
        return {"$ref": f"#/$defs/{_NAMES[hint]}"}
    origin = typing.get_origin(hint)
    args = typing.get_args(hint)
    if origin in (types.UnionType, typing.Union):
        kinds = set(FACT_KINDS.values())
        if kinds <= set(args):  # any kind of fact: the one definition that says which
            rest = [a for a in args if a not in kinds]
            return _union([{"$ref": "#/$defs/facts"}, *(_schema_of(a) for a in rest)])
        return _union([_schema_of(a) for a in args])
    if origin is list:
        return {"type": "array", "items": _schema_of(args[0])}
    if origin is dict:
        values = _schema_of(args[1])
        return {"type": "object", **({"additionalProperties": values} if values else {})}
    raise TypeError(f"no JSON schema for the field type {hint!r}")


def _union(options: list[dict[str, Any]]) -> dict[str, Any]:
    """One schema for any of `options`: a list of types where each is a bare type, else
    ``oneOf`` (the options never overlap: null, a list, a string, records told apart)."""
    if all(set(o) == {"type"} and isinstance(o["type"], str) for o in options):
        return {"type": [o["type"] for o in options]}
    return {"oneOf": options}


def _definition(record: type) -> dict[str, Any]:
    assert is_dataclass(record)
    hints = typing.get_type_hints(record)
    properties: dict[str, Any] = {}
    required: list[str] = []
    for f in fields(record):
        if f.name == "extra":
            continue
        properties[f.name] = _schema_of(hints[f.name])
        if f.default is MISSING and f.default_factory is MISSING:
            required.append(f.name)
    what = getattr(record, "WHAT", "")
    if what:
        properties = {"what": {"const": what}, **properties}
        required.insert(0, "what")
    out: dict[str, Any] = {"type": "object"}
    if required:
        out["required"] = required
    out["properties"] = properties
    if record.__doc__:
        out["description"] = " ".join(record.__doc__.split())
    return out


def generated_definitions() -> dict[str, dict[str, Any]]:
    """Every generated definition by name; ``facts`` is any one kind of fact, by ``what``."""
    found = {name: _definition(cls) for name, cls in GENERATED.items()}
    found["facts"] = {"oneOf": [{"$ref": f"#/$defs/facts_{kind}"} for kind in FACT_KINDS]}
    return found


def _with_definitions(schema: dict[str, Any]) -> dict[str, Any]:
    defs = {k: v for k, v in schema["$defs"].items()
            if k not in GENERATED and k != "facts"}
    return {**schema, "$defs": {**defs, **generated_definitions()}}


def write_schema(path: Path) -> None:
    """Write the generated definitions into the schema file at `path`."""
    schema = json.loads(path.read_text(encoding="utf-8"))
    path.write_text(json.dumps(_with_definitions(schema), indent=2) + "\n", encoding="utf-8")


if __name__ == "__main__":  # pragma: no cover - a maintainer's command
    with resources.as_file(resources.files(__package__).joinpath(SCHEMA_FILE)) as file:
        write_schema(Path(file))
