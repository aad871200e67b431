"""The diff against a baseline: new failures, fixed cases, count changes per pattern and status,
and how runs are paired with baselines."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from testkit.report import failing_count, load, render, save

from fusionspec.conformance.grade.results import load_results
from fusionspec.reports.diff import diff_runs, pair_baselines
from fusionspec.reports.document import Doc


def _renamed(source: Path, target: Path, backend: str) -> Path:
    """A copy of a results document that claims to come from `backend`."""
    doc = load(source)
    doc["backend"] = backend
    return save(target, doc)


def _doc(path: Path) -> Doc:
    return Doc(load_results(path), str(path))


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
    assert [(r.text("backend"), b.text("backend")) for r, b, _ in pairs] == \
        [("reference", "reference"), ("never-fuses", "never-fuses")] and not notes, \
        f"runs pair with the baseline of the same backend and device: {pairs}"
