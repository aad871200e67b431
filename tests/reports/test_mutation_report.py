"""The mutation score in the HTML report: ``fusionspec report --mutation FILE`` shows the
score and each planted bug's outcome, and refuses a document that is not one."""

from __future__ import annotations

import json
from pathlib import Path

from fusionspec.cli.main import main


def _score(path: Path) -> Path:
    path.write_text(json.dumps({"profile": "ci", "mutants": 2, "caught": 1, "outcomes": [
        {"mutant": "GeluTanhForErf", "class": "approximation", "expected": "numeric-mismatch",
         "caught": True, "findings": ["numeric-mismatch: GELU (alone) (4)"]},
        {"mutant": "<b>Planted</b>", "class": "overflow", "expected": "numeric-mismatch",
         "caught": False}]}), encoding="utf-8")
    return path


def test_report_shows_the_mutation_score(tmp_path: Path, reference_results: Path) -> None:
    out = tmp_path / "index.html"
    code = main(["report", str(reference_results), "-o", str(out), "--mutation",
                 str(_score(tmp_path / "mutation.json"))])
    assert code == 0, f"fusionspec report with --mutation exited with {code}"
    html = out.read_text(encoding="utf-8")
    assert 'id="mutation"' in html and "1 of 2 (50%)" in html, \
        "the report has a mutation-score section stating caught of planted"
    assert "GeluTanhForErf" in html and "&lt;b&gt;Planted&lt;/b&gt;" in html, \
        "each planted bug is listed, its name escaped"
    assert "<td>yes</td><td>1</td>" in html, \
        "the number of findings a planted bug's run gave is shown beside it"


def test_report_refuses_a_mutation_document_without_outcomes(
        tmp_path: Path, reference_results: Path) -> None:
    bad = tmp_path / "mutation.json"
    bad.write_text(json.dumps({"profile": "ci"}), encoding="utf-8")
    code = main(["report", str(reference_results), "-o", str(tmp_path / "index.html"),
                 "--mutation", str(bad)])
    assert code != 0, "a mutation document with no outcomes is an error, not an empty score"
