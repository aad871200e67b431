"""The independent catch rates in the HTML report: the sampled mutation score and the real-bug
score, named with ``--mutation-score`` / ``--real-bugs`` or found beside the results, shown per
area and per class; "not measured" with the command when absent; a bad document named, never a
traceback; and the nox sessions that write them print their score lines."""

from __future__ import annotations

import functools
import importlib.util
import json
import os
import re
from pathlib import Path
from typing import Any

import pytest
from testkit.html import Node, parse
from testkit.report import copy_results

from fusionspec.cli.main import main
from fusionspec.reports.catch_rates import CatchRateError, load_real_bugs, load_sampled

#: A document tools/mutation/score.py wrote (300 mutants, every survivor still untriaged; the
#: diffs cut to their first lines).
EXAMPLE = Path(__file__).with_name("data") / "mutation_sample.json"
HOSTILE = "<script>alert(1)</script>\x1b[2K\x07\ud800"


def sampled_document() -> dict[str, Any]:
    """A small sampled score with survivors of every verdict (the shape score.py writes)."""
    def survivor(area: str, verdict: str) -> dict[str, str]:
        return {"area": area, "key": f"{area} :: X :: a => b", "verdict": verdict,
                "cases": "3", "diff": "-a\n+b"}
    return {
        "areas": {
            "op functions": {"killed": 9, "survived": 3, "equivalent": 1, "missed": 2,
                             "errors": 0, "incompetent": 0, "score": 9 / 11,
                             "interval": [0.523, 0.949]},
            "executor": {"killed": 4, "survived": 2, "equivalent": 0, "missed": 2, "errors": 1,
                         "incompetent": 0, "score": 4 / 6, "interval": [0.3, 0.903]}},
        "tested": 18, "killed": 13, "non_equivalent": 17, "score": 13 / 17,
        "interval": [0.527, 0.904], "seed": 3, "size": 18,
        "survivors": [survivor("op functions", "equivalent"), survivor("op functions", "missed"),
                      survivor("op functions", "untriaged"), survivor("executor", "missed"),
                      survivor("executor", "untriaged")]}


def real_bugs_document() -> dict[str, Any]:
    """A real-bug score of three bugs, one missed with its corner (hostile text in it)."""
    def outcome(bug: str, bug_class: str, caught: bool, **extra: str) -> dict[str, Any]:
        return {"bug": bug, "class": bug_class, "source": "https://github.com/o/r/pull/1",
                "fixed_in": "v3.1", "expected": "numeric-mismatch", "caught": caught,
                "statuses": {"pass": 3}, "findings": [], **extra}
    return {"profile": "ci", "bugs": 3, "caught": 2, "score": 2 / 3, "not_applicable": 4,
            "per_class": {"post-op numerics": {"caught": 1, "total": 1},
                          "fusion decision": {"caught": 1, "total": 2}},
            "outcomes": [outcome("onednn-gelu-erf", "post-op numerics", True),
                         outcome("tvm-drops-add", "fusion decision", True),
                         outcome("onednn-zero-groups", "fusion decision", False,
                                 corner="no ci case sets groups to 0 " + HOSTILE)]}


def _save(path: Path, document: object) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(document), encoding="utf-8")
    return path


def _report(capsys: pytest.CaptureFixture[str], *argv: str | Path,
            ) -> tuple[int, str, str, str]:
    """Exit code, HTML (empty when none was written), stdout and stderr of a report run."""
    args = [str(a) for a in argv]
    code = main(["report", *args])
    captured = capsys.readouterr()
    out = Path(args[args.index("-o") + 1])
    html = out.read_text(encoding="utf-8") if out.is_file() else ""
    return code, html, captured.out, captured.err


def _section(html: str) -> Node:
    found = parse(html).find_all("section", id="catch-rates")
    assert len(found) == 1, "the report has one catch-rates section"
    return found[0]


def _rows(section: Node, table: str) -> list[list[str]]:
    tables = section.find_all("table", id=table)
    assert len(tables) == 1, f"the section has a table {table}"
    return [[" ".join(c.text().split()) for c in row.find_all("td")]
            for row in tables[0].find_all("tbody")[0].find_all("tr")]


