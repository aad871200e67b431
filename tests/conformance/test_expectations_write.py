"""Writing an expectations file from a run (`regenerate`), on results documents built by hand:
one entry per cause, compact case globs only where the run proves them, the entries of the
file the run used kept with their reasons, stale entries pruned only where the run reached
them, and every failure of the run expected by what is written."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import pytest

from fusionspec.conformance.cases import CaseKind
from fusionspec.conformance.expectations import (
    Expectations,
    ExpectationsError,
    FailureGroup,
    check_write_options,
    regenerate,
)
from fusionspec.conformance.grade.document import SCHEMA_VERSION, ResultsDocument
from fusionspec.conformance.selection import Selection

V2 = 'schema = "fusionspec-expectations/2"\n'
EVERYTHING = Selection()
CONV = "fp.conv_post_ops"
MATMUL = "fp.matmul_post_ops"
BN = "fp.bn_relu"


@dataclass
class Run:
    """A results document, case by case; `entry` cites the used file's entry that decided it."""

    device: str = "cpu0"
    verdicts: list[dict[str, Any]] = field(default_factory=list)
    failures: list[dict[str, Any]] = field(default_factory=list)
    passes: list[dict[str, Any]] = field(default_factory=list)
    skipped: list[dict[str, Any]] = field(default_factory=list)

    def _record(self, case_id: str, status: str) -> dict[str, Any]:
        parts = case_id.split("/")
        return {"index": len(self.verdicts) + len(self.skipped), "case_id": case_id,
                "pattern": parts[0], "kind": parts[1],
                "rule": parts[2] if len(parts) == 4 else None, "dtype": "f32",
                "status": status}

    def passed(self, case_id: str, entry: int | None = None) -> Run:
        self.verdicts.append(self._record(case_id, "pass"))
        if entry is not None:
            self.passes.append({**self._record(case_id, "pass"), "entry": entry,
                                "expected_status": "fail"})
        return self

    def failed(self, case_id: str, status: str = "numeric-mismatch", *,
               met: int | None = None, slipped: int | None = None) -> Run:
        record = self._record(case_id, status)
        verdict, failure = dict(record), dict(record)
        if met is not None:
            verdict["expected"] = failure["expected"] = {"entry": met, "status": "fail"}
        if slipped is not None:
            failure["unexpected_status"] = {"entry": slipped, "status": "fail"}
        self.verdicts.append(verdict)
        self.failures.append(failure)
        return self

    def skip(self, case_id: str, entry: int) -> Run:
        self.skipped.append({**self._record(case_id, "skip"), "entry": entry})
        return self

    def document(self, used: Expectations | None = None, **extra: Any) -> ResultsDocument:
        document: dict[str, Any] = {
            "schema": SCHEMA_VERSION, "backend": "hand", "device": {"id": self.device},
            "shard": None,
            "planned": len(self.verdicts) + len(self.skipped),
            "verdicts": self.verdicts, "failures": self.failures}
        if used is not None:
            document["expectations"] = {"sha256": used.sha256,
                                        "unexpected_passes": self.passes,
                                        "skipped": self.skipped}
        return ResultsDocument.from_json({**document, **extra}, "the hand-made document")


def by_status(document: ResultsDocument) -> list[FailureGroup]:
    """A stand-in for the findings' grouping: one cause per failing status."""
    groups: dict[str, list[str]] = {}
    for failure in document.failures:
        groups.setdefault(f"{failure.status}: the cause", []).append(failure.case_id)
    return [FailureGroup(title, tuple(ids)) for title, ids in groups.items()]


def entries(text: str) -> tuple[Any, ...]:
    return Expectations.parse(text, "written").entries


def test_one_cause_across_patterns_is_one_entry_titled_by_the_cause() -> None:
    run = Run().failed(f"{CONV}/valid/a").failed(f"{CONV}/valid/b").passed(f"{CONV}/valid/c") \
        .failed(f"{MATMUL}/valid/d").passed(f"{MATMUL}/valid/e")
    written = regenerate(run.document(), by_status, used=None, selection=EVERYTHING)
    (entry,) = entries(written.text)
    assert (entry.status, entry.reason, entry.finding) == \
        ("fail", "numeric-mismatch: the cause", "numeric-mismatch: the cause"), \
        f"one cause is one fail entry, its title the reason and the finding: {entry}"
    assert entry.verdicts == ("numeric-mismatch",), f"it expects the cause's status: {entry}"
    assert sorted(entry.case) == [f"{CONV}/valid/a", f"{CONV}/valid/b", f"{MATMUL}/valid/d"], \
        f"cases that passed beside the failures are not swept in by a glob: {entry.case}"
    assert written.newly_expected == 3 and not written.uncovered, \
        f"every failure of the run is expected by the file: {written}"


