"""Running cases against a backend with a timeout and crash isolation.

`Runner(backend, device_id, timeout_s)` keeps one worker process that loads the backend and
judges the cases sent to it, one at a time:

- a case that takes longer than `timeout_s` is a ``timeout``; the worker is killed and a fresh
  one is started for the next case;
- a worker that dies (a segfault in native code, ``os._exit``, a C++ exception escaping a C
  API) gives ``error`` "backend process crashed (exit code N): <its last words>" and is
  restarted; the run goes on. The worker's standard error goes to a log file (`log_path`, kept
  for the user: ``<out>/worker.log`` in a suite run; else a temporary file removed at the end),
  never to the terminal, so a compiler's chatter on a cold run does not flood it; the last lines
  a dying library printed (``terminate called after throwing ...``) reach the verdict.

With ``isolate=False`` the backend runs in this process (fast to debug, no timeout, no
protection against crashes).

`backend` is a registered backend name or a factory given as ``"module:attr"``
(`fusionspec.backend.load_backend`). `sys_path` entries are put in front of the worker's
``sys.path`` before the backend is loaded (for backends that live outside installed packages).

Graphs hold read-only mappings (``types.MappingProxyType``), which the standard pickler refuses,
so cases and verdicts travel through a pickler that knows how to rebuild them.
"""

from __future__ import annotations

import contextlib
import copyreg
import io
import multiprocessing
import os
import pickle
import queue
import signal
import sys
import tempfile
import traceback
from collections.abc import Iterator, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from multiprocessing.connection import Connection
from multiprocessing.process import BaseProcess
from pathlib import Path
from types import MappingProxyType, TracebackType
from typing import Any

from fusionspec.backend import (
    Backend,
    BackendError,
    BackendUnavailableError,
    Device,
    Limitation,
    counters,
    device_problems,
    load_backend,
    select_device,
)

from .cases import Case, Status, Verdict
from .grade.verdicts import apply_limitation, judge, matching_limitation

__all__ = ["Runner", "RunnerPool", "STARTUP_TIMEOUT_S"]

#: How long a worker may take to import and instantiate its backend.
STARTUP_TIMEOUT_S = 120.0


# -- transport -------------------------------------------------------------------------------

def _rebuild_proxy(items: dict[Any, Any]) -> MappingProxyType[Any, Any]:
    return MappingProxyType(items)


def _reduce_proxy(proxy: MappingProxyType[Any, Any]) -> tuple[Any, ...]:
    return _rebuild_proxy, (dict(proxy),)


class _Pickler(pickle.Pickler):
    dispatch_table = copyreg.dispatch_table.copy()
    dispatch_table[MappingProxyType] = _reduce_proxy


def _dumps(obj: object) -> bytes:
    buffer = io.BytesIO()
    _Pickler(buffer, protocol=pickle.HIGHEST_PROTOCOL).dump(obj)
    return buffer.getvalue()


# -- the worker ------------------------------------------------------------------------------

@dataclass(frozen=True)
class _Ready:
    backend_name: str
    device: Device
    limitations: tuple[Limitation, ...]
    problems: dict[str, str]


#: The message that asks a worker for its backend's `counters` (a case or None otherwise).
_COUNTERS = "counters"


#: How many of a crashed worker's last standard-error lines its verdict quotes.
LAST_WORDS = 3


def _worker(conn: Connection, spec: str, device_id: str | None, sys_path: Sequence[str],
            log_path: str | None = None) -> None:
    """The worker process: load the backend, report, then judge cases until told to stop."""
    signal.signal(signal.SIGINT, signal.SIG_IGN)  # the parent handles Ctrl-C and kills us
    if log_path is not None:
        # fd level, so native code's messages land there too; unbuffered by construction.
        log_fd = os.open(log_path, os.O_WRONLY | os.O_APPEND)
        os.dup2(log_fd, 2)
        os.close(log_fd)
    sys.path[:0] = [p for p in sys_path if p not in sys.path]
    try:
        backend = load_backend(spec)
        device = select_device(backend, device_id)
        limitations = tuple(getattr(backend, "limitations", ()) or ())
    except Exception as exc:
        conn.send_bytes(_dumps(exc if isinstance(exc, BackendUnavailableError)
                               else f"{type(exc).__name__}: {exc}"))
        return
    conn.send_bytes(_dumps(_Ready(backend.name, device, limitations,
                                  device_problems(backend))))
    while True:
        try:
            message = pickle.loads(conn.recv_bytes())
        except EOFError:
            return
        if message is None:
            return
        if message == _COUNTERS:
            conn.send_bytes(_dumps(counters(backend)))
            continue
        case, seed = message
        conn.send_bytes(_dumps(_judge_safely(case, backend, device, seed)))


def _judge_safely(case: Case, backend: Backend, device: Device, seed: int) -> Verdict:
    try:
        return judge(case, backend, device, seed=seed)
    except Exception as exc:  # judge reports backend failures itself; this is the suite's own
        tail = "\n".join("".join(traceback.format_exception(exc)).splitlines()[-8:])
        return Verdict(case.id, case.pattern, case.kind, Status.error,
                       f"the suite failed: {type(exc).__name__}: {exc}", case.rule,
                       {"suite_error": True, "traceback": tail})


