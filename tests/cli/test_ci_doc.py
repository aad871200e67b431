"""docs/ci.md stays true: its workflow is valid YAML whose fusionspec commands parse and run as
written, and its expectations example is a valid expectations file.

The run uses a toy backend with a planted bug (`WrongConvAndMatMul`: Convolution and MatMul
partitions compute wrong) against a baseline of its previous version (`WrongConv`), on a tiny
selection, so that each step has something to report: the shards fail, the merge fails, the
report is written, the diff finds the MatMul regressions, and a failure of the merged artifact
replays from its folder.
"""

from __future__ import annotations

import json
import re
import shlex
import shutil
import subprocess
import sys
import xml.etree.ElementTree as ET
from pathlib import Path
from typing import Any

import pytest
from testkit.cli import env

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


#: The workflow's backend stands for this toy, its baseline for the toy's previous version.
TOY = "testkit.toy_backends:WrongConvAndMatMul"
PREVIOUS = "testkit.toy_backends:WrongConv"
#: A tiny selection, added to each grading command so the test stays quick.
SELECTION = "--patterns fp.conv_post_ops,fp.matmul_post_ops --kinds valid --dtype f32"


def _workflow_commands() -> list[str]:
    """The workflow's fusionspec commands, in job and step order, on one line each."""
    yaml = pytest.importorskip("yaml")
    jobs = yaml.safe_load(_blocks("yaml")[0])["jobs"]
    runs = [step["run"] for job in jobs.values() for step in job["steps"] if "run" in step]
    return [" ".join(r.split()) for r in runs if r.lstrip().startswith("fusionspec")]


