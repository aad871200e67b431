"""Running cases against a backend with a timeout, crash isolation and a memory cap.

`Runner(backend, device_id, timeout_s)` keeps one worker process (`worker`)
that loads the backend and answers the runner's requests: partition this graph, compile this
partition, execute it on these inputs. The runner grades (`fusionspec.conformance.grade`) in its
own process, so a backend only ever returns partitions and arrays and cannot change a grade.

- Every case's inputs are filled from the seed of `run_settings` (the run's
  `fusionspec.conformance.selection.RunSettings`, the planner's and the collector's too): a
  runner judges with no other seed, so the seed a document records is the one its verdicts
  were judged with. A replay of a saved failure makes its runner from the recorded seed.
- A case that takes longer than `timeout_s` (all its requests together) is a ``timeout``; the
  worker's whole process group is killed and a fresh worker starts for the next case.
- A worker that dies (a segfault in native code, ``os._exit``, a C++ exception escaping a C API,
  the memory cap) gives ``error`` "the backend's process crashed (exit code N): <its last words>"
  (`fusionspec.backend.processes.crash_text`, the bench's wording too) and
  is restarted; the run goes on.
- The worker's standard output and standard error go to a log file (`log_path`, kept for the
  user: ``<out>/worker.log`` in a suite run; else a temporary file removed at the end), never to
  the terminal; the last lines reach a crash's verdict; a log that grows past `LOG_LIMIT` keeps
  only its end.
- The worker's address space is capped at `memory_limit` bytes (default: half the machine's
  memory, at least 2 GiB; 0 turns the cap off).
- Reasons are cut to `REASON_LIMIT` characters, with a note.
- What the backend says about itself (name, device, limitations, device problems) is checked
  when it loads (`fusionspec.backend.checks`): a bad field is a `BackendError` naming it.
- A reply is read only up to the memory budget in bytes (`fusionspec.reference.memory.budget`)
  and only names the transport's allowlist (`fusionspec.conformance.workers.transport`).

With ``isolate=False`` the backend runs in this process (fast to debug; no timeout, no
protection against crashes, and the backend could tamper with the grading).

`backend` is a registered backend name or a factory given as ``"module:attr"``
(`fusionspec.backend.load_backend`). `sys_path` entries are put in front of the worker's
``sys.path`` before the backend is loaded (for backends that live outside installed packages).
"""

from __future__ import annotations

import contextlib
import multiprocessing
import os
import sys
import tempfile
import time
import weakref
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import replace
from multiprocessing.connection import Connection
from multiprocessing.process import BaseProcess
from pathlib import Path
from types import TracebackType
from typing import Any

from fusionspec.backend import (
    Backend,
    BackendError,
    BackendUnavailableError,
    Departure,
    Device,
    Limitation,
    counters,
    device_problems,
    load_backend,
    select_device,
)
from fusionspec.backend.checks import (
    checked_departures,
    checked_identity,
    declared_departures,
)
from fusionspec.backend.processes import crash_text
from fusionspec.reference.memory import budget
from fusionspec.spec.graph import Graph, Partition
from fusionspec.spec.text import clean_text
from fusionspec.spec.types import Array

from ..answers import Abandoned, BackendFailure, Failure, OneTrip, Trip
from ..cases import Case, Status
from ..grade.departures import matching_departures
from ..grade.details import Details, ErrorFacts
from ..grade.facts import reason
from ..grade.prepared import Prepared
from ..grade.verdict import Verdict
from ..grade.verdicts import apply_limitation, judge, matching_limitation
from ..limitations import check_limitations
from ..replay import ReplayError, backend_outputs
from ..selection import RunSettings
from . import lifeline
from .signals import kill_worker, track
from .transport import Ready, Reply, UnsafeReplyError, dumps, receive_reply
from .worker import serve

__all__ = ["Runner", "STARTUP_TIMEOUT_S", "LOG_LIMIT", "REASON_LIMIT", "default_memory_limit"]

