"""Selecting by a case list file (``--case @FILE``) and leaving cases out (``--exclude``), on
the command line and in the pytest plugin; a listed case in a sharded run."""

from __future__ import annotations

import argparse
from pathlib import Path

import pytest
from testkit.cli import pytest_run

from fusionspec.conformance.cases import CaseKind
from fusionspec.conformance.options import add_flags, read_options
from fusionspec.conformance.selection import RunSettings, Selection, SelectionError, Shard
from fusionspec.conformance.suite import plan_cases

SUITE = ["--pyargs", "fusionspec.conformance"]


def _options(args: list[str]) -> argparse.Namespace:
    parser = argparse.ArgumentParser(exit_on_error=False)
    add_flags(parser.add_argument)
    return parser.parse_args(args)


def _ids(selection: Selection) -> list[str]:
    return [p.case.id for p in plan_cases(RunSettings(selection.validate())).cases]


def test_a_case_list_file_selects_its_ids_and_skips_comments(tmp_path: Path) -> None:
    chosen = _ids(Selection(patterns=("fp.bn_relu",)))[:2]
    listing = tmp_path / "cases.txt"
    listing.write_text(f"# the two cases that failed last night\n{chosen[0]}\n\n"
                       f"{chosen[1]}   # flaky?\n")
    options = read_options(lambda name: getattr(_options(["--case", f"@{listing}"]), name))
    assert options.selection.cases == tuple(chosen), \
        f"one id a line, comments dropped: {options.selection.cases}"
    assert sorted(_ids(options.selection)) == sorted(chosen), "exactly the listed cases run"


def test_a_bad_line_of_a_case_list_is_named(tmp_path: Path) -> None:
    listing = tmp_path / "cases.txt"
    listing.write_text("fp.bn_relu/valid/*\nnope/valid/00\n")
    with pytest.raises(argparse.ArgumentError, match=r"cases\.txt, line 2: 'nope/valid/00'"):
        _options(["--case", f"@{listing}"])
    with pytest.raises(argparse.ArgumentError, match="cannot read the list"):
        _options(["--case", f"@{tmp_path / 'missing.txt'}"])


def test_a_listed_case_is_planned_by_the_one_shard_that_draws_it() -> None:
    chosen = _ids(Selection(patterns=("fp.bn_relu",), kinds=(CaseKind.ill_formed,)))[0]
    listed = Selection(cases=(chosen,)).validate()
    found = [[p.case.id for p in plan_cases(RunSettings(listed, shard=Shard(k, 3))).cases]
             for k in (1, 2, 3)]
    assert sorted(found) == [[], [], [chosen]], \
        f"one shard draws the case, the others hold nothing and raise nothing: {found}"
    owner = Shard(1 + [bool(f) for f in found].index(True), 3)
    unknown = chosen.rsplit("/", 1)[0] + "/00000000"
    wrong = Selection(cases=(unknown,)).validate()
    with pytest.raises(SelectionError, match="00000000"):
        plan_cases(RunSettings(wrong, shard=owner))
    others = [Shard(k, 3) for k in (1, 2, 3) if k != owner.index]
    assert all(not plan_cases(RunSettings(wrong, shard=s)).cases for s in others), \
        "a shard that does not draw an id cannot tell it is missing, and says nothing"


def test_exclude_leaves_out_what_it_matches() -> None:
    both = _ids(Selection(patterns=("fp.bn_relu", "fp.conv_post_ops")))
    kept = _ids(Selection(patterns=("fp.bn_relu", "fp.conv_post_ops"),
                          excludes=("fp.conv_*", "*/near-miss/*")))
    assert kept and all(i.startswith("fp.bn_relu/") and "/near-miss/" not in i for i in kept), \
        f"the excluded pattern and kind are gone: {kept[:4]}"
    assert len(kept) < len(both), "something was left out"
    with pytest.raises(SelectionError, match=r"--exclude 'fp\.nothing'"):
        Selection(excludes=("fp.nothing",)).validate()
    with pytest.raises(argparse.ArgumentError, match="names no case of the catalog"):
        _options(["--exclude", "int9.*"])


def test_a_case_given_and_excluded_is_named_as_excluded() -> None:
    case = _ids(Selection(patterns=("fp.bn_relu",), kinds=(CaseKind.valid,)))[0]
    chosen = Selection(patterns=("fp.bn_relu",), cases=(case,), excludes=("fp.bn_relu/*",))
    with pytest.raises(SelectionError) as raised:
        plan_cases(RunSettings(chosen.validate()))
    said = str(raised.value)
    assert "--exclude 'fp.bn_relu/*'" in said and "not among" not in said, \
        f"a case the run draws but --exclude leaves out is named as excluded, not as " \
        f"undrawn: {said}"


def test_the_plugin_takes_a_case_list_and_exclusions(tmp_path: Path) -> None:
    chosen = _ids(Selection(patterns=("fp.bn_relu",)))[:2]
    (tmp_path / "cases.txt").write_text("\n".join(["# list", *chosen]) + "\n")
    done = pytest_run(["-q", "--collect-only", *SUITE, "--fs-backend", "reference",
                       "--fs-case=@cases.txt"], tmp_path)
    ids = [line for line in done.stdout.splitlines() if "::test_conformance[" in line]
    assert len(ids) == 2, f"the listed cases are collected:\n{done.stdout[-800:]}" \
                          f"{done.stderr[-600:]}"
    left = pytest_run(["-q", "--collect-only", *SUITE, "--fs-backend", "reference",
                       "--fs-patterns", "fp.bn_relu", "--fs-exclude", "*/valid/*"], tmp_path)
    ids = [line for line in left.stdout.splitlines() if "::test_conformance[" in line]
    assert ids and not any("/valid/" in line for line in ids), \
        f"excluded cases are not collected: {ids[:3]}"
