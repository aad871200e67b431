"""oneDNN graph JSON: lossless round trips, exact reading of the format, and typed errors only.

- a Hypothesis property: loads(dumps(g)) == g over generated graphs (every attribute kind,
  dtype, layout and property type, unknown dims and shapes, optional top-level keys);
- fuzzing: mutated valid documents either load or raise JsonFormatError, nothing else;
- hand-written malformed documents: the error names the JSON path of the problem.
"""

from __future__ import annotations

import copy
import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from fusionspec.spec import (
    OPAQUE_KINDS,
    SCHEMAS,
    UNKNOWN_DIM,
    AttrValue,
    DataType,
    Graph,
    JsonFormatError,
    LayoutType,
    LogicalTensor,
    Op,
    PropertyType,
)
from fusionspec.spec import onednn_json as oj

INT64_MIN, INT64_MAX = -(2**63), 2**63 - 1
FUZZ = settings(max_examples=100)

# -- strategies ---------------------------------------------------------------------------------

dims = st.one_of(st.just(UNKNOWN_DIM), st.integers(0, 64), st.integers(0, INT64_MAX))
# A single unknown dim is how the format spells "not known at all", so (-1,) reads back as None
# (see test_single_unknown_dim_means_unknown_shape); generate everything else.
dim_lists = st.one_of(st.none(), st.lists(dims, max_size=6).map(tuple)).filter(
    lambda d: d != (UNKNOWN_DIM,))
f32_values = st.floats(min_value=-3.4e38, max_value=3.4e38, allow_nan=False)
int64s = st.integers(INT64_MIN, INT64_MAX)
attr_values: st.SearchStrategy[AttrValue] = st.one_of(
    st.booleans(), int64s, f32_values, st.text(max_size=8),
    st.lists(int64s, max_size=4).map(tuple), st.lists(f32_values, max_size=4).map(tuple))
KINDS = sorted(SCHEMAS) + sorted(OPAQUE_KINDS) + ["NotAKind", ""]


@st.composite
def tensors(draw: st.DrawFn, ids: st.SearchStrategy[int]) -> LogicalTensor:
    return LogicalTensor(draw(ids), draw(st.sampled_from(DataType)), draw(dim_lists),
                         draw(dim_lists), draw(st.sampled_from(LayoutType)),
                         draw(st.sampled_from(PropertyType)))


@st.composite
def attrs_for(draw: st.DrawFn, kind: str) -> dict[str, AttrValue]:
    schema = SCHEMAS.get(kind)
    names = st.text(min_size=1, max_size=10)
    if schema is not None and schema.attrs:
        # schema names make the writer take the kind from the schema (f32 stays f32)
        names = st.one_of(st.sampled_from([a.name for a in schema.attrs]), names)
    raw = draw(st.dictionaries(names, attr_values, max_size=5))
    if schema is not None:
        for name, value in raw.items():
            spec = schema.attr_spec(name)
            # An int given for an f32 attribute is written as an f32 number: keep it exact.
            if spec is not None and spec.kind.value.startswith("f32") and (
                    isinstance(value, int) and not isinstance(value, bool)):
                raw[name] = value % 2**53
    return raw


@st.composite
def ops(draw: st.DrawFn, op_id: int) -> Op:
    kind = draw(st.sampled_from(KINDS))
    tensor_ids = st.integers(0, 12) | st.integers(0, 2**64 - 1)
    return Op(op_id, kind, tuple(draw(st.lists(tensors(tensor_ids), max_size=3))),
              tuple(draw(st.lists(tensors(tensor_ids), max_size=2))), draw(attrs_for(kind)),
              draw(st.text(max_size=12)))


@st.composite
def graphs(draw: st.DrawFn) -> Graph:
    op_ids = draw(st.lists(st.integers(0, 2**64 - 1), unique=True, max_size=5))
    the_ops = [draw(ops(i)) for i in op_ids]
    known = sorted({t.id for o in the_ops for t in (*o.inputs, *o.outputs)})
    ports = st.none() | (st.lists(st.sampled_from(known), max_size=4).map(tuple) if known
                         else st.just(()))
    version = draw(st.from_regex(r"[0-9]{1,3}\.[0-9]{1,3}\.[0-9]{1,3}", fullmatch=True))
    return Graph(tuple(the_ops), draw(st.sampled_from(["cpu", "gpu"]) | st.text(max_size=6)),
                 draw(st.sampled_from(["strict", "bf16", "any"]) | st.text(max_size=6)),
                 draw(st.none() | st.booleans()), draw(ports), draw(ports), version)


