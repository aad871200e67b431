"""Results documents and failure folders are untrusted input (CI artifacts, another team's
runs). Each case here once deleted, copied or embedded something outside the output path,
wrote markup or an unquoted shell command into the findings, or replaced its own input."""

from __future__ import annotations

import json
import os
import re
import shlex
from pathlib import Path
from typing import Any

import pytest
from testkit.fuzz import assert_inert, markdown_html
from testkit.report import copy_results, load, save
from testkit.report_backends import HOSTILE

from fusionspec.cli.main import main

#: Strings a backend or a results file could carry, each aimed at one medium.
ATTACKS = (HOSTILE, '<img src=x onerror="alert(1)">', "[click](javascript:alert(1))",
           "x; rm -rf ~ #", "$(touch pwned)", "`whoami`", "a | b", "line\nbreak",
           "**bold** _it_ &lt;b&gt;")


def _snapshot(root: Path) -> dict[str, bytes]:
    return {str(p.relative_to(root)): p.read_bytes() for p in sorted(root.rglob("*"))
            if p.is_file()}


def _findings(capsys: pytest.CaptureFixture[str], *argv: str | Path) -> tuple[int, str]:
    code = main(["findings", *map(str, argv)])
    err = capsys.readouterr().err
    assert "Traceback" not in err, f"findings printed a traceback: {err}"
    return code, err


@pytest.mark.parametrize("backend", ["..", ".", "", "../../x", "/", "a/../../b"])
def test_examples_never_leave_the_examples_folder(
        backend: str, never_fuses_results: Path, tmp_path: Path,
        capsys: pytest.CaptureFixture[str]) -> None:
    results = copy_results(never_fuses_results, tmp_path / "run")
    doc = load(results)
    doc["backend"], doc["device"]["id"], doc["device"]["driver"] = backend, "", ""
    save(results, doc)
    sandbox = tmp_path / "sandbox"
    examples = sandbox / "inner" / "examples"
    examples.mkdir(parents=True)
    (examples / "keep.txt").write_text("mine")
    (sandbox / "inner" / "sibling.txt").write_text("mine too")
    before = _snapshot(sandbox)
    code, err = _findings(capsys, results, "-o", tmp_path / "f.md", "--examples", examples)
    assert code == 0, f"backend {backend!r}: findings runs: {err}"
    after = _snapshot(sandbox)
    lost = {name for name in before if after.get(name) != before[name]}
    assert not lost, f"backend {backend!r}: files outside the run's examples changed: {lost}"
    written = {Path(name).parts[2] for name in set(after) - set(before)}
    assert len(written) == 1 and not written & {".", "..", ""}, \
        f"backend {backend!r}: examples go to one safe subfolder, got {written}"


def _point_outside(tmp_path: Path, results: Path, dir_value: str | None = None) -> str:
    """A folder outside the results folder with a marked graph.json; every failure's replay.dir
    names it (or `dir_value`) and the run's own failure folders are gone."""
    outside = tmp_path / "secret"
    outside.mkdir()
    (outside / "graph.json").write_text('{"graph": [], "secret": "OUTSIDE-MARKER"}')
    (outside / "case.json").write_text('{"note": "OUTSIDE-MARKER"}')
    doc = load(results)
    for failure in doc["failures"]:
        failure["replay"]["dir"] = dir_value or str(outside)
    save(results, doc)
    for folder in (results.parent / "failures").iterdir():
        for file in folder.iterdir():
            file.unlink()
        folder.rmdir()
    return str(outside)


@pytest.mark.parametrize("dir_value", [None, "/", "../secret"])
def test_folders_named_in_results_are_followed_only_inside_it(
        dir_value: str | None, never_fuses_results: Path, tmp_path: Path,
        capsys: pytest.CaptureFixture[str]) -> None:
    results = copy_results(never_fuses_results, tmp_path / "run")
    _point_outside(tmp_path, results, dir_value)
    out = tmp_path / "out"
    code = main(["report", str(results), "-o", str(out / "index.html")])
    assert code == 0, f"replay.dir={dir_value!r}: the report renders"
    html = (out / "index.html").read_text(encoding="utf-8")
    assert "OUTSIDE-MARKER" not in html, f"replay.dir={dir_value!r}: a graph from outside the " \
                                         "results folder was embedded in the report"
    code, err = _findings(capsys, results, "-o", out / "f.md", "--examples", out / "ex")
    assert code == 0, err
    copied = [p for p in (out / "ex").rglob("*") if p.is_file()]
    assert not copied, f"replay.dir={dir_value!r}: copied from outside the results folder: " \
                       f"{copied}"