# -- the runner ------------------------------------------------------------------------------

def _context() -> multiprocessing.context.DefaultContext:
    # Not "fork": a backend's runtime (an OpenCL driver, say) that the parent process already
    # loaded does not survive a fork. The fork server is a fresh process that never loads one,
    # and forks clean workers quickly; spawn where there is no fork server.
    methods = multiprocessing.get_all_start_methods()
    context: multiprocessing.context.DefaultContext = multiprocessing.get_context(
        "forkserver" if "forkserver" in methods else "spawn")  # type: ignore[assignment]
    return context


def _exit_text(code: int | None) -> str:
    if code is not None and code < 0:
        try:
            return f"exit code {code}, signal {signal.Signals(-code).name}"
        except ValueError:
            return f"exit code {code}"
    return f"exit code {code}"


class Runner:
    """Judges cases on one backend and device, isolated in a worker process (see module
    docstring). Use as a context manager, or call `close()`."""

    def __init__(self, backend: str, device_id: str | None = None, timeout_s: float = 60.0, *,
                 isolate: bool = True, seed: int = 0, sys_path: Sequence[str] = (),
                 log_path: Path | None = None) -> None:
        self.spec = backend
        self.device_id = device_id
        self.timeout_s = timeout_s
        self.isolate = isolate
        self.seed = seed
        self.sys_path = tuple(sys_path)
        self.restarts = 0
        self._process: BaseProcess | None = None
        self._conn: Connection | None = None
        self._backend: Backend | None = None
        self._log_path: str | None = None
        self._keep_log = log_path is not None
        if log_path is not None:
            log_path.parent.mkdir(parents=True, exist_ok=True)
            log_path.write_bytes(b"")  # this run's log only
            self._log_path = str(log_path)
        self._log_offset = 0
        if isolate:
            ready = self._start()
        else:
            sys.path[:0] = [p for p in self.sys_path if p not in sys.path]
            self._backend = load_backend(backend)
            device = select_device(self._backend, device_id)
            ready = _Ready(self._backend.name, device,
                           tuple(getattr(self._backend, "limitations", ()) or ()),
                           device_problems(self._backend))
        self.backend_name = ready.backend_name
        self.device = ready.device
        self.limitations = ready.limitations
        self.device_problems = ready.problems
        #: The backend's counters summed over every worker this runner started (a worker
        #: that crashed takes its counts with it).
        self.counters: dict[str, int] = {}

    def __enter__(self) -> Runner:
        return self

    def __exit__(self, exc_type: type[BaseException] | None, exc: BaseException | None,
                 tb: TracebackType | None) -> None:
        self.close()

    def run(self, case: Case, *, seed: int | None = None) -> Verdict:
        """The verdict on `case` (inputs filled from `seed`, default the runner's)."""
        use_seed = self.seed if seed is None else seed
        if self._backend is not None:
            return _judge_safely(case, self._backend, self.device, use_seed)
        if self._conn is None:
            self.restarts += 1
            self._start()
        assert self._conn is not None and self._process is not None
        try:
            self._conn.send_bytes(_dumps((case, use_seed)))
            if self._conn.poll(self.timeout_s):
                verdict: Verdict = pickle.loads(self._conn.recv_bytes())
                self._drain_log()
                return verdict
        except (EOFError, OSError):
            self._process.join(5)
            code = self._process.exitcode
            said = self._last_words()
            self._stop()
            return self._failure(case, Status.error,
                                 f"backend process crashed ({_exit_text(code)}){said}")
        self._drain_log()
        self._stop()
        return self._failure(case, Status.timeout,
                             f"no verdict within {self.timeout_s:g} s; the backend process "
                             "was killed and restarted")

    def run_many(self, cases: Sequence[Case]) -> Iterator[Verdict]:
        """The verdicts on `cases`, in order, one at a time."""
        for case in cases:
            yield self.run(case)

    def close(self) -> None:
        """Stop the worker (politely, then by force), keeping its backend's counters."""
        self._collect_counters()
        if self._conn is not None and self._process is not None and self._process.is_alive():
            with contextlib.suppress(OSError):  # it may have died meanwhile
                self._conn.send_bytes(_dumps(None))
            self._process.join(2)
        self._stop()
        self._drain_log()
        if self._log_path is not None and not self._keep_log:
            with contextlib.suppress(OSError):
                os.unlink(self._log_path)
            self._log_path = None

    # -- internals ----------------------------------------------------------------------------

    def _collect_counters(self) -> None:
        found: dict[str, int] = {}
        if self._backend is not None:
            found = counters(self._backend)
        elif self._conn is not None:
            try:
                self._conn.send_bytes(_dumps(_COUNTERS))
                if self._conn.poll(10):
                    found = pickle.loads(self._conn.recv_bytes())
            except (EOFError, OSError):
                found = {}
        for name, value in found.items():
            self.counters[name] = self.counters.get(name, 0) + value

    def _failure(self, case: Case, status: Status, reason: str) -> Verdict:
        verdict = Verdict(case.id, case.pattern, case.kind, status, reason, case.rule,
                          {"timeout_s": self.timeout_s} if status is Status.timeout else {})
        limitation = matching_limitation(self.limitations, case, self.device)
        return verdict if limitation is None else apply_limitation(verdict, limitation)

    def _drain_log(self) -> str:
        """The worker's standard error since the last call."""
        if self._log_path is None:
            return ""
        try:
            with open(self._log_path, "rb") as log:
                log.seek(self._log_offset)
                data = log.read()
        except OSError:
            return ""
        self._log_offset += len(data)
        return data.decode(errors="replace")

    def _last_words(self) -> str:
        """``": <last lines>"`` of a dead worker's standard error, or "" if it said nothing."""
        words = [line.strip() for line in self._drain_log().splitlines() if line.strip()]
        return f": {' '.join(words[-LAST_WORDS:])}" if words else ""

    def _start(self) -> _Ready:
        context = _context()
        parent, child = context.Pipe()
        if self._log_path is None:
            handle, self._log_path = tempfile.mkstemp(prefix="fusionspec-worker-", suffix=".log")
            os.close(handle)
        process = context.Process(target=_worker, name=f"fusionspec-{self.spec}",
                                     args=(child, self.spec, self.device_id, self.sys_path,
                                           self._log_path),
                                     daemon=True)
        process.start()
        child.close()
        self._process, self._conn = process, parent
        try:
            if not parent.poll(STARTUP_TIMEOUT_S):
                raise BackendError(f"backend {self.spec!r} did not start within "
                                   f"{STARTUP_TIMEOUT_S:g} s")
            reply = pickle.loads(parent.recv_bytes())
        except (EOFError, OSError):
            process.join(5)
            code = process.exitcode
            said = self._last_words()
            self._stop()
            raise BackendError(f"backend {self.spec!r} crashed while loading "
                               f"({_exit_text(code)}){said}") from None
        except BackendError:
            self._stop()
            raise
        if isinstance(reply, BackendUnavailableError):
            self._stop()
            raise reply
        if isinstance(reply, str):
            self._stop()
            raise BackendError(reply)
        assert isinstance(reply, _Ready)
        return reply

    def _stop(self) -> None:
        if self._process is not None:
            if self._process.is_alive():
                self._process.kill()
            self._process.join(5)
            self._process.close()
        if self._conn is not None:
            self._conn.close()
        self._process, self._conn = None, None


