"""An expectations file is someone's text read by every run: its words are cleaned and clipped
before they reach a verdict, a terminal or JUnit XML, its size is bounded so the largest file
the bounds allow is judged in seconds, and its compiled globs match as `fnmatch` does."""

from __future__ import annotations

import time
import xml.etree.ElementTree as ET
from fnmatch import fnmatchcase
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st
from testkit import toy_backends as toy
from testkit.cli import fusionspec
from testkit.fuzz import FUZZ, hostile_text

from fusionspec.conformance.expectations import (
    MAX_ENTRIES,
    MAX_FILE_BYTES,
    Expectation,
    Expectations,
    ExpectationsError,
)
from fusionspec.conformance.expectations_file import (
    MAX_GLOBS,
    MAX_VALUE_CHARS,
    MAX_VALUES,
    TEXT_LIMIT,
)
from fusionspec.conformance.grade.document import SCHEMA_VERSION, ResultsDocument
from fusionspec.conformance.junit import junit_xml
from fusionspec.reference.backend import NUMPY_DEVICE

HEAD = 'schema = "fusionspec-expectations/2"\n'
#: What a terminal acts on rather than shows.
CONTROLS = "\x1b\x9b\u202a\u202b\u202c\u202d\u202e\u2066\u2067\u2068\u2069"


def _toml_string(text: str) -> str:
    """`text` as a TOML basic string (every character TOML allows only escaped, escaped)."""
    out = []
    for char in text:
        if char in '"\\' or ord(char) < 0x20 or ord(char) == 0x7f:
            out.append(f"\\u{ord(char):04x}")
        elif 0xD800 <= ord(char) <= 0xDFFF:
            out.append("\ufffd")  # TOML holds no lone surrogate
        else:
            out.append(char)
    return '"' + "".join(out) + '"'


def _entry(reason: str, **fields: str) -> str:
    lines = ["[[expect]]", 'status = "fail"', f"reason = {_toml_string(reason)}"]
    lines += [f"{name} = {_toml_string(value)}" for name, value in fields.items()]
    return "\n".join(lines) + "\n"


def test_a_nul_in_a_reason_still_gives_junit_that_parses() -> None:
    exp = Expectations.parse(HEAD + _entry("off\x00by\x1b[2K one\u202e\x0b", pattern="fp.*",
                                           link="https://x\x00\x07"), "exp.toml")
    entry = exp.entries[0]
    assert not any(c in entry.reason + entry.link for c in "\x00\x07\x0b\x1b\u202e"), \
        f"control characters are dropped: {entry.reason!r} {entry.link!r}"
    verdict = {"case_id": "c/valid/1", "pattern": "fp.x", "status": "numeric-mismatch",
               "index": 0, "expected": entry.citation().to_json()}
    root = ET.fromstring(junit_xml(ResultsDocument.from_json(
        {"schema": SCHEMA_VERSION, "verdicts": [verdict], "backend": "b\x00",
         "device": {"id": "d\ud800"}})))
    skipped = root.find("testsuite/testcase/skipped")
    assert skipped is not None and "offby one" in skipped.get("message", ""), \
        f"the expected failure is skipped with its cleaned reason: {ET.tostring(root)!r}"


def test_a_megabyte_reason_is_clipped() -> None:
    exp = Expectations.parse(HEAD + _entry("x" * 2**20, pattern="fp.*",
                                           finding="f" * 5000), "exp.toml")
    entry = exp.entries[0]
    assert len(entry.reason) <= TEXT_LIMIT + 60, f"clipped: {len(entry.reason)} characters"
    assert len(entry.finding) <= TEXT_LIMIT + 60, f"clipped: {len(entry.finding)} characters"
    assert "more characters cut" in entry.reason, "the clip says so"


@FUZZ
@given(reason=hostile_text(80), link=hostile_text(40), finding=hostile_text(40))
def test_every_text_of_an_entry_is_cleaned(reason: str, link: str, finding: str) -> None:
    text = HEAD + _entry(reason or "r", pattern="fp.*", link=link or "l",
                         finding=finding or "f")
    entry = Expectations.parse(text, "exp.toml").entries[0]
    for name in ("reason", "link", "finding"):
        value: str = getattr(entry, name)
        value.encode("utf-8")
        assert not any(c in value for c in CONTROLS + "\x00\n\r\ufffe\uffff"), \
            f"{name} is one clean line: {value!r}"
    root = ET.fromstring(junit_xml(ResultsDocument.from_json({
        "schema": SCHEMA_VERSION, "backend": "b", "device": {"id": "d"}, "verdicts": [{
            "case_id": "c", "pattern": "fp.x", "status": "numeric-mismatch", "index": 0,
            "expected": entry.citation().to_json()}]})))
    assert root.tag == "testsuites", "the JUnit XML parses"