#: How long a worker may take to import and instantiate its backend.
STARTUP_TIMEOUT_S = 120.0
#: How many of a crashed worker's last log lines its verdict quotes.
LAST_WORDS = 3
#: The size past which a worker's log keeps only its last `_LOG_TAIL` bytes.
LOG_LIMIT = 16 * 2**20
_LOG_TAIL = 2**20
#: The longest reason a verdict keeps (characters).
REASON_LIMIT = 2000
#: Requests that are not part of a case (releasing its partitions, reading counters).
_HOUSEKEEPING_S = 10.0


def default_memory_limit() -> int:
    """Half the machine's physical memory, at least 2 GiB (bytes)."""
    try:
        total = os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES")
    except (ValueError, OSError, AttributeError):
        return 0
    return max(total // 2, 2 * 2**30)


class _Timeout(BaseException):
    """The case's time is up (a BaseException: grading code must not catch it)."""


class _Died(BaseException):
    """The worker died or sent something unreadable (a BaseException, as `_Timeout`)."""

    def __init__(self, reason: str) -> None:
        super().__init__(reason)
        self.reason = reason


def worker_context() -> multiprocessing.context.DefaultContext:
    # Not "fork": a backend's runtime (an OpenCL driver, say) that the parent process already
    # loaded does not survive a fork. The fork server is a fresh process that never loads one,
    # and forks clean workers quickly; spawn where there is no fork server. Its helper
    # processes never hold this process's output, and its children die with it (`lifeline`).
    return lifeline.context()


class _Remote(OneTrip):
    """The backend as grading sees it, its calls answered by the worker."""

    def __init__(self, runner: Runner) -> None:
        self._runner = runner
        self.name = runner.backend_name
        self.limitations = runner.limitations
        self.departures = runner.departures
        self._handles = 0

    def devices(self) -> Sequence[Device]:
        return (self._runner.device,)

    def partition(self, graph: Graph) -> list[Partition]:
        found: list[Partition] = self._runner.call(("partition", graph))
        return found

    def compile(self, partition: Partition, device: Device) -> _RemoteCompiled:
        self._handles += 1
        source = self._runner.call(("compile", self._handles, partition, device))
        return _RemoteCompiled(self._runner, self._handles, str(source or ""))

    def compile_and_execute(self, partition: Partition, device: Device, inputs: Any) -> Trip:
        """Compile and execute in one round trip: the worker answers with the kernel source
        and the execute step's own reply (a compile failure is the reply's failure)."""
        self._handles += 1
        try:
            answer = self._runner.call(("compile_execute", self._handles, partition, device,
                                        dict(inputs)))
        except BackendFailure as failed:
            return Trip(None, failed.failure)
        if not (isinstance(answer, tuple) and len(answer) == 2
                and isinstance(answer[1], Reply)):
            self._runner._stop()
            raise _Died("the backend process sent a reply the runner refuses: a compile and "
                        f"execute answered with a {type(answer).__name__}")
        source, executed = answer
        compiled = _RemoteCompiled(self._runner, self._handles, str(source or ""))
        return Trip(compiled, None, executed.value, executed.failure)


    def courtesy(self, seconds: float) -> contextlib.AbstractContextManager[None]:
        """The runner's `Runner.courtesy`: what grading calls around a diagnosis."""
        return self._runner.courtesy(seconds)


class _RemoteCompiled:
    def __init__(self, runner: Runner, handle: int, kernel_source: str) -> None:
        self._runner = runner
        self._handle = handle
        self.kernel_source = kernel_source

    def execute(self, inputs: Any) -> Any:
        return self._runner.call(("execute", self._handle, dict(inputs)))


class Runner:
    """Judges cases on one backend and device, isolated in a worker process (see module
    docstring), their inputs filled from the seed of `run_settings` (default: seed 0). Use as
    a context manager, or call `close()`."""

    def __init__(self, backend: str, device_id: str | None = None, timeout_s: float = 60.0, *,
                 run_settings: RunSettings | None = None, isolate: bool = True,
                 sys_path: Sequence[str] = (), log_path: Path | None = None,
                 memory_limit: int | None = None) -> None:
        self.spec = backend
        self.device_id = device_id
        self.timeout_s = timeout_s
        self.isolate = isolate
        #: The run's settings, shared with the planner and the collector (module docstring).
        self.run_settings = run_settings if run_settings is not None else RunSettings()
        self.sys_path = tuple(sys_path)
        self.memory_limit = default_memory_limit() if memory_limit is None else memory_limit
        self.restarts = 0
        #: The longest reply read, in bytes: the memory budget, read from the environment
        #: once (every reply is checked against it).
        self._reply_limit = budget()
        self._process: BaseProcess | None = None
        self._conn: Connection | None = None
        self._backend: Backend | None = None
        self._deadline: float | None = None
        self._keep_log = log_path is not None
        if log_path is not None:
            log_path.parent.mkdir(parents=True, exist_ok=True)
            log_path.write_bytes(b"")  # this run's log only
            self._log_path = str(log_path)
        else:
            handle, self._log_path = tempfile.mkstemp(prefix="fusionspec-worker-", suffix=".log")
            os.close(handle)
            # A runner dropped without close() (an exception in the caller) must not leave
            # its log behind either.
            weakref.finalize(self, _unlink, self._log_path)
        #: The backend's counters summed over every worker this runner started (a worker
        #: that crashed takes its counts with it).
        self.counters: dict[str, int] = {}
        try:
            ready = self._start() if isolate else self._load_here()
        except BaseException:
            self._discard_log()
            raise
        try:
            said = checked_identity(backend, ready.backend_name, ready.device,
                                    ready.limitations, ready.problems)
            try:
                limitations = check_limitations(said.limitations,
                                                device_kind=said.device.kind)
            except BackendError as exc:
                raise BackendError(f"backend {backend!r}: {exc}") from None
            departures = checked_departures(backend, ready.departures)
        except BaseException:
            self._stop()
            self._discard_log()
            raise
        self.backend_name = said.name
        self.device: Device = said.device
        self.limitations: tuple[Limitation, ...] = limitations
        self.departures: tuple[Departure, ...] = departures
        self.device_problems = said.problems
        self._remote = _Remote(self)

    def __enter__(self) -> Runner:
        return self

    def __exit__(self, exc_type: type[BaseException] | None, exc: BaseException | None,
                 tb: TracebackType | None) -> None:
        self.close()

    # -- judging ------------------------------------------------------------------------------

    def run(self, case: Case, *, prepared: Prepared | None = None) -> Verdict:
        """The verdict on `case` (inputs filled from the run's seed), with the reference's side
        of it when it was `prepared` ahead."""
        seed = self.run_settings.seed
        if self._backend is not None:
            return _bounded(judge(case, self._backend, self.device, seed=seed,
                                  departures=self.departures, prepared=prepared))
        if self._conn is None:
            self.restarts += 1
            self._start()
        self._deadline = time.monotonic() + self.timeout_s
        try:
            verdict = judge(case, self._remote, self.device, seed=seed,
                            departures=self.departures, prepared=prepared)
            self._deadline = time.monotonic() + _HOUSEKEEPING_S
            if self._conn is not None:  # not stopped by an abandoned diagnosis
                self.call(("release",))
        except _Timeout:
            self._stop()
            verdict = self._failure(case, Status.timeout, ErrorFacts(
                kind="timeout", message=f"no verdict within {self.timeout_s:g} s; the backend "
                                        "process was killed and restarted"))
        except _Died as died:
            verdict = self._failure(case, Status.error,
                                    ErrorFacts(kind="crash", message=died.reason))
        finally:
            self._deadline = None
            self._trim_log()
        return _bounded(verdict)

    def run_many(self, cases: Sequence[Case]) -> Iterator[Verdict]:
        """The verdicts on `cases`, in order, one at a time."""
        for case in cases:
            yield self.run(case)

    def outputs(self, graph: Graph, inputs: Mapping[int, Array]) -> dict[int, Array]:
        """The outputs of `graph` (finalized) as the backend computes them from `inputs`
        (what a replay saves as ``actual.npz``), under the runner's timeout and crash guard;
        `ReplayError` says why there are none."""
        if self._backend is not None:
            return backend_outputs(self._backend, self.device, graph, inputs)
        if self._conn is None:
            self._start()
        self._deadline = time.monotonic() + self.timeout_s
        try:
            found = backend_outputs(self._remote, self.device, graph, inputs)
            self._deadline = time.monotonic() + _HOUSEKEEPING_S
            self.call(("release",))
            return found
        except _Timeout:
            self._stop()
            raise ReplayError(f"no outputs within {self.timeout_s:g} s") from None
        except _Died as died:
            raise ReplayError(died.reason) from None
        finally:
            self._deadline = None

    def call(self, request: tuple[Any, ...]) -> Any:
        """Send `request` to the worker and return its value; a backend failure raises
        `BackendFailure`; past the case's deadline `_Timeout`; a dead worker `_Died`."""
        conn, process = self._conn, self._process
        assert conn is not None and process is not None
        left = max(0.0, (self._deadline or time.monotonic() + _HOUSEKEEPING_S)
                   - time.monotonic())
        try:
            conn.send_bytes(dumps(request))
            if not conn.poll(left):
                raise _Timeout
            reply = receive_reply(conn, self._reply_limit)
        except (EOFError, OSError):
            process.join(5)
            said = self._last_words()
            code = process.exitcode
            self._stop()
            raise _Died(f"{crash_text(code)}{said}") from None
        except UnsafeReplyError as exc:
            self._stop()
            raise _Died(f"the backend process sent a reply the runner refuses: {exc}") from None
        if not isinstance(reply, Reply):
            self._stop()
            raise _Died(f"the backend process sent a {type(reply).__name__}, not a reply")
        if reply.failure is not None:
            raise BackendFailure(reply.failure)
        return reply.value

    # -- the worker's life --------------------------------------------------------------------

    def close(self) -> None:
        """Stop the worker (politely, then by force), keeping its backend's counters."""
        self._collect_counters()
        if self._conn is not None and self._process is not None and self._process.is_alive():
            with contextlib.suppress(OSError):  # it may have died meanwhile
                self._conn.send_bytes(dumps(None))
            self._process.join(2)
        self._stop()
        if not self._keep_log:
            self._discard_log()

    def _collect_counters(self) -> None:
        found: object = {}
        if self._backend is not None:
            found = counters(self._backend)
        elif self._conn is not None:
            self._deadline = time.monotonic() + _HOUSEKEEPING_S
            try:
                found = self.call(("counters",))
            except (_Timeout, _Died, BackendFailure):
                found = {}
            finally:
                self._deadline = None
        if isinstance(found, dict):
            for name, value in found.items():
                if isinstance(name, str) and isinstance(value, int):
                    self.counters[name] = self.counters.get(name, 0) + value

    def _load_here(self) -> Ready:
        sys.path[:0] = [p for p in self.sys_path if p not in sys.path]
        self._backend = load_backend(self.spec)
        device = select_device(self._backend, self.device_id)
        return Ready(self._backend.name, device, getattr(self._backend, "limitations", ()),
                     device_problems(self._backend),
                     tuple(declared_departures(self._backend)))

    def _start(self) -> Ready:
        context = worker_context()
        parent, child = context.Pipe()
        process = context.Process(target=serve, name=f"fusionspec-{self.spec}",
                                  args=(child, self.spec, self.device_id, self.sys_path,
                                        self._log_path, self.memory_limit or None,
                                        lifeline.ticket(context)),
                                  daemon=True)
        process.start()
        child.close()
        self._process, self._conn = process, parent
        if process.pid is not None:
            track(process.pid)  # its group: the worker calls setsid first thing
        try:
            if not parent.poll(STARTUP_TIMEOUT_S):
                self._stop()
                raise BackendError(f"backend {self.spec!r} did not start within "
                                   f"{STARTUP_TIMEOUT_S:g} s")
            reply = receive_reply(parent, self._reply_limit)
        except (EOFError, OSError, UnsafeReplyError):
            process.join(5)
            code = process.exitcode
            said = self._last_words()
            self._stop()
            raise BackendError(f"backend {self.spec!r}: "
                               f"{crash_text(code, 'while loading')}{said}") from None
        if isinstance(reply, Failure):
            self._stop()
            if reply.stage == "unavailable":
                raise BackendUnavailableError(reply.message, reason=reply.reason)
            raise BackendError(f"{reply.type_name}: {reply.message}")
        if not isinstance(reply, Ready):
            self._stop()
            raise BackendError(f"backend {self.spec!r} sent no greeting")
        return reply

    @contextlib.contextmanager
    def courtesy(self, seconds: float) -> Iterator[None]:
        """Calls made after the verdict, to explain it (culprit isolation): they get `seconds`
        of their own, and a worker that times out or dies meanwhile is stopped (the next case
        starts a fresh one) and reported as `Abandoned`, never as the case's verdict."""
        saved = self._deadline
        self._deadline = time.monotonic() + seconds
        try:
            yield
        except (_Timeout, _Died) as exc:
            self._stop()
            said = exc.reason if isinstance(exc, _Died) else f"no answer within {seconds:g} s"
            raise Abandoned(said) from None
        finally:
            self._deadline = saved

    def _stop(self) -> None:
        """Kill the worker and every process it started (its process group)."""
        if self._process is not None:
            kill_worker(self._process)
            self._process.close()
        if self._conn is not None:
            self._conn.close()
        self._process, self._conn = None, None

    # -- verdicts and the log ----------------------------------------------------------------

    def _failure(self, case: Case, status: Status, facts: ErrorFacts) -> Verdict:
        details = Details(facts=facts,
                          timeout_s=self.timeout_s if status is Status.timeout else None)
        details = replace(details, departures=matching_departures(self.departures, case, status,
                                                                  details))
        verdict = Verdict(case.id, case.pattern, case.kind, status, reason(facts), case.rule,
                          details)
        limitation = matching_limitation(self.limitations, case, self.device)
        return verdict if limitation is None else apply_limitation(verdict, limitation)

    def _last_words(self) -> str:
        return last_words(self._log_path)

    def _trim_log(self) -> None:
        """Keep the log under `LOG_LIMIT`: past it, only its last `_LOG_TAIL` bytes stay (the
        worker appends, so it goes on writing at the new end)."""
        try:
            size = os.path.getsize(self._log_path)
            if size <= LOG_LIMIT:
                return
            with open(self._log_path, "r+b") as log:
                log.seek(size - _LOG_TAIL)
                tail = log.read()
                log.seek(0)
                log.truncate()
                log.write(f"[... {size - len(tail)} bytes of earlier output cut ...]\n"
                          .encode() + tail)
        except OSError:
            pass

    def _discard_log(self) -> None:
        _unlink(self._log_path)


def _unlink(path: str) -> None:
    with contextlib.suppress(OSError):
        os.unlink(path)


def _bounded(verdict: Verdict) -> Verdict:
    """`verdict` with its reason stripped of control sequences (a backend's message may carry
    some) and cut to `REASON_LIMIT` characters."""
    reason = clean_text(verdict.reason, REASON_LIMIT)
    return verdict if reason == verdict.reason else replace(verdict, reason=reason)


def last_words(log_path: str | os.PathLike[str]) -> str:
    """``": <last lines>"`` of a dead worker's log (cleaned for a terminal), or "" if it said
    nothing. The conformance and bench workers' crash messages both end with it."""
    try:
        with open(log_path, "rb") as log:
            log.seek(max(0, os.path.getsize(log_path) - 16_384))
            tail = log.read().decode(errors="replace")
    except OSError:
        return ""
    words = [line.strip() for line in tail.splitlines() if line.strip()]
    return f": {clean_text(' '.join(words[-LAST_WORDS:]), 500)}" if words else ""
