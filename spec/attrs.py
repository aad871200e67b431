"""Reading an op's attribute values: the value the op gives, else its op schema's default.

The op schemas (`fusionspec.spec.opschemas`) are the one place an attribute's default is
written. Validation fills the defaults into every op of a finalized graph; code that may also
meet ops before that (generators composing graphs, shape inference on probe ops, partitions
built by hand) reads through `attr_value` (or `attr_value_in`, for attributes of an op still
being composed), so it never needs a default of its own. An attribute the op leaves out and the
schema gives no default for raises `MissingAttributeError`. Code reading an optional attribute
without a default asks ``op.attrs.get(name)`` and handles None; code walking every attribute of
a schema uses `attr_value_or_none`.
"""

from __future__ import annotations

from collections.abc import Mapping

from .errors import MissingAttributeError
from .ir import AttrValue, Op
from .schema import AttrSpec, OpSchema

__all__ = ["attr_value", "attr_value_in", "attr_value_or_none", "install_schemas"]

#: The op schemas by kind. Shape inference reads attributes through this module and the
#: schemas are built from shape inference, so the table cannot be imported here; the schema
#: module installs it when it is itself imported (before anything can read an attribute).
_SCHEMAS: dict[str, OpSchema] = {}


def install_schemas(schemas: Mapping[str, OpSchema]) -> None:
    """Make `schemas` the table defaults are read from (`fusionspec.spec.opschemas` does)."""
    _SCHEMAS.clear()
    _SCHEMAS.update(schemas)


def attr_value(op: Op, name: str) -> AttrValue:
    """Attribute `name` of `op` as given, else the default the schema of `op.kind` gives it;
    `MissingAttributeError` (naming the kind, the op id and the attribute) when it has none."""
    return attr_value_in(op.kind, op.attrs, name, op_id=op.id)


def attr_value_or_none(op: Op, name: str) -> AttrValue | None:
    """As `attr_value`, but None for an attribute the schema names and gives no default (a
    required one left out, an optional one without a default), for code that walks every
    attribute of a schema and skips the unset ones. An attribute the schema does not name, or
    a kind without a schema, still raises `MissingAttributeError`."""
    if name in op.attrs:
        return op.attrs[name]
    spec = _spec(op.kind, name, op.id)
    return spec.default


def attr_value_in(kind: str, attrs: Mapping[str, AttrValue], name: str, *,
                  op_id: int | None = None) -> AttrValue:
    """Attribute `name` of an op of `kind` whose attributes so far are `attrs` (for graphs
    still being composed); as `attr_value` otherwise."""
    if name in attrs:
        return attrs[name]
    spec = _spec(kind, name, op_id)
    if spec.default is None:
        why = "required" if spec.required else "optional without a default"
        raise MissingAttributeError(f"not given, and the schema has no default for it "
                                    f"(it is {why})", op_kind=kind, op_id=op_id, attribute=name)
    return spec.default


def _spec(kind: str, name: str, op_id: int | None) -> AttrSpec:
    schema = _SCHEMAS.get(kind)
    if schema is None:
        raise MissingAttributeError(f"not given, and {kind} has no op schema to give a default",
                                    op_kind=kind, op_id=op_id, attribute=name)
    spec = schema.attr_spec(name)
    if spec is None:
        known = ", ".join(a.name for a in schema.attrs) or "none"
        raise MissingAttributeError(f"not given, and {kind} has no such attribute (it has: "
                                    f"{known})", op_kind=kind, op_id=op_id, attribute=name)
    return spec
