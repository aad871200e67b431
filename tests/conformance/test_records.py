"""The one mechanism of records (`fusionspec.conformance.records`) that both documents are
declared with: fields read as their types and metadata say, in both families' leniency, with
one wording for a bad member in each family's own error, and the schema built from the same
declarations."""

from __future__ import annotations

import dataclasses
from dataclasses import field
from typing import Any, ClassVar

import pytest

from fusionspec.conformance.grade.results_format import ResultsFormatError, ResultsRecord
from fusionspec.conformance.grade.schema_check import compile_schema
from fusionspec.conformance.perf.records import PerfFormatError, PerfRecord
from fusionspec.conformance.records.fields import member
from fusionspec.conformance.records.schema import document_schema


@dataclasses.dataclass(frozen=True)
class _Leaf(ResultsRecord):
    DEF: ClassVar[str | None] = "leaf"
    WHAT: ClassVar[str] = "leaf"

    size: int = field(default=0, metadata=member(minimum=0))


@dataclasses.dataclass(frozen=True)
class _Other(ResultsRecord):
    DEF: ClassVar[str | None] = "other"
    WHAT: ClassVar[str] = "other"

    name: str = ""


@dataclasses.dataclass(frozen=True)
class _Lenient(ResultsRecord):
    id: str
    label: str = ""
    level: str = field(default="low", metadata=member(enum=("low", "high")))
    seen: list[int] = field(default_factory=list)
    note: str | None = None
    part: _Leaf | _Other | None = None


@dataclasses.dataclass(frozen=True, kw_only=True)
class _Strict(PerfRecord):
    id: str
    sizes: tuple[int, ...] = ()
    note: str | None = None
    gap: float | None = field(default=None, metadata=member(nullable=True))


def test_lists_and_tuples_read_as_their_fields_declare() -> None:
    lenient = _Lenient.from_json({"id": "a", "seen": [1, 2]})
    strict = _Strict.from_json({"id": "a", "sizes": [1, 2]})
    assert lenient.seen == [1, 2] and isinstance(lenient.seen, list), \
        f"a list[int] field reads to a list: {lenient.seen!r}"
    assert strict.sizes == (1, 2) and isinstance(strict.sizes, tuple), \
        f"a tuple[int, ...] field reads to a tuple: {strict.sizes!r}"


def test_a_lenient_family_reads_null_and_absent_members_as_their_defaults() -> None:
    found = _Lenient.from_json({"id": "a", "label": None, "note": None})
    assert (found.label, found.level, found.note) == ("", "low", None), \
        f"a missing or null string with a default reads as that default: {found}"
    assert "note" in found.to_json() and found.to_json()["note"] is None, \
        f"a field whose type admits None is written as null in this family: {found.to_json()}"


def test_a_strict_family_refuses_null_where_no_field_allows_it() -> None:
    with pytest.raises(PerfFormatError, match=r"^doc: \$\.note: null is not a string$"):
        _Strict.from_json({"id": "a", "note": None}, "doc")
    assert _Strict.from_json({"id": "a", "gap": None}).gap is None, \
        "a nullable member reads null as None"
    assert "note" not in _Strict(id="a").to_json(), \
        "an optional member that is None is left out in this family"


@pytest.mark.parametrize(("record", "error"), [(_Lenient, ResultsFormatError),
                                               (_Strict, PerfFormatError)])
def test_both_families_word_a_bad_member_alike_in_their_own_error(
        record: type[Any], error: type[Exception]) -> None:
    key = "seen" if record is _Lenient else "sizes"
    with pytest.raises(error, match=rf"^f\.json: \$\.{key}\[1\]: 'x' is not an integer$"):
        record.from_json({"id": "a", key: [1, "x"]}, "f.json")
    with pytest.raises(error, match=r"^f\.json: \$\.id: missing; it must be a string$"):
        record.from_json({}, "f.json")


def test_a_union_of_records_is_told_apart_by_what() -> None:
    found = _Lenient.from_json({"id": "a", "part": {"what": "other", "name": "n"}})
    assert found.part == _Other("n"), f"the record whose kind the data names: {found.part}"
    assert found.to_json()["part"] == {"what": "other", "name": "n"}, \
        f"written back with its kind first: {found.to_json()}"
    with pytest.raises(ResultsFormatError, match=r"\$\.part\.what: 'guess' is not one of "
                                                 r"'leaf', 'other'"):
        _Lenient.from_json({"id": "a", "part": {"what": "guess"}})
    with pytest.raises(ResultsFormatError, match=r"\$\.part\.size: -1 is less than the "
                                                 r"minimum of 0"):
        _Lenient.from_json({"id": "a", "part": {"what": "leaf", "size": -1}})
    with pytest.raises(ResultsFormatError, match=r"\$\.level: 'mid' is not one of"):
        _Lenient.from_json({"id": "a", "level": "mid"})


def test_the_schema_says_what_the_reader_checks() -> None:
    schema = document_schema(_Lenient)
    assert schema["required"] == ["id"], f"the field without a default: {schema['required']}"
    assert schema["properties"]["level"] == {"enum": ["low", "high"]}, \
        f"an enum is the member's schema: {schema['properties']['level']}"
    assert schema["$defs"]["leaf"]["properties"]["what"] == {"const": "leaf"}, \
        f"a record's kind is a constant it requires: {schema['$defs']['leaf']}"
    check = compile_schema(schema)
    assert check({"id": "a", "part": {"what": "leaf", "size": 1}}), \
        "the quick check takes what the reader reads"
    assert not check({"id": "a", "part": {"what": "leaf", "size": -1}}), \
        "and refuses what it refuses"
