"""The performance document as records: every document of this version reads to records and
writes back as the same JSON, key order and unknown keys included; a member of the wrong type
is a typed error naming its JSON path; the shipped schema is the one the records give."""

from __future__ import annotations

import copy
import json
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from testkit.perf_docs import failed, mixed_document, perf_document, workload

from fusionspec.conformance.perf.document import (
    PerfFormatError,
    load_perf,
    merge_perf,
    read_perf,
    write_perf,
)
from fusionspec.conformance.perf.records import RECORDS, PerfDocument, Roofline
from fusionspec.conformance.records.fields import record_fields
from fusionspec.conformance.records.schema import document_schema
from fusionspec.conformance.schemas import SCHEMAS


def _same(found: dict[str, Any], wanted: dict[str, Any], what: str) -> None:
    """Equal JSON, and equal text: the key order is part of what a document is."""
    assert found == wanted, f"{what}: the JSON written back differs from the JSON read"
    assert json.dumps(found) == json.dumps(wanted), \
        f"{what}: the keys are written back in another order"


def _documents() -> list[tuple[str, dict[str, Any]]]:
    sharded = mixed_document()
    sharded.update(shard="1/2", incomplete="shard 2/2 is missing")
    sharded["selection"] = {"workloads": 8, "sha256": "0" * 64}
    unsupported = perf_document([{"id": "fp.bn_relu/a", "pattern": "fp.bn_relu", "name": "a",
                                  "source": "x", "dtype": "f32", "ops": ["ReLU"],
                                  "unsupported": "declared"}], yardsticks={})
    return [("mixed", mixed_document()), ("sharded", sharded), ("unsupported", unsupported),
            ("no yardsticks", perf_document([failed("a/b", "a", "crash")], yardsticks={}))]


@pytest.mark.parametrize(("what", "doc"), _documents(), ids=lambda x: x if
                         isinstance(x, str) else "")
def test_a_document_reads_to_records_and_writes_back_the_same(what: str,
                                                             doc: dict[str, Any]) -> None:
    records = PerfDocument.from_json(doc, what)
    _same(records.to_json(), doc, what)
    assert read_perf(copy.deepcopy(doc)) == records, \
        f"{what}: the checked reading gives records equal to the plain one"


def test_load_and_write_keep_the_file_as_it_was(tmp_path: Path) -> None:
    doc = mixed_document()
    path = tmp_path / "perf.json"
    path.write_text(json.dumps(doc, indent=1) + "\n", encoding="utf-8")
    loaded = load_perf(path)
    assert isinstance(loaded, PerfDocument) and loaded.workloads[0].fused.median == 1.0, \
        f"load_perf gives records with the document's figures: {loaded.workloads[0]}"
    again = write_perf(loaded, tmp_path / "again.json")
    assert again.read_text(encoding="utf-8") == path.read_text(encoding="utf-8"), \
        "a document loaded and written again is the same file, byte for byte"


def test_unknown_keys_are_kept_where_they_were() -> None:
    doc = mixed_document()
    doc = {"future": {"a": [1, 2]}, **doc}
    doc["workloads"][0] = {"note": "kept", **doc["workloads"][0]}
    doc["workloads"][0]["timings"]["fused"]["p90"] = 1.5
    doc["workloads"][0]["roofline"]["device_copy_share"] = 0.25
    records = PerfDocument.from_json(doc)
    assert records.extra == {"future": {"a": [1, 2]}}, \
        f"a top-level key the records do not model is kept aside: {records.extra}"
    assert records.workloads[0].fused.extra == {"p90": 1.5}, \
        "a timing's unknown key is kept on its record"
    _same(records.to_json(), doc, "unknown keys")


#: The JSON path of the first workload, as a pattern.
_W0 = r"\$\.workloads\[0\]\."


@pytest.mark.parametrize(("path", "value", "says"), [
    (("device", "id"), 3, r"\$\.device\.id: 3 is not a string"),
    (("seed",), 1.5, r"\$\.seed: 1\.5 is not an integer"),
    (("policy", "warmup"), "one", r"\$\.policy\.warmup: 'one' is not an integer"),
    (("policy", "jobs_extra"), "two", r"\$\.policy\.jobs_extra: 'two' is not a number"),
    (("environment", "python"), 3.11, r"\$\.environment\.python: 3\.11 is not a string"),
    (("yardsticks", "gemm_shape", 0), "512", r"\$\.yardsticks\.gemm_shape\[0\]: '512'"),
    (("workloads", 0, "timings", "fused", "median"), "1", _W0 + r"timings\.fused\.median: '1'"),
    (("workloads", 0, "check", "agree"), 1, r"\$\.workloads\[0\]\.check\.agree: 1 is not"),
    (("workloads", 0, "ops"), "MatMul", r"\$\.workloads\[0\]\.ops: 'MatMul' is not an array"),
    (("workloads", 0, "partitions", 0, 1), 2, r"\$\.workloads\[0\]\.partitions\[0\]\[1\]"),
    (("workloads", 0, "fused_whole"), "yes", _W0 + r"fused_whole: 'yes' is not true or false"),
    (("workloads", 0, "roofline", "gb_s"), None, _W0 + r"roofline\.gb_s: null is not a number$"),
    (("workloads", 1), [], r"\$\.workloads\[1\]: \[\] is not an object"),
    (("shard",), 12, r"\$\.shard: 12 is not a string"),
])
def test_a_member_of_the_wrong_type_is_named_by_its_path(path: tuple[Any, ...], value: object,
                                                         says: str) -> None:
    doc = mixed_document()
    at: Any = doc
    for key in path[:-1]:
        at = at[key]
    at[path[-1]] = value
    with pytest.raises(PerfFormatError, match=r"^planted\.json: " + says):
        PerfDocument.from_json(doc, "planted.json")


