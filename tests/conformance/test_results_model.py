"""The typed results model (`fusionspec.conformance.grade.document`): the JSON schema is the one
its records generate, documents round-trip through it, and documents of every older schema
version still load to equal records (those of an unknown version fail naming it)."""

from __future__ import annotations

import json
import types
import typing
from dataclasses import fields, is_dataclass
from importlib import resources
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from testkit import toy_backends as toy

from fusionspec.conformance.grade.details import DETAIL_RECORDS, Details, NumericFacts
from fusionspec.conformance.grade.document import (
    RECORDS,
    SCHEMA_VERSION,
    STATUSES,
    UPGRADES,
    CaseRecord,
    DepartureRecord,
    DeviceRecord,
    ExpectationsSummary,
    FailureRecord,
    LimitationRecord,
    PatternCounts,
    ReplayRecord,
    ResultsDocument,
    ResultsFormatError,
    RuleCounts,
    SpecPage,
    VerdictLine,
)
from fusionspec.conformance.grade.results import (
    ResultsCollector,
    _check_shape,
    load_document,
)
from fusionspec.conformance.grade.verdicts import judge
from fusionspec.conformance.records.schema import document_schema
from fusionspec.conformance.schemas import SCHEMAS
from fusionspec.conformance.selection import RunSettings
from fusionspec.reference.backend import NUMPY_DEVICE

SCHEMA = json.loads(resources.files("fusionspec.conformance.grade")
                    .joinpath("results.schema.json").read_text(encoding="utf-8"))


def _schema_properties(name: str) -> set[str]:
    where = SCHEMA if name == "document" else SCHEMA["$defs"][name]
    return set(where["properties"])


@pytest.mark.parametrize("name", sorted(RECORDS))
def test_the_schema_and_the_model_name_the_same_fields(name: str) -> None:
    model = {f.name for f in fields(RECORDS[name])} - {"extra"}
    schema = _schema_properties(name)
    assert model - schema == set(), \
        f"{name}: fields of the model missing from results.schema.json: {sorted(model - schema)}"
    assert schema - model == set(), \
        f"{name}: properties of results.schema.json the model lacks: {sorted(schema - model)}"


def test_the_schema_version_is_the_models() -> None:
    assert SCHEMA["properties"]["schema"] == {"const": SCHEMA_VERSION}, \
        f"the schema describes {SCHEMA['properties']['schema']}, the model writes {SCHEMA_VERSION}"


# -- round trip -------------------------------------------------------------------------------

TEXT = st.text(st.characters(codec="utf-8", exclude_categories=("Cs",)), max_size=12)
NAME = st.text("abcdefgh._-/", min_size=1, max_size=10)
OPT_TEXT = st.none() | TEXT
COUNT = st.integers(0, 10**6)
INDEX = st.none() | st.integers(0, 10**5)
COUNTS = st.dictionaries(NAME, COUNT, max_size=3)
#: A case's status is one of the suite's (a document with another one does not load).
STATUS = st.sampled_from(STATUSES)
STATUS_COUNTS = st.dictionaries(STATUS, COUNT, max_size=3)
TABLE = st.dictionaries(NAME, COUNTS, max_size=2)
JSON_LEAF = st.none() | st.booleans() | st.integers(-10**6, 10**6) | TEXT | \
    st.floats(allow_nan=False, allow_infinity=False)
JSON = st.recursive(JSON_LEAF, lambda inner: st.lists(inner, max_size=3)
                    | st.dictionaries(NAME, inner, max_size=3), max_leaves=6)
OBJECT = st.dictionaries(NAME, JSON, max_size=3)


def _extra(record: type) -> st.SearchStrategy[dict[str, Any]]:
    taken = {f.name for f in fields(record)}
    return st.dictionaries(NAME.filter(lambda k: k not in taken).map(lambda k: f"x_{k}"),
                           JSON, max_size=2)