def test_a_prefix_all_of_whose_judged_cases_fail_is_one_glob() -> None:
    run = Run()
    for kind in ("valid", "near-miss/structure.bound", "ill-formed/structure.cycle"):
        run.failed(f"{CONV}/{kind}/1").failed(f"{CONV}/{kind}/2")
    run.failed(f"{MATMUL}/valid/1").failed(f"{MATMUL}/valid/2").passed(f"{MATMUL}/near-miss/x/3")
    run.failed(f"{BN}/valid/1").passed(f"{BN}/valid/2")
    (entry,) = entries(regenerate(run.document(), by_status, used=None,
                                  selection=EVERYTHING).text)
    assert sorted(entry.case) == sorted([f"{CONV}/*", f"{MATMUL}/valid/*", f"{BN}/valid/1"]), \
        f"a whole pattern, a whole kind, else case ids: {entry.case}"


@pytest.mark.parametrize("narrowed", [
    {"selection": Selection(dtypes=("f32",))},
    {"selection": Selection(cases=(f"{CONV}/valid/*",))},
    {"selection": None},
    {"shard": "1/2"},
    {"incomplete": "interrupted after 2 case(s)"},
])
def test_no_glob_where_the_run_did_not_judge_all_it_could_cover(narrowed: dict[str, Any]) \
        -> None:
    run = Run().failed(f"{CONV}/valid/1").failed(f"{CONV}/valid/2")
    selection = narrowed.pop("selection", EVERYTHING)
    (entry,) = entries(regenerate(run.document(**narrowed), by_status, used=None,
                                  selection=selection).text)
    assert sorted(entry.case) == [f"{CONV}/valid/1", f"{CONV}/valid/2"], \
        f"{narrowed or selection}: cases outside what was judged are not claimed: {entry.case}"


HAND = Expectations.parse(V2 + f'''
[[expect]]
status = "skip"
case = "{BN}/valid/hangs"
reason = "hangs the driver"

[[expect]]
status = "fail"
pattern = "{CONV}"
verdicts = "numeric-mismatch"
reason = "conv rounds half up"
link = "https://example.org/issues/7"

[[expect]]
status = "fail"
pattern = "{MATMUL}"
reason = "matmul: hand-written, not re-judged"
''', "ci/exp.toml")


def test_regenerating_keeps_every_entry_and_its_reason() -> None:
    run = Run().failed(f"{CONV}/valid/1", met=2).failed(f"{CONV}/valid/2", met=2) \
        .failed(f"{BN}/valid/new").skip(f"{BN}/valid/hangs", 1)
    written = regenerate(run.document(HAND), by_status, used=HAND,
                         selection=Selection(patterns=(CONV, BN)))
    got = entries(written.text)
    assert [e.table() for e in got[:3]] == [e.table() for e in HAND.entries], \
        f"the used file's entries come first, unchanged, in order:\n{written.text}"
    assert len(got) == 4 and got[3].case == (f"{BN}/*",), \
        f"the new failure gets one new entry after the kept ones; its glob may cover the " \
        f"skipped case, which the earlier skip entry still decides:\n{written.text}"
    assert not written.uncovered and written.added == 1, written


def test_a_failure_of_another_status_gets_its_entry_before_the_one_it_slipped_past() -> None:
    used = Expectations.parse(V2 + f'[[expect]]\nstatus = "fail"\ncase = "{CONV}/*"\n'
                              'device = "cpu*"\nverdicts = "numeric-mismatch"\n'
                              'reason = "values"\n', "ci/exp.toml")
    run = Run().failed(f"{CONV}/valid/1", met=1) \
        .failed(f"{CONV}/valid/2", "fusion-mismatch", slipped=1)
    written = regenerate(run.document(used), by_status, used=used, selection=EVERYTHING)
    first, second = entries(written.text)
    assert first.case == (f"{CONV}/valid/2",) and first.verdicts == ("fusion-mismatch",), \
        f"the new entry comes first, or the old one would still decide:\n{written.text}"
    assert first.device == ("cpu*",), \
        f"it holds where the entry it overrides holds, nowhere else: {first}"
    assert second.table() == used.entries[0].table() and not written.uncovered, written.text


