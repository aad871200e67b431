"""How a child process ended, in words: the backend helpers (a listing's describe process, the
OpenCL probe) and the suite's workers all name a crash the same way."""

from __future__ import annotations

import signal

__all__ = ["exit_text", "crash_text"]


def exit_text(code: int | None) -> str:
    """``exit code 3``; for a process killed by a signal (negative code) also its name:
    ``exit code -11, signal SIGSEGV``."""
    if code is not None and code < 0:
        try:
            return f"exit code {code}, signal {signal.Signals(-code).name}"
        except ValueError:
            pass
    return f"exit code {code}"


def crash_text(code: int | None, during: str = "") -> str:
    """How a backend's worker that died is reported, by the conformance runner and the bench
    alike: ``the backend's process crashed (exit code -11, signal SIGSEGV) while loading``
    (`during` names what it was doing, when given)."""
    return f"the backend's process crashed ({exit_text(code)})" + (f" {during}" if during else "")