def _of_type(hint: object) -> st.SearchStrategy[Any]:
    """Values of a record field's type, records built field by field (`_record_of`)."""
    if hint is Any:
        return JSON
    if hint is type(None):
        return st.none()
    simple: dict[object, st.SearchStrategy[Any]] = {
        str: TEXT, int: st.integers(0, 10**6), bool: st.booleans(),
        float: st.floats(allow_nan=False, allow_infinity=False)}
    if hint in simple:
        return simple[hint]
    if isinstance(hint, type) and is_dataclass(hint):
        return _record_of(hint)
    args = typing.get_args(hint)
    if typing.get_origin(hint) in (types.UnionType, typing.Union):
        return st.one_of([_of_type(a) for a in args])
    if typing.get_origin(hint) is list:
        return st.lists(_of_type(args[0]), max_size=2)
    if typing.get_origin(hint) is dict:
        return st.dictionaries(NAME, _of_type(args[1]), max_size=2)
    raise TypeError(f"no strategy for {hint!r}")


def _record_of(record: type) -> st.SearchStrategy[Any]:
    """Records of `record` with every field drawn from its type."""
    hints = typing.get_type_hints(record)
    return st.builds(record, **{f.name: _extra(record) if f.name == "extra"
                                else _of_type(hints[f.name]) for f in fields(record)})


CASES = st.builds(CaseRecord, case_id=NAME, pattern=NAME, index=INDEX, kind=OPT_TEXT,
                  rule=OPT_TEXT, dtype=OPT_TEXT, status=OPT_TEXT,
                  expected_status=OPT_TEXT, occurrence=st.none() | st.integers(1, 5),
                  extra=_extra(CaseRecord))
FAILURES = st.builds(FailureRecord, case_id=NAME, pattern=NAME, status=STATUS, index=INDEX,
                     kind=TEXT, rule=OPT_TEXT, dtype=OPT_TEXT, description=TEXT,
                     features=OBJECT, values=st.dictionaries(NAME, TEXT, max_size=2),
                     reason=TEXT, details=_record_of(Details),
                     replay=_record_of(ReplayRecord),
                     expected=st.none() | OBJECT, unexpected_status=st.none() | OBJECT,
                     minimal_of=st.none() | NAME, extra=_extra(FailureRecord))
DOCUMENTS = st.builds(
    ResultsDocument, backend=NAME,
    device=st.builds(DeviceRecord, id=NAME, kind=TEXT, name=TEXT, driver=TEXT, runtime=TEXT,
                     extras=st.dictionaries(NAME, TEXT, max_size=2)),
    suite_version=OPT_TEXT, suite_commit=OPT_TEXT, spec_version=OPT_TEXT,
    spec_pages=st.lists(st.builds(SpecPage, file=TEXT, title=TEXT, sha256=TEXT), max_size=2),
    backend_spec=OPT_TEXT, environment=st.dictionaries(NAME, TEXT, max_size=2),
    seed=st.integers(0, 2**32), profile=OPT_TEXT, selection=st.none() | OBJECT,
    shard=st.sampled_from([None, "1/2", "3/4"]), planned=INDEX, started=OPT_TEXT,
    finished=OPT_TEXT, totals=STATUS_COUNTS,
    patterns=st.dictionaries(NAME, st.builds(PatternCounts, counts=COUNTS, by_kind=TABLE,
                                             by_dtype=TABLE, rules=TABLE, coverage=TABLE),
                             max_size=2),
    rules=st.dictionaries(NAME, st.builds(RuleCounts, statement=TEXT, counts=COUNTS,
                                          patterns=COUNTS), max_size=2),
    verdicts=st.lists(st.builds(
        VerdictLine, case_id=NAME, pattern=NAME, status=STATUS, index=INDEX, kind=TEXT,
        rule=OPT_TEXT, dtype=OPT_TEXT, reason=TEXT,
        seconds=st.none() | st.floats(0, 1e6), expected=st.none() | OBJECT,
        extra=_extra(VerdictLine)), max_size=3),
    failures=st.lists(FAILURES, max_size=2), extensions=st.lists(FAILURES, max_size=1),
    limitations=st.lists(st.builds(
        LimitationRecord, case_id=NAME, pattern=NAME, index=INDEX, dtype=OPT_TEXT,
        reason=TEXT, limitation_passed=st.booleans(), observed_status=OPT_TEXT,
        extra=_extra(LimitationRecord)), max_size=2),
    device_problems=st.dictionaries(NAME, TEXT, max_size=2), backend_counters=COUNTS,
    departures=st.lists(st.builds(DepartureRecord, id=NAME, statement=TEXT,
                                  extra=_extra(DepartureRecord)), max_size=2),
    unavailable=OPT_TEXT, incomplete=OPT_TEXT,
    expectations=st.none() | st.builds(
        ExpectationsSummary, file=OPT_TEXT, sha256=OPT_TEXT,
        entries=st.none() | st.integers(0, 99), strict=st.booleans(),
        expected_failures=COUNT, unexpected_passes=st.lists(CASES, max_size=2),
        skipped=st.lists(CASES, max_size=2), extra=_extra(ExpectationsSummary)))