# -- round trips --------------------------------------------------------------------------------

@settings(max_examples=120)
@given(graphs())
def test_round_trip_is_lossless(graph: Graph) -> None:
    text = oj.dumps(graph)
    back = oj.loads(text)
    assert back == graph, f"round trip changed the graph:\n{text}"
    assert oj.loads(oj.dumps(graph, indent=None)) == graph, "compact round trip differs"
    assert oj.from_dict(json.loads(text)) == graph, "from_dict(json) differs from loads"


def test_dump_and_load_file(tmp_path: Path) -> None:
    graph = Graph((Op(0, "ReLU", (LogicalTensor(0, DataType.f32, (2, 3)),),
                      (LogicalTensor(1, DataType.f32, (2, 3)),)),))
    path = tmp_path / "relu.json"
    oj.dump(graph, path)
    assert oj.load(path) == graph, "load(dump(g)) differs from g"


def test_single_unknown_dim_means_unknown_shape() -> None:
    t = LogicalTensor(0, DataType.f32, (UNKNOWN_DIM,), (UNKNOWN_DIM,))
    back = oj.loads(oj.dumps(Graph((Op(0, "ReLU", (t,), (t,)),))))
    got = back.ops[0].inputs[0]
    assert (got.shape, got.strides) == (None, None), (
        f"[INT64_MIN] must read as unknown shape/strides, got {got.shape}/{got.strides}")


# -- reading the format exactly ------------------------------------------------------------------

def _doc(**top: Any) -> dict[str, Any]:
    """A small valid document: Clamp(t0) -> t1; keyword arguments replace top-level keys."""
    lt = {"dtype": "f32", "shape": [2, 3], "stride": [3, 1], "layout_type": "strided",
          "property_type": "undef"}
    doc: dict[str, Any] = {
        "version": "3.10.0", "engine_kind": "cpu", "fpmath_mode": "strict",
        "graph": [{"id": 5, "name": "clamp", "kind": "Clamp",
                   "attrs": {"min": {"type": "f32", "value": 0},
                             "max": {"type": "f32", "value": 6.5}},
                   "inputs": [{"id": 0, **lt}], "outputs": [{"id": 1, **lt}]}]}
    doc.update(top)
    return doc


def test_values_keep_their_declared_types() -> None:
    doc = _doc()
    doc["graph"][0]["attrs"].update({
        "flag": {"type": "bool", "value": 1}, "flag2": {"type": "bool", "value": False},
        "scales": {"type": "f32[]", "value": [1, 2.5]}, "axes": {"type": "s64[]", "value": []},
        "axis": {"type": "s64", "value": -1}, "mode": {"type": "string", "value": "x"}})
    attrs = dict(oj.from_dict(doc).ops[0].attrs)
    want: dict[str, Any] = {"min": 0.0, "max": 6.5, "flag": True, "flag2": False,
                            "scales": (1.0, 2.5), "axes": (), "axis": -1, "mode": "x"}
    assert attrs == want, f"attributes read as {attrs}"
    types = {k: type(v) for k, v in attrs.items()}
    assert types["min"] is float and types["flag"] is bool, f"declared types lost: {types}"
    scales = attrs["scales"]
    assert isinstance(scales, tuple) and all(type(v) is float for v in scales), (
        f"f32[] items must be floats, got {scales!r}")


