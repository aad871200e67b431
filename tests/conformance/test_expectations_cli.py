"""``--write-expectations``, ``--prune-expectations`` and ``--strict-expectations`` as a
backend's CI uses them: one bug is one entry, writing again from a narrower run keeps what it
did not judge, pruning removes only what the run proved stale, and a strict run names every
stale entry."""

from __future__ import annotations

import argparse
import json
import tomllib
from pathlib import Path
from typing import Any

import pytest
from testkit import toy_backends as toy
from testkit.cli import fusionspec, pytest_run

from fusionspec.cli.conform import _summary
from fusionspec.conformance.expectations import Expectation, Expectations
from fusionspec.conformance.grade.document import ResultsDocument
from fusionspec.conformance.grade.results import ResultsCollector
from fusionspec.conformance.grade.verdicts import judge
from fusionspec.conformance.plugin import _verdict_line
from fusionspec.reference.backend import NUMPY_DEVICE
from fusionspec.reports.findings import group_findings

#: WrongConv breaks Convolution: one bug, shown by the cases of two patterns.
CONV_BUG = ["--backend", "testkit.toy_backends:WrongConv", "--patterns",
            "fp.conv_post_ops,int8.conv_post_ops", "--kinds", "valid", "--dtype", "f32,int8",
            "--no-isolate"]


def _entries(path: Path) -> list[dict[str, Any]]:
    entries: list[dict[str, Any]] = tomllib.loads(path.read_text())["expect"]
    return entries


def test_one_bug_is_one_entry_titled_as_the_findings_report_titles_it(tmp_path: Path) -> None:
    first = fusionspec(["conform", *CONV_BUG, "--out", "one", "--write-expectations",
                        "exp.toml"], tmp_path)
    assert first.returncode == 1, f"the broken backend fails: {first.stdout[-600:]}"
    document = json.loads((tmp_path / "one" / "results.json").read_text())
    titles = [f.signature for f in group_findings(ResultsDocument.from_json(document))
              if f.status != "extension"]
    patterns = {f["pattern"] for f in document["failures"]}
    assert len(titles) == 1 and len(patterns) == 2, \
        f"the setting: one finding over two patterns: {titles} {patterns}"
    entries = _entries(tmp_path / "exp.toml")
    assert len(entries) == 1, f"one bug, one entry (not one per pattern): {entries}"
    assert entries[0]["reason"] == entries[0]["finding"] == titles[0], \
        f"the finding's title is the reason to edit: {entries[0]['reason']}"
    assert "1 new" in first.stderr, f"the run says what it wrote: {first.stderr[-400:]}"
    again = fusionspec(["conform", *CONV_BUG, "--out", "two", "--expectations", "exp.toml"],
                       tmp_path)
    assert again.returncode == 0 and "expected failure(s)" in again.stdout, \
        f"the written file expects every failure: {again.stdout[-600:]}"


HAND_WRITTEN = '''schema = "fusionspec-expectations/1"

[[expect]]
status = "skip"
case = "fp.bn_relu/valid/*"
reason = "skipped by hand"

[[expect]]
status = "fail"
pattern = "fp.conv_post_ops"
reason = "conv: reason written by hand"
link = "https://example.org/issues/1"

[[expect]]
status = "fail"
pattern = "fp.matmul_post_ops"
reason = "matmul: not judged by this run"
'''


def test_writing_from_a_narrow_run_keeps_every_entry_and_reason(tmp_path: Path) -> None:
    (tmp_path / "exp.toml").write_text(HAND_WRITTEN)
    done = fusionspec(["conform", *CONV_BUG, "--out", "out", "--expectations", "exp.toml",
                       "--write-expectations", "new.toml"], tmp_path)
    assert done.returncode == 1, f"the int8 failures are news: {done.stdout[-600:]}"
    old, new = _entries(tmp_path / "exp.toml"), _entries(tmp_path / "new.toml")
    assert new[:3] == old, \
        f"the entries this run did not judge, or judged and still match, stay as written:\n" \
        f"{(tmp_path / 'new.toml').read_text()[:1500]}"
    assert len(new) == 4 and all(c.startswith("int8.conv_post_ops/") for c in
                                 ([new[3]["case"]] if isinstance(new[3]["case"], str)
                                  else new[3]["case"])), \
        f"the failures no entry expected get one entry, after the others: {new[3:]}"


PRUNABLE = '''schema = "fusionspec-expectations/1"

[[expect]]
status = "fail"
pattern = "fp.conv_post_ops"
kind = "valid"
reason = "conv broken"

[[expect]]
status = "fail"
pattern = "fp.bn_relu"
kind = "valid"
reason = "bn: stale, its cases pass"

[[expect]]
status = "fail"
pattern = "fp.matmul_post_ops"
reason = "matmul: outside the selection"

[[expect]]
status = "skip"
case = "fp.bn_relu/valid/00000000"
reason = "skip: stale, no such case"

[[expect]]
status = "fail"
pattern = "fp.bn_relu"
device = "gpu*"
reason = "bn: on the GPU only"
'''