def test_report_shows_both_scores(tmp_path: Path, capsys: pytest.CaptureFixture[str],
                                  reference_results: Path) -> None:
    sampled = _save(tmp_path / "scores" / "sample.json", sampled_document())
    real = _save(tmp_path / "scores" / "real.json", real_bugs_document())
    code, html, stdout, stderr = _report(capsys, reference_results, "-o", tmp_path / "i.html",
                                         "--mutation-score", sampled, "--real-bugs", real)
    assert code == 0, f"the report with both scores is written: {stderr}"
    section = _section(html)
    assert _rows(section, "mutation-sample-areas") == [
        ["op functions", "12", "9", "1", "2", "81.8%", "[52.3%, 94.9%]"],
        ["executor", "6", "4", "0", "2", "66.7%", "[30.0%, 90.3%]"],
        ["all", "18", "13", "1", "4", "76.5%", "[52.7%, 90.4%]"]], \
        "per area and in all: tested, killed, equivalent, missed, score and its 95% interval"
    total = " ".join(section.find_all(id="mutation-sample-total")[0].text().split())
    assert "76.5%" in total and "13 of 17" in total and "seed 3" in total, \
        f"the overall sampled score is stated: {total!r}"
    survivors = section.find_all(id="mutation-sample-survivors")[0].text()
    assert "1 equivalent, 2 missed, 2 untriaged" in survivors and "1 mutant(s) could not be " \
        "judged" in survivors, f"survivors are counted by verdict: {survivors!r}"
    real_total = " ".join(section.find_all(id="real-bugs-total")[0].text().split())
    assert "66.7%" in real_total and "2 of 3 applicable" in real_total and "4 more" in \
        real_total, f"the real-bug score is caught of applicable: {real_total!r}"
    assert _rows(section, "real-bugs-classes") == [
        ["post-op numerics", "1", "1", "100.0%"], ["fusion decision", "1", "2", "50.0%"]], \
        "the real-bug score per bug class"
    misses = _rows(section, "real-bugs-misses")
    assert len(misses) == 1 and misses[0][0] == "onednn-zero-groups" \
        and misses[0][4].startswith("no ci case sets groups to 0 <script>alert(1)</script>"), \
        f"each missed bug is listed with its corner: {misses}"
    assert "<script>alert" not in html and "&lt;script&gt;alert(1)&lt;/script&gt;" in html, \
        "the corner's markup is escaped"
    assert "\x1b" not in html and "\x07" not in html and "\ufffd" in html, \
        "control characters are removed and a lone surrogate replaced"
    assert "sampled mutation score: 76.5% (13 of 17 killed" in stdout and \
        "real-bug score: 66.7% (2 of 3 applicable bugs caught)" in stdout, \
        f"the summary names both scores: {stdout!r}"
    assert 'href="#catch-rates"' in html, "the table of contents leads to the section"


def test_report_finds_the_scores_beside_the_results(
        tmp_path: Path, capsys: pytest.CaptureFixture[str], reference_results: Path) -> None:
    results = copy_results(reference_results, tmp_path / "results" / "conformance" / "ref")
    (tmp_path / "results" / "mutation_sample.json").write_bytes(EXAMPLE.read_bytes())
    _save(tmp_path / "results" / "real_bugs.json", real_bugs_document())
    code, html, stdout, _ = _report(capsys, results, "-o", tmp_path / "i.html", "--json")
    assert code == 0, "the report is written"
    section = _section(html)
    rows = _rows(section, "mutation-sample-areas")
    assert [r[0] for r in rows] == ["op functions", "executor", "partitioner", "validator",
                                    "all"], f"the example's areas, then all: {rows}"
    assert rows[-1][1:] == ["300", "204", "0", "96", "68.0%", "[62.5%, 73.0%]"], \
        f"the example's overall score, read as score.py wrote it: {rows[-1]}"
    assert "0 equivalent, 0 missed, 96 untriaged" in section.text(), \
        "the example's survivors are all untriaged"
    summary = json.loads(stdout)["catch_rates"]
    assert summary["mutation_sample"]["killed"] == 204 and summary["real_bugs"]["missed"] == [
        "onednn-zero-groups"] and summary["notes"] == [], \
        f"--json carries both scores: {summary}"


def test_report_without_scores_says_not_measured(
        tmp_path: Path, capsys: pytest.CaptureFixture[str], reference_results: Path) -> None:
    results = copy_results(reference_results, tmp_path / "results" / "conformance" / "ref")
    code, html, stdout, stderr = _report(capsys, results, "-o", tmp_path / "i.html", "--json")
    assert code == 0 and not stderr, f"no score is no problem: {stderr!r}"
    section = _section(html)
    for note, command in (("mutation-sample-note", "nox -s mutation-sample"),
                          ("real-bugs-note", "nox -s real-bugs")):
        text = " ".join(section.find_all(id=note)[0].text().split())
        assert text.startswith("Not measured") and command in text, \
            f"{note}: says the score was not measured and how to measure it: {text!r}"
    assert not section.find_all("table"), "no score table without a score"
    assert json.loads(stdout)["catch_rates"]["notes"] == [
        "sampled mutation score: not measured; run `nox -s mutation-sample`",
        "real-bug score: not measured; run `nox -s real-bugs`"], "--json says why, too"