def _sh(command: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    """`command` through bash, as a CI step runs it (globs expanded, variables set)."""
    return subprocess.run(["bash", "-c", command], cwd=cwd,
                          env=env({"GITHUB_STEP_SUMMARY": str(cwd / "summary.md")}),
                          capture_output=True, text=True, timeout=600, check=False,
                          stdin=subprocess.DEVNULL)


def _said(done: subprocess.CompletedProcess[str]) -> str:
    return f"exit {done.returncode}: {done.stdout[-800:]} {done.stderr[-800:]}"


def _on_the_toy(command: str) -> str:
    command = command.replace("--backend mybackend", f"--backend {TOY}")
    return f"{command} {SELECTION}" if command.startswith("fusionspec conform") else command


def _load(path: Path) -> dict[str, Any]:
    loaded: dict[str, Any] = json.loads(path.read_text(encoding="utf-8"))
    return loaded


def test_the_workflow_runs_as_written_on_a_toy_backend(tmp_path: Path) -> None:
    (tmp_path / "ci").mkdir()
    (tmp_path / "ci" / "fusionspec-expectations.toml").write_text(_blocks("toml")[0])
    # The baseline is a results.json of the main branch: the toy's previous version.
    main = _sh(f"fusionspec conform --backend {PREVIOUS} {SELECTION} --out main", tmp_path)
    assert main.returncode == 1, f"the previous version fails on Convolution: {_said(main)}"
    shutil.copy(tmp_path / "main" / "results.json", tmp_path / "ci" / "fusionspec-baseline.json")

    grade, merge, report, diff = _workflow_commands()
    for shard in (1, 2, 3, 4):
        done = _sh(_on_the_toy(grade.replace("${{ matrix.shard }}", str(shard))), tmp_path)
        assert done.returncode in (0, 1), f"shard {shard} grades (failures allowed): {_said(done)}"
        part = _load(tmp_path / f"shard-{shard}" / "results.json")
        assert part["shard"] == f"{shard}/4", f"shard {shard} writes its part: {part['shard']}"

    merged = _sh(_on_the_toy(merge), tmp_path)
    assert merged.returncode == 1, f"the merged run has unexpected failures: {_said(merged)}"
    whole = _load(tmp_path / "all" / "results.json")
    baseline = _load(tmp_path / "ci" / "fusionspec-baseline.json")
    assert [v["case_id"] for v in whole["verdicts"]] == \
        [v["case_id"] for v in baseline["verdicts"]], \
        "the four shards together hold the unsharded run's cases, in its order"

    reported = _sh(_on_the_toy(report), tmp_path)
    assert reported.returncode == 0 and (tmp_path / "all" / "index.html").is_file(), \
        f"the report is written: {_said(reported)}"

    gated = _sh(_on_the_toy(diff), tmp_path)
    summary = (tmp_path / "summary.md").read_text(encoding="utf-8")
    assert gated.returncode == 1, f"the MatMul regressions fail the gate: {_said(gated)}"
    assert "fp.matmul_post_ops/valid/" in summary and "fp.conv_post_ops/valid/" not in \
        summary.split("ixed")[0], f"the job summary lists the new MatMul failures: {summary}"

    # Replaying a failure of the downloaded artifact, from its folder.
    failure = next(f for f in whole["failures"] if f["pattern"] == "fp.matmul_post_ops")
    folder = tmp_path / "all" / failure["replay"]["path"]
    lines = [line for line in (folder / "replay.txt").read_text().splitlines()
             if line.startswith("fusionspec ")]
    culprit = [line for line in lines if "culprit.json" in line]
    lines = [line for line in lines if line not in culprit]
    assert len(lines) == 3, f"replay.txt holds the replay and the two runs: {lines}"
    replayed = _sh(lines[0], folder)
    assert replayed.returncode == 1 and "numeric-mismatch" in replayed.stdout, \
        f"the replay reproduces the failure: {_said(replayed)}"
    for line in lines[1:]:
        ran = _sh(line, folder)
        assert ran.returncode == 0, f"{line!r} runs from the folder: {_said(ran)}"
    for line in culprit:  # the smallest failing piece, on the backend against the reference
        ran = _sh(line, folder)
        assert ran.returncode == 1 and "DIFFERS from the reference" in ran.stdout, \
            f"{line!r} replays the culprit, which still fails: {_said(ran)}"
    assert (folder / "actual.npz").is_file(), "the backend's outputs are saved"

    # Rerunning one case by id from a case list, with JUnit XML for a dashboard.
    (tmp_path / "caselist.txt").write_text(f"# the regression\n{failure['case_id']}\n")
    rerun = _sh(f"fusionspec conform --backend {TOY} --case @caselist.txt --junit junit.xml",
                tmp_path)
    assert rerun.returncode == 1, f"the case fails again: {_said(rerun)}"
    cases = ET.parse(tmp_path / "junit.xml").getroot().iter("testcase")
    assert [(c.get("name"), c.find("failure") is not None) for c in cases] == \
        [(failure["case_id"], True)], "JUnit holds the one case, failed"


def test_the_pytest_step_runs_as_written_on_a_toy_backend(tmp_path: Path) -> None:
    yaml = pytest.importorskip("yaml")
    pytest.importorskip("xdist")
    (tmp_path / "ci").mkdir()
    (tmp_path / "ci" / "fusionspec-expectations.toml").write_text(_blocks("toml")[0])
    (step,) = yaml.safe_load(_blocks("yaml")[1])
    command = " ".join(step["run"].split()).replace("${{ matrix.shard }}", "2")
    assert command.startswith("pytest --pyargs fusionspec.conformance --fs-backend mybackend"), \
        command
    # This environment's pytest (the one fusionspec is installed with), the toy for the
    # team's backend, and a tiny selection: two draws, both failing on the toy, one of which
    # goes to shard 2 (shards are dealt whole draws).
    command = command.replace("pytest", f"{shlex.quote(sys.executable)} -m pytest", 1) \
        .replace("--fs-backend mybackend", f"--fs-backend {TOY}")
    command += " --fs-patterns fp.conv_post_ops,fp.matmul_post_ops --fs-kinds valid" \
        " --fs-dtype f32 -p no:cacheprovider"
    done = _sh(command, tmp_path)
    assert done.returncode == 1 and "Traceback" not in done.stdout + done.stderr, \
        f"the toy's failures fail the shard, cleanly: {_said(done)}"
    part = _load(tmp_path / "shard-2" / "results.json")
    assert part["shard"] == "2/4" and part["totals"].get("numeric-mismatch"), \
        f"the xdist workers write the shard's one document: {part['shard']} {part['totals']}"
    cases = list(ET.parse(tmp_path / "junit-2.xml").getroot().iter("testcase"))
    failed = [c for c in cases if c.find("failure") is not None]
    assert len(failed) == part["totals"]["numeric-mismatch"], \
        f"JUnit has a failed test per failing case: {len(failed)} vs {part['totals']}"