def test_links_out_of_a_failure_folder_are_not_followed(
        never_fuses_results: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    results = copy_results(never_fuses_results, tmp_path / "run")
    outside = tmp_path / "secret.json"
    outside.write_text('{"graph": [], "secret": "OUTSIDE-MARKER"}')
    for folder in (results.parent / "failures").iterdir():
        for name in ("graph.json", "case.json"):
            (folder / name).unlink()
            os.symlink(outside, folder / name)
    out = tmp_path / "out"
    assert main(["report", str(results), "-o", str(out / "index.html")]) == 0
    assert "OUTSIDE-MARKER" not in (out / "index.html").read_text(encoding="utf-8"), \
        "a graph.json linking out of its folder is not embedded"
    code, err = _findings(capsys, results, "-o", out / "f.md", "--examples", out / "ex")
    assert code == 0, err
    for path in (out / "ex").rglob("*"):
        assert not path.is_symlink(), f"{path}: links are not copied"
        assert path.is_dir() or b"OUTSIDE-MARKER" not in path.read_bytes(), \
            f"{path}: the linked file's content was copied"


def test_findings_markdown_escapes_and_quotes_everything(
        never_fuses_results: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    results = copy_results(never_fuses_results, tmp_path / "run")
    doc = load(results)
    doc["backend"] = "x; rm -rf ~ #"
    doc["device"]["id"] = "$(touch pwned)"
    doc["device"].update(name=HOSTILE, driver=ATTACKS[1], runtime=ATTACKS[2])
    doc["started"] = "`whoami`"
    # (A status key in totals is one of the suite's, or the document is refused.)
    for number, failure in enumerate(doc["failures"]):
        attack = ATTACKS[number % len(ATTACKS)]
        failure.update(reason=f"reason {attack}", description=f"description {attack}",
                       case_id=f"case {attack}")
    save(results, doc)
    out = tmp_path / "f.md"
    code, err = _findings(capsys, results, "-o", out, "--title", HOSTILE)
    assert code == 0, err
    text = out.read_text(encoding="utf-8")
    root = markdown_html(text)
    assert_inert(root, "findings")
    shown = root.text()
    for attack in (HOSTILE, ATTACKS[1], ATTACKS[2], "x; rm -rf ~ #"):
        assert attack in shown, f"{attack!r} reads back as text in the rendered findings"
    commands = [c.text() for c in root.find_all("code") if c.text().startswith("fusionspec ")]
    assert commands, "the findings carry replay commands"
    for command in commands:
        argv = shlex.split(command)
        assert argv[argv.index("--backend") + 1] == "x; rm -rf ~ #" and \
            argv[argv.index("--device") + 1] == "$(touch pwned)", \
            f"the shell sees the backend and device as one argument each: {argv}"
    widths: dict[str, int] = {}  # each table's header row fixes its width
    for line in text.splitlines():
        if line.startswith("|"):
            cells = re.split(r"(?<!\\)\|", line)
            if not line.startswith("|-"):
                width = widths.setdefault("current", len(cells))
                assert len(cells) == width, f"a pipe in the data split a table row: {line}"
        else:
            widths.clear()


@pytest.mark.parametrize("command", ["report", "findings"])
def test_an_output_never_replaces_its_input(command: str, never_fuses_results: Path,
                                            tmp_path: Path,
                                            capsys: pytest.CaptureFixture[str]) -> None:
    results = copy_results(never_fuses_results, tmp_path / "run")
    before = results.read_bytes()
    code = main([command, str(results), "-o", str(results)])
    err = capsys.readouterr().err
    assert code == 2 and "is also an input" in err, f"{command} -o RESULTS: {code} {err}"
    assert results.read_bytes() == before, f"{command}: the results document is untouched"


def test_examples_folder_holding_the_results_is_refused(
        never_fuses_results: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    examples = tmp_path / "ex"
    doc = load(never_fuses_results)
    label = "-".join(p for p in (doc["backend"], doc["device"]["driver"], doc["device"]["id"])
                     if p)
    results = copy_results(never_fuses_results, examples / re.sub(r"[^\w.-]+", "_", label))
    code, err = _findings(capsys, results, "-o", tmp_path / "f.md", "--examples", examples)
    assert code == 2 and "emptied" in err, f"usage error: {code} {err}"
    assert results.exists(), "the results document survives"


def _nested(depth: int) -> str:
    return "[" * depth + "]" * depth


@pytest.mark.parametrize("command", ["report", "findings"])
def test_deeply_nested_results_are_one_line(command: str, tmp_path: Path,
                                            capsys: pytest.CaptureFixture[str]) -> None:
    path = tmp_path / "results.json"
    path.write_text(_nested(100_000))
    code = main([command, str(path), "-o", str(tmp_path / "out")])
    err = capsys.readouterr().err
    assert code == 1 and "Traceback" not in err and len(err.splitlines()) == 1, \
        f"{command}: one line, exit 1: {code} {err!r}"


def test_deeply_nested_failure_folder_is_one_line(never_fuses_results: Path, tmp_path: Path,
                                                  capsys: pytest.CaptureFixture[str]) -> None:
    results = copy_results(never_fuses_results, tmp_path / "run")
    folder = next((results.parent / "failures").iterdir())
    (folder / "graph.json").write_text(_nested(100_000))
    out = tmp_path / "out" / "index.html"
    assert main(["report", str(results), "-o", str(out)]) == 0, "the report still renders"
    (folder / "case.json").write_text(_nested(100_000))
    code = main(["conform", "--backend", "reference", "--replay", str(folder)])
    err = capsys.readouterr().err
    assert code in {1, 2} and "Traceback" not in err and "not a failure folder" in err, \
        f"--replay on a nested case.json: {code} {err!r}"


@pytest.mark.parametrize(("field", "value"), [
    ("extensions", 1e308), ("failures", {"a": 1}), ("totals", -1), ("device", HOSTILE),
    ("extensions", [1]), ("totals", {"pass": {"a": 1}}), ("failures", [{"replay": "x"}]),
])
def test_wrongly_typed_fields_are_one_line_in_findings(
        field: str, value: Any, never_fuses_results: Path, tmp_path: Path,
        capsys: pytest.CaptureFixture[str]) -> None:
    results = copy_results(never_fuses_results, tmp_path / "run")
    doc = load(results)
    doc[field] = value
    save(results, doc)
    code, err = _findings(capsys, results, "-o", tmp_path / "f.md")
    assert code == 1 and field in err, f"{field}={value!r}: one line naming it: {code} {err!r}"
    json.dumps(value)  # the case itself is valid JSON: only its shape is wrong


def test_diff_markdown_escapes_everything(never_fuses_results: Path, reference_results: Path,
                                          tmp_path: Path,
                                          capsys: pytest.CaptureFixture[str]) -> None:
    old = copy_results(reference_results, tmp_path / "old")
    new = copy_results(never_fuses_results, tmp_path / "new")
    doc = load(new)
    doc["backend"] = HOSTILE
    for number, verdict in enumerate(doc["verdicts"]):
        verdict["reason"] = f"reason {ATTACKS[number % len(ATTACKS)]}"
    save(new, doc)
    summary = tmp_path / "summary.md"
    code = main(["diff", str(old), str(new), "--markdown", str(summary)])
    err = capsys.readouterr().err
    assert code == 1 and "Traceback" not in err, f"new failures are a regression: {code} {err}"
    root = markdown_html(summary.read_text(encoding="utf-8"))
    assert_inert(root, "diff --markdown")
    assert HOSTILE in root.text(), "the hostile backend name reads back as text"
    code = main(["diff", str(old), str(new), "--markdown", str(new)])
    assert code == 2 and load(new) == doc, "diff --markdown NEW is refused, NEW untouched"


def test_examples_never_empty_a_folder_findings_did_not_write(
        never_fuses_results: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    results = copy_results(never_fuses_results, tmp_path / "run")
    doc = load(results)
    doc["backend"], doc["device"]["id"], doc["device"]["driver"] = "images", "", ""
    save(results, doc)
    docs = tmp_path / "docs"
    (docs / "images").mkdir(parents=True)
    (docs / "images" / "logo.png").write_bytes(b"png")
    code, err = _findings(capsys, results, "-o", tmp_path / "f.md", "--examples", docs)
    assert code == 1 and "did not write" in err, f"refused, saying why: {code} {err}"
    assert (docs / "images" / "logo.png").read_bytes() == b"png", \
        "a folder of the user's, named like the run, is never emptied"
    again = _findings(capsys, results, "-o", tmp_path / "f.md", "--examples", tmp_path / "ex")
    assert again[0] == 0, f"into a fresh folder it works: {again[1]}"
    rerun = _findings(capsys, results, "-o", tmp_path / "f.md", "--examples", tmp_path / "ex")
    assert rerun[0] == 0, f"and again over its own examples: {rerun[1]}"
