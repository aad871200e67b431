"""The files ``fusionspec conform`` writes are never the files it reads nor each other: two of
its results document, ``--junit``, ``--write-expectations`` and ``--expectations`` on one file
(by name, through a symbolic link, or as a hard link) is a usage error naming both options,
before anything is written."""

from __future__ import annotations

import os
from pathlib import Path

import pytest
from testkit.cli import fusionspec

from fusionspec.conformance.outputs import OutputClashError, check_outputs, same_file

RUN = ["conform", "--backend", "testkit.toy_backends:NeverFuses", "--patterns", "fp.bn_relu",
       "--kinds", "valid", "--no-isolate", "--out", "out"]
EXPECTATIONS = ('schema = "fusionspec-expectations/2"\n[[expect]]\nstatus = "fail"\n'
                'pattern = "fp.bn_relu"\nreason = "known"\n')


def test_same_file_sees_through_links(tmp_path: Path) -> None:
    real = tmp_path / "a.toml"
    real.write_text("x")
    (tmp_path / "soft.toml").symlink_to(real)
    os.link(real, tmp_path / "hard.toml")
    assert same_file(real, tmp_path / "soft.toml"), "a symbolic link is its target"
    assert same_file(real, tmp_path / "hard.toml"), "a hard link is the same file"
    assert same_file(real, tmp_path / "." / "a.toml"), "a path is compared resolved"
    assert not same_file(real, tmp_path / "other.toml"), "another (missing) file is another"


def test_check_outputs_names_both() -> None:
    with pytest.raises(OutputClashError, match="--junit x.xml is also another output "
                                               r"\(--write-expectations x.xml\)"):
        check_outputs({"--write-expectations": "x.xml", "--junit": "x.xml"})
    with pytest.raises(OutputClashError, match="is also an input"):
        check_outputs({"--junit": "e.toml"}, {"--expectations": "e.toml"})
    check_outputs({"--junit": None, "a": "1"}, {"--expectations": None})


@pytest.mark.parametrize("how", ["same", "symlink", "hardlink"])
def test_junit_over_the_expectations_file_is_refused(tmp_path: Path, how: str) -> None:
    (tmp_path / "exp.toml").write_text(EXPECTATIONS)
    junit = "exp.toml"
    if how == "symlink":
        (tmp_path / "link.toml").symlink_to(tmp_path / "exp.toml")
        junit = "link.toml"
    elif how == "hardlink":
        os.link(tmp_path / "exp.toml", tmp_path / "hard.toml")
        junit = "hard.toml"
    done = fusionspec([*RUN, "--expectations", "exp.toml", "--junit", junit], tmp_path)
    assert done.returncode == 2, f"a usage error: {done.returncode} {done.stderr[-600:]}"
    assert "--junit" in done.stderr and "--expectations" in done.stderr, \
        f"the message names both options: {done.stderr[-600:]}"
    assert (tmp_path / "exp.toml").read_text() == EXPECTATIONS, "the expectations file is intact"
    assert not (tmp_path / "out" / "results.json").exists(), "refused before the run"


@pytest.mark.parametrize(("flags", "names"), [
    (["--junit", "out/results.json"], ("--junit", "results document")),
    (["--junit", "w.toml", "--write-expectations", "w.toml"],
     ("--junit", "--write-expectations")),
    (["--junit", "out/worker.log"], ("--junit", "worker log")),
    (["--write-expectations", "out/./results.json"], ("--write-expectations", "results")),
])
def test_outputs_on_one_file_are_refused(tmp_path: Path, flags: list[str],
                                         names: tuple[str, str]) -> None:
    done = fusionspec([*RUN, *flags], tmp_path)
    assert done.returncode == 2, f"a usage error: {done.returncode} {done.stderr[-600:]}"
    assert all(n in done.stderr for n in names), f"names both: {done.stderr[-600:]}"
    assert not (tmp_path / "out" / "results.json").exists(), "nothing was written"


def test_junit_over_the_default_results_document_is_refused(tmp_path: Path) -> None:
    """Without ``--out`` the results folder is known only once the backend has started: the
    check still comes before the results document is written."""
    target = tmp_path / "results" / "conformance" / "never-fuses-numpy" / "results.json"
    run = [a for a in RUN if a not in ("--out", "out")]
    done = fusionspec([*run, "--junit", str(target)], tmp_path)
    assert done.returncode == 2 and "--junit" in done.stderr, \
        f"a usage error naming --junit: {done.returncode} {done.stderr[-600:]}"
    assert not target.exists(), "neither the results document nor XML in its place"
