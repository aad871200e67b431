"""Worker processes for a bench run: the backend runs there, the command judges what it says.

A backend is native code more often than not, and native code can end its process (oneDNN 3.2
takes a segmentation fault compiling some ConvTranspose shapes), hang, print, or answer
anything at all. So `BenchWorkers` measures the workloads in worker processes
(`fusionspec.conformance.perf.server`: each loads the backend once and answers requests), with
the protections of the conformance workers:

- each workload has a time limit (`timeout_s`, all its requests together; the command's own
  judging between them does not count): past it the worker's process group is killed;
- a worker's standard output and error go to its log file, never to the command's terminal
  or ``--json`` output; the last lines of that log explain a crash;
- a worker's address space is capped (`memory_limit`, default half the machine's memory);
- answers come back through the conformance workers' transport
  (`fusionspec.conformance.workers.transport`): unpickled with an exact allowlist of names
  (plain data and arrays), bounded in bytes and in values.

Each workload is a conversation (`Conversation`, a generator the command writes): it yields
requests, receives each `Reply`, and returns the workload's record. A worker that dies, hangs,
sends a reply the transport refuses or one the conversation finds malformed (`BadAnswer`)
costs only its workload: that workload's record says ``backend error`` and why
(``failed(ident, why)``), a fresh worker takes the place of the old one, and the run goes on.
Each worker knows which workload it holds, so the blame is exact with any number of workers.

`InProcess` holds the same conversations with the backend loaded in the command's own process
(``isolate=False``: fast to debug, none of the protections).
"""

from __future__ import annotations

import contextlib
import os
import tempfile
import time
from collections.abc import Callable, Generator, Sequence
from dataclasses import dataclass
from multiprocessing.connection import Connection, wait
from multiprocessing.process import BaseProcess
from typing import Any

from fusionspec.backend import (
    BackendError,
    BackendUnavailableError,
    Device,
    Limitation,
    load_backend,
    select_device,
)
from fusionspec.backend.checks import checked_identity
from fusionspec.backend.processes import crash_text
from fusionspec.reference.memory import budget
from fusionspec.spec.text import clean_text

from ..answers import Failure
from ..limitations import check_limitations
from ..workers import lifeline
from ..workers.runner import STARTUP_TIMEOUT_S, default_memory_limit, last_words
from ..workers.signals import kill_worker, track
from ..workers.transport import Ready, Reply, UnsafeReplyError, dumps, receive_reply
from .records import WorkloadRecord
from .server import BenchServer, greeting, serve

__all__ = ["BadAnswer", "Conversation", "BenchWorkers", "InProcess", "Identity",
           "DEFAULT_TIMEOUT_S", "REASON_LIMIT", "BACKEND_ERROR"]

#: Seconds one workload may take by default: partitioning, compiling and checking both sides,
#: then timing every side.
DEFAULT_TIMEOUT_S = 300.0
#: The longest reason a record keeps (characters).
REASON_LIMIT = 2000
#: How each record of a workload that the backend's process could not measure begins.
BACKEND_ERROR = "backend error"
#: How many of a dead worker's last log lines its record quotes.

#: One workload's exchange with a worker: requests out, replies in, the record at the end.
Conversation = Generator[tuple[Any, ...], Reply, WorkloadRecord]
#: Makes the conversation of a workload id.
Talk = Callable[[str], Conversation]
#: The record of a workload whose worker failed it, from the workload id and the reason.
Failed = Callable[[str, str], WorkloadRecord]
#: Sees each record as it is made.
Done = Callable[[WorkloadRecord], None]


class BadAnswer(Exception):
    """An answer that is not what was asked (the message says how): the worker is replaced."""


@dataclass(frozen=True)
class Identity:
    """The backend as its first worker described it, checked and cleaned."""

    name: str
    device: Device
    limitations: tuple[Limitation, ...]


def _identity(spec: str, ready: Ready) -> Identity:
    said = checked_identity(spec, ready.backend_name, ready.device, ready.limitations,
                            ready.problems)
    try:
        limitations = check_limitations(said.limitations, device_kind=said.device.kind)
    except BackendError as exc:
        raise BackendError(f"backend {spec!r}: {exc}") from None
    return Identity(said.name, said.device, limitations)


def failure_text(failure: Failure) -> str:
    """A backend's failure as a record's error: the exception's type and message, cleaned."""
    return clean_text(f"{BACKEND_ERROR}: {str(failure.type_name)[:200]}: "
                      f"{str(failure.message)[:4 * REASON_LIMIT]}", REASON_LIMIT)


@dataclass
class _Worker:
    process: BaseProcess
    conn: Connection
    log: str
    ident: str | None = None
    talk: Conversation | None = None
    left: float = 0.0  # seconds the workload has left
    sent: float = 0.0  # when the pending request went out