@settings(max_examples=60, deadline=None)
@given(DOCUMENTS)
def test_a_document_round_trips_through_json(document: ResultsDocument) -> None:
    text = json.dumps(document.to_json(), allow_nan=False)
    back = ResultsDocument.from_json(json.loads(text))
    assert back == document, "to_json then from_json gives back an equal document"
    _check_shape(json.loads(text), "generated")  # the schema accepts what the model writes


# -- versions ---------------------------------------------------------------------------------

def _written(tmp_path: Path) -> Path:
    collector = ResultsCollector("toy", NUMPY_DEVICE, run_settings=RunSettings(seed=5))
    for case in (toy.valid_case("fp.matmul_post_ops", 3), toy.ill_formed_case()):
        collector.add(case, judge(case, toy.WrongMath(), NUMPY_DEVICE, seed=5))
    return collector.write(tmp_path / "results.json")


def test_every_case_record_names_its_case_case_id(tmp_path: Path) -> None:
    doc = json.loads(_written(tmp_path).read_text())
    records = [*doc["verdicts"], *doc["failures"], *doc["limitations"], *doc["extensions"]]
    assert records and all("case_id" in r and "id" not in r for r in records), \
        f"each case record has case_id and no id: {[sorted(r) for r in records][:2]}"


def test_a_version_1_document_still_loads(tmp_path: Path) -> None:
    current = json.loads(_written(tmp_path).read_text())
    old = {**current, "schema": "fusionspec-results/1",
           "verdicts": [{("id" if k == "case_id" else k): v for k, v in line.items()}
                        for line in current["verdicts"]]}
    path = tmp_path / "old.json"
    path.write_text(json.dumps(old))
    loaded = load_document(path)
    assert loaded.schema == SCHEMA_VERSION, f"brought up to {SCHEMA_VERSION}: {loaded.schema}"
    assert [v.case_id for v in loaded.verdicts] == \
        [v["case_id"] for v in current["verdicts"]], "version 1's id became case_id"
    assert loaded.to_json() == current, "the upgraded document equals the one written today"


def test_a_version_2_unexpected_pass_gets_the_status_its_case_got(tmp_path: Path) -> None:
    """Version 2 wrote the expectations entry's status on an unexpected pass; on the way in
    it becomes ``expected_status`` and the status is the verdict line's at that index."""
    current = json.loads(_written(tmp_path).read_text())
    line = current["verdicts"][0]
    cited = {"entry": 1, "reason": "known", "link": "https://example.org/issues/1"}
    stale = {"index": line["index"], "case_id": line["case_id"], "pattern": line["pattern"],
             "status": "fail", **cited}
    unmatched = {**stale, "index": 99, "case_id": "fp.gone/valid/0"}
    old = {**current, "schema": "fusionspec-results/2",
           "expectations": {"file": "ci.toml", "strict": False, "expected_failures": 0,
                            "unexpected_passes": [stale, unmatched], "skipped": []}}
    path = tmp_path / "v2.json"
    path.write_text(json.dumps(old))
    loaded = load_document(path)
    assert loaded.schema == SCHEMA_VERSION, f"brought up to {SCHEMA_VERSION}: {loaded.schema}"
    assert loaded.expectations is not None, "the expectations section is kept"
    found, lost = loaded.expectations.unexpected_passes
    assert (found.status, found.expected_status) == (line["status"], "fail"), \
        f"the status is the verdict line's ({line['status']}), the entry's fail is " \
        f"expected_status: {found}"
    assert found.extra == cited, f"the entry's citation is kept as it was: {found.extra}"
    assert (lost.status, lost.expected_status) == (None, "fail"), \
        f"without a verdict line at its index the status is left out, not guessed: {lost}"