def test_a_bad_document_beside_the_results_is_a_cannot_read_line(
        tmp_path: Path, capsys: pytest.CaptureFixture[str], reference_results: Path) -> None:
    results = copy_results(reference_results, tmp_path / "results" / "conformance" / "ref")
    bad = sampled_document()
    bad["areas"]["executor"]["killed"] = -1
    _save(tmp_path / "results" / "mutation_sample.json", bad)
    (tmp_path / "results" / "real_bugs.json").write_text('{"bugs": 3, ', encoding="utf-8")
    code, html, _, stderr = _report(capsys, results, "-o", tmp_path / "i.html")
    assert code == 0, f"a bad score document does not stop the report: {stderr}"
    section = _section(html)
    sampled = " ".join(section.find_all(id="mutation-sample-note")[0].text().split())
    assert sampled.startswith("Cannot read") and "mutation_sample.json" in sampled and \
        "areas.executor.killed must be a whole number >= 0, not -1" in sampled, \
        f"the note names the file and the field: {sampled!r}"
    real = " ".join(section.find_all(id="real-bugs-note")[0].text().split())
    assert real.startswith("Cannot read") and "not a readable JSON document" in real, \
        f"a truncated document is named: {real!r}"
    assert "Traceback" not in stderr and stderr.count("cannot read") == 2, \
        f"one warning per unreadable document on stderr: {stderr!r}"


def test_a_bad_document_named_on_the_command_line_is_an_error(
        tmp_path: Path, capsys: pytest.CaptureFixture[str], reference_results: Path) -> None:
    bad = real_bugs_document()
    bad["caught"] = 3
    path = _save(tmp_path / "real.json", bad)
    for option, target in (("--real-bugs", path), ("--mutation-score", tmp_path / "none.json")):
        code, html, _, stderr = _report(capsys, reference_results, "-o", tmp_path / "i.html",
                                        option, target)
        assert code == 1 and str(target) in stderr and "Traceback" not in stderr, \
            f"{option} {target}: exit 1 with a message naming the file: {stderr!r}"
        assert not html, f"{option}: no report from a named document it cannot read"
    code, _, _, stderr = _report(capsys, reference_results, "-o", tmp_path / "i.html",
                                 "--real-bugs", path)
    assert "caught is 3, but 2 outcomes are caught" in stderr, \
        f"the message says what does not add up: {stderr!r}"


@pytest.mark.parametrize(("change", "message"), [
    (lambda d: d.update(areas=[]), "areas is not a JSON object"),
    (lambda d: d.update(areas={}), "areas lists no area"),
    (lambda d: d["areas"]["executor"].update(killed=True), "executor.killed must be a whole"),
    (lambda d: d["areas"]["executor"].update(interval=[0.9, 0.3]), "low end 0.9 above"),
    (lambda d: d["areas"]["executor"].update(interval=[float("nan"), 1]), "numbers from 0 to 1"),
    (lambda d: d["areas"]["executor"].update(score=0.9), "the counts give 4 of 6"),
    (lambda d: d["areas"]["executor"].update(survived=5), "equivalent + missed is 2"),
    (lambda d: d.update(killed=12), "killed is 12, but the areas add up to 13"),
    (lambda d: d.update(survivors=d["survivors"][:-1]), "lists 4 survivors"),
    (lambda d: d["survivors"][1].update(verdict="equivalent"), "2 triaged equivalent"),
    (lambda d: d["survivors"][0].update(verdict=None), "verdict must be a non-empty text"),
])
def test_the_sampled_reader_refuses_malformed_documents(tmp_path: Path, change: Any,
                                                        message: str) -> None:
    document = sampled_document()
    change(document)
    path = _save(tmp_path / "s.json", document)
    with pytest.raises(CatchRateError, match=re.escape(message)) as caught:
        load_sampled(path)
    assert str(path) in str(caught.value), "the error names the file"


