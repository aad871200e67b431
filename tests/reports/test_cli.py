"""``fusionspec report`` on the command line: the file it writes, its summary, and typed errors
(exit code 1 and a message naming the file) for missing or malformed results documents."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest
from testkit.report import load, save

from fusionspec.cli.main import main


def _run(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str, str]:
    code = main(["report", *argv])
    captured = capsys.readouterr()
    return code, captured.out, captured.err


def test_writes_the_report_and_a_json_summary(tmp_path: Path, capsys: pytest.CaptureFixture[str],
                                             reference_results: Path,
                                             never_fuses_results: Path) -> None:
    out = tmp_path / "deep" / "index.html"
    code, stdout, _ = _run(capsys, str(reference_results), str(never_fuses_results), "-o",
                           str(out), "--json")
    assert code == 0, f"rendering succeeds even when a run failed, got exit {code}"
    summary = json.loads(stdout)
    assert summary["report"] == str(out) and out.is_file(), f"the report is written: {summary}"
    assert [(r["backend"], r["verdict"]) for r in summary["runs"]] == \
        [("reference", "PASS"), ("never-fuses", "FAIL")], f"one verdict per run: {summary}"
    assert out.read_text(encoding="utf-8").startswith("<!doctype html>"), "an HTML document"


def test_default_output_path(tmp_path: Path, capsys: pytest.CaptureFixture[str],
                             monkeypatch: pytest.MonkeyPatch, gelu_results: Path) -> None:
    monkeypatch.chdir(tmp_path)
    code, stdout, _ = _run(capsys, str(gelu_results))
    assert code == 0 and (tmp_path / "reports" / "out" / "index.html").is_file(), \
        f"without -o the report goes to reports/out/index.html: {stdout}"
    assert "FAIL: gelu-tanh-for-erf on numpy" in stdout, f"the verdict is printed: {stdout}"


def _broken(tmp_path: Path, name: str, text: str) -> Path:
    path = tmp_path / name
    path.write_text(text, encoding="utf-8")
    return path


@pytest.mark.parametrize(("name", "text", "message"), [
    ("missing.json", None, "cannot read a results document"),
    ("truncated.json", '{"schema": "fusionspec-results/1", ', "cannot read a results document"),
    ("list.json", "[1, 2]", "a results document is a JSON object"),
    ("old.json", '{"schema": "fusionspec-results/0"}', "results schema 'fusionspec-results/0'"),
    ("partial.json", '{"schema": "fusionspec-results/1"}', "results document lacks"),
])
def test_unreadable_results_are_typed_errors(tmp_path: Path, capsys: pytest.CaptureFixture[str],
                                             name: str, text: str | None, message: str) -> None:
    path = tmp_path / name if text is None else _broken(tmp_path, name, text)
    code, _, stderr = _run(capsys, str(path), "-o", str(tmp_path / "index.html"))
    assert code == 1, f"{name}: exit code 1, got {code}"
    assert message in stderr and name in stderr and "Traceback" not in stderr, \
        f"{name}: one message naming the file and the problem, got {stderr!r}"
    assert not (tmp_path / "index.html").exists(), f"{name}: no report from a bad document"


def test_malformed_field_inside_a_document(tmp_path: Path, capsys: pytest.CaptureFixture[str],
                                           reference_results: Path) -> None:
    doc = load(reference_results)
    doc["patterns"]["softmax.post_ops"]["counts"] = ["pass", 3]
    path = save(tmp_path / "results.json", doc)
    code, _, stderr = _run(capsys, str(path), "-o", str(tmp_path / "index.html"))
    assert code == 1 and "patterns.softmax.post_ops.counts: ['pass', 3] is not of type " \
        "'object'" in stderr, \
        f"a field of the wrong shape is named, got {stderr!r}"


def test_bad_baseline_and_options(tmp_path: Path, capsys: pytest.CaptureFixture[str],
                                  gelu_results: Path) -> None:
    code, _, stderr = _run(capsys, str(gelu_results), "-o", str(tmp_path / "a.html"),
                           "--baseline", str(tmp_path / "nope.json"))
    assert code == 1 and "nope.json" in stderr, f"a missing baseline is named: {stderr!r}"
    code, _, stderr = _run(capsys, str(gelu_results), "-o", str(tmp_path / "b.html"),
                           "--drilldowns", "-1")
    assert code == 1 and "drill-downs" in stderr, f"a negative limit is refused: {stderr!r}"


def test_console_entry_point(tmp_path: Path, gelu_results: Path) -> None:
    out = tmp_path / "index.html"
    proc = subprocess.run([sys.executable, "-m", "fusionspec.cli", "report",
                           str(gelu_results), "-o", str(out)], capture_output=True, text=True,
                          timeout=300, check=False)
    assert proc.returncode == 0 and out.is_file(), \
        f"python -m fusionspec.cli report works: {proc.stderr}"
    listed = subprocess.run([sys.executable, "-m", "fusionspec.cli", "--help"],
                            capture_output=True, text=True, timeout=120, check=False)
    assert "report" in listed.stdout, f"the command is listed in --help: {listed.stdout}"
