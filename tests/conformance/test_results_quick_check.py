"""The quick check of a results document (`fusionspec.conformance.grade.schema_check`): it
answers as jsonschema does for every member of every record, a valid document is read without
jsonschema walking it, and an invalid one still fails with jsonschema's message for the first
problem."""

from __future__ import annotations

import copy
import json
from collections.abc import Iterator
from importlib import resources
from pathlib import Path
from typing import Any

import pytest
from jsonschema import Draft202012Validator
from jsonschema.exceptions import best_match

from fusionspec.conformance.grade import results
from fusionspec.conformance.grade.document import SCHEMA_VERSION, ResultsFormatError
from fusionspec.conformance.grade.schema_check import Unsupported, compile_schema

SCHEMA = json.loads(resources.files("fusionspec.conformance.grade")
                    .joinpath("results.schema.json").read_text(encoding="utf-8"))
VALIDATOR = Draft202012Validator(SCHEMA)

_CASE = {"case_id": "fp.a/valid/0", "pattern": "fp.a", "index": 0, "kind": "valid",
         "rule": None, "dtype": "f32", "status": "skip", "expected_status": "fail",
         "occurrence": 1, "entry": 3}

#: A document with every section and every field of every record.
DOCUMENT: dict[str, Any] = {
    "schema": SCHEMA_VERSION, "suite_version": "1.0", "suite_commit": None,
    "spec_version": "v3.5", "spec_pages": [{"file": "a.md", "title": "A", "sha256": "00"}],
    "backend": "toy", "backend_spec": "toy",
    "device": {"id": "cpu", "kind": "cpu", "name": "n", "driver": "d", "runtime": "r",
               "extras": {"k": "v"}},
    "environment": {"python": "3.11"}, "seed": 5, "profile": "ci",
    "selection": {"patterns": ["fp.a"]}, "shard": "1/2", "planned": 3,
    "started": "2024-01-01T00:00:00+00:00", "finished": None,
    "totals": {"pass": 2, "numeric-mismatch": 1},
    "patterns": {"fp.a": {"counts": {"pass": 2}, "by_kind": {"valid": {"pass": 2}},
                          "by_dtype": {"f32": {"pass": 2}}, "rules": {"r1": {"pass": 1}},
                          "coverage": {"rank": {"2": 1}}}},
    "rules": {"r1": {"statement": "s", "counts": {"pass": 1}, "patterns": {"fp.a": 1}}},
    "verdicts": [{"case_id": "fp.a/valid/0", "pattern": "fp.a", "status": "pass", "index": 0,
                  "kind": "valid", "rule": None, "dtype": "f32", "reason": "",
                  "seconds": 0.5, "expected": None}],
    "failures": [{"case_id": "fp.a/valid/1", "pattern": "fp.a", "status": "numeric-mismatch",
                  "index": 1, "kind": "valid", "rule": "r1", "dtype": None,
                  "description": "d", "features": {"rank": 2}, "values": {"x": "y"},
                  "reason": "r", "expected": None,
                  "details": {"facts": {"what": "contract", "problem": "p", "message": "m"}},
                  "minimal_of": None, "unexpected_status": None,
                  "replay": {"seed": 5, "case_id": "c", "rerun": "r", "dir": "d", "path": "p",
                             "commands": ["a", "b"]}}],
    "limitations": [{"case_id": "fp.a/valid/2", "pattern": "fp.a", "index": 2, "dtype": "f32",
                     "reason": "r", "limitation_passed": True, "observed_status": "pass"}],
    "extensions": [], "device_problems": {"gpu": "no compiler"},
    "backend_counters": {"builds": 3},
    "departures": [{"id": "dep", "statement": "s", "matches": {"op": "X"}}],
    "unavailable": None, "incomplete": None,
    "expectations": {"file": "e.toml", "sha256": None, "entries": 2, "strict": False,
                     "expected_failures": 1, "unexpected_passes": [_CASE],
                     "skipped": [_CASE]},
}

#: Values each member is replaced with in turn: every JSON type, the edges of each keyword
#: (negative numbers, integer-valued floats, NaN, statuses, shard forms, a trailing newline).
PROBES: tuple[Any, ...] = (
    None, True, 0, -1, 2.0, 2.5, float("nan"), "", "pass", "3/4\n", [], [1], {}, {"a": -1},
    {"PASS": 1}, {"a": {"b": -1}},
)
#: Members the schema leaves free (any object), and a list whose records are checked as the
#: ones of the list before it: not worth probing inside.
FREE = frozenset({"selection", "features", "details", "matches", "expected", "skipped"})

