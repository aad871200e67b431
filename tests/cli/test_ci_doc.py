"""docs/ci.md stays true: its workflow is valid YAML whose fusionspec commands parse, and its
expectations example is a valid expectations file."""

from __future__ import annotations

import re
import shlex
from pathlib import Path

import pytest

from fusionspec.cli.main import build_parser
from fusionspec.conformance.expectations import Expectations

DOC = Path(__file__).resolve().parents[2] / "docs" / "ci.md"


def _blocks(language: str) -> list[str]:
    return re.findall(rf"```{language}\n(.*?)```", DOC.read_text(encoding="utf-8"), re.S)


def test_the_expectations_example_is_valid() -> None:
    (example,) = _blocks("toml")
    parsed = Expectations.parse(example, "docs/ci.md")
    assert [e.status for e in parsed.entries] == ["fail", "skip"], parsed.entries


def test_the_workflow_is_yaml_and_its_commands_parse(tmp_path: Path,
                                                      monkeypatch: pytest.MonkeyPatch) -> None:
    yaml = pytest.importorskip("yaml")
    # The expectations file is read while the options are: the example stands in for the
    # team's file.
    (tmp_path / "ci").mkdir()
    (tmp_path / "ci" / "fusionspec-expectations.toml").write_text(_blocks("toml")[0])
    monkeypatch.chdir(tmp_path)
    workflow, pytest_step = _blocks("yaml")
    jobs = yaml.safe_load(workflow)["jobs"]
    assert jobs["shard"]["strategy"]["matrix"]["shard"] == [1, 2, 3, 4], \
        "the workflow is a matrix over shards"
    runs = [step["run"] for job in jobs.values() for step in job["steps"] if "run" in step]
    commands = [" ".join(r.split()) for r in runs if r.lstrip().startswith("fusionspec")]
    assert {c.split()[1] for c in commands} == {"conform", "merge", "report", "diff"}, commands
    parser = build_parser()
    for command in commands:
        filled = command.replace("${{ matrix.shard }}", "2").replace("$GITHUB_STEP_SUMMARY",
                                                                       "summary.md")
        parser.parse_args(shlex.split(filled)[1:])  # exits 2 on an unknown flag
    steps = yaml.safe_load(pytest_step)
    assert "--fs-backend" in steps[0]["run"], "the pytest variant uses the prefixed options"
