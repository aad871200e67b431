"""The worker process keeps a backend in its place: what it prints stays in its log (``--json``
output stays JSON), a timed-out worker's helper processes die with it, a memory cap stops a
backend that allocates without bound, and a backend cannot change its grades by patching the
grading code in its own process."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import pytest
from testkit import toy_backends as toy

from fusionspec.conformance.cases import CaseKind, Status
from fusionspec.conformance.suite import run_suite
from fusionspec.conformance.workers import Runner

TESTS = str(Path(__file__).resolve().parents[1])  # holds the testkit package
VALID = toy.valid_case("fp.matmul_post_ops", 3)


def _env() -> dict[str, str]:
    path = os.pathsep.join([TESTS, os.environ.get("PYTHONPATH", "")]).rstrip(os.pathsep)
    return {**os.environ, "PYTHONPATH": path}


def test_a_backend_printing_to_stdout_does_not_corrupt_json(tmp_path: Path) -> None:
    done = subprocess.run(
        [sys.executable, "-m", "fusionspec.cli", "conform", "--backend",
         "testkit.toy_backends:PrintsToStdout", "--patterns", "fp.bn_relu", "--kinds", "valid",
         "--json", "--out", str(tmp_path / "out")],
        capture_output=True, text=True, env=_env(), timeout=600, check=False)
    document = json.loads(done.stdout)  # the whole standard output is one JSON document
    assert document["ok"] is True, f"the run passes: {document}"
    log = (tmp_path / "out" / "worker.log").read_text()
    assert "verbose: partitioning" in log and "verbose: native line" in log, \
        "what the backend printed, Python and native, is in the worker's log"


def test_a_timed_out_workers_helper_processes_die_with_it(tmp_path: Path,
                                                          monkeypatch: pytest.MonkeyPatch
                                                          ) -> None:
    pidfile = tmp_path / "child.pid"
    monkeypatch.chdir(tmp_path)
    with Runner("testkit.toy_backends:SpawnsAndHangs", None, 15.0, sys_path=[TESTS]) as run:
        verdict = run.run(VALID)
    assert verdict.status is Status.timeout, f"{verdict.status}: {verdict.reason}"
    child = int(pidfile.read_text())
    deadline = time.monotonic() + 60  # the event is the helper's death; load only delays it
    while time.monotonic() < deadline:
        try:
            if Path(f"/proc/{child}/stat").read_text().split()[2] == "Z":
                break
        except OSError:  # gone
            break
        time.sleep(0.05)
    state = Path(f"/proc/{child}/stat").read_text().split()[2] \
        if Path(f"/proc/{child}").exists() else "gone"
    assert state in ("gone", "Z"), f"the worker's helper process {child} survived ({state})"


def test_a_memory_cap_stops_a_backend_that_hogs_memory() -> None:
    with Runner("testkit.toy_backends:HogsMemory", None, 60.0, sys_path=[TESTS],
                memory_limit=2 * 2**30) as run:
        started = time.monotonic()
        verdict = run.run(VALID)
    assert verdict.status is Status.error, f"{verdict.status}: {verdict.reason}"
    assert "MemoryError" in verdict.reason or "crashed" in verdict.reason, verdict.reason
    assert time.monotonic() - started < 30, "the cap stops it quickly, not the timeout"


def test_a_backend_cannot_forge_its_grades() -> None:
    with Runner("testkit.toy_backends:ForgesGrades", None, 30.0, sys_path=[TESTS]) as run:
        verdict = run.run(VALID)
    assert verdict.status is Status.numeric_mismatch, \
        f"patching the grading in the backend's process changed the verdict: {verdict}"


@pytest.mark.parametrize("backend", ["testkit.toy_backends:NoDevices",
                                     "testkit.toy_backends:NoSuchBackend"])
def test_a_backend_that_fails_to_start_leaves_nothing_in_tmpdir(tmp_path: Path,
                                                               monkeypatch: pytest.MonkeyPatch,
                                                               backend: str) -> None:
    scratch = tmp_path / "tmp"
    scratch.mkdir()
    monkeypatch.setattr(tempfile, "tempdir", str(scratch))
    with pytest.raises(Exception):  # noqa: B017 - which error is the loader's business
        run_suite(backend, patterns=["fp.bn_relu"], kinds=[CaseKind.valid],
                  out_dir=lambda name, device: tmp_path / "out", sys_path=[TESTS])
    # pymp-*: multiprocessing's own folder for its fork server, removed when Python exits.
    left = sorted(p.name for p in scratch.iterdir() if not p.name.startswith("pymp-"))
    assert left == [], f"a run whose backend never started left {left} in the temp folder"