def test_unknown_dims_and_top_level_keys() -> None:
    doc = _doc(fpmath_mode_apply_to_int="true", input_ports=[0], output_ports=[1],
               version="3.0.0")
    doc["graph"][0]["inputs"][0].update(shape=[INT64_MIN, 3], stride=[-1])
    doc["graph"][0]["outputs"][0].update(shape=[-1], stride=[INT64_MIN, INT64_MIN])
    graph = oj.from_dict(doc)
    src, dst = graph.ops[0].inputs[0], graph.ops[0].outputs[0]
    assert src.shape == (UNKNOWN_DIM, 3) and src.strides is None, f"src read as {src}"
    assert dst.shape is None and dst.strides == (UNKNOWN_DIM, UNKNOWN_DIM), f"dst read as {dst}"
    assert (graph.fpmath_mode_apply_to_int, graph.input_ports, graph.output_ports,
            graph.format_version) == (True, (0,), (1,), "3.0.0"), f"graph keys read as {graph}"
    written = oj.to_dict(graph)
    assert written["fpmath_mode_apply_to_int"] == "true", "apply_to_int is written as a string"
    assert written["graph"][0]["inputs"][0]["shape"] == [INT64_MIN, 3], "unknown dim -> INT64_MIN"


def test_dump_matches_onednn_conventions() -> None:
    graph = oj.from_dict(_doc())
    op = graph.ops[0]
    bools = Op(op.id, op.kind, op.inputs, op.outputs, {**op.attrs, "flag": True}, op.name)
    written = oj.to_dict(graph.replace_ops([bools]))
    attrs = written["graph"][0]["attrs"]
    assert attrs["min"] == {"type": "f32", "value": 0.0}, f"Clamp min written as {attrs['min']}"
    assert attrs["flag"] == {"type": "bool", "value": 1}, "oneDNN reads bools only as 0/1"
    assert list(written) == ["version", "engine_kind", "fpmath_mode", "graph"], (
        f"absent optional keys must stay absent, got {list(written)}")


def test_empty_tuple_of_opaque_op_dumps_as_s64_list() -> None:
    t = LogicalTensor(0, DataType.f32, (2,))
    graph = Graph((Op(0, "StaticTranspose", (t,), (LogicalTensor(1, DataType.f32, (2,)),),
                      {"order": ()}),))
    written = oj.to_dict(graph)["graph"][0]["attrs"]["order"]
    assert written == {"type": "s64[]", "value": []}, f"empty tuple written as {written}"


# -- malformed documents ------------------------------------------------------------------------

def _mutate(change: Callable[[dict[str, Any]], object]) -> str:
    doc = _doc()
    change(doc)
    return json.dumps(doc)