class BenchWorkers:
    """Up to `jobs` worker processes of backend `spec` (see the module docstring). The first
    starts now: a backend that cannot load raises `BackendError` (`BackendUnavailableError`
    when it has no usable device). Use as a context manager, or call `close()`."""

    def __init__(self, spec: str, device_id: str | None = None, *, jobs: int = 1,
                 timeout_s: float = DEFAULT_TIMEOUT_S, memory_limit: int | None = None) -> None:
        self.spec = spec
        self.jobs = max(1, jobs)
        self.timeout_s = timeout_s
        self.memory_limit = default_memory_limit() if memory_limit is None else memory_limit
        self.workers: list[_Worker] = []
        self._device_id = device_id
        first, ready = self._greeted(self._spawn())
        try:
            self.identity = _identity(spec, ready)
        except BaseException:
            self._kill(first)
            raise
        self._device_id = self.identity.device.id
        self.workers.append(first)

    def __enter__(self) -> BenchWorkers:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    # -- the workers' lives -------------------------------------------------------------------

    def _spawn(self) -> _Worker:
        # spawn: a fresh interpreter, with none of the command's threads (NumPy's, from the
        # yardsticks) and no runtime the command may have loaded.
        context = lifeline.context("spawn")  # its children die with this process
        mine, theirs = context.Pipe()
        handle, log = tempfile.mkstemp(prefix="fusionspec-bench-", suffix=".log")
        os.close(handle)
        process = context.Process(target=serve, name=f"fusionspec-bench-{self.spec}",
                                  args=(theirs, self.spec, self._device_id, log,
                                        self.memory_limit or None, lifeline.ticket(context)),
                                  daemon=True)
        process.start()
        theirs.close()
        if process.pid is not None:
            track(process.pid)  # its group: the worker calls setsid first thing
        return _Worker(process, mine, log)

    def _greeted(self, worker: _Worker) -> tuple[_Worker, Ready]:
        """`worker` once it said it is ready; `BackendError` why not."""
        spec = self.spec
        try:
            if not worker.conn.poll(STARTUP_TIMEOUT_S):
                self._kill(worker)
                raise BackendError(f"backend {spec!r} did not start within "
                                   f"{STARTUP_TIMEOUT_S:g} s")
            reply = receive_reply(worker.conn, budget())
        except (EOFError, OSError, UnsafeReplyError) as exc:
            worker.process.join(5)
            code, said = worker.process.exitcode, last_words(worker.log)
            self._kill(worker)
            what = f": {exc}" if isinstance(exc, UnsafeReplyError) else ""
            raise BackendError(clean_text(f"backend {spec!r}: "
                                          f"{crash_text(code, 'while loading')}{what}{said}",
                                          REASON_LIMIT)) from None
        if isinstance(reply, Failure):
            self._kill(worker)
            message = clean_text(f"{reply.type_name}: {reply.message}", REASON_LIMIT)
            if reply.stage == "unavailable":
                raise BackendUnavailableError(clean_text(reply.message, REASON_LIMIT),
                                              reason=clean_text(reply.reason, REASON_LIMIT))
            raise BackendError(f"backend {spec!r} does not load: {message}")
        if not isinstance(reply, Ready):
            self._kill(worker)
            raise BackendError(f"backend {spec!r} sent no greeting")
        return worker, reply

    def _grow(self, count: int) -> None:
        """Have `count` workers (at most `jobs`), the new ones started side by side; one that
        does not start is left out (the others measure its share)."""
        new = [self._spawn() for _ in range(min(count, self.jobs) - len(self.workers))]
        for worker in new:
            with contextlib.suppress(BackendError):
                self.workers.append(self._greeted(worker)[0])

    def _kill(self, worker: _Worker) -> None:
        """Kill `worker` and every process it started (its process group)."""
        kill_worker(worker.process)
        worker.conn.close()
        with contextlib.suppress(OSError):
            os.unlink(worker.log)

    def close(self) -> None:
        """Stop every worker (politely, then by force) and remove their logs."""
        for worker in self.workers:
            if worker.process.is_alive():
                with contextlib.suppress(OSError, ValueError):
                    worker.conn.send_bytes(dumps(None))
                worker.process.join(2)
            self._kill(worker)
        self.workers.clear()

    # -- the conversations --------------------------------------------------------------------

    def run(self, idents: Sequence[str], talk: Talk, failed: Failed, done: Done
            ) -> dict[str, WorkloadRecord]:
        """The record of each of `idents`, measured `jobs` at a time (module docstring)."""
        pending = list(idents)[::-1]
        records: dict[str, WorkloadRecord] = {}

        def finish(worker: _Worker, record: WorkloadRecord) -> None:
            assert worker.ident is not None
            records[worker.ident] = record
            worker.ident, worker.talk = None, None
            done(record)

        self._grow(len(pending))
        while True:
            for worker in list(self.workers):
                if worker.ident is None and pending:
                    self._begin(worker, pending.pop(), talk, failed, finish)
            busy = [w for w in self.workers if w.ident is not None]
            if not busy:
                break
            now = time.monotonic()
            wait_s = max(0.0, min(w.sent + w.left - now for w in busy))
            ready = wait([w.conn for w in busy], wait_s)
            for worker in busy:
                if worker.conn in ready:
                    self._answer(worker, failed, finish)
                elif time.monotonic() >= worker.sent + worker.left:
                    self._lose(worker, f"no answer within {self.timeout_s:g} s; the backend's "
                                       "process was killed", failed, finish)
        for ident in pending[::-1]:  # no worker is left to measure them
            record = failed(ident, "the backend's process could not be started again")
            records[ident] = record
            done(record)
        return records

    def _begin(self, worker: _Worker, ident: str, talk: Talk, failed: Failed,
               finish: Callable[[_Worker, WorkloadRecord], None]) -> None:
        worker.ident, worker.talk, worker.left = ident, talk(ident), self.timeout_s
        try:
            request = next(worker.talk)
        except StopIteration as stop:
            finish(worker, stop.value)
            return
        self._send(worker, request, failed, finish)

    def _send(self, worker: _Worker, request: tuple[Any, ...], failed: Failed,
              finish: Callable[[_Worker, WorkloadRecord], None]) -> None:
        worker.sent = time.monotonic()
        try:
            worker.conn.send_bytes(dumps(request))
        except OSError:
            self._dead(worker, failed, finish)

    def _answer(self, worker: _Worker, failed: Failed,
                finish: Callable[[_Worker, WorkloadRecord], None]) -> None:
        try:
            reply = receive_reply(worker.conn, budget())
        except (EOFError, OSError):
            self._dead(worker, failed, finish)
            return
        except UnsafeReplyError as exc:
            self._lose(worker, f"the backend's process sent an answer fusionspec refuses: "
                               f"{exc}", failed, finish)
            return
        worker.left -= time.monotonic() - worker.sent
        assert worker.talk is not None
        try:
            if not isinstance(reply, Reply) or not (
                    reply.failure is None or isinstance(reply.failure, Failure)):
                raise BadAnswer(f"the backend's process sent a {type(reply).__name__}, not "
                                "an answer")
            request = worker.talk.send(reply)
        except StopIteration as stop:
            finish(worker, stop.value)
            return
        except BadAnswer as exc:
            self._lose(worker, str(exc), failed, finish)
            return
        self._send(worker, request, failed, finish)

    def _dead(self, worker: _Worker, failed: Failed,
              finish: Callable[[_Worker, WorkloadRecord], None]) -> None:
        worker.process.join(5)
        code = worker.process.exitcode
        self._lose(worker, crash_text(code, "while measuring this workload")
                   + last_words(worker.log), failed, finish)

    def _lose(self, worker: _Worker, why: str, failed: Failed,
              finish: Callable[[_Worker, WorkloadRecord], None]) -> None:
        """Record the workload `worker` held as failed for `why`, and replace the worker."""
        assert worker.ident is not None
        ident = worker.ident
        if worker.talk is not None:
            worker.talk.close()
        self._kill(worker)
        index = self.workers.index(worker)
        try:
            self.workers[index] = self._greeted(self._spawn())[0]
        except BackendError:
            del self.workers[index]
        finish(worker, failed(ident, clean_text(why, REASON_LIMIT)))


class InProcess:
    """The backend loaded in this process, holding the same conversations as `BenchWorkers`
    (no time limit, no crash guard: for debugging)."""

    def __init__(self, spec: str, device_id: str | None = None) -> None:
        backend = load_backend(spec)
        device = select_device(backend, device_id)
        self.identity = _identity(spec, greeting(backend, device))
        self.server = BenchServer(backend, device)

    def __enter__(self) -> InProcess:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def close(self) -> None:
        self.server.prepared = None

    def run(self, idents: Sequence[str], talk: Talk, failed: Failed, done: Done
            ) -> dict[str, WorkloadRecord]:
        records: dict[str, WorkloadRecord] = {}
        for ident in idents:
            conversation = talk(ident)
            try:
                request = next(conversation)
                while True:
                    request = conversation.send(self.server.handle(request))
            except StopIteration as stop:
                record: WorkloadRecord = stop.value
            except BadAnswer as exc:
                record = failed(ident, clean_text(str(exc), REASON_LIMIT))
            records[ident] = record
            done(record)
        return records