@pytest.mark.parametrize("version", sorted(UPGRADES))
def test_a_document_of_every_older_version_loads_to_equal_records(tmp_path: Path,
                                                                  version: str) -> None:
    """Today's document labelled an older version holds nothing its upgrades change: it
    loads to the very records today's does."""
    written = _written(tmp_path)
    current = load_document(written)
    path = tmp_path / "older.json"
    path.write_text(json.dumps({**json.loads(written.read_text()), "schema": version}))
    assert load_document(path) == current, \
        f"a {version} document loads to the records of today's: {load_document(path)}"


@pytest.mark.parametrize("version", ["fusionspec-results/0", "fusionspec-results/9", None])
def test_an_unknown_version_fails_naming_it(tmp_path: Path, version: str | None) -> None:
    document = json.loads(_written(tmp_path).read_text())
    document["schema"] = version
    path = tmp_path / "other.json"
    path.write_text(json.dumps(document))
    with pytest.raises(ResultsFormatError) as info:
        load_document(path)
    message = str(info.value)
    assert repr(version) in message and SCHEMA_VERSION in message, \
        f"the message names the document's version and the ones read: {message}"


def test_a_field_of_the_wrong_type_is_named() -> None:
    with pytest.raises(ResultsFormatError, match=r"verdicts\[0\]\.status"):
        ResultsDocument.from_json({"schema": SCHEMA_VERSION, "backend": "b",
                                   "device": {"id": "d"},
                                   "verdicts": [{"case_id": "c", "pattern": "p", "status": 3}]},
                                  "doc")


def test_numeric_facts_carry_the_worst_elements_and_the_culprit() -> None:
    case = toy.valid_case("fp.matmul_post_ops", 3)
    verdict = judge(case, toy.WrongMath(), NUMPY_DEVICE, seed=5)
    facts = verdict.details.facts
    assert isinstance(facts, NumericFacts), f"WrongMath fails on numerics: {facts}"
    worst = facts.worst
    assert worst and all(None not in (w.expected, w.actual, w.bound) and w.index
                         for w in worst), \
        f"each worst element has its index, value, bound and the backend's value: {worst[:1]}"
    assert verdict.details.worst and worst[0].index == verdict.details.worst[0].index, \
        "the facts name the same worst element as the comparison"
    assert facts.culprit is None or all(isinstance(k, str) for k in facts.culprit), \
        f"the culprit's op kinds, or None: {facts.culprit}"


def test_the_whole_schema_is_generated_from_the_records() -> None:
    assert SCHEMAS.get(Path(str(resources.files("fusionspec.conformance.grade")
                                .joinpath("results.schema.json")))) is ResultsDocument, \
        "the schemas command writes results.schema.json from ResultsDocument"
    generated = document_schema(ResultsDocument)
    for name in sorted(set(SCHEMA["$defs"]) | set(generated["$defs"])):
        assert SCHEMA["$defs"].get(name) == generated["$defs"].get(name), \
            f"results.schema.json's {name} differs from the one its record generates: run " \
            "python -m fusionspec.conformance.schemas"
    assert generated == SCHEMA, \
        "results.schema.json differs from the one ResultsDocument generates: run " \
        "python -m fusionspec.conformance.schemas"


_DEFINED = {**{k: v for k, v in RECORDS.items() if k != "document"}, **DETAIL_RECORDS}