G0 = "$.graph[0]"
MALFORMED: list[tuple[str, str, str, str]] = [
    ("bad dtype", _mutate(lambda d: d["graph"][0]["inputs"][0].update(dtype="f31")),
     f"{G0}.inputs[0].dtype", "unknown data type 'f31'"),
    ("missing graph", _mutate(lambda d: d.pop("graph")), "$", "missing key 'graph'"),
    ("unknown top-level key", _mutate(lambda d: d.update(extra=1)), "$.extra", "unknown key"),
    ("version not a string", _mutate(lambda d: d.update(version=3)), "$.version",
     "expected a string"),
    ("version not x.y.z", _mutate(lambda d: d.update(version="three")), "$.version", "version"),
    ("graph not a list", _mutate(lambda d: d.update(graph={})), "$.graph", "expected an array"),
    ("op not an object", _mutate(lambda d: d["graph"].append(3)), "$.graph[1]",
     "expected an object"),
    ("op id a bool", _mutate(lambda d: d["graph"][0].update(id=True)), f"{G0}.id",
     "expected an integer, got a boolean"),
    ("op id negative", _mutate(lambda d: d["graph"][0].update(id=-3)), f"{G0}.id", "outside"),
    ("missing kind", _mutate(lambda d: d["graph"][0].pop("kind")), G0, "missing key 'kind'"),
    ("duplicate op id", _mutate(lambda d: d["graph"].append(copy.deepcopy(d["graph"][0]))),
     "$.graph[1].id", "op id 5 is already used by $.graph[0]"),
    ("shape with a float", _mutate(lambda d: d["graph"][0]["inputs"][0].update(shape=[2.0])),
     f"{G0}.inputs[0].shape[0]", "expected an integer"),
    ("shape beyond int64", _mutate(lambda d: d["graph"][0]["inputs"][0].update(shape=[2**63])),
     f"{G0}.inputs[0].shape[0]", "outside"),
    ("unknown layout", _mutate(lambda d: d["graph"][0]["outputs"][0].update(layout_type="x")),
     f"{G0}.outputs[0].layout_type", "unknown layout type 'x'"),
    ("unknown property",
     _mutate(lambda d: d["graph"][0]["outputs"][0].update(property_type="const")),
     f"{G0}.outputs[0].property_type", "unknown property type 'const'"),
    ("tensor missing stride", _mutate(lambda d: d["graph"][0]["outputs"][0].pop("stride")),
     f"{G0}.outputs[0]", "missing key 'stride'"),
    ("unknown attribute type",
     _mutate(lambda d: d["graph"][0]["attrs"]["min"].update(type="f64")),
     f"{G0}.attrs.min.type", "unknown attribute type 'f64'"),
    ("f32 given a string",
     _mutate(lambda d: d["graph"][0]["attrs"]["min"].update(value="0")),
     f"{G0}.attrs.min.value", "expected a number, got a string"),
    ("f32 beyond the f32 range",
     _mutate(lambda d: d["graph"][0]["attrs"]["min"].update(value=1e39)),
     f"{G0}.attrs.min.value", "not a finite f32"),
    ("bool given 2",
     _mutate(lambda d: d["graph"][0]["attrs"].update(b={"type": "bool", "value": 2})),
     f"{G0}.attrs.b.value", "expected true, false, 0 or 1"),
    ("s64[] with a bool",
     _mutate(lambda d: d["graph"][0]["attrs"].update(a={"type": "s64[]", "value": [1, True]})),
     f"{G0}.attrs.a.value[1]", "expected an integer, got a boolean"),
    ("s64 given a float",
     _mutate(lambda d: d["graph"][0]["attrs"].update(a={"type": "s64", "value": 1.0})),
     f"{G0}.attrs.a.value", "expected an integer, got a number"),
    ("attribute without value",
     _mutate(lambda d: d["graph"][0]["attrs"].update(a={"type": "s64"})),
     f"{G0}.attrs.a", "missing key 'value'"),
    ("odd attribute name",
     _mutate(lambda d: d["graph"][0]["attrs"].update({"a b": {"type": "s64", "value": "x"}})),
     f'{G0}.attrs["a b"].value', "expected an integer"),
    ("attrs a list", _mutate(lambda d: d["graph"][0].update(attrs=[])), f"{G0}.attrs",
     "expected an object"),
    ("port not in the graph", _mutate(lambda d: d.update(input_ports=[0, 9])),
     "$.input_ports[1]", "tensor 9 does not appear in the graph"),
    ("output_ports not a list", _mutate(lambda d: d.update(output_ports=1)), "$.output_ports",
     "expected an array"),
    ("apply_to_int a bool", _mutate(lambda d: d.update(fpmath_mode_apply_to_int=True)),
     "$.fpmath_mode_apply_to_int", "expected a string"),
    ("apply_to_int not true/false",
     _mutate(lambda d: d.update(fpmath_mode_apply_to_int="yes")),
     "$.fpmath_mode_apply_to_int", "\"true\" or \"false\""),
    ("document an array", "[]", "$", "expected an object, got an array"),
    ("truncated", json.dumps(_doc())[:40], "$", "invalid JSON at line 1, column"),
    ("NaN token", json.dumps(_doc()).replace("6.5", "NaN"), f"{G0}.attrs.max.value",
     "not a finite f32"),
    ("Infinity token", json.dumps(_doc()).replace("6.5", "-Infinity"),
     f"{G0}.attrs.max.value", "not a finite f32"),
    ("huge float literal", json.dumps(_doc()).replace("6.5", "1e400"),
     f"{G0}.attrs.max.value", "not a finite f32"),
    ("duplicate key", json.dumps(_doc())[:-1] + ', "engine_kind": "gpu"}', "$.engine_kind",
     "key appears twice"),
    ("deep nesting", "[" * 100_000, "$", "invalid JSON"),
    ("integer with 5000 digits", '{"version": ' + "9" * 5000 + "}", "$", "invalid JSON"),
    ("not UTF-8", b'{"version": "\xff"}', "$", "invalid JSON"),  # type: ignore[list-item]
]


