"""oneDNN's graph JSON format: read it into a `Graph`, write a `Graph` back, without loss.

This is the format benchdnn's graph driver reads (``--case=file.json``) and ``ONEDNN_GRAPH_DUMP``
writes::

    {"version": "3.10.0", "engine_kind": "cpu", "fpmath_mode": "strict",
     "fpmath_mode_apply_to_int": "false", "input_ports": [0, 1], "output_ports": [2],
     "graph": [{"id": 0, "name": "relu", "kind": "ReLU", "attrs": {},
                "inputs": [{"id": 0, "dtype": "f32", "shape": [2, 8], "stride": [8, 1],
                            "layout_type": "strided", "property_type": "undef"}], ...}]}

Attributes are ``{"type": T, "value": V}`` with T one of s64, s64[], f32, f32[], string, bool;
values keep their declared type (an f32 written as 1 reads as 1.0). When writing, the type comes
from the op schema where the kind has one (so an int given for an f32 attribute is written as an
f32 number), else from the Python value. oneDNN writes a bool as 0/1 and its reader accepts
nothing else, so `dumps` does the same; `loads` accepts 0/1 and true/false.

An unknown size is INT64_MIN (older versions wrote -1): every negative dim reads as
`UNKNOWN_DIM`, and a list holding a single unknown entry means "not known at all" (shape or
strides None), which is how oneDNN writes any shape it has not fully inferred. The format thus
cannot tell a 1-D shape whose only dim is unknown from an unknown shape: that one reads back as
None. Everything else round-trips: ``loads(dumps(g)) == g``.

Loading checks the document's form, not op semantics (that is `Graph.finalize()`): missing or
unknown keys, wrong JSON types, unknown dtypes/layouts/properties/attribute types, values that
do not fit their declared type or range, duplicate op ids and ports naming tensors no op uses
all raise `JsonFormatError` with the JSON path of the problem, and nothing else is raised for any
input text.
"""

from __future__ import annotations

import json
import math
import re
from collections.abc import Callable
from enum import StrEnum
from pathlib import Path
from typing import Any, TypeVar

from .dtypes import DataType, parse_dtype
from .errors import JsonFormatError
from .files import atomic_write_text
from .graph import UNKNOWN_DIM, AttrValue, Graph, LayoutType, LogicalTensor, Op, PropertyType
from .opschemas import SCHEMAS
from .schema import AttrKind
from .text import clean_json

__all__ = ["load", "loads", "from_dict", "to_dict", "dumps", "dump", "typed_attr", "INT64_MIN"]

INT64_MIN = -(2**63)
INT64_MAX = 2**63 - 1
UINT64_MAX = 2**64 - 1
F32_MAX = 3.4028234663852886e38

_TOP_REQUIRED = ("version", "engine_kind", "fpmath_mode", "graph")
_TOP_OPTIONAL = ("fpmath_mode_apply_to_int", "input_ports", "output_ports")
_OP_REQUIRED = ("id", "name", "kind", "inputs", "outputs")
_OP_OPTIONAL = ("attrs",)  # benchdnn's own inputs include an op without it
_LT_REQUIRED = ("id", "dtype", "shape", "stride", "layout_type", "property_type")
_INLINE = 72  # longest object `dumps` keeps on one line
_VERSION = re.compile(r"[0-9]+\.[0-9]+\.[0-9]+")

E = TypeVar("E", bound=StrEnum)


class _Duplicated(dict[str, Any]):
    """A JSON object that named a key twice; `key` is the first repeated one."""

    key: str = ""