@pytest.mark.parametrize(("change", "message"), [
    (lambda d: d.update(outcomes={}), "outcomes must be a list"),
    (lambda d: d.update(bugs=4), "bugs is 4, but the document lists 3 outcomes"),
    (lambda d: d["outcomes"][0].update(caught="yes"), "caught must be true or false"),
    (lambda d: d["outcomes"][2].update(bug=""), "bug must be a non-empty text"),
    (lambda d: d.update(score=1.5), "numbers from 0 to 1"),
    (lambda d: d["per_class"]["fusion decision"].update(total=1), "does not match"),
    (lambda d: d.update(per_class={}), "per_class does not add up"),
    (lambda d: d.update(not_applicable=-2), "not_applicable must be a whole number"),
])
def test_the_real_bug_reader_refuses_malformed_documents(tmp_path: Path, change: Any,
                                                         message: str) -> None:
    document = real_bugs_document()
    change(document)
    with pytest.raises(CatchRateError, match=re.escape(message)):
        load_real_bugs(_save(tmp_path / "r.json", document))


def test_the_readers_refuse_what_is_not_json(tmp_path: Path) -> None:
    deep = tmp_path / "deep.json"
    deep.write_text("[" * 100_000 + "]" * 100_000, encoding="utf-8")
    for path, message in ((deep, "not a readable JSON document"),
                          (_save(tmp_path / "list.json", [1]), "the document is not a JSON"),
                          (tmp_path / "absent.json", "not a readable JSON document")):
        with pytest.raises(CatchRateError, match=message):
            load_sampled(path)


@functools.cache
def _noxfile() -> Any:
    """noxfile.py as a module (loaded once: loading registers its sessions with nox)."""
    spec = importlib.util.spec_from_file_location(
        "fusionspec_noxfile", Path(__file__).parents[2] / "noxfile.py")
    assert spec is not None and spec.loader is not None, "noxfile.py is found"
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


class _Session:
    """What the sessions use of nox's session: the score document appears when they run."""

    def __init__(self, out: Path, document: dict[str, Any]) -> None:
        self.out, self.document = out, document
        self.posargs: list[str] = []
        self.virtualenv = None
        self.logged: list[str] = []

    def install(self, *args: str) -> None:
        pass

    def run(self, *args: str, **kwargs: object) -> None:
        _save(self.out, self.document)

    def log(self, line: str) -> None:
        self.logged.append(line)


@pytest.mark.skipif(importlib.util.find_spec("nox") is None, reason="nox is not installed")
@pytest.mark.parametrize(("session", "name", "document", "line"), [
    ("mutation_sample", "mutation_sample.json", sampled_document(),
     "sampled mutation score: 76.5% (13 of 17 non-equivalent mutants killed, 95% interval "
     "[52.7%, 90.4%])"),
    ("real_bugs", "real_bugs.json", real_bugs_document(),
     "real-bug score: 2 of 3 caught (67%); 4 found not applicable"),
], ids=["mutation-sample", "real-bugs"])
def test_the_nox_sessions_print_their_score_line(tmp_path: Path,
                                                 monkeypatch: pytest.MonkeyPatch, session: str,
                                                 name: str, document: dict[str, Any],
                                                 line: str) -> None:
    noxfile = _noxfile()
    monkeypatch.setattr(noxfile, "ROOT", tmp_path)
    monkeypatch.setattr(noxfile, "_source_digest", lambda: "digest")
    fake = _Session(tmp_path / "results" / name, document)
    getattr(noxfile, session)(fake)
    assert any(logged.startswith(line) and str(fake.out) in logged for logged in fake.logged), \
        f"{session}: prints its score and where the report finds it: {fake.logged}"
    os.utime(fake.out, (1_000_000_000, 1_000_000_000))
    monkeypatch.setattr(fake, "run", lambda *a, **k: None)
    fake.logged.clear()
    getattr(noxfile, session)(fake)
    assert not fake.logged, \
        f"{session}: a document left by an earlier run is not announced as this one's: " \
        f"{fake.logged}"


def test_a_hostile_file_name_is_cleaned(tmp_path: Path) -> None:
    folder = tmp_path / "r\x1b[2K\u202eevil"
    score = load_sampled(_save(folder / "s.json", sampled_document()))
    assert "\x1b" not in score.source and "\u202e" not in score.source \
        and score.source.endswith("evil/s.json"), \
        f"the source shown has no escape or override: {score.source!r}"
    (folder / "bad.json").write_bytes(b"\xff\xfe{")
    with pytest.raises(CatchRateError) as caught:
        load_real_bugs(folder / "bad.json")
    assert "\x1b" not in str(caught.value) and "not a readable JSON document" in \
        str(caught.value), f"a file that is not UTF-8 is named, cleaned: {caught.value}"
