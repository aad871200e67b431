"""The diff against a baseline: new failures, fixed cases, count changes per pattern and status,
and how runs are paired with baselines."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from testkit.report import failing_count, load, render, save

from fusionspec.cli.main import main
from fusionspec.conformance.grade.results import load_document
from fusionspec.reports.diff import MAX_LISTED, diff_runs, pair_baselines
from fusionspec.reports.runs import RunInput


def _renamed(source: Path, target: Path, backend: str) -> Path:
    """A copy of a results document that claims to come from `backend`."""
    doc = load(source)
    doc["backend"] = backend
    return save(target, doc)


def _doc(path: Path) -> RunInput:
    return RunInput(load_document(path), path)


def _failing_ids(document: dict[str, Any]) -> set[str]:
    return {f["case_id"] for f in document["failures"] if not f.get("minimal_of")}


def test_new_failures_since_a_passing_baseline(tmp_path: Path, reference_results: Path,
                                               never_fuses_results: Path) -> None:
    # The same cases, graded before on a backend that passed them all.
    baseline = _renamed(reference_results, tmp_path / "old" / "results.json", "never-fuses")
    now = load(never_fuses_results)
    before = [v["case_id"] for v in load(baseline)["verdicts"]]
    assert [v["case_id"] for v in now["verdicts"]] == before, \
        "the derandomized suite generates the same case ids, in the same order, for both runs"
    diff = diff_runs(_doc(never_fuses_results), _doc(baseline))
    assert diff.new_failures_total == failing_count(now), \
        f"every failure is new: {diff.new_failures_total} vs {failing_count(now)}"
    assert {c.case_id for c in diff.new_failures} <= _failing_ids(now), \
        "the new failures listed are failing cases"
    assert diff.fixed_total == 0 and diff.note == "", "nothing was fixed"
    old_counts = load(baseline)["patterns"]
    for change in diff.counts:
        before = old_counts[change.pattern]["counts"].get(change.status.name, 0)
        after = now["patterns"][change.pattern]["counts"].get(change.status.name, 0)
        assert (change.before, change.after) == (before, after), \
            f"{change.pattern}/{change.status.name}: {change.before}->{change.after}, " \
            f"documents say {before}->{after}"
        assert change.delta == f"{after - before:+d}", f"delta of {change}"
    _, root = render(tmp_path / "index.html", [never_fuses_results], baselines=[baseline])
    section = root.by_id()["changes"]
    assert f"{diff.new_failures_total} new failures" in section.text(), \
        "the report's changes section counts the new failures"


def test_fixed_since_a_failing_baseline(tmp_path: Path, reference_results: Path,
                                        never_fuses_results: Path) -> None:
    now = _renamed(reference_results, tmp_path / "new" / "results.json", "never-fuses")
    diff = diff_runs(_doc(now), _doc(never_fuses_results))
    before = load(never_fuses_results)
    assert diff.fixed_total == failing_count(before), \
        f"every earlier failure is fixed: {diff.fixed_total} vs {failing_count(before)}"
    assert diff.new_failures_total == 0, "no new failure"
    assert all(c.after is not None and c.after.name == "pass" for c in diff.fixed), \
        "fixed cases pass now"


def test_identical_runs_have_no_change(tmp_path: Path, gelu_results: Path) -> None:
    diff = diff_runs(_doc(gelu_results), _doc(gelu_results))
    assert diff.unchanged, f"a run against itself changes nothing: {diff}"
    _, root = render(tmp_path / "index.html", [gelu_results], baselines=[gelu_results])
    assert "No change" in root.by_id()["changes"].text(), "the report says there is no change"


def test_baseline_pairing(reference_results: Path, never_fuses_results: Path,
                          gelu_results: Path) -> None:
    ref, never, gelu = (_doc(p) for p in (reference_results, never_fuses_results, gelu_results))
    pairs, notes = pair_baselines([never], [ref])
    assert len(pairs) == 1 and "compared anyway" in pairs[0][2], \
        f"one run, one baseline of another backend: compared, with a note: {pairs}"
    pairs, notes = pair_baselines([never, gelu], [ref])
    assert pairs == [], f"with several runs, only matching baselines pair: {pairs}"
    assert any("no baseline for never-fuses" in n for n in notes) and \
        any("matches no run" in n for n in notes), f"the unpaired are named: {notes}"
    pairs, notes = pair_baselines([ref, never], [never, ref])
    assert [(r.document.backend, b.document.backend) for r, b, _ in pairs] == \
        [("reference", "reference"), ("never-fuses", "never-fuses")] and not notes, \
        f"runs pair with the baseline of the same backend and device: {pairs}"


def _narrowed(source: Path, target: Path, keep: int) -> Path:
    """A copy of `source` that judged only its first `keep` cases, as a run narrowed by
    --patterns records it."""
    doc = load(source)
    kept = doc["verdicts"][:keep]
    doc["verdicts"] = kept
    ids = {v["case_id"] for v in kept}
    doc["failures"] = [f for f in doc["failures"] if f["case_id"] in ids]
    doc["selection"] = {**(doc.get("selection") or {}), "patterns": ["fp.narrowed"]}
    return save(target, doc)


def test_a_run_that_left_out_cases_is_narrowed(tmp_path: Path,
                                               never_fuses_results: Path) -> None:
    full = load(never_fuses_results)
    narrow = _narrowed(never_fuses_results, tmp_path / "narrow" / "results.json", 3)
    diff = diff_runs(_doc(narrow), _doc(never_fuses_results))
    left_out = len({v["case_id"] for v in full["verdicts"]}
                   - {v["case_id"] for v in full["verdicts"][:3]})
    assert diff.only_before == left_out, \
        f"{left_out} cases only in the baseline, the diff says {diff.only_before}"
    assert diff.fixed_total == 0, \
        f"cases that were not run are not fixed: {diff.fixed_total} counted as fixed"
    kept = {"verdicts": full["verdicts"][:3]}
    assert diff.dropped_total == failing_count(full) - failing_count(kept), \
        "every failure of the baseline that was not run is listed as dropped"
    assert diff.narrowed and f"left out {left_out} case(s)" in diff.narrowed, \
        f"the diff says the run covers less: {diff.narrowed!r}"
    assert "patterns" in diff.narrowed and "fp.narrowed" in diff.narrowed, \
        f"the narrowing names the selection that changed: {diff.narrowed!r}"
    same = diff_runs(_doc(never_fuses_results), _doc(narrow))
    assert not same.narrowed, f"a run covering more than its baseline is not narrowed: {same}"


def test_the_gate_fails_a_narrowed_run_unless_told(tmp_path: Path, never_fuses_results: Path,
                                                   capsys: pytest.CaptureFixture[str]) -> None:
    narrow = _narrowed(never_fuses_results, tmp_path / "narrow" / "results.json", 3)
    code = main(["diff", str(never_fuses_results), str(narrow), "--json"])
    answer = json.loads(capsys.readouterr().out)
    assert code == 1 and not answer["ok"], \
        f"a run that left out cases of its baseline fails the gate: exit {code}, {answer['ok']}"
    assert answer["narrowed"], "the JSON says why the run is narrowed"
    assert answer["totals"]["fixed"] == 0, "cases not run are not counted as fixed"
    code = main(["diff", str(never_fuses_results), str(narrow), "--allow-narrower"])
    out = capsys.readouterr().out
    assert code == 0 and "accepted: --allow-narrower" in out, \
        f"--allow-narrower accepts a narrower run on purpose and says so (exit {code}): {out}"


def test_the_json_lists_every_case_it_counts(tmp_path: Path, reference_results: Path,
                                             never_fuses_results: Path,
                                             capsys: pytest.CaptureFixture[str]) -> None:
    baseline = _renamed(reference_results, tmp_path / "old" / "results.json", "never-fuses")
    code = main(["diff", str(baseline), str(never_fuses_results), "--json"])
    answer = json.loads(capsys.readouterr().out)
    assert code == 1, "new failures fail the gate"
    assert answer["regressions"] == answer["totals"]["new_failures"] \
        == len(answer["new_failures"]) == len(set(answer["new_failures"])), \
        f"regressions {answer['regressions']}, totals {answer['totals']['new_failures']}, " \
        f"listed {len(answer['new_failures'])}: one count, each case once"
    assert answer["regressions"] > MAX_LISTED, \
        f"the run has more new failures ({answer['regressions']}) than a list shows " \
        f"({MAX_LISTED}), so the JSON is shown to hold them all"