def test_a_value_outside_its_enum_or_minimum_is_refused() -> None:
    for path, value, says in ((("size",), "huge", "is not one of"),
                              (("format",), "other", "not a performance document"),
                              (("seed",), -1, "less than the minimum")):
        doc = mixed_document()
        doc[path[0]] = value
        with pytest.raises(PerfFormatError, match=says):
            PerfDocument.from_json(doc)
    doc = mixed_document()
    del doc["device"]
    with pytest.raises(PerfFormatError, match=r"\$\.device: missing; it must be an object$"):
        PerfDocument.from_json(doc)


def test_a_merge_writes_the_keys_as_a_merge_always_did() -> None:
    one, two = mixed_document(), mixed_document()
    one.update(shard="1/2", selection={"workloads": 4, "sha256": "a" * 64})
    two.update(shard="2/2", selection={"workloads": 4, "sha256": "a" * 64})
    one["workloads"], two["workloads"] = one["workloads"][:1], two["workloads"][1:3]
    merged = merge_perf([read_perf(one), read_perf(two)]).to_json()
    wanted = {**one, "workloads": one["workloads"] + two["workloads"], "shard": None,
              "incomplete": "the run was given 4 workload(s) and the parts hold 3"}
    _same(merged, wanted, "merged shards")


def test_the_shipped_schema_is_the_one_the_records_give() -> None:
    (path,) = [p for p, root in SCHEMAS.items() if root is PerfDocument]
    shipped = json.loads(path.read_text(encoding="utf-8"))
    assert shipped == document_schema(PerfDocument), \
        "perf.schema.json differs from the records' schema: run " \
        "python -m fusionspec.conformance.schemas"
    defs = {r.DEF: r for r in RECORDS if r.DEF is not None}
    for name, record in defs.items():
        properties = set(shipped["$defs"][name]["properties"])
        fields = {f.name for f in record_fields(record)}
        assert properties == fields, f"{name}: schema properties {properties} vs {fields}"
    top = set(shipped["properties"])
    assert top == {f.name for f in record_fields(PerfDocument)}, \
        f"the document's properties are its record's fields: {top}"


_FIGURE = st.floats(min_value=1e-3, max_value=1e3, allow_nan=False)
_TEXT = st.text(st.characters(exclude_categories=("Cs",)), max_size=12)
_JSON = st.recursive(st.none() | st.booleans() | st.integers() | _TEXT
                     | st.floats(allow_nan=False, allow_infinity=False),
                     lambda inner: st.lists(inner, max_size=3)
                     | st.dictionaries(_TEXT, inner, max_size=3), max_leaves=6)


@st.composite
def _workloads(draw: st.DrawFn) -> list[dict[str, Any]]:
    found = []
    for n in range(draw(st.integers(0, 4))):
        if draw(st.booleans()):
            fused, opbyop = draw(_FIGURE), draw(_FIGURE)
            record = workload(f"p.x/w{n}", "p.x", "fusion pays", fused, opbyop,
                              split=draw(st.booleans()), spread=draw(st.floats(0, 0.4)))
        else:
            record = failed(f"p.x/w{n}", "p.x", draw(_TEXT))
        if draw(st.booleans()):
            record = dict(reversed(record.items()))
        found.append(record)
    return found


@settings(max_examples=60, deadline=None)
@given(workloads=_workloads(), extra=st.dictionaries(st.sampled_from(["x_a", "x_b", "zz"]),
                                                      _JSON, max_size=2),
       shuffle=st.randoms(use_true_random=False))
def test_any_valid_document_writes_back_as_read(workloads: list[dict[str, Any]],
                                               extra: dict[str, Any], shuffle: Any) -> None:
    doc = perf_document(workloads)
    items = list({**doc, **extra}.items())
    shuffle.shuffle(items)
    doc = dict(items)
    records = read_perf(doc)
    _same(records.to_json(), doc, "a drawn document")
    assert PerfDocument.from_json(records.to_json()) == records, \
        "records written and read again are equal"


def test_records_built_in_code_write_the_fields_in_order() -> None:
    roof = Roofline(gflop_s=1.0, gb_s=2.0, gemm_share=0.5)
    assert list(roof.to_json()) == ["gflop_s", "gb_s", "gemm_share"], \
        f"a record built in code writes its fields in declaration order: {roof.to_json()}"
