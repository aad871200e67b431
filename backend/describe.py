"""Describing a registered backend from a process of its own: ``python -m
fusionspec.backend.describe NAME`` prints one JSON line, ``{"backend", "devices", "problems",
"unavailable"}``.

Loading a backend runs its code (a driver, a native library), which may crash the process that
loads it; listings (``fusionspec conform --list``) therefore ask this module in a subprocess
(`describe_isolated`), so one broken plugin is listed as unavailable with the reason instead of
taking the listing down.
"""

from __future__ import annotations

import json
import subprocess
import sys
from typing import Any

from .errors import BackendError
from .processes import exit_text
from .protocol import device_problems, unavailable_reason
from .registry import load_backend

__all__ = ["describe", "describe_isolated", "INSPECT_TIMEOUT_S"]

#: How long loading and listing one backend may take (a cold OpenCL probe takes seconds).
INSPECT_TIMEOUT_S = 600.0


def describe(name: str) -> dict[str, Any]:
    """The backend's devices, its left-out devices with their reasons, and why it has none."""
    try:
        backend = load_backend(name)
        devices = [d.id for d in backend.devices()]
    except BackendError as exc:
        return {"backend": name, "devices": [], "problems": {}, "unavailable": str(exc)}
    row: dict[str, Any] = {"backend": name, "devices": devices,
                           "problems": device_problems(backend)}
    if not devices:
        row["unavailable"] = unavailable_reason(backend) or "it lists no device"
    return row


def describe_isolated(name: str, timeout_s: float = INSPECT_TIMEOUT_S) -> dict[str, Any]:
    """`describe` run in a subprocess; a crash or a hang is the backend's reason."""
    try:
        done = subprocess.run([sys.executable, "-m", "fusionspec.backend.describe", name],
                              capture_output=True, text=True, timeout=timeout_s,
                              stdin=subprocess.DEVNULL, check=False)
    except subprocess.TimeoutExpired:
        return {"backend": name, "devices": [], "problems": {},
                "unavailable": f"loading it took more than {timeout_s:g} s"}
    lines = [line for line in done.stdout.splitlines() if line.startswith("{")]
    if done.returncode == 0 and lines:
        try:
            found: dict[str, Any] = json.loads(lines[-1])
            return found
        except ValueError:
            pass
    tail = " ".join(line.strip() for line in done.stderr.splitlines()[-3:] if line.strip())
    return {"backend": name, "devices": [], "problems": {},
            "unavailable": f"its process crashed while loading ({exit_text(done.returncode)})"
                           + (f": {tail[-400:]}" if tail else "")}


def main(argv: list[str] | None = None) -> int:
    args = sys.argv[1:] if argv is None else argv
    if len(args) != 1:
        print("usage: python -m fusionspec.backend.describe NAME", file=sys.stderr)
        return 2
    print(json.dumps(describe(args[0])))
    return 0


if __name__ == "__main__":
    sys.exit(main())