class RunnerPool:
    """`jobs` runners side by side, each with its own worker process (and so its own timeout,
    crash recovery and backend instance): `run_many` hands the cases to whichever worker is
    free, through a thread pool whose threads only wait on their worker's pipe, and yields
    the verdicts in the cases' order. With one job it is a plain `Runner`."""

    def __init__(self, backend: str, device_id: str | None = None, timeout_s: float = 60.0, *,
                 jobs: int = 1, isolate: bool = True, seed: int = 0,
                 sys_path: Sequence[str] = (), log_path: Path | None = None) -> None:
        if jobs < 1:
            raise ValueError(f"jobs must be at least 1, got {jobs}")
        if jobs > 1 and not isolate:
            raise BackendError("several jobs need isolated workers (drop --no-isolate)")
        self.runners: list[Runner] = []
        try:
            for index in range(jobs):
                log = log_path if log_path is None or index == 0 else \
                    log_path.with_name(f"{log_path.stem}.{index}{log_path.suffix}")
                self.runners.append(Runner(backend, device_id, timeout_s, isolate=isolate,
                                           seed=seed, sys_path=sys_path, log_path=log))
        except BaseException:
            self.close()
            raise
        first = self.runners[0]
        self.backend_name, self.device = first.backend_name, first.device
        self.limitations, self.device_problems = first.limitations, first.device_problems
        self._free: queue.SimpleQueue[Runner] = queue.SimpleQueue()
        for runner in self.runners:
            self._free.put(runner)
        self._threads = ThreadPoolExecutor(max_workers=jobs, thread_name_prefix="fusionspec")

    def __enter__(self) -> RunnerPool:
        return self

    def __exit__(self, exc_type: type[BaseException] | None, exc: BaseException | None,
                 tb: TracebackType | None) -> None:
        self.close()

    @property
    def restarts(self) -> int:
        return sum(r.restarts for r in self.runners)

    @property
    def counters(self) -> dict[str, int]:
        total: dict[str, int] = {}
        for runner in self.runners:
            for name, value in runner.counters.items():
                total[name] = total.get(name, 0) + value
        return total

    def run(self, case: Case, *, seed: int | None = None) -> Verdict:
        runner = self._free.get()
        try:
            return runner.run(case, seed=seed)
        finally:
            self._free.put(runner)

    def run_many(self, cases: Sequence[Case]) -> Iterator[Verdict]:
        """The verdicts on `cases`, in order, judged `jobs` at a time."""
        if len(self.runners) == 1:
            yield from self.runners[0].run_many(cases)
            return
        yield from self._threads.map(self.run, cases)

    def close(self) -> None:
        for runner in self.runners:
            runner.close()
        if hasattr(self, "_threads"):
            self._threads.shutdown(wait=True)
