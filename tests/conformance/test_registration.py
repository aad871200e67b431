"""Third-party backends: registration through an entry point, the pytest plugin, the CLI.

A backend is one class plus one entry point. The tests build a tiny installed distribution in a
temporary folder (a ``.dist-info`` with ``entry_points.txt`` next to the module), put it on the
path, and check that fusionspec finds, loads and grades it, in process and through the pytest
plugin and ``fusionspec conform`` in a subprocess.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from fusionspec.backend import available_backends, load_backend
from fusionspec.conformance.cases import CaseKind
from fusionspec.conformance.suite import run_suite

TOY_MODULE = '''
"""A toy third-party backend: the reference partitioner and executor under another name."""
from fusionspec.backend import Device
from fusionspec.reference import execute
from fusionspec.reference.partitioner import partition


class Compiled:
    def __init__(self, part):
        self.part = part

    def execute(self, inputs):
        return execute(self.part, inputs)


class ToyBackend:
    name = "toy"

    def devices(self):
        return (Device("toy-cpu", "cpu", "a toy device"),)

    def partition(self, graph):
        return partition(graph)

    def compile(self, part, device):
        return Compiled(part)
'''


@pytest.fixture()
def toy_site(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    (tmp_path / "toy_backend.py").write_text(TOY_MODULE)
    info = tmp_path / "toy_backend-0.1.dist-info"
    info.mkdir()
    (info / "METADATA").write_text("Metadata-Version: 2.1\nName: toy-backend\nVersion: 0.1\n")
    (info / "entry_points.txt").write_text(
        "[fusionspec.backends]\ntoy = toy_backend:ToyBackend\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    return tmp_path


def _env(site: Path) -> dict[str, str]:
    path = os.pathsep.join([str(site), os.environ.get("PYTHONPATH", "")]).rstrip(os.pathsep)
    return {**os.environ, "PYTHONPATH": path}


def test_entry_point_backend_is_found_and_graded(toy_site: Path) -> None:
    assert "toy" in available_backends(), f"registered backends: {available_backends()}"
    backend = load_backend("toy")
    assert backend.name == "toy", f"loaded {backend.name!r} for the entry point 'toy'"
    results = run_suite("toy", patterns=["fp.matmul_post_ops"], kinds=[CaseKind.valid],
                        sys_path=[str(toy_site)])
    assert results.device.id == "toy-cpu", f"graded on {results.device.id}"
    assert not results.failed and results.totals["pass"] > 0, \
        f"the toy backend is the reference under another name: {dict(results.totals)}"


def test_pytest_plugin_grades_a_backend(toy_site: Path, tmp_path: Path) -> None:
    out = tmp_path / "out"
    proc = subprocess.run(
        [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "--pyargs",
         "fusionspec.conformance", "--fs-backend", "toy", "--fs-patterns",
         "fp.bn_relu,int8.reorder", "--fs-kinds", "valid", "--fs-out", str(out)],
        capture_output=True, text=True, env=_env(toy_site), cwd=tmp_path, timeout=600)
    assert proc.returncode == 0, f"pytest exited {proc.returncode}:\n{proc.stdout[-2000:]}"
    document = json.loads((out / "results.json").read_text())
    assert document["backend"] == "toy" and set(document["totals"]) == {"pass"}, \
        f"results document: backend {document['backend']}, totals {document['totals']}"
    cases = document["totals"]["pass"]
    assert f"{cases} passed" in proc.stdout, \
        f"one test per case ({cases} cases):\n{proc.stdout[-1500:]}"


def test_cli_reports_failures_with_replay_commands(tmp_path: Path) -> None:
    mutants = str(Path(__file__).resolve().parents[1])  # holds the testkit package
    out = tmp_path / "out"
    proc = subprocess.run(
        [sys.executable, "-m", "fusionspec.cli", "conform", "--backend",
         "testkit.mutants:NeverFuses", "--patterns", "fp.conv_post_ops", "--kinds", "valid",
         "--out", str(out)],
        capture_output=True, text=True, env=_env(Path(mutants)), timeout=600)
    assert proc.returncode == 1, f"a failing run exits 1, got {proc.returncode}: {proc.stderr}"
    assert "fusion-mismatch" in proc.stdout and "replay: fusionspec conform" in proc.stdout, \
        f"failures are listed with a replay command:\n{proc.stdout[-1500:]}"
    folders = sorted((out / "failures").iterdir())
    assert folders and (folders[0] / "graph.json").exists(), "each failure gets a folder"
    replay = subprocess.run(
        [sys.executable, "-m", "fusionspec.cli", "conform", "--backend",
         "testkit.mutants:NeverFuses", "--replay", str(folders[0])],
        capture_output=True, text=True, env=_env(Path(mutants)), timeout=600)
    assert replay.returncode == 1 and "fusion-mismatch" in replay.stdout, \
        f"replaying the saved failure reproduces it: {replay.stdout} {replay.stderr}"
    fixed = subprocess.run(
        [sys.executable, "-m", "fusionspec.cli", "conform", "--backend",
         "reference", "--replay", str(folders[0])],
        capture_output=True, text=True, timeout=600)
    assert fixed.returncode == 0, f"the reference passes the replayed case: {fixed.stdout}"


@pytest.mark.parametrize("command", ["conform", "bench"])
def test_a_mistyped_backend_is_a_usage_error(tmp_path: Path, command: str) -> None:
    proc = subprocess.run(
        [sys.executable, "-m", "fusionspec.cli", command, "--backend", "refrence"],
        capture_output=True, text=True, timeout=120, cwd=tmp_path)
    assert proc.returncode == 2, \
        f"{command}: a mistyped backend name is a usage error (exit 2, as any bad flag), " \
        f"got {proc.returncode}: {proc.stdout} {proc.stderr}"
    assert "'refrence' is no registered backend" in proc.stderr \
        and "did you mean reference" in proc.stderr, \
        f"{command}: the error names the mistake and the nearest name: {proc.stderr}"
    assert "Traceback" not in proc.stderr, f"a user mistake must not print a traceback: " \
                                           f"{proc.stderr}"
    assert not (tmp_path / "results").exists(), \
        f"{command}: a usage error writes no results document"


def test_worked_example_in_docs_is_the_toy_backend() -> None:
    doc = (Path(__file__).parents[2] / "docs" / "writing-a-backend.md").read_text()
    assert "[project.entry-points.\"fusionspec.backends\"]" in doc, \
        "the docs show the entry-point table"
    assert textwrap.dedent("class ToyBackend:") in doc, "the docs show the backend class"


@pytest.mark.parametrize("jobs", ["0", "-2", "many"])
def test_a_bad_jobs_count_is_a_usage_error(jobs: str) -> None:
    proc = subprocess.run(
        [sys.executable, "-m", "fusionspec.cli", "conform", "--jobs", jobs],
        capture_output=True, text=True, timeout=120)
    assert proc.returncode == 2 and "--jobs" in proc.stderr, \
        f"--jobs {jobs}: exit {proc.returncode}, stderr: {proc.stderr}"
    assert "Traceback" not in proc.stderr, f"no traceback: {proc.stderr}"
