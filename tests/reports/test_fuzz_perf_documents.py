"""Fuzzing the commands that read performance documents (`diff`, `merge`, `report`,
`findings`): text fields drawn with lone surrogates, noncharacters, control characters, escape
sequences and bidirectional overrides (`testkit.fuzz.hostile_text`) end in an exit code with
a message, never a traceback, a write outside the output folder or text a strict UTF-8 terminal
cannot take, and what is written (HTML, Markdown) stays inert."""

from __future__ import annotations

import collections
import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st
from testkit.fuzz import (
    FUZZ,
    active_elements,
    assert_clean,
    assert_inert,
    hostile_text,
    markdown_html,
    run_cli,
    sandbox,
)
from testkit.html import parse
from testkit.perf_docs import mixed_document

from fusionspec.cli.main import main


def _text_paths(doc: Any, at: tuple[Any, ...] = ()) -> Iterator[tuple[Any, ...]]:
    """The path of every string in `doc`, and of every key of its objects' text-valued maps
    (the workloads' ids, the device's fields, the commands)."""
    if isinstance(doc, str):
        yield at
    elif isinstance(doc, dict):
        for key, value in doc.items():
            yield from _text_paths(value, (*at, key))
    elif isinstance(doc, list):
        for index, value in enumerate(doc):
            yield from _text_paths(value, (*at, index))


SEED = mixed_document()
PATHS = list(_text_paths(SEED))


def _set(doc: Any, path: tuple[Any, ...], value: str) -> None:
    for key in path[:-1]:
        doc = doc[key]
    doc[path[-1]] = value


@st.composite
def hostile_document(draw: st.DrawFn) -> str:
    """The seed document with some of its text fields, or every one, drawn hostile."""
    doc = json.loads(json.dumps(SEED))
    chosen = PATHS if draw(st.booleans()) else draw(
        st.lists(st.sampled_from(PATHS), min_size=1, max_size=8, unique=True))
    for path in chosen:
        _set(doc, path, draw(hostile_text()))
    return json.dumps(doc)  # lone surrogates travel as \ud800 escapes, as JSON allows


@pytest.fixture(scope="module")
def template_elements(tmp_path_factory: pytest.TempPathFactory) -> collections.Counter[str]:
    """The active elements (its own style and script) of the report of the seed document."""
    folder = tmp_path_factory.mktemp("perf-template")
    (folder / "perf.json").write_text(json.dumps(SEED))
    assert main(["report", str(folder / "perf.json"), "-o", str(folder / "r.html")]) == 0, \
        "the report of the unmutated seed document renders"
    return active_elements(parse((folder / "r.html").read_text(encoding="utf-8")))


def _place(box: Path, text: str) -> tuple[Path, Path]:
    """The hostile document and the seed as a baseline, under ``box/in``."""
    (box / "in" / "hostile").mkdir()
    (box / "in" / "seed").mkdir()
    (box / "in" / "hostile" / "perf.json").write_text(text)
    (box / "in" / "seed" / "perf.json").write_text(json.dumps(SEED))
    return box / "in" / "hostile" / "perf.json", box / "in" / "seed" / "perf.json"


def _markdown_inert(path: Path, what: str) -> None:
    if path.exists():
        assert_inert(markdown_html(path.read_text(encoding="utf-8")), what)


@FUZZ
@given(text=hostile_document(), old_is_hostile=st.booleans(), as_json=st.booleans())
def test_diff_and_merge_survive_hostile_text(text: str, old_is_hostile: bool,
                                             as_json: bool) -> None:
    with sandbox() as box:
        hostile, seed = _place(box, text)
        pair = [hostile, seed] if old_is_hostile else [seed, hostile]
        markdown = box / "out" / "diff.md"
        json_flag = ["--json"] if as_json else []
        outcome = run_cli(box, ["diff", *pair, "--markdown", markdown, *json_flag])
        assert_clean(outcome, "diff of a perf document with hostile text", json_out=as_json)
        _markdown_inert(markdown, "diff --markdown of perf documents")
        outcome = run_cli(box, ["merge", hostile, "-o", box / "out" / "merged.json",
                                *json_flag])
        assert_clean(outcome, "merge of a perf document with hostile text", json_out=as_json)


@FUZZ
@given(text=hostile_document())
def test_report_and_findings_survive_hostile_text(template_elements: collections.Counter[str],
                                                  text: str) -> None:
    with sandbox() as box:
        hostile, seed = _place(box, text)
        out = box / "out" / "report.html"
        outcome = run_cli(box, ["report", hostile, seed, "-o", out])
        assert_clean(outcome, "report of a perf document with hostile text")
        if out.exists():
            assert_inert(parse(out.read_text(encoding="utf-8")), "report", template_elements)
        findings = box / "out" / "findings.md"
        outcome = run_cli(box, ["findings", hostile, "-o", findings])
        assert_clean(outcome, "findings of a perf document with hostile text")
        _markdown_inert(findings, "findings of perf documents")
