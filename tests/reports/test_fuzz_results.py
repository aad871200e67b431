"""Fuzzing the commands that read results documents and failure folders (`report`, `findings`,
`diff`, `merge`, `conform --replay`): mutated documents, hostile strings and folders named in
them end in an exit code with a message, never a traceback or a write outside the output
folder, and what is written (HTML, Markdown, shell lines) stays inert in its medium."""

from __future__ import annotations

import collections
import json
import shlex
import shutil
from collections import Counter
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st
from testkit.fuzz import (
    FUZZ,
    Outcome,
    active_elements,
    assert_clean,
    assert_inert,
    markdown_html,
    mutated,
    run_cli,
    sandbox,
)
from testkit.html import parse
from testkit.report import load

from fusionspec.cli.main import main

#: Failures kept in the fuzzed copy of a run: enough for every section, small enough to copy
#: for every example.
KEEP = 4
#: Values aimed at results documents in particular (statuses, kinds, folders, commands).
RESULTS_VALUES = ("fail", "pass", "fusion-mismatch", "error", "valid", "near-miss",
                  "failures/../../..", "failures/x", "/etc", "fusionspec conform; rm -rf ~",
                  {"dir": "/", "path": "/"}, {"path": "../../.."})


def _trimmed(results: Path, target: Path) -> Path:
    """A copy of the run of `results` under `target`, with its first `KEEP` failures only."""
    doc = load(results)
    doc["failures"] = doc["failures"][:KEEP]
    kept = {f["case_id"] for f in doc["failures"]}
    doc["verdicts"] = [v for v in doc["verdicts"] if v["case_id"] in kept][:KEEP] + \
        [v for v in doc["verdicts"] if v["case_id"] not in kept][:KEEP]
    target.mkdir(parents=True)
    for failure in doc["failures"]:
        folder = failure["replay"]["path"]
        shutil.copytree(results.parent / folder, target / folder)
        failure["replay"]["dir"] = str(target / folder)
    (target / "results.json").write_text(json.dumps(doc))
    return target / "results.json"


@pytest.fixture(scope="module")
def template_elements(seed_run: Path, tmp_path_factory: pytest.TempPathFactory
                      ) -> collections.Counter[str]:
    """The active elements (its own style and script) of the report of the seed run."""
    out = tmp_path_factory.mktemp("template") / "report.html"
    assert main(["report", str(seed_run), "-o", str(out), "--baseline", str(seed_run)]) == 0, \
        "the report of the unmutated seed run renders"
    return active_elements(parse(out.read_text(encoding="utf-8")))


@pytest.fixture(scope="module")
def seed_run(never_fuses_results: Path, tmp_path_factory: pytest.TempPathFactory) -> Path:
    return _trimmed(never_fuses_results, tmp_path_factory.mktemp("seed") / "run")


def _place(seed: Path, box: Path, text: str) -> Path:
    """The seed run copied into the sandbox with `text` as its results document."""
    run = box / "in" / "run"
    shutil.copytree(seed.parent, run)
    (run / "results.json").write_text(text)
    return run / "results.json"


def _markdown_inert(path: Path, what: str) -> None:
    if path.exists():
        text = path.read_text(encoding="utf-8")
        assert_inert(markdown_html(text), what)
        for line in text.splitlines():
            if line.startswith("    fusionspec ") or line.startswith("fusionspec "):
                shlex.split(line)  # a replay line the shell reads as intended: quotes balance


def _checked(outcome: Outcome, what: str) -> None:
    assert_clean(outcome, what, json_out=True)


@FUZZ
@given(data=st.data())
def test_report_survives_mutated_results(seed_run: Path, template_elements: Counter[str],
                                         data: st.DataObject) -> None:
    text = data.draw(mutated(json.loads(seed_run.read_text()), RESULTS_VALUES))
    with sandbox() as box:
        results = _place(seed_run, box, text)
        out = box / "out" / "report.html"
        outcome = run_cli(box, ["report", results, "-o", out, "--baseline", seed_run, "--json"])
        _checked(outcome, "report on a mutated results document")
        if out.exists():
            assert_inert(parse(out.read_text(encoding="utf-8")), "report", template_elements)