def _paths(value: Any, path: tuple[str | int, ...] = ()) -> Iterator[tuple[str | int, ...]]:
    yield path
    if path and path[-1] in FREE:
        return
    if isinstance(value, dict):
        for key, item in value.items():
            yield from _paths(item, (*path, key))
    elif isinstance(value, list):
        for index, item in enumerate(value):
            yield from _paths(item, (*path, index))


def _replaced(path: tuple[str | int, ...], new: Any) -> Any:
    if not path:
        return copy.deepcopy(new)
    doc = copy.deepcopy(DOCUMENT)
    parent = doc
    for part in path[:-1]:
        parent = parent[part]
    parent[path[-1]] = copy.deepcopy(new)
    return doc


def _removed(path: tuple[str | int, ...]) -> Any:
    doc = copy.deepcopy(DOCUMENT)
    parent = doc
    for part in path[:-1]:
        parent = parent[part]
    del parent[path[-1]]
    return doc


def test_the_results_schema_compiles() -> None:
    assert results._quick_check() is not None, \
        "results.schema.json uses only keywords the quick check knows (else every read " \
        "walks the document with jsonschema)"


def test_the_document_of_these_tests_is_valid() -> None:
    errors = [e.message for e in VALIDATOR.iter_errors(DOCUMENT)]
    assert not errors, f"the test document is a valid one: {errors}"


def test_the_quick_check_answers_as_jsonschema_for_every_member() -> None:
    quick = compile_schema(SCHEMA)
    variants = [(f"{path} = {probe!r}", _replaced(path, probe))
                for path in _paths(DOCUMENT) for probe in PROBES]
    variants += [(f"without {path}", _removed(path)) for path in _paths(DOCUMENT) if path]
    variants += [(f"{path} + unknown member", _replaced(path, {"zz": -1}))
                 for path in _paths(DOCUMENT) if path]
    verdicts = {name: VALIDATOR.is_valid(doc) for name, doc in variants}
    differ = [name for name, doc in variants if quick(doc) != verdicts[name]]
    assert not differ, f"the quick check and jsonschema disagree on {len(differ)} " \
        f"document(s): {differ[:10]}"
    assert 0 < sum(verdicts.values()) < len(variants), \
        "the variants hold both valid and invalid documents (else the comparison says little)"


@pytest.mark.parametrize("schema", [
    {"anyOf": [{"type": "string"}]}, {"patternProperties": {"a": {}}},
    {"enum": [1, "a"]}, {"$ref": "other.json#/x"}, {"type": "decimal"},
    {"items": {}, "prefixItems": [{}]}, {"properties": {"a": {"maxLength": 3}}},
])
def test_a_keyword_it_does_not_check_is_refused(schema: dict[str, Any]) -> None:
    with pytest.raises(Unsupported):
        compile_schema(schema)


def _write(tmp_path: Path, document: dict[str, Any]) -> Path:
    path = tmp_path / "results.json"
    path.write_text(json.dumps(document), encoding="utf-8")
    return path


def test_a_valid_document_is_read_without_jsonschema(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    def refuse() -> Any:
        raise AssertionError("jsonschema's validator was asked about a valid document")

    monkeypatch.setattr(results, "_validator", refuse)
    loaded = results.load_document(_write(tmp_path, DOCUMENT))
    assert loaded.backend == "toy" and len(loaded.verdicts) == 1, \
        f"the valid document is read in full: {loaded.backend}, {len(loaded.verdicts)} verdicts"


@pytest.mark.parametrize(("path", "value"), [
    (("verdicts", 0, "index"), -1), (("verdicts", 0, "seconds"), "slow"),
    (("shard", ), "0/2"), (("totals", ), {"PASS": 1}), (("failures", 0, "replay", "seed"), "s"),
    (("expectations", "skipped", 0, "occurrence"), 0),
    (("patterns", "fp.a", "coverage", "rank"), {"2": -1}),
])
def test_an_invalid_document_fails_with_jsonschemas_message(
        tmp_path: Path, path: tuple[str | int, ...], value: Any) -> None:
    document = _replaced(path, value)
    error = best_match(VALIDATOR.iter_errors(document))
    assert error is not None, f"{path} = {value!r} makes the document invalid"
    where = "".join(f"[{p}]" if isinstance(p, int) else f".{p}" for p in error.absolute_path)
    file = _write(tmp_path, document)
    with pytest.raises(ResultsFormatError) as info:
        results.load_document(file)
    assert str(info.value) == f"{file}: ${where}: {error.message}", \
        f"{path} = {value!r}: the message is jsonschema's best match, with its path: {info.value}"
