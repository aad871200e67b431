"""A results document is JSON, and JSON's ``"\\ud800"`` escape gives a lone surrogate, which no
UTF-8 writer takes: every command reading documents (`report`, `findings`, `diff`, `merge`)
reads one holding it, with noncharacters, control characters, escape sequences and
bidirectional overrides in its text, ends with its exit code and prints none of them."""

from __future__ import annotations

import json
import re
from pathlib import Path

from testkit.cli import fusionspec
from testkit.unfit_backends import UNFIT

#: What a terminal acts on rather than shows.
CONTROLS = "\x1b\x9b\u202a\u202b\u202c\u202d\u202e\u2066\u2067\u2068\u2069"


def _quiet(text: str, what: str) -> None:
    assert "Traceback" not in text and "UnicodeEncodeError" not in text, \
        f"{what}: a traceback:\n{text[-2000:]}"
    shown = sorted({c for c in text if c in CONTROLS})
    assert not shown, f"{what}: terminal controls reached the output: {shown!r}"


def _document_with(text: str, seed: Path, target: Path) -> Path:
    doc = json.loads(seed.read_text(encoding="utf-8"))
    doc["backend"] = "b" + text
    doc["device"]["id"] = "d" + text
    for record in doc["verdicts"] + doc["failures"]:
        record["reason"] = "r" + text
        record["description"] = "d" + text
    target.mkdir(parents=True)
    (target / "results.json").write_text(json.dumps(doc))  # "\ud800" escapes, as JSON allows
    return target / "results.json"


def test_a_results_document_with_unfit_text_is_read_by_every_command(
        gelu_results: Path, tmp_path: Path) -> None:
    results = _document_with(UNFIT, gelu_results, tmp_path / "run")
    assert "\\ud800" in results.read_text(), "the document carries a lone surrogate"
    for argv in (["report", results, "-o", "page/index.html"],
                 ["findings", results, "-o", "findings.md"],
                 ["findings", results, "-o", "f2.md", "--json"],
                 ["diff", gelu_results, results, "--markdown", "diff.md"],
                 ["diff", results, gelu_results, "--json"],
                 ["merge", results, "-o", "merged/results.json"]):
        done = fusionspec([str(a) for a in argv], tmp_path)
        _quiet(done.stdout + done.stderr, argv[0])
        assert done.returncode in (0, 1), \
            f"{argv[0]}: exit {done.returncode}:\n{done.stderr[-800:]}"
    (tmp_path / "diff.md").read_text(encoding="utf-8")
    merged = (tmp_path / "merged" / "results.json").read_text(encoding="utf-8")
    assert not re.search(r"\\ud[89a-f]", merged, re.IGNORECASE), \
        "the merged document holds no lone surrogate"