def test_new_cases_of_a_known_cause_join_its_entry() -> None:
    used = Expectations.parse(V2 + f'''
[[expect]]
status = "fail"
case = ["{CONV}/valid/1"]
verdicts = "numeric-mismatch"
reason = "reworded by hand"
finding = "numeric-mismatch: the cause"
''', "ci/exp.toml")
    run = Run().failed(f"{CONV}/valid/1", met=1).failed(f"{MATMUL}/valid/2") \
        .passed(f"{MATMUL}/valid/3")
    written = regenerate(run.document(used), by_status, used=used, selection=EVERYTHING)
    (entry,) = entries(written.text)
    assert sorted(entry.case) == [f"{CONV}/valid/1", f"{MATMUL}/valid/2"] and \
        entry.reason == "reworded by hand", \
        f"the cause's entry takes the new case and keeps its reason:\n{written.text}"
    assert (written.added, written.extended) == (0, 1), written


def test_a_known_cause_is_not_extended_over_an_entry_that_may_decide_elsewhere() -> None:
    used = Expectations.parse(V2 + f'''
[[expect]]
status = "fail"
case = "{CONV}/valid/1"
reason = "r"
finding = "numeric-mismatch: the cause"

[[expect]]
status = "skip"
case = "{MATMUL}/valid/2"
device = "gpu*"
reason = "hangs the GPU"
''', "ci/exp.toml")
    run = Run().failed(f"{CONV}/valid/1", met=1).failed(f"{MATMUL}/valid/2")
    got = entries(regenerate(run.document(used), by_status, used=used,
                             selection=EVERYTHING).text)
    assert got[0].case == (f"{CONV}/valid/1",) and len(got) == 3 and \
        got[2].matches_fields(MATMUL, "valid", None, "f32", f"{MATMUL}/valid/2", "gpu0"), \
        f"the case goes after the GPU skip, which must still decide it there: {got}"


PRUNABLE = Expectations.parse(V2 + f'''
[[expect]]
status = "fail"
pattern = "{CONV}"
reason = "came true"

[[expect]]
status = "fail"
pattern = "{BN}"
kind = "valid"
reason = "stale: every case passes"

[[expect]]
status = "fail"
pattern = "{MATMUL}"
reason = "outside the selection"

[[expect]]
status = "skip"
case = "{BN}/valid/gone"
reason = "stale: no such case any more"

[[expect]]
status = "fail"
pattern = "{BN}"
device = "gpu*"
reason = "another device"

[[expect]]
status = "skip"
pattern = "{CONV}"
kind = "near-miss"
reason = "outside the selection's kinds"
''', "ci/exp.toml")
PRUNE_SELECTION = Selection(patterns=(CONV, BN), kinds=(CaseKind.valid,))


def _prunable_run() -> Run:
    return Run().failed(f"{CONV}/valid/1", met=1).passed(f"{BN}/valid/1", entry=2) \
        .passed(f"{BN}/valid/2", entry=2)


def test_pruning_removes_only_the_entries_the_run_proved_stale() -> None:
    written = regenerate(_prunable_run().document(PRUNABLE), by_status, used=PRUNABLE,
                         selection=PRUNE_SELECTION, prune=True)
    kept = [e.reason for e in entries(written.text)]
    assert kept == ["came true", "outside the selection", "another device",
                    "outside the selection's kinds"], \
        f"the stale fail and skip entries go, the rest stays as it was: {kept}"
    assert written.pruned == (2, 4), f"the summary names what went: {written}"
    assert "2 stale removed (entries 2, 4)" in written.summary("x.toml"), \
        written.summary("x.toml")


def test_an_entry_reaching_past_the_selection_is_not_stale() -> None:
    """The BN entry without a kind also covers near misses, which a valid-only run did not
    judge: their passing valid cases do not make it stale."""
    wider = Expectations.parse(V2 + f'[[expect]]\nstatus = "fail"\npattern = "{BN}"\n'
                               'reason = "all kinds"\n', "ci/exp.toml")
    run = Run().passed(f"{BN}/valid/1", entry=1)
    written = regenerate(run.document(wider), by_status, used=wider,
                         selection=PRUNE_SELECTION, prune=True)
    assert not written.pruned, f"the near misses it covers may still fail: {written}"


def test_without_prune_stale_entries_stay() -> None:
    written = regenerate(_prunable_run().document(PRUNABLE), by_status, used=PRUNABLE,
                         selection=PRUNE_SELECTION)
    assert [e.table() for e in entries(written.text)] == \
        [e.table() for e in PRUNABLE.entries], "writing alone removes nothing"