@FUZZ
@given(data=st.data())
def test_findings_survive_mutated_results(seed_run: Path, data: st.DataObject) -> None:
    text = data.draw(mutated(json.loads(seed_run.read_text()), RESULTS_VALUES))
    with sandbox() as box:
        results = _place(seed_run, box, text)
        out = box / "out" / "findings.md"
        outcome = run_cli(box, ["findings", results, "-o", out, "--examples",
                                box / "out" / "examples", "--json"])
        _checked(outcome, "findings on a mutated results document")
        _markdown_inert(out, "findings")


@FUZZ
@given(data=st.data(), old_is_mutated=st.booleans())
def test_diff_and_merge_survive_mutated_results(seed_run: Path, data: st.DataObject,
                                                old_is_mutated: bool) -> None:
    text = data.draw(mutated(json.loads(seed_run.read_text()), RESULTS_VALUES))
    with sandbox() as box:
        results = _place(seed_run, box, text)
        pair = [results, seed_run] if old_is_mutated else [seed_run, results]
        markdown = box / "out" / "diff.md"
        outcome = run_cli(box, ["diff", *pair, "--markdown", markdown, "--json"])
        _checked(outcome, "diff with a mutated results document")
        _markdown_inert(markdown, "diff")
        # One part: two would overlap (both hold the seed's cases); merge copies the failure
        # folders the part names, which must stay inside the output folder.
        outcome = run_cli(box, ["merge", results, "-o", box / "out" / "merged.json", "--json"])
        _checked(outcome, "merge with a mutated results document")


def _folder_docs(seed: Path) -> dict[str, Any]:
    folder = seed.parent / load(seed)["failures"][0]["replay"]["path"]
    return {name: json.loads((folder / name).read_text()) for name in ("case.json", "graph.json")
            if (folder / name).exists()}


@FUZZ
@given(data=st.data())
def test_replay_survives_mutated_failure_folders(seed_run: Path, data: st.DataObject) -> None:
    docs = _folder_docs(seed_run)
    name = data.draw(st.sampled_from(sorted(docs)))
    text = data.draw(mutated(docs[name], RESULTS_VALUES, most=2))
    with sandbox() as box:
        results = _place(seed_run, box, seed_run.read_text())
        folder = results.parent / load(results)["failures"][0]["replay"]["path"]
        (folder / name).write_text(text)
        outcome = run_cli(box, ["conform", "--replay", folder, "--backend", "reference",
                                "--out", box / "out", "--json"])
    _checked(outcome, f"conform --replay with a mutated {name}")


#: Path components a hostile ``replay.path`` is built from.
_PARTS = ("..", ".", "failures", "x", "", "...", "~", "$HOME", "failures/..")


@FUZZ
@given(parts=st.lists(st.sampled_from(_PARTS), min_size=1, max_size=5),
       absolute=st.booleans(), linked=st.sampled_from(("none", "folder", "file")),
       which=st.integers(0, KEEP - 1))
def test_merge_never_reaches_outside_its_output(seed_run: Path, parts: list[str],
                                                absolute: bool, linked: str,
                                                which: int) -> None:
    doc = load(seed_run)
    failure = doc["failures"][which % len(doc["failures"])]
    own = failure["replay"]["path"]
    failure["replay"]["path"] = ("/" if absolute else "") + "/".join(parts)
    with sandbox() as box:
        results = _place(seed_run, box, json.dumps(doc))
        outside = box.parent / "outside"
        outside.mkdir()
        (outside / "case.json").write_text('{"secret": "OUTSIDE"}')
        folder = results.parent / own
        if linked == "folder":
            shutil.rmtree(folder)
            folder.symlink_to(outside, target_is_directory=True)
        elif linked == "file":
            (folder / "case.json").unlink()
            (folder / "case.json").symlink_to(outside / "case.json")
        outcome = run_cli(box, ["merge", results, "-o", box / "out" / "merged.json", "--json"])
        copied = [p for p in (box / "out").rglob("*") if p.is_file() and
                  "OUTSIDE" in p.read_text(errors="replace")]
    _checked(outcome, f"merge with replay.path {failure['replay']['path']!r}, link {linked}")
    assert not copied, f"a linked file was copied into the output: {copied}"