def test_prune_removes_only_the_stale_entries(tmp_path: Path) -> None:
    (tmp_path / "exp.toml").write_text(PRUNABLE)
    done = fusionspec(["conform", "--backend", "testkit.toy_backends:WrongConv", "--patterns",
                       "fp.conv_post_ops,fp.bn_relu", "--kinds", "valid", "--no-isolate",
                       "--out", "out", "--expectations", "exp.toml", "--write-expectations",
                       "new.toml", "--prune-expectations"], tmp_path)
    assert done.returncode == 0, f"every failure is expected: {done.stdout[-600:]}"
    reasons = [e["reason"] for e in _entries(tmp_path / "new.toml")]
    assert reasons == ["conv broken", "matmul: outside the selection", "bn: on the GPU only"], \
        f"the two stale entries go, the others stay: {reasons}"
    assert "2 stale removed (entries 2, 4)" in done.stderr, \
        f"the run names what it removed: {done.stderr[-400:]}"
    Expectations.load(tmp_path / "new.toml")  # and the result is a valid file


@pytest.mark.parametrize(("extra", "says"), [
    (["--prune-expectations"], "give --write-expectations FILE"),
    (["--write-expectations", "new.toml", "--prune-expectations", "--shard", "1/2"],
     "unsharded run"),
    (["--write-expectations", "exp.toml"], "is also the --expectations file"),
])
def test_expectations_options_are_checked_before_the_run(tmp_path: Path, extra: list[str],
                                                         says: str) -> None:
    (tmp_path / "exp.toml").write_text(PRUNABLE)
    done = fusionspec(["conform", "--patterns", "fp.bn_relu", "--out", "out", "--expectations",
                       "exp.toml", *extra], tmp_path)
    assert done.returncode == 2 and says in done.stderr, \
        f"{extra}: a usage error naming the problem: {done.returncode} {done.stderr[-400:]}"
    assert not (tmp_path / "out").exists(), f"{extra}: nothing ran"
    assert (tmp_path / "exp.toml").read_text() == PRUNABLE, f"{extra}: the file is untouched"


def test_the_plugin_takes_the_prune_option_with_the_same_checks(tmp_path: Path) -> None:
    (tmp_path / "exp.toml").write_text(PRUNABLE)
    done = pytest_run(["-q", "--pyargs", "fusionspec.conformance", "--fs-backend", "reference",
                       "--fs-expectations", "exp.toml", "--fs-prune-expectations"], tmp_path)
    assert done.returncode != 0 and "give --write-expectations FILE" in done.stderr, \
        f"a usage error, as the command line's: {done.stdout[-400:]}{done.stderr[-400:]}"


def _stale_collector(entries: int, strict: bool) -> ResultsCollector:
    """Entries 1..`entries` each expected the toy case to fail, and it passed; entry 1 thrice."""
    entries_file = Expectations("exp.toml", "0", tuple(
        Expectation(number, "fail", f"reason {number}") for number in range(1, entries + 1)))
    collector = ResultsCollector("toy", NUMPY_DEVICE, strict=strict, expectations=entries_file)
    case = toy.valid_case("fp.matmul_post_ops", 3)
    verdict = judge(case, toy.Faithful(), NUMPY_DEVICE)  # type: ignore[arg-type]
    numbers = [1, 1, *range(1, entries + 1)]
    for index, number in enumerate(numbers):
        collector.add(case, verdict, index=index, occurrence=index + 1,
                      expectation=entries_file.entries[number - 1])
    return collector


def test_a_strict_run_names_every_stale_entry_and_counts_them(
        capsys: pytest.CaptureFixture[str]) -> None:
    collector = _stale_collector(25, strict=True)
    code = _summary(argparse.Namespace(json=False), collector, None, False)
    out = capsys.readouterr().out
    first = out.splitlines()[0]
    assert code == 1 and first.startswith("FAIL:") and "27 unexpected passes" in first and \
        "25 stale entries" in first, f"the FAIL line counts what failed it: {first}"
    missing = [n for n in range(1, 26) if f"expectations entry {n} expects it to fail "
               f"(reason {n})" not in out]
    assert not missing, f"every stale entry is named, not the first 20: missing {missing}"
    assert "entry 1 also expects 2 more cases to fail, which pass" in out, \
        f"an entry's other passing cases are listed under it: {out[:800]}"


def test_a_lenient_run_notes_stale_entries_without_failing(
        capsys: pytest.CaptureFixture[str]) -> None:
    code = _summary(argparse.Namespace(json=False), _stale_collector(3, strict=False), None,
                    False)
    out = capsys.readouterr().out
    assert code == 0 and out.startswith("PASS:") and "5 unexpected passes" in out, out[:400]
    assert out.count("  note: ") == 3 and "error:" not in out, \
        f"one note per stale entry, none an error: {out[:800]}"


def test_the_plugin_verdict_line_counts_unexpected_passes() -> None:
    document = ResultsDocument.from_json(_stale_collector(2, strict=True).to_dict())
    line = _verdict_line(document)
    assert line.startswith("FAIL:") and "4 unexpected passes (2 stale entries, strict)" in line, \
        f"the pytest summary says why the run fails: {line}"