@pytest.mark.parametrize(("label", "text", "path", "fragment"), MALFORMED,
                         ids=[m[0] for m in MALFORMED])
def test_malformed_document_names_the_path(label: str, text: str, path: str,
                                           fragment: str) -> None:
    with pytest.raises(JsonFormatError) as info:
        oj.loads(text, source="case.json")
    err = info.value
    assert err.path == path, f"{label}: path {err.path!r}, expected {path!r} ({err})"
    assert fragment in str(err), f"{label}: {fragment!r} not in message {str(err)!r}"
    assert str(err).startswith(f"case.json: {path}: "), f"{label}: message {str(err)!r}"


def test_the_valid_base_document_loads() -> None:
    graph = oj.loads(json.dumps(_doc()))
    assert [o.kind for o in graph.ops] == ["Clamp"], "the base of the malformed cases is valid"


def test_dump_rejects_values_the_format_cannot_hold() -> None:
    t = LogicalTensor(0, DataType.f32, (2,))
    unwritable: list[tuple[dict[str, Any], str]] = [
        ({"min": float("nan")}, "$.graph[0].attrs.min"),
        ({"x": (1, "a")}, "$.graph[0].attrs.x"),
        ({"x": 2**64}, "$.graph[0].attrs.x")]
    for attrs, path in unwritable:
        graph = Graph((Op(0, "Clamp", (t,), (t,), attrs),))
        with pytest.raises(JsonFormatError) as info:
            oj.dumps(graph)
        assert info.value.path == path, f"{attrs}: path {info.value.path}, expected {path}"
    with pytest.raises(JsonFormatError, match=r"\$\.graph\[0\]\.id"):
        oj.dumps(Graph((Op(-1, "ReLU", (t,), (t,)),)))


# -- fuzzing ------------------------------------------------------------------------------------

json_values = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats() | st.text(max_size=5),
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=4), inner,
                                                                  max_size=3),
    max_leaves=6)


def _slots(node: object) -> list[tuple[Any, Any]]:
    """Every (container, key) pair in a parsed document, depth first."""
    found: list[tuple[Any, Any]] = []
    if isinstance(node, dict):
        for key, value in node.items():
            found.append((node, key))
            found += _slots(value)
    elif isinstance(node, list):
        for index, value in enumerate(node):
            found.append((node, index))
            found += _slots(value)
    return found


#: A value of another JSON type for each type (bool first: True is also an int).
_RETYPED: dict[type, object] = {str: 1, int: "1", float: [1.0], bool: 2, list: {}, dict: [],
                                type(None): 0}


def _loads_or_format_error(text: str | bytes) -> None:
    try:
        result = oj.loads(text)
    except JsonFormatError:
        return
    assert isinstance(result, Graph), f"loads returned {type(result).__name__}"


@FUZZ
@given(graphs(), st.data())
def test_mutated_documents_raise_only_format_errors(graph: Graph, data: st.DataObject) -> None:
    doc = oj.to_dict(graph)
    slots = _slots(doc)
    for _ in range(data.draw(st.integers(1, 3))):
        if not slots:
            break
        container, key = data.draw(st.sampled_from(slots))
        action = data.draw(st.sampled_from(["drop", "replace", "retype"]))
        if action == "drop":
            del container[key]
        elif action == "replace":
            container[key] = data.draw(json_values)
        else:
            container[key] = _RETYPED.get(type(container[key]), 0)
        slots = _slots(doc)
    _loads_or_format_error(json.dumps(doc))


@FUZZ
@given(graphs(), st.data())
def test_damaged_text_raises_only_format_errors(graph: Graph, data: st.DataObject) -> None:
    text = oj.dumps(graph, indent=None)
    cut = data.draw(st.integers(0, len(text)))
    noise = data.draw(st.text(max_size=4))
    _loads_or_format_error(text[:cut])
    _loads_or_format_error(text[:cut] + noise + text[cut:])


@FUZZ
@given(json_values)
def test_arbitrary_json_raises_only_format_errors(value: object) -> None:
    _loads_or_format_error(json.dumps(value))
    _loads_or_format_error(json.dumps({**_doc(), "graph": value}))
