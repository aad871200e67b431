"""Worker processes for a bench run: a backend that crashes on one workload ends only that one.

A backend is native code more often than not, and native code can end its process (oneDNN 3.2
takes a segmentation fault compiling some ConvTranspose shapes). A bench run measured in the
command's own process would end with it, and every workload after the crash would go
unmeasured. So `run_isolated` measures the workloads in worker processes (``spawn``: a fresh
interpreter, no inherited runtime threads), one workload at a time per worker, each worker
loading the backend once. When a worker dies, the workload it was measuring gets a record
with the error (the exit status or signal, and the command that reruns it), a fresh worker
takes its place, and the run goes on. Each worker knows which workload it holds, so the blame
is exact with any number of workers.
"""

from __future__ import annotations

import contextlib
import multiprocessing
import signal
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from multiprocessing.connection import Connection, wait
from multiprocessing.process import BaseProcess
from typing import Any

__all__ = ["Job", "run_isolated", "death_message"]

#: Measures one workload id in a worker: (job, workload id) -> record.
Measure = Callable[["Job", str], dict[str, Any]]


@dataclass(frozen=True)
class Job:
    """What every worker of one run needs (picklable): the backend and device, the size and
    seed, the timing policy and options, and the yardsticks measured by the command."""

    spec: str
    device_id: str | None
    size: str
    seed: int
    policy: Any
    reference: bool
    settle_s: float
    yardstick: dict[str, Any] | None


def death_message(exitcode: int | None) -> str:
    """Why a worker process ended, in words (a negative exit code is a signal's number)."""
    if exitcode is not None and exitcode < 0:
        try:
            name = signal.Signals(-exitcode).name
        except ValueError:
            name = f"signal {-exitcode}"
        return f"the backend's process was killed by {name} while measuring this workload"
    return f"the backend's process ended (exit status {exitcode}) while measuring this workload"


def _serve(conn: Connection, job: Job, measure: Measure) -> None:
    """A worker's loop: a workload id in, its record out, until None comes."""
    while True:
        ident = conn.recv()
        if ident is None:
            return
        conn.send(measure(job, ident))


@dataclass
class _Worker:
    process: BaseProcess
    conn: Connection
    holding: str | None = None


def _start(job: Job, measure: Measure) -> _Worker:
    context = multiprocessing.get_context("spawn")
    mine, theirs = context.Pipe()
    process = context.Process(target=_serve, args=(theirs, job, measure), daemon=True)
    process.start()
    theirs.close()
    return _Worker(process, mine)


def run_isolated(job: Job, idents: Sequence[str], measure: Measure, jobs: int,
                 crashed: Callable[[str, str], dict[str, Any]],
                 done: Callable[[dict[str, Any]], None]) -> dict[str, dict[str, Any]]:
    """Measure `idents` in `jobs` worker processes by `measure`; a workload whose worker dies
    gets ``crashed(ident, why)``. `done` sees each record as it comes. Returns the records by
    workload id."""
    pending = list(idents)[::-1]
    records: dict[str, dict[str, Any]] = {}
    workers = [_start(job, measure) for _ in range(max(1, min(jobs, len(pending))))]
    try:
        for worker in workers:
            _hand_out(worker, pending)
        while any(w.holding is not None for w in workers):
            busy = [w for w in workers if w.holding is not None]
            ready = wait([w.conn for w in busy])
            for index, worker in enumerate(workers):
                if worker.holding is None or worker.conn not in ready:
                    continue
                ident = worker.holding
                try:
                    record: dict[str, Any] = worker.conn.recv()
                except (EOFError, OSError):
                    worker.process.join(5)
                    record = crashed(ident, death_message(worker.process.exitcode))
                    worker.conn.close()
                    worker = workers[index] = _start(job, measure)
                worker.holding = None
                records[ident] = record
                done(record)
                _hand_out(worker, pending)
    finally:
        for worker in workers:
            _stop(worker)
    return records


def _hand_out(worker: _Worker, pending: list[str]) -> None:
    if pending:
        worker.holding = pending.pop()
        # A worker that died before taking it leaves a closed pipe: its end of file is read
        # next, and the workload it was handed is recorded with the death.
        with contextlib.suppress(OSError):
            worker.conn.send(worker.holding)


def _stop(worker: _Worker) -> None:
    with contextlib.suppress(OSError, ValueError):  # a worker that died has no pipe left
        worker.conn.send(None)
    worker.process.join(5)
    if worker.process.is_alive():
        worker.process.kill()
        worker.process.join()
    worker.conn.close()
