"""`fusionspec findings`: failures and extensions grouped by cause, each with a replayable
example, from real results documents."""

from __future__ import annotations

import re
import shutil
from pathlib import Path
from typing import Any

import pytest
from testkit.report import load

from fusionspec.cli.main import main
from fusionspec.conformance.grade.document import FailureRecord, ResultsDocument
from fusionspec.conformance.grade.results import load_failure
from fusionspec.reports.findings import FULL_ENTRIES, group_findings, signature


def _record(data: dict[str, Any]) -> FailureRecord:
    return FailureRecord.from_json({"case_id": "c", "pattern": "p", **data}, "record")


def test_signature_abstracts_members_and_numbers_but_not_ordered_binaries() -> None:
    def rec(expected: list[str], *formed: list[str]) -> FailureRecord:
        return _record({"status": "fusion-mismatch", "reason": "ignored", "details": {
            "facts": {"what": "fusion", "expected": [{"kinds": expected}],
                      "formed": [{"kinds": f} for f in formed]}}})

    a = signature(rec(["Elu", "Add", "Maximum"], ["Elu"], ["Add", "Maximum"]))
    b = signature(rec(["ReLU", "Multiply", "Minimum", "Add"], ["ReLU"],
                      ["Multiply", "Minimum", "Add"]))
    assert a == b, f"member kinds, repeat counts and ids are incidental: {a!r} vs {b!r}"
    c = signature(rec(["Elu", "Subtract"], ["Elu"], ["Subtract"]))
    assert "Subtract" in c and c != signature(rec(["Elu", "Add"], ["Elu"], ["Add"])), \
        f"Subtract enters chains on one port only, so it stays literal: {c!r}"
    numeric = signature(_record({"status": "numeric-mismatch", "dtype": "bf16",
                                 "reason": "ignored", "details": {"facts": {
                                     "what": "numeric", "chain": ["MatMul", "ReLU"],
                                     "dtype": "bf16", "nonfinite": False}}}))
    assert numeric.endswith("[MatMul->Unary] (bf16)"), \
        f"a numeric finding is its chain and dtype, with bf16/f32 intact: {numeric!r}"
    legacy = signature(_record({"status": "numeric-mismatch", "pattern": "matmul.post_ops",
                                "reason": "tensor 7: 3 of 8 exceed [MatMul->ReLU]"}))
    assert legacy == "numeric-mismatch: matmul.post_ops (no facts recorded)", \
        f"a record written before verdicts carried facts groups by status and pattern: {legacy!r}"


def test_findings_document_covers_every_failure_with_a_replayable_example(
        never_fuses_results: Path, tmp_path: Path) -> None:
    out, examples = tmp_path / "findings.md", tmp_path / "examples"
    code = main(["findings", str(never_fuses_results), "-o", str(out), "--examples",
                 str(examples), "--title", "Never fuses"])
    assert code == 0, f"fusionspec findings exited with {code}"
    text = out.read_text(encoding="utf-8")
    document = load(never_fuses_results)
    findings = group_findings(ResultsDocument.from_json(document))
    counted = sum(len(f.records) for f in findings)
    failures = [f for f in document["failures"] if not f.get("minimal_of")]
    assert counted == len(failures) and failures, \
        f"every failing case belongs to one finding: {counted} grouped of {len(failures)}"
    assert text.startswith("# Never fuses"), "the title heads the document"
    headings = re.findall(r"^#### \d+\. ", text, re.M)
    rows = re.findall(r"^\| \d+ \| ", text, re.M)
    assert len(headings) == min(len(findings), FULL_ENTRIES), \
        f"a full entry for each of the first {FULL_ENTRIES} findings: {len(headings)} " \
        f"headings for {len(findings)} findings"
    assert len(headings) + len(rows) == len(findings), \
        f"one entry per finding: {len(headings)} headings and {len(rows)} table rows for " \
        f"{len(findings)} findings"
    folders = re.findall(r"--replay (\S+)`", text)
    assert len(folders) == len(findings), "each finding names one replayable example"
    for folder in folders:
        case, _ = load_failure(Path(folder))
        assert case.graph.ops, f"example folder {folder} holds the case's graph"
        assert Path(folder).resolve().is_relative_to(examples.resolve()), \
            f"examples are copied under --examples, not left in the run's folder: {folder}"


def test_extensions_are_recorded_and_listed_apart(fuses_everything_results: Path,
                                                  tmp_path: Path) -> None:
    document = load(fuses_everything_results)
    extensions = document.get("extensions", [])
    verdicts = [v for v in document["verdicts"] if v["status"] == "extension"]
    assert extensions and len(extensions) == len(verdicts), \
        f"each extension verdict is recorded with its artifacts: {len(extensions)} of " \
        f"{len(verdicts)}"
    assert all(Path(e["replay"]["dir"]).is_dir() for e in extensions), \
        "an extension is saved like a failure, so it can be replayed"
    out = tmp_path / "findings.md"
    assert main(["findings", str(fuses_everything_results), "-o", str(out)]) == 0
    text = out.read_text(encoding="utf-8")
    section = text.split("### Extensions", 1)[-1]
    assert "extension:" in section and "fuses a chain the pages do not promise" in section, \
        f"extensions get their own section with an explanation:\n{section[:600]}"


def test_extension_examples_are_copied_and_replay_from_the_copy(
        fuses_everything_results: Path, tmp_path: Path) -> None:
    # A results folder that was moved: the paths the run recorded no longer lead inside it.
    moved = tmp_path / "moved"
    shutil.copytree(fuses_everything_results.parent, moved)
    out, examples = tmp_path / "findings.md", tmp_path / "examples"
    assert main(["findings", str(moved / fuses_everything_results.name), "-o", str(out),
                 "--examples", str(examples)]) == 0
    section = out.read_text(encoding="utf-8").split("### Extensions", 1)[-1]
    folders = re.findall(r"--replay (\S+)`", section)
    assert folders, f"each extension names a replayable example:\n{section[:600]}"
    for folder in folders:
        assert Path(folder).resolve().is_relative_to(examples.resolve()), \
            f"an extension's example is copied under --examples like a failure's: {folder}"
        case, _ = load_failure(Path(folder))
        assert case.graph.ops, f"the copied extension example {folder} holds its graph"


def test_replay_lines_name_examples_from_the_current_folder_or_absolutely(
        never_fuses_results: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    inside, elsewhere = tmp_path / "repo", tmp_path / "elsewhere"
    inside.mkdir()
    elsewhere.mkdir()
    for cwd, expect_relative in ((inside, True), (elsewhere, False)):
        monkeypatch.chdir(cwd)
        out = tmp_path / f"findings-{cwd.name}.md"
        examples = inside / "docs" / f"examples-{cwd.name}"
        assert main(["findings", str(never_fuses_results), "-o", str(out), "--examples",
                     str(examples)]) == 0
        folders = re.findall(r"--replay (\S+)`", out.read_text(encoding="utf-8"))
        assert folders, "the document names replayable examples"
        for folder in folders:
            assert ".." not in Path(folder).parts, \
                f"a replay path never climbs out of the current folder: {folder}"
            assert Path(folder).is_absolute() != expect_relative, \
                f"from {cwd.name}: {folder} should be " \
                f"{'relative to it' if expect_relative else 'absolute'}"
            assert (cwd / folder).resolve().is_relative_to(examples.resolve()), \
                f"{folder} names a copied example under {examples}"