@pytest.mark.parametrize("name", sorted(_DEFINED))
def test_every_definition_names_its_records_fields(name: str) -> None:
    record = _DEFINED[name]
    assert name == record.DEF, f"{record.__name__} is defined as {record.DEF}, not {name}"
    model = {f.name for f in fields(record)} - {"extra"}
    schema = set(SCHEMA["$defs"][name]["properties"]) - {"what"}
    assert model == schema, f"{name}: record fields {sorted(model)}, schema {sorted(schema)}"


def _with_failure(details: dict[str, Any], schema: str = SCHEMA_VERSION) -> dict[str, Any]:
    return {"schema": schema, "backend": "b", "device": {"id": "d"},
            "failures": [{"case_id": "c", "pattern": "p", "status": "numeric-mismatch",
                          "details": details}]}


def test_a_version_3_departure_named_by_its_bare_id_becomes_a_record() -> None:
    """Early runs named a matched departure by its id alone; version 4 reads it as a record
    whose statement findings fall back on (the id)."""
    loaded = ResultsDocument.from_json(_with_failure(
        {"departures": ["onednn.gelu_erf"], "facts": {"what": "numeric", "chain": ["GELU"]}},
        "fusionspec-results/3"), "v3")
    (ref,) = loaded.failures[0].details.departures or []
    assert ref.id == "onednn.gelu_erf" and ref.statement == "", \
        f"the bare id is the record's id, nothing invented beside it: {ref}"
    facts = loaded.failures[0].details.facts
    assert isinstance(facts, NumericFacts) and facts.chain == ["GELU"], \
        f"the facts are read as the numeric kind: {facts}"


@pytest.mark.parametrize(("details", "where"), [
    ({"facts": {"what": "numeric", "chain": "GELU"}}, r"details\.facts\.chain"),
    ({"facts": {"what": "guess"}}, r"details\.facts\.what"),
    ({"culprit": {"kinds": 3}}, r"details\.culprit\.kinds"),
    ({"worst": [{"index": ["0"]}]}, r"details\.worst\[0\]\.index"),
    ({"departures": [{"id": 1}]}, r"details\.departures\[0\]\.id"),
])
def test_a_details_field_of_the_wrong_type_is_named(details: dict[str, Any], where: str) -> None:
    with pytest.raises(ResultsFormatError, match=where):
        ResultsDocument.from_json(_with_failure(details), "doc")


def test_the_details_a_run_writes_are_typed_records(tmp_path: Path) -> None:
    document = load_document(_written(tmp_path))
    assert document.failures, "the toy run has failures to look at"
    for failure in document.failures:
        assert isinstance(failure.details, Details), f"{failure.case_id}: details typed"
        assert failure.details.facts is not None, \
            f"{failure.case_id}: a failure of this run carries its facts"
        assert not set(failure.details.extra) & {"facts", "culprit", "triage", "signature"}, \
            f"{failure.case_id}: no modelled key is left untyped: {sorted(failure.details.extra)}"


def test_a_backend_value_of_the_wrong_type_is_typed_where_the_details_are_made() -> None:
    """A backend's partition whose pattern is a number cannot make the document unreadable:
    grading types what the backend made once, as it describes the partition, and the
    collected document reads back to equal records."""
    from dataclasses import replace

    class NumberedPatterns(toy.WrongMath):
        def partition(self, graph: Any) -> list[Any]:
            return [replace(p, pattern=3) for p in super().partition(graph)]

    case = toy.valid_case("fp.matmul_post_ops", 3)
    verdict = judge(case, NumberedPatterns(), NUMPY_DEVICE, seed=5)
    collector = ResultsCollector("toy", NUMPY_DEVICE, run_settings=RunSettings(seed=5))
    collector.add(case, verdict)
    document = collector.document()
    (failure,) = document.failures
    patterns = {p.pattern for p in failure.details.actual_partitions or ()}
    assert patterns == {"3"}, f"the backend's number is recorded as text: {patterns}"
    assert ResultsDocument.from_json(document.to_json()) == document, \
        "the collected document reads back to equal records"
