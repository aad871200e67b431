"""``fusionspec conform`` on bad flags and interrupted runs: a bad value is a one-line usage
error (exit 2), a run stopped with Ctrl-C writes what it judged marked incomplete (exit 130),
and a run that judged nothing is never a PASS."""

from __future__ import annotations

import json
import re
import signal
import subprocess
import sys
from pathlib import Path

import pytest
from testkit.cli import env

from fusionspec.cli.main import main
from fusionspec.conformance.grade.results import ResultsCollector
from fusionspec.reference.backend import NUMPY_DEVICE

CLI = [sys.executable, "-m", "fusionspec.cli", "conform"]


@pytest.mark.parametrize("flag,value", [("--kinds", "bogus"), ("--kinds", ""),
                                        ("--kinds", "valid,sideways"),
                                        ("--memory-limit", "-1"), ("--memory-limit", "lots")])
def test_bad_values_are_usage_errors(flag: str, value: str) -> None:
    done = subprocess.run([*CLI, flag, value], capture_output=True, text=True, timeout=120,
                          check=False)
    assert done.returncode == 2, f"{flag} {value!r}: exit {done.returncode}: {done.stderr}"
    assert flag in done.stderr and "Traceback" not in done.stderr, done.stderr


def test_ctrl_c_keeps_what_was_judged_marked_incomplete(tmp_path: Path) -> None:
    out = tmp_path / "out"
    # A paced backend (10 ms a kernel) on one pattern, with a progress line per case judged:
    # the interrupt is sent once a case is judged, whatever the machine's load.
    run = subprocess.Popen([*CLI, "--backend", "testkit.perf_backends:PacedBackend",
                            "--patterns", "fp.conv_post_ops", "--out", str(out)],
                           stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                           env=env({"FUSIONSPEC_PROGRESS_INTERVAL": "0"}))
    assert run.stderr is not None
    said = ""
    while not re.search(r"judged [1-9]\d*/", said):
        line = run.stderr.readline()
        assert line, f"the run ended before judging a case: {said[-800:]}"
        said += line
    counted = re.search(r"judging (\d+) case", said)
    assert counted, f"the progress line names no number of cases: {said[-800:]}"
    planned = int(counted.group(1))
    run.send_signal(signal.SIGINT)
    stdout, stderr = run.communicate(timeout=120)
    stderr = said + stderr
    assert run.returncode == 130, f"exit {run.returncode}: {stdout[-800:]} {stderr[-800:]}"
    assert "Traceback" not in stderr, stderr[-1500:]
    document = json.loads((out / "results.json").read_text())
    assert "interrupted" in document["incomplete"], document.get("incomplete")
    assert 0 < sum(document["totals"].values()) < planned, \
        f"some cases were judged and kept: {document['totals']}"
    assert "INCOMPLETE" in stdout, stdout[-800:]


def test_a_run_that_judged_nothing_is_not_a_pass(monkeypatch: pytest.MonkeyPatch,
                                                 capsys: pytest.CaptureFixture[str]) -> None:
    empty = ResultsCollector("reference", NUMPY_DEVICE)
    monkeypatch.setattr("fusionspec.conformance.suite.run_suite",
                        lambda *args, **kwargs: empty)
    code = main(["conform", "--backend", "reference", "--json"])
    said = json.loads(capsys.readouterr().out)
    assert code == 1 and said["ok"] is False and said["verdict"] == "INCOMPLETE", said
    assert said["incomplete"] == "no case was judged", said
