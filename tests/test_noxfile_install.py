"""The main job's installs: a reused environment is not reinstalled for extras it has, and where
no installed OpenCL device can run the OpenCL backend (PoCL's LLVM does not know the CPU), the
job adds Intel's CPU runtime once and lists the devices again. A fake nox session records what
the noxfile asks of it, so no environment is built."""

from __future__ import annotations

import functools
import importlib.util
import json
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pytest

pytestmark = pytest.mark.skipif(importlib.util.find_spec("nox") is None,
                                reason="nox is not installed")

NO_DEVICE = {"backends": [
    {"backend": "reference", "devices": ["numpy"], "problems": {}},
    {"backend": "accel", "devices": [], "problems": {"pocl-cpu": "unknown target CPU"},
     "unavailable": "pocl-cpu: unknown target CPU 'generic'"}]}
INTEL = {"backends": [
    {"backend": "reference", "devices": ["numpy"], "problems": {}},
    {"backend": "accel", "devices": ["intel-cpu"], "problems": {"pocl-cpu": "unknown target"}}]}


@functools.cache
def _noxfile() -> Any:
    """noxfile.py as a module (loaded once: loading registers its sessions with nox)."""
    spec = importlib.util.spec_from_file_location(
        "fusionspec_noxfile_install", Path(__file__).parents[1] / "noxfile.py")
    assert spec is not None and spec.loader is not None, "noxfile.py is found"
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


class _Session:
    """What the install and listing steps use of nox's session; `listings` are the answers of
    successive `conform --list --json` calls."""

    def __init__(self, venv: Path, listings: list[dict[str, Any]]) -> None:
        self.virtualenv = SimpleNamespace(location=str(venv))
        self.listings = listings
        self.installed: list[tuple[str, ...]] = []
        self.logged: list[str] = []

    def install(self, *args: str) -> None:
        self.installed.append(args)

    def run(self, *args: str, **kwargs: object) -> str:
        assert args[:4] == ("fusionspec", "conform", "--list", "--json"), \
            f"only the device listing is run here: {args}"
        return json.dumps(self.listings.pop(0))

    def log(self, line: str) -> None:
        self.logged.append(line)


@pytest.fixture
def noxfile(monkeypatch: pytest.MonkeyPatch) -> Any:
    module = _noxfile()
    monkeypatch.setattr(module, "_source_digest", lambda: "digest")
    return module


def test_a_reused_environment_is_not_reinstalled_for_extras_it_has(
        noxfile: Any, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    session = _Session(tmp_path, [])
    noxfile._install(session, "accel", "conformance", "report")
    noxfile._install(session, "intel-opencl")
    assert len(session.installed) == 2, \
        f"a new extra is installed into the environment: {session.installed}"
    noxfile._install(session, "accel", "conformance", "report")
    noxfile._install(session, "conformance")
    assert len(session.installed) == 2, \
        f"extras installed already from these sources are not installed again: " \
        f"{session.installed}"
    monkeypatch.setattr(noxfile, "_source_digest", lambda: "changed")
    noxfile._install(session, "conformance")
    assert len(session.installed) == 3, \
        f"changed sources are installed again: {session.installed}"


def test_no_usable_device_adds_intel_opencl_once(noxfile: Any, tmp_path: Path) -> None:
    session = _Session(tmp_path, [INTEL])
    noxfile._install(session, "accel", "conformance", "report")
    assert noxfile._no_device(NO_DEVICE, "accel"), "a backend listed without devices has none"
    listing = noxfile._with_intel_opencl(session, NO_DEVICE)
    assert listing == INTEL, f"the devices are listed again after the install: {listing}"
    assert any("intel-opencl" in " ".join(args) for args in session.installed[1:]), \
        f"Intel's CPU runtime is installed: {session.installed}"
    assert any("unknown target CPU" in line for line in session.logged), \
        f"the log says why the runtime was added: {session.logged}"
    again = _Session(tmp_path, [])
    assert noxfile._with_intel_opencl(again, NO_DEVICE) == NO_DEVICE and not again.installed, \
        f"with the runtime installed already nothing is installed or listed again: " \
        f"{again.installed}"
