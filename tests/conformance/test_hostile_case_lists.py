"""Hostile ``--case`` and ``--exclude`` values: a bare pattern id given to ``--exclude`` leaves
out that pattern's cases (it used to match no case id and leave out nothing), and an ``@FILE``
list that is not a small regular file (``/dev/zero``, a FIFO, a folder, a huge file) is a usage
error, exit 2, never a read without end or a MemoryError traceback."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from fusionspec.cli.main import main
from fusionspec.conformance.options import LIST_FILE_LIMIT
from fusionspec.conformance.selection import RunSettings, Selection, case_matches
from fusionspec.conformance.suite import plan_cases


def _patterns(selection: Selection) -> set[str]:
    return {p.case.pattern for p in plan_cases(RunSettings(selection.validate())).cases}


def test_a_bare_pattern_id_excludes_its_cases() -> None:
    both = ("fp.bn_relu", "fp.binary_post_ops")
    assert _patterns(Selection(patterns=both, excludes=("fp.bn_relu",))) == \
        {"fp.binary_post_ops"}, "--exclude fp.bn_relu leaves out every fp.bn_relu case"
    assert _patterns(Selection(patterns=both, excludes=("fp.bin*",))) == {"fp.bn_relu"}, \
        "a pattern glob still does"


def test_case_matching_by_pattern_is_whole_pattern_ids_only() -> None:
    case = "fp.bn_relu/near-miss/structure.fan_out/2f3f3c61"
    assert case_matches(case, "fp.bn_relu") and case_matches(case, "fp.bn_*"), \
        "a bare pattern id or glob names the pattern's cases"
    assert not case_matches(case, "fp.bn"), "a prefix of a pattern id is not that pattern"
    assert not case_matches(case, "fp.bn_relu/valid"), \
        "a value with a / is matched against the whole id"


def test_a_bare_pattern_id_selects_its_cases() -> None:
    assert _patterns(Selection(cases=("fp.bn_relu",))) == {"fp.bn_relu"}, \
        "--case fp.bn_relu selects that pattern's cases, not a missing case id"


@pytest.fixture
def lists(tmp_path: Path) -> Path:
    os.mkfifo(tmp_path / "fifo")
    with open(tmp_path / "huge.txt", "wb") as huge:
        huge.truncate(LIST_FILE_LIMIT + 1)
    return tmp_path


@pytest.mark.parametrize("flag", ["--case", "--exclude"])
@pytest.mark.parametrize(("name", "said"), [
    ("/dev/zero", "not a regular file"), ("fifo", "not a regular file"),
    (".", "not a regular file"), ("huge.txt", "larger than"), ("missing.txt", "cannot read"),
])
def test_an_unreadable_list_is_a_usage_error(
        flag: str, name: str, said: str, lists: Path, monkeypatch: pytest.MonkeyPatch,
        capsys: pytest.CaptureFixture[str]) -> None:
    monkeypatch.chdir(lists)
    with pytest.raises(SystemExit) as ended:
        main(["conform", flag, f"@{name}", "--list"])
    err = capsys.readouterr().err
    assert ended.value.code == 2, f"{flag} @{name}: exit 2, got {ended.value.code}: {err}"
    assert said in err and flag in err and "Traceback" not in err, \
        f"{flag} @{name}: one line naming the option and the problem: {err}"