def _pairs_hook(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    keys = [k for k, _ in pairs]
    if len(set(keys)) == len(keys):
        return dict(pairs)
    out = _Duplicated(pairs)
    out.key = next(k for i, k in enumerate(keys) if k in keys[:i])
    return out


def _fail(path: str, message: str) -> JsonFormatError:
    return JsonFormatError(message, path=path)


def _member(path: str, key: str) -> str:
    if isinstance(key, str) and key.isidentifier():
        return f"{path}.{key}"
    return f"{path}[{json.dumps(str(key))}]"


def _show(value: object) -> str:
    """`value` for a message, cut short (a JSON integer may have thousands of digits)."""
    if isinstance(value, int) and not isinstance(value, bool) and abs(value) >= 10**30:
        return f"a {len(str(abs(value)))}-digit integer"
    text = repr(value)
    return text if len(text) <= 40 else text[:37] + "..."


def _type_name(value: object) -> str:
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "a boolean"
    if isinstance(value, int):
        return "an integer"
    if isinstance(value, float):
        return "a number"
    if isinstance(value, str):
        return "a string"
    if isinstance(value, list):
        return "an array"
    return "an object" if isinstance(value, dict) else type(value).__name__


# -- reading -----------------------------------------------------------------------------------

def _object(value: object, path: str, required: tuple[str, ...],
            optional: tuple[str, ...] = ()) -> dict[str, Any]:
    if not isinstance(value, dict):
        raise _fail(path, f"expected an object, got {_type_name(value)}")
    if isinstance(value, _Duplicated):
        raise _fail(_member(path, value.key), "key appears twice in the object")
    for key in value:
        if not isinstance(key, str):  # only a dict built in Python can have these
            raise _fail(path, f"object key {key!r} is not a string")
    for key in required:
        if key not in value:
            raise _fail(path, f"missing key {key!r}")
    for key in value:
        if key not in required and key not in optional:
            known = ", ".join(repr(k) for k in (*required, *optional))
            raise _fail(_member(path, key), f"unknown key (expected {known})")
    return value


def _list(value: object, path: str) -> list[Any]:
    if not isinstance(value, list):
        raise _fail(path, f"expected an array, got {_type_name(value)}")
    return value


def _string(value: object, path: str) -> str:
    if not isinstance(value, str):
        raise _fail(path, f"expected a string, got {_type_name(value)}")
    return value


def _integer(value: object, path: str, low: int = INT64_MIN, high: int = INT64_MAX) -> int:
    if not isinstance(value, int) or isinstance(value, bool):
        raise _fail(path, f"expected an integer, got {_type_name(value)}")
    if not low <= value <= high:
        raise _fail(path, f"{_show(value)} is outside [{low}, {high}]")
    return value


def _tensor_id(value: object, path: str) -> int:
    return _integer(value, path, 0, UINT64_MAX)


def _f32(value: object, path: str) -> float:
    if not isinstance(value, int | float) or isinstance(value, bool):
        raise _fail(path, f"expected a number, got {_type_name(value)}")
    try:
        number = float(value)
    except OverflowError:  # an integer beyond the float range
        number = math.inf
    if not math.isfinite(number) or abs(number) > F32_MAX:
        raise _fail(path, f"{_show(value)} is not a finite f32 value")
    return number


def _enum(cls: type[E], value: object, path: str, what: str) -> E:
    text = _string(value, path)
    try:
        return cls(text)
    except ValueError:
        known = ", ".join(m.value for m in cls)
        raise _fail(path, f"unknown {what} {text!r} (known: {known})") from None


def _dims(value: object, path: str) -> tuple[int, ...] | None:
    items = _list(value, path)
    dims = tuple(_integer(v, f"{path}[{i}]") for i, v in enumerate(items))
    if len(dims) == 1 and dims[0] < 0:
        return None
    return tuple(UNKNOWN_DIM if d < 0 else d for d in dims)


def _tensor(value: object, path: str) -> LogicalTensor:
    obj = _object(value, path, _LT_REQUIRED)
    try:
        dtype = parse_dtype(_string(obj["dtype"], f"{path}.dtype"))
    except ValueError as exc:
        raise _fail(f"{path}.dtype", str(exc)) from None
    return LogicalTensor(
        _tensor_id(obj["id"], f"{path}.id"), dtype, _dims(obj["shape"], f"{path}.shape"),
        _dims(obj["stride"], f"{path}.stride"),
        _enum(LayoutType, obj["layout_type"], f"{path}.layout_type", "layout type"),
        _enum(PropertyType, obj["property_type"], f"{path}.property_type", "property type"))


def _bool(value: object, path: str) -> bool:
    if isinstance(value, bool):
        return value
    if isinstance(value, int) and value in (0, 1):
        return bool(value)
    raise _fail(path, f"expected true, false, 0 or 1, got {_show(value)}")


_READERS: dict[AttrKind, Callable[[object, str], AttrValue]] = {
    AttrKind.s64: _integer,
    AttrKind.f32: _f32,
    AttrKind.string: _string,
    AttrKind.boolean: _bool,
    AttrKind.s64_list: lambda v, p: tuple(_integer(x, f"{p}[{i}]")
                                          for i, x in enumerate(_list(v, p))),
    AttrKind.f32_list: lambda v, p: tuple(_f32(x, f"{p}[{i}]")
                                          for i, x in enumerate(_list(v, p))),
}


def _attr(value: object, path: str) -> AttrValue:
    obj = _object(value, path, ("type", "value"))
    kind = _enum(AttrKind, obj["type"], f"{path}.type", "attribute type")
    return _READERS[kind](obj["value"], f"{path}.value")


def _op(value: object, path: str) -> Op:
    obj = _object(value, path, _OP_REQUIRED, _OP_OPTIONAL)
    op_id = _integer(obj["id"], f"{path}.id", 0, UINT64_MAX)
    attrs_path = f"{path}.attrs"
    raw_attrs = obj.get("attrs", {})
    if isinstance(raw_attrs, dict):  # every attribute name is allowed here
        _object(raw_attrs, attrs_path, (), tuple(raw_attrs))
    else:
        _object(raw_attrs, attrs_path, ())
    attrs = {name: _attr(v, _member(attrs_path, name)) for name, v in raw_attrs.items()}
    inputs = [_tensor(t, f"{path}.inputs[{i}]")
              for i, t in enumerate(_list(obj["inputs"], f"{path}.inputs"))]
    outputs = [_tensor(t, f"{path}.outputs[{i}]")
               for i, t in enumerate(_list(obj["outputs"], f"{path}.outputs"))]
    return Op(op_id, _string(obj["kind"], f"{path}.kind"), tuple(inputs), tuple(outputs),
              attrs, _string(obj["name"], f"{path}.name"))


def _ports(obj: dict[str, Any], key: str, known: set[int]) -> tuple[int, ...] | None:
    if key not in obj:
        return None
    path = f"$.{key}"
    ids = tuple(_tensor_id(v, f"{path}[{i}]") for i, v in enumerate(_list(obj[key], path)))
    for i, tid in enumerate(ids):
        if tid not in known:
            raise _fail(f"{path}[{i}]", f"tensor {tid} does not appear in the graph")
    return ids


def from_dict(obj: object, *, source: str | None = None) -> Graph:
    """Build a Graph from an already parsed JSON document (dicts, lists, numbers, strings)."""
    try:
        return _from_dict(obj)
    except JsonFormatError as exc:
        if source is None:
            raise
        raise JsonFormatError(exc.detail, path=exc.path, source=source) from None


def _from_dict(obj: object) -> Graph:
    top = _object(obj, "$", _TOP_REQUIRED, _TOP_OPTIONAL)
    version = _string(top["version"], "$.version")
    if not _VERSION.fullmatch(version):
        raise _fail("$.version", f"expected a version like \"3.0.0\", got {version!r}")
    apply_to_int: bool | None = None
    if "fpmath_mode_apply_to_int" in top:
        text = _string(top["fpmath_mode_apply_to_int"], "$.fpmath_mode_apply_to_int")
        if text not in ("true", "false"):
            raise _fail("$.fpmath_mode_apply_to_int", f"expected \"true\" or \"false\", "
                        f"got {text!r}")
        apply_to_int = text == "true"
    ops: list[Op] = []
    first_at: dict[int, int] = {}
    for i, raw in enumerate(_list(top["graph"], "$.graph")):
        op = _op(raw, f"$.graph[{i}]")
        if op.id in first_at:
            raise _fail(f"$.graph[{i}].id", f"op id {op.id} is already used by "
                        f"$.graph[{first_at[op.id]}]")
        first_at[op.id] = i
        ops.append(op)
    known = {t.id for op in ops for t in (*op.inputs, *op.outputs)}
    return Graph(tuple(ops), _string(top["engine_kind"], "$.engine_kind"),
                 _string(top["fpmath_mode"], "$.fpmath_mode"), apply_to_int,
                 _ports(top, "input_ports", known), _ports(top, "output_ports", known), version)


def loads(text: str | bytes, *, source: str | None = None) -> Graph:
    """Parse a oneDNN graph JSON document; `source` (a file name) prefixes error messages."""
    try:
        obj = clean_json(json.loads(text, object_pairs_hook=_pairs_hook))
    except json.JSONDecodeError as exc:
        raise JsonFormatError(f"invalid JSON at line {exc.lineno}, column {exc.colno}: "
                              f"{exc.msg}", path="$", source=source) from None
    except RecursionError:
        raise JsonFormatError("invalid JSON: nested too deeply", path="$",
                              source=source) from None
    except ValueError as exc:  # undecodable bytes, integers with too many digits
        raise JsonFormatError(f"invalid JSON: {exc}", path="$", source=source) from None
    return from_dict(obj, source=source)


def load(path: str | Path) -> Graph:
    """Read a oneDNN graph JSON file (OSError if it cannot be read, else JsonFormatError)."""
    return loads(Path(path).read_bytes(), source=str(path))


# -- writing -----------------------------------------------------------------------------------

def _dims_out(dims: tuple[int, ...] | None, path: str) -> list[int]:
    if dims is None:
        return [INT64_MIN]
    out: list[int] = []
    for i, d in enumerate(dims):
        if isinstance(d, bool) or not isinstance(d, int) or d > INT64_MAX:
            raise _fail(f"{path}[{i}]", f"{d!r} is not a dimension oneDNN can store")
        out.append(INT64_MIN if d < 0 else d)
    return out


def _id_out(value: object, path: str) -> int:
    if isinstance(value, bool) or not isinstance(value, int) or not 0 <= value <= UINT64_MAX:
        raise _fail(path, f"{value!r} is not an id oneDNN can store (0 to 2^64-1)")
    return value


def _enum_out(cls: type[E], value: object, path: str) -> str:
    try:
        if isinstance(value, str):
            return cls(value).value
    except ValueError:
        pass
    raise _fail(path, f"{value!r} is not a {cls.__name__}")


def _tensor_out(t: LogicalTensor, path: str) -> dict[str, Any]:
    return {"id": _id_out(t.id, f"{path}.id"),
            "dtype": _enum_out(DataType, t.dtype, f"{path}.dtype"),
            "shape": _dims_out(t.shape, f"{path}.shape"),
            "stride": _dims_out(t.strides, f"{path}.stride"),
            "layout_type": _enum_out(LayoutType, t.layout_type, f"{path}.layout_type"),
            "property_type": _enum_out(PropertyType, t.property_type, f"{path}.property_type")}


def _kind_of(value: object) -> AttrKind | None:
    for kind in (AttrKind.boolean, AttrKind.s64, AttrKind.f32, AttrKind.string,
                 AttrKind.s64_list, AttrKind.f32_list):
        if kind.accepts(value):
            return kind
    return None


def _attr_out(op_kind: str, name: str, value: object, path: str) -> dict[str, Any]:
    schema = SCHEMAS.get(op_kind)
    spec = schema.attr_spec(name) if schema is not None else None
    # The schema's kind keeps f32 attributes f32 even when given as ints; a value that does not
    # fit it is written as what it is, so finalize() can report the mismatch later.
    kind = spec.kind if spec is not None and spec.kind.accepts(value) else _kind_of(value)
    if kind is None:
        raise _fail(path, f"{value!r} is not an attribute value (int, float, str, bool or a "
                    "tuple of ints or floats)")
    if kind is AttrKind.boolean:
        written: object = int(bool(value))
    elif kind in (AttrKind.f32, AttrKind.s64, AttrKind.string):
        written = _READERS[kind](value, path)
    else:
        assert isinstance(value, tuple)
        written = list(_READERS[kind](list(value), path))  # type: ignore[arg-type]
    return {"type": kind.value, "value": written}


def typed_attr(op_kind: str, name: str, value: object) -> tuple[str, Any]:
    """The JSON type name (``s64``, ``f32[]``, ``bool`` ...) and written value of one attribute,
    typed as `to_dict` types it (by the op schema where it has one); JsonFormatError for a value
    that is no attribute value."""
    written = _attr_out(op_kind, name, value, f"$.attrs.{name}")
    return written["type"], written["value"]


def to_dict(graph: Graph) -> dict[str, Any]:
    """The JSON document of `graph` as plain dicts and lists (keys in oneDNN's order)."""
    if not isinstance(graph.format_version, str) or not _VERSION.fullmatch(graph.format_version):
        raise _fail("$.version", f"{graph.format_version!r} is not a version like \"3.0.0\"")
    doc: dict[str, Any] = {"version": graph.format_version, "engine_kind": graph.engine_kind,
                           "fpmath_mode": graph.fpmath_mode}
    if graph.fpmath_mode_apply_to_int is not None:
        doc["fpmath_mode_apply_to_int"] = "true" if graph.fpmath_mode_apply_to_int else "false"
    for key in ("input_ports", "output_ports"):
        ports = getattr(graph, key)
        if ports is not None:
            doc[key] = [_id_out(p, f"$.{key}[{i}]") for i, p in enumerate(ports)]
    ops: list[dict[str, Any]] = []
    for i, op in enumerate(graph.ops):
        path = f"$.graph[{i}]"
        ops.append({
            "id": _id_out(op.id, f"{path}.id"), "name": op.name, "kind": op.kind,
            "attrs": {name: _attr_out(op.kind, name, value, _member(f"{path}.attrs", name))
                      for name, value in op.attrs.items()},
            "inputs": [_tensor_out(t, f"{path}.inputs[{j}]") for j, t in enumerate(op.inputs)],
            "outputs": [_tensor_out(t, f"{path}.outputs[{j}]")
                        for j, t in enumerate(op.outputs)],
        })
    doc["graph"] = ops
    return doc


def _flat(value: object) -> bool:
    return not isinstance(value, dict | list) or (
        isinstance(value, list) and not any(isinstance(v, dict | list) for v in value))


def _render(value: object, indent: int, level: int) -> str:
    """JSON text with nested containers indented; lists of numbers, and short objects of such
    values (attributes), stay on one line."""
    if isinstance(value, dict) and value and all(_flat(v) for v in value.values()):
        line = json.dumps(value, separators=(", ", ": "), allow_nan=False)
        if len(line) <= _INLINE:
            return line
    if isinstance(value, dict) and value:
        pad = " " * (indent * (level + 1))
        items = [f"{pad}{json.dumps(k)}: {_render(v, indent, level + 1)}"
                 for k, v in value.items()]
        return "{\n" + ",\n".join(items) + "\n" + " " * (indent * level) + "}"
    if isinstance(value, list) and any(isinstance(v, dict | list) for v in value):
        pad = " " * (indent * (level + 1))
        items = [pad + _render(v, indent, level + 1) for v in value]
        return "[\n" + ",\n".join(items) + "\n" + " " * (indent * level) + "]"
    if isinstance(value, list):
        return "[" + ", ".join(json.dumps(v, allow_nan=False) for v in value) + "]"
    return json.dumps(value, allow_nan=False)


def dumps(graph: Graph, indent: int | None = 2) -> str:
    """`graph` as oneDNN graph JSON text; `indent=None` gives one compact line."""
    doc = to_dict(graph)
    if indent is None:
        return json.dumps(doc, separators=(",", ":"), allow_nan=False)
    return _render(doc, indent, 0) + "\n"


def dump(graph: Graph, path: str | Path, indent: int | None = 2) -> None:
    """Write `graph` to `path` as oneDNN graph JSON (atomically: a failed write leaves `path`
    as it was)."""
    atomic_write_text(path, dumps(graph, indent) + "\n")
