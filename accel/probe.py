"""Trusting an OpenCL device only after it has built and run kernels in another process.

An OpenCL compiler runs inside the process that calls it, and some abort it: PoCL 3.0's LLVM
stops the whole process with "LLVM ERROR: Do not know how to scalarize this operator's operand!"
on 16-wide vector code on an AVX-512 CPU it does not know. The conformance suite's workers
survive that, but a test session, a benchmark or ``fusionspec conform --list`` build in their own
process. So before the backend offers a device, `health(info)` runs
``python -m fusionspec.accel.probe_worker DEVICE-ID`` in a subprocess, which compiles and runs
one small partition of every kernel family and the shared dtype conversions
(`fusionspec.accel.probe_graphs`). A probe that crashes, hangs, fails to build or runs without
kernels marks the device unavailable, with the reason: the backend leaves it out of
``devices()`` and says why in ``device_problems()``.

The verdict is kept on disk (``<cache>/fusionspec/probe/``), keyed by the device, its driver,
the kernel generator's version and the installed fusionspec and pyopencl, so the probe runs
once per machine and again after an upgrade. ``FUSIONSPEC_ACCEL_PROBE=off`` trusts every device
without probing; ``FUSIONSPEC_ACCEL_PROBE=fresh`` ignores kept verdicts.
"""

from __future__ import annotations

import hashlib
import json
import os
import subprocess
import sys
import time
from dataclasses import asdict, dataclass
from functools import cache
from importlib import metadata
from pathlib import Path

from fusionspec.backend.processes import exit_text
from fusionspec.spec.release import VERSION, source_commit

from .build import FAULT_ENV
from .devices import DeviceInfo
from .runtime import GENERATOR_VERSION

__all__ = ["Health", "health", "PROBE_ENV", "PROBE_TIMEOUT_S", "probe_dir"]

PROBE_ENV = "FUSIONSPEC_ACCEL_PROBE"
#: Bump when the probe's workload changes, so kept verdicts are not reused.
PROBE_VERSION = "1"
#: A cold probe builds about ten programs; a compiler that needs longer is unusable anyway.
PROBE_TIMEOUT_S = 300.0
#: How many of a failed probe's last standard-error lines its reason quotes.
_LAST_LINES = 3


@dataclass(frozen=True)
class Health:
    """Whether a device passed its probe, why not, and how long the probe took."""

    ok: bool
    reason: str = ""
    seconds: float = 0.0


def probe_dir() -> Path:
    base = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    return Path(base) / "fusionspec" / "probe"


def _version(dist: str) -> str:
    try:
        return metadata.version(dist)
    except metadata.PackageNotFoundError:
        return "-"


def _suite() -> str:
    """The suite's version and commit: a verdict probed by other code is probed again."""
    return f"{VERSION} {source_commit() or ''}"


def _key(info: DeviceInfo) -> str:
    parts = (PROBE_VERSION, GENERATOR_VERSION, info.platform, info.vendor, info.name,
             info.opencl_version, info.driver, _suite(), _version("pyopencl"),
             sys.executable, os.environ.get(FAULT_ENV, ""))
    return hashlib.sha256("\0".join(parts).encode()).hexdigest()[:32]


@cache
def health(info: DeviceInfo) -> Health:
    """The probe's verdict on `info` (see the module docstring); once per process."""
    mode = os.environ.get(PROBE_ENV, "").strip().lower()
    if mode in ("off", "0", "no"):
        return Health(True, "not probed (FUSIONSPEC_ACCEL_PROBE=off)")
    path = probe_dir() / f"{_key(info)}.json"
    if mode != "fresh":
        kept = _read(path)
        if kept is not None:
            return kept
    found = _run_probe(info)
    _write(path, found)
    return found


def _read(path: Path) -> Health | None:
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
        return Health(bool(data["ok"]), str(data["reason"]), float(data["seconds"]))
    except (OSError, ValueError, KeyError, TypeError):
        return None  # absent or damaged: probe again


def _write(path: Path, found: Health) -> None:
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        tmp = path.with_suffix(f".{os.getpid()}.tmp")
        tmp.write_text(json.dumps(asdict(found)), encoding="utf-8")
        os.replace(tmp, path)
    except OSError:
        pass  # an unwritable cache only means probing again next time


def _run_probe(info: DeviceInfo) -> Health:
    start = time.monotonic()
    try:
        done = subprocess.run([sys.executable, "-m", "fusionspec.accel.probe_worker", info.id],
                              capture_output=True, text=True, timeout=PROBE_TIMEOUT_S,
                              stdin=subprocess.DEVNULL, check=False)
    except subprocess.TimeoutExpired:
        return Health(False, f"the probe did not finish building and running its kernels "
                             f"within {PROBE_TIMEOUT_S:g} s", time.monotonic() - start)
    seconds = time.monotonic() - start
    lines = [line.strip() for line in done.stdout.splitlines() if line.strip()]
    if done.returncode == 0 and lines:
        try:
            said = json.loads(lines[-1])
            return Health(bool(said["ok"]), str(said["reason"]), seconds)
        except (ValueError, KeyError, TypeError):
            pass
    tail = [line.strip() for line in done.stderr.splitlines() if line.strip()][-_LAST_LINES:]
    words = f": {' '.join(tail)}" if tail else ""
    return Health(False, f"the OpenCL compiler or driver crashed while building or running "
                         f"the probe kernels ({exit_text(done.returncode)}){words}", seconds)


