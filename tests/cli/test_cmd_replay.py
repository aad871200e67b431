"""Replaying a failure folder: on another backend without its device, with the backend's
outputs saved beside the reference's and the worst elements printed; replay.txt's run line on
the backend; exit code 3 for a backend that cannot be loaded."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

import numpy as np
from testkit.cli import env, fusionspec

OWN = ["--backend", "testkit.toy_backends:WrongConvOwnDevice", "--patterns",
       "fp.conv_post_ops", "--kinds", "valid"]


def _first_failure(tmp_path: Path) -> Path:
    done = fusionspec(["conform", *OWN, "--out", "out"], tmp_path)
    assert done.returncode == 1, f"the planted failures fail the run: {done.stdout[-600:]}"
    return next((tmp_path / "out" / "failures").iterdir())


def test_replay_saves_both_outputs_and_prints_the_worst_elements(tmp_path: Path) -> None:
    folder = _first_failure(tmp_path)
    # A module:attr backend is named on the command line: a folder does not choose the code.
    again = fusionspec(["conform", "--backend", OWN[1], "--replay", str(folder)], tmp_path)
    assert again.returncode == 1 and "numeric-mismatch" in again.stdout, again.stdout[-800:]
    assert "worst elements" in again.stdout and "expected " in again.stdout, \
        f"the replay prints the worst elements:\n{again.stdout}"
    expected, actual = np.load(folder / "expected.npz"), np.load(folder / "actual.npz")
    assert sorted(expected.files) == sorted(actual.files) and expected.files, \
        f"both files hold the graph outputs: {expected.files} {actual.files}"
    assert any(not np.array_equal(expected[k], actual[k]) for k in expected.files), \
        "the backend's outputs are its own (they differ from the reference's)"


def test_replay_on_another_backend_takes_its_default_device(tmp_path: Path) -> None:
    folder = _first_failure(tmp_path)
    again = fusionspec(["conform", "--backend", "reference", "--replay", str(folder)],
                       tmp_path)
    assert again.returncode == 0 and "on reference on numpy" in again.stdout, \
        f"the reference replays on its own device, not 'my-cpu':\n{again.stdout}" \
        f"{again.stderr[-600:]}"


def test_replay_txt_run_line_runs_the_backend(tmp_path: Path) -> None:
    folder = _first_failure(tmp_path)
    lines = (folder / "replay.txt").read_text().splitlines()
    backend_line = next(line for line in lines if "fusionspec run" in line and "--backend" in line)
    ran = subprocess.run(["bash", "-c", backend_line], cwd=folder, env=env(),
                         capture_output=True, text=True, timeout=300, check=False)
    assert ran.returncode == 0 and "on wrong-conv-own-device my-cpu" in ran.stdout, \
        f"the run line runs the backend on its device: {ran.stdout} {ran.stderr[-600:]}"
    reference = subprocess.run(["bash", "-c", next(line for line in lines if line.startswith(
        "fusionspec run") and "--backend" not in line) + " --out ref.npz"], cwd=folder,
        env=env(), capture_output=True, text=True, timeout=300, check=False)
    assert reference.returncode == 0, reference.stderr[-600:]
    mine, ref = np.load(folder / "actual.npz"), np.load(folder / "ref.npz")
    assert any(not np.array_equal(mine[k], ref[k]) for k in ref.files), \
        "the backend's outputs differ from the reference's, as the failure says"


def test_a_backend_that_cannot_be_loaded_exits_3(tmp_path: Path) -> None:
    done = fusionspec(["conform", "--backend", "nosuchmod:X", "--patterns", "fp.bn_relu",
                       "--json", "--out", "out"], tmp_path)
    assert done.returncode == 3, f"exit 3 (unavailable), not 1: {done.returncode} " \
                                 f"{done.stdout} {done.stderr[-600:]}"
    summary = json.loads(done.stdout)
    assert summary["verdict"] == "UNAVAILABLE" and "nosuchmod" in summary["unavailable"], \
        summary
    document = json.loads((tmp_path / "out" / "results.json").read_text())
    assert "nosuchmod" in document["unavailable"], "the results document says why"


DEEP = "testkit.toy_backends:FailsDeepInNumPy"


def test_replay_and_run_print_the_backends_whole_traceback(tmp_path: Path) -> None:
    done = fusionspec(["conform", "--backend", DEEP, "--patterns", "fp.bn_relu", "--kinds",
                       "valid", "--out", "out"], tmp_path)
    assert done.returncode == 1, f"the backend's error fails the run: {done.stdout[-600:]}"
    folder = next((tmp_path / "out" / "failures").iterdir())
    record = json.loads((folder / "case.json").read_text())
    kept = record["details"]["traceback"]
    assert "_plan_weights" in kept and "conformance/grade" not in kept, \
        f"the error verdict keeps the backend's own frame, not the suite's: {kept}"
    again = fusionspec(["conform", "--backend", DEEP, "--replay", str(folder)], tmp_path)
    assert again.returncode == 1 and "what the backend raised:" in again.stdout, \
        f"the replay prints what the backend raised: {again.stdout[-800:]}"
    shown = again.stdout[again.stdout.index("what the backend raised:"):]
    assert "_plan_weights" in shown and "_invert" in shown and "Singular matrix" in shown, \
        f"the replay's traceback is whole, from the backend's frame to the exception: {shown}"
    run = fusionspec(["run", str(folder / "graph.json"), "--inputs",
                      str(folder / "inputs.npz"), "--backend", DEEP], tmp_path)
    assert run.returncode == 1 and "_plan_weights" in run.stderr \
        and "Traceback" in run.stderr, \
        f"run --backend prints what the backend raised with its traceback: {run.stderr[-800:]}"
