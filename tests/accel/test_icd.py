"""Pip-installed OpenCL runtimes are registered with the OpenCL loader by fusionspec itself: a
vendor folder under the cache names them and keeps the system's drivers; a user's own
OCL_ICD_VENDORS, or the off switch, is left alone; with Intel's runtime installed (the
``intel-opencl`` extra) its CPU device is discovered and passes its probe."""

from __future__ import annotations

import importlib.util
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from fusionspec.accel import icd


@pytest.fixture
def fake(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    library = tmp_path / "lib" / "libfake.so"
    library.parent.mkdir()
    library.write_bytes(b"")
    system = tmp_path / "vendors"
    system.mkdir()
    (system / "gpu.icd").write_text("libgpu.so\n")
    monkeypatch.setattr(icd, "pip_runtime_libraries",
                        lambda: {"fusionspec-fake.icd": library})
    monkeypatch.setattr(icd, "SYSTEM_VENDORS", system)
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))
    monkeypatch.delenv(icd.VENDORS_ENV, raising=False)
    monkeypatch.delenv(icd.SWITCH_ENV, raising=False)
    return library


def test_a_vendor_folder_names_the_runtime_and_keeps_the_system_drivers(fake: Path) -> None:
    folder = icd.register_pip_runtimes()
    assert folder is not None and os.environ[icd.VENDORS_ENV] == str(folder), \
        "OCL_ICD_VENDORS points at the written folder"
    files = {p.name: p.read_text() for p in folder.glob("*.icd")}
    assert files == {"fusionspec-fake.icd": f"{fake}\n", "gpu.icd": "libgpu.so\n"}, \
        f"one file per pip runtime plus the system's vendor files: {files}"
    assert icd.register_pip_runtimes() is None, "a second call leaves the choice as it is"


def test_a_users_own_vendor_setting_is_kept(fake: Path, monkeypatch: pytest.MonkeyPatch
                                           ) -> None:
    monkeypatch.setenv(icd.VENDORS_ENV, "/my/vendors")
    assert icd.register_pip_runtimes() is None and \
        os.environ[icd.VENDORS_ENV] == "/my/vendors", "OCL_ICD_VENDORS set by the user wins"


def test_the_switch_turns_registration_off(fake: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(icd.SWITCH_ENV, "off")
    assert icd.register_pip_runtimes() is None and icd.VENDORS_ENV not in os.environ, \
        f"{icd.SWITCH_ENV}=off leaves the environment alone"


@pytest.mark.skipif(importlib.util.find_spec("pyopencl") is None or
                    not icd.pip_runtime_libraries(),
                    reason="Intel's CPU OpenCL runtime is not installed "
                           "(pip install 'fusionspec[intel-opencl]')")
def test_intel_cpu_runtime_is_discovered_and_passes_its_probe() -> None:
    env = {k: v for k, v in os.environ.items() if k != icd.VENDORS_ENV}
    script = ("import json\n"
              "from fusionspec.accel.backend import AccelBackend\n"
              "b = AccelBackend()\n"
              "print(json.dumps({'devices': [d.id for d in b.devices()], "
              "'problems': b.device_problems()}))\n")
    done = subprocess.run([sys.executable, "-c", script], env=env, capture_output=True,
                          text=True, timeout=600, check=False)
    assert done.returncode == 0, f"discovery runs: {done.stderr[-1500:]}"
    found = json.loads(done.stdout.strip().splitlines()[-1])
    assert "intel-cpu" in found["devices"], \
        f"the pip-installed Intel runtime is a usable device: {found}"