@FUZZ
@given(backend=hostile_text(30), reason=hostile_text(60), case_id=hostile_text(20))
def test_junit_parses_whatever_the_document_holds(backend: str, reason: str,
                                                  case_id: str) -> None:
    failure = {"case_id": case_id, "pattern": reason, "status": "error", "reason": reason,
               "description": reason, "details": {}, "replay": {"rerun": reason}}
    document: dict[str, Any] = {
        "schema": SCHEMA_VERSION, "backend": backend, "device": {"id": reason}, "started": reason,
        "verdicts": [{"case_id": case_id, "pattern": reason, "status": "error",
                      "reason": reason, "index": 0}],
        "failures": [failure], "incomplete": reason,
        "expectations": {"skipped": [{"case_id": reason, "pattern": reason, "index": 1,
                                      "entry": 1,
                                      "reason": reason, "link": reason}]}}
    text = junit_xml(ResultsDocument.from_json(document))
    text.encode("utf-8")
    assert ET.fromstring(text.split("\n", 1)[1]).tag == "testsuites", "the XML parses"


@pytest.mark.parametrize(("body", "what"), [
    (_entry("r", case="*") * 2 + "[[expect]]\nstatus = \"skip\"\nreason = \"r\"\ncase = [" +
     ",".join(f'"c{n}/*x"' for n in range(MAX_GLOBS)) + "]\n", "globs"),
    ("[[expect]]\nstatus = \"skip\"\nreason = \"r\"\ncase = [" +
     ",".join(f'"c{n}"' for n in range(MAX_VALUES + 1)) + "]\n", "values"),
    (_entry("r", case="c" * (MAX_VALUE_CHARS + 1)), "characters"),
])
def test_a_file_past_the_bounds_is_one_error(body: str, what: str) -> None:
    with pytest.raises(ExpectationsError, match=f"more than .*{what}|{what}.*more than|"
                                                f"{what}, more than"):
        Expectations.parse(HEAD + body, "exp.toml")


def _largest_file() -> str:
    """The largest file the bounds allow: every entry, every value, every glob, long reasons;
    globs of the costly kind (several stars) and values that match no case."""
    per = MAX_VALUES // MAX_ENTRIES
    parts = [HEAD]
    for n in range(MAX_ENTRIES):
        globs = [f'"z*y*x*w*{n}*"'] if n < MAX_GLOBS else []
        plain = [f'"zz/valid/{n}-{i}"' for i in range(per - len(globs))]
        parts.append(f'[[expect]]\nstatus = "fail"\nreason = "{"r" * 300}"\ncase = ['
                     + ",".join(globs + plain) + "]\n")
    return "".join(parts)


def test_the_largest_allowed_file_judges_hundreds_of_cases_quickly() -> None:
    text = _largest_file()
    assert len(text.encode()) <= MAX_FILE_BYTES, f"within the size bound: {len(text)}"
    cases = [toy.valid_case("fp.matmul_post_ops", seed) for seed in range(3)]
    start = time.monotonic()
    exp = Expectations.parse(text, "big.toml")
    for _ in range(73):  # 219 cases
        for case in cases:
            assert exp.match(case, NUMPY_DEVICE) is None, "no entry matches these cases"
    took = time.monotonic() - start
    # A couple of seconds on an idle machine; the bound leaves room for a loaded one (the
    # same file once took minutes).
    assert took < 30, f"reading the file and judging 219 cases took {took:.1f} s"


GLOB_CHARS = st.sampled_from(list("ab/.*?[]!-"))


@FUZZ
@given(globs=st.lists(st.text(GLOB_CHARS, min_size=1, max_size=6), min_size=1, max_size=4),
       names=st.lists(st.text(st.sampled_from(list("ab/.-[]!")), max_size=6), max_size=8))
def test_compiled_globs_match_as_fnmatch_does(globs: list[str], names: list[str]) -> None:
    entry = Expectation(number=1, status="fail", reason="r", case=tuple(globs),
                        pattern=tuple(globs))
    for name in names:
        expected = any(fnmatchcase(name, g) for g in globs)
        got = entry.matches_fields(name, "valid", None, None, name, None)
        assert got == expected, f"{name!r} against {globs!r}: {got}, fnmatch says {expected}"


def test_junit_over_an_expectations_file_with_a_nul_parses(tmp_path: Path) -> None:
    (tmp_path / "exp.toml").write_text(HEAD + _entry("known\x00 \x1b[31mbad\u202e",
                                                     pattern="fp.bn_relu"))
    done = fusionspec(["conform", "--backend", "testkit.toy_backends:NeverFuses", "--patterns",
                       "fp.bn_relu", "--kinds", "valid", "--no-isolate", "--out", "out",
                       "--expectations", "exp.toml", "--junit", "junit.xml"], tmp_path)
    assert "Traceback" not in done.stderr, done.stderr[-1500:]
    root = ET.parse(tmp_path / "junit.xml").getroot()
    messages = [s.get("message", "") for s in root.iter("skipped")]
    assert messages and all("known bad" in m for m in messages), \
        f"every expected failure is skipped with the cleaned reason: {messages[:3]}"
    assert not any(c in done.stdout + done.stderr for c in CONTROLS), "nothing reaches a terminal"