@pytest.mark.parametrize("partial", [{"incomplete": "interrupted"}, {"shard": "2/3"},
                                     {"planned": 99}])
def test_a_partial_run_prunes_nothing(partial: dict[str, Any]) -> None:
    written = regenerate(_prunable_run().document(PRUNABLE, **partial), by_status,
                         used=PRUNABLE, selection=PRUNE_SELECTION, prune=True)
    assert len(entries(written.text)) == len(PRUNABLE.entries) and not written.pruned, \
        f"{partial}: a case the run did not reach may still fail"
    assert "not removed" in written.note, f"{partial}: the summary says why: {written}"


def test_a_document_of_another_file_is_refused() -> None:
    other = Run().document(Expectations.parse(V2, "other.toml"))
    with pytest.raises(ExpectationsError, match="not the expectations file this run used"):
        regenerate(other, by_status, used=PRUNABLE, selection=EVERYTHING)


@pytest.mark.parametrize(("used", "target", "prune", "sharded", "says"), [
    (PRUNABLE, "ci/exp.toml", False, False, "is also the --expectations file"),
    (PRUNABLE, None, True, False, "give --write-expectations FILE"),
    (None, "new.toml", True, False, "give --expectations FILE"),
    (PRUNABLE, "new.toml", True, True, "unsharded run"),
])
def test_expectations_options_that_do_not_go_together(
        used: Expectations | None, target: str | None, prune: bool, sharded: bool,
        says: str) -> None:
    from pathlib import Path

    with pytest.raises(ExpectationsError, match=says):
        check_write_options(used, None if target is None else Path(target), prune, sharded)


def test_version_1_files_still_load_and_version_2_carries_the_finding() -> None:
    old = Expectations.parse('schema = "fusionspec-expectations/1"\n[[expect]]\n'
                             'status = "fail"\npattern = "fp.*"\nreason = "r"\n')
    assert old.entries[0].finding == "", f"a version 1 entry has no finding: {old.entries[0]}"
    new = Expectations.parse(V2 + '[[expect]]\nstatus = "fail"\ncase = "fp.bn_relu/*"\n'
                             'reason = "r"\nfinding = "F"\n')
    assert new.entries[0].table()["finding"] == "F", "the finding is read and written back"
    with pytest.raises(ExpectationsError, match="finding"):
        Expectations.parse(V2 + '[[expect]]\nstatus = "fail"\nreason = "r"\nfinding = ""\n')


def _decider(written: Expectations, case_id: str) -> Any:
    pattern, kind = case_id.split("/")[:2]
    return next((e for e in written.entries
                 if e.matches_fields(pattern, kind, None, "f32", case_id, "cpu0")), None)


@pytest.mark.parametrize("seed", range(6))
def test_kept_entries_still_decide_what_they_decided(seed: int) -> None:
    """Whatever the mix, what a kept entry decided in the run it still decides in the written
    file, and every new failure is expected by it."""
    import random

    chance = random.Random(seed)
    owner = {CONV: 2, MATMUL: 3, BN: None}  # the HAND entry matching each pattern's cases
    run = Run()
    for n in range(30):
        pattern = chance.choice([CONV, MATMUL, BN])
        case_id, entry, roll = f"{pattern}/valid/{n}", owner[pattern], chance.random()
        if roll < 0.3:
            run.failed(case_id, met=entry)
        elif roll < 0.5 and pattern == CONV:
            run.failed(case_id, "fusion-mismatch", slipped=entry)
        elif roll < 0.5:
            run.failed(case_id, "fusion-mismatch", met=entry)
        else:
            run.passed(case_id, entry=entry)
    document = run.document(HAND)
    written = Expectations.parse(regenerate(document, by_status, used=HAND,
                                            selection=EVERYTHING).text)
    before = {f["case_id"]: f["expected"]["entry"] for f in run.failures if f.get("expected")}
    for case_id, number in before.items():
        decider = _decider(written, case_id)
        assert decider is not None and decider.reason == HAND.entries[number - 1].reason, \
            f"seed {seed}: {case_id} is still decided by the entry that expected it"
    for failure in run.failures:
        decider = _decider(written, failure["case_id"])
        assert decider is not None and decider.expects(failure["status"]), \
            f"seed {seed}: {failure['case_id']} ({failure['status']}) is expected"

