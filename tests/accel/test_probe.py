"""A broken OpenCL compiler cannot take a run down: the device probe, and what `--list`, the
suite, a test session and the report say when a compiler is planted broken (a build that aborts
the process, as LLVM does; a build that returns a program without kernels)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from testkit.accel import first_info, requires_device

from fusionspec.accel.build import FAULT_ENV
from fusionspec.accel.probe import PROBE_ENV, health, probe_dir

pytestmark = requires_device

REPO = Path(__file__).resolve().parents[2]
FAULTS = {"abort-build": "SIGABRT", "no-kernels": "lacks kernel"}


def _planted(tmp_path: Path, fault: str) -> dict[str, str]:
    """An environment with `fault` planted and every cache empty, so the probe and every
    program really go through the (broken) compiler."""
    env = {**os.environ, FAULT_ENV: fault, "XDG_CACHE_HOME": str(tmp_path / "cache"),
           "POCL_CACHE_DIR": str(tmp_path / "pocl")}
    env.pop(PROBE_ENV, None)
    return env


def _run(args: list[str], env: dict[str, str], cwd: Path | None = None
         ) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, *args], env=env, capture_output=True, text=True,
                          timeout=600, cwd=cwd, stdin=subprocess.DEVNULL, check=False)


def test_the_first_device_passes_its_probe_and_the_verdict_is_kept() -> None:
    info = first_info()
    found = health(info)
    assert found.ok, f"{info.id} failed its probe: {found.reason}"
    assert list(probe_dir().glob("*.json")), f"the verdict is kept under {probe_dir()}"


@pytest.mark.parametrize("fault", sorted(FAULTS))
def test_list_reports_a_broken_compiler_and_goes_on(tmp_path: Path, fault: str) -> None:
    done = _run(["-m", "fusionspec.cli", "conform", "--list", "--json"],
                _planted(tmp_path, fault))
    assert done.returncode == 0, f"--list exits 0 with a broken compiler: {done.stderr[-800:]}"
    assert "Traceback" not in done.stderr, f"no traceback: {done.stderr[-800:]}"
    rows = {row["backend"]: row for row in json.loads(done.stdout)["backends"]}
    accel = rows["accel"]
    said = json.dumps(accel)
    assert FAULTS[fault] in said, f"accel's listing names the failure ({FAULTS[fault]}): {said}"
    assert fault != "no-kernels" or "crashed" not in said, \
        f"a program without kernels is refused cleanly, not by a crash of the probe: {said}"
    assert rows["reference"]["devices"] == ["numpy"], "the other backends are still listed"


@pytest.mark.parametrize("fault", sorted(FAULTS))
def test_the_suite_reports_a_broken_compiler_as_unavailable(tmp_path: Path, fault: str
                                                            ) -> None:
    out = tmp_path / "out"
    env = _planted(tmp_path, fault)
    done = _run(["-m", "fusionspec.cli", "conform", "--backend", "accel",
                 "--patterns", "fp.bn_relu", "--kinds", "valid", "--out", str(out)], env)
    assert done.returncode == 3, f"exit 3 (unavailable), got {done.returncode}: " \
                                 f"{done.stdout[-800:]}{done.stderr[-800:]}"
    assert "Traceback" not in done.stdout + done.stderr, "no traceback"
    document = json.loads((out / "results.json").read_text())
    assert FAULTS[fault] in document["unavailable"], \
        f"the results document says why: {document['unavailable']!r}"
    assert fault != "no-kernels" or "crashed" not in document["unavailable"], \
        f"the guard itself did not crash the probe: {document['unavailable']!r}"
    page = tmp_path / "report.html"
    shown = _run(["-m", "fusionspec.cli", "report", str(out / "results.json"),
                  "-o", str(page)], env)
    assert shown.returncode == 0, f"the report renders: {shown.stderr[-800:]}"
    html = page.read_text()
    assert "UNAVAILABLE" in html and FAULTS[fault] in html, \
        "the report's header shows the run as unavailable, with the reason"


def test_a_test_session_skips_with_the_reason(tmp_path: Path) -> None:
    """The accel tests, run with a compiler that aborts the process, skip and say why."""
    env = _planted(tmp_path, "abort-build")
    done = _run(["-m", "pytest", "-q", "-p", "no:cacheprovider", "-rs",
                 "tests/accel/test_accel_softmax.py"], env, cwd=REPO)
    assert done.returncode == 0, f"the session goes on: {done.stdout[-1500:]}"
    assert "skipped" in done.stdout and "SIGABRT" in done.stdout, \
        f"the tests skip with the probe's reason: {done.stdout[-1500:]}"
