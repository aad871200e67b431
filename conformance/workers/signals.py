"""No worker outlives the runner: termination signals become a clean stop, and every worker
process group still alive when the runner's interpreter exits is killed.

A worker leads a process group of its own (so a timeout kills the backend's helpers with it),
which also means a signal sent to the runner's group does not reach it. `terminate_cleanly`
turns SIGTERM (and SIGHUP) into `KeyboardInterrupt` while a command runs, so the same path as
Ctrl-C stops the workers and writes what was judged; `track` and `untrack` keep the live
groups, and an `atexit` hook kills any left over (an exception escaping a caller that never
closed its runner). A runner that gets no chance to run any of this (SIGKILL) is covered by
`fusionspec.conformance.workers.lifeline`: its children watch it and die with it.
"""

from __future__ import annotations

import atexit
import contextlib
import os
import signal
import threading
from collections.abc import Iterator
from multiprocessing.process import BaseProcess
from types import FrameType

__all__ = ["terminate_cleanly", "track", "untrack", "kill_tracked"]

_LIVE: set[int] = set()
_LOCK = threading.Lock()


def track(pgid: int) -> None:
    """Remember the worker process group `pgid` until `untrack`."""
    with _LOCK:
        _LIVE.add(pgid)


def untrack(pgid: int) -> None:
    with _LOCK:
        _LIVE.discard(pgid)


def kill_worker(process: BaseProcess) -> None:
    """Kill a worker `process` and every process it started (its process group, which it
    leads), stop tracking the group and wait for the worker to end (up to 5 s)."""
    pid = process.pid
    if pid is not None:
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.killpg(pid, signal.SIGKILL)
        untrack(pid)
    if process.is_alive():
        process.kill()
    process.join(5)


def kill_tracked() -> None:
    """Kill every tracked worker process group (each with everything it started)."""
    with _LOCK:
        groups = sorted(_LIVE)
        _LIVE.clear()
    for pgid in groups:
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.killpg(pgid, signal.SIGKILL)


atexit.register(kill_tracked)


def _interrupt(signum: int, frame: FrameType | None) -> None:
    raise KeyboardInterrupt(f"signal {signal.Signals(signum).name}")


@contextlib.contextmanager
def terminate_cleanly() -> Iterator[None]:
    """While the block runs (in the main thread), SIGTERM and SIGHUP stop it as Ctrl-C does."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    wanted = [s for s in (signal.SIGTERM, getattr(signal, "SIGHUP", None)) if s is not None]
    previous = {s: signal.getsignal(s) for s in wanted}
    for s in wanted:
        signal.signal(s, _interrupt)
    try:
        yield
    finally:
        for s, handler in previous.items():
            signal.signal(s, handler)
        kill_tracked()
