"""Running cases against a backend with a timeout and crash isolation.

`Runner(backend, device_id, timeout_s)` keeps one worker process that loads the backend and
judges the cases sent to it, one at a time:

- a case that takes longer than `timeout_s` is a ``timeout``; the worker is killed and a fresh
  one is started for the next case;
- a worker that dies (a segfault in native code, ``os._exit``, a C++ exception escaping a C
  API) gives ``error`` "backend process crashed (exit code N): <its last words>" and is
  restarted; the run goes on. The worker's standard error goes to a log file that the runner
  copies to its own standard error after each case, which is how the last lines a dying
  library printed (``terminate called after throwing ...``) reach the verdict.

With ``isolate=False`` the backend runs in this process (fast to debug, no timeout, no
protection against crashes).

`backend` is a registered backend name (``reference``, see `load_backend`) or a factory given
as ``"module:attr"``: `attr` of `module` is a backend class or a zero-argument callable
returning a backend. `sys_path` entries are put in front of the worker's ``sys.path`` before
the backend is loaded (for backends that live outside installed packages).

Graphs hold read-only mappings (``types.MappingProxyType``), which the standard pickler refuses,
so cases and verdicts travel through a pickler that knows how to rebuild them.
"""

from __future__ import annotations

import contextlib
import copyreg
import importlib
import io
import multiprocessing
import os
import pickle
import signal
import sys
import tempfile
import traceback
from collections.abc import Sequence
from dataclasses import dataclass
from multiprocessing.connection import Connection
from multiprocessing.process import BaseProcess
from types import MappingProxyType, TracebackType
from typing import Any

from .backend import Backend, BackendError, Device, Limitation, load_backend
from .cases import Case, Status, Verdict
from .verdicts import apply_limitation, judge, matching_limitation

__all__ = ["Runner", "resolve_backend", "select_device", "STARTUP_TIMEOUT_S"]

#: How long a worker may take to import and instantiate its backend.
STARTUP_TIMEOUT_S = 120.0


def resolve_backend(spec: str) -> Backend:
    """A backend from a registered name or a ``"module:attr"`` factory."""
    if ":" not in spec:
        return load_backend(spec)
    module_name, _, attr = spec.partition(":")
    try:
        factory = getattr(importlib.import_module(module_name), attr)
        backend = factory() if callable(factory) else factory
    except Exception as exc:
        raise BackendError(f"backend factory {spec!r} failed: {type(exc).__name__}: {exc}") \
            from exc
    if not isinstance(backend, Backend):
        raise BackendError(f"{spec!r} does not give a Backend (name, devices, partition, "
                           "compile)")
    return backend


def select_device(backend: Backend, device_id: str | None) -> Device:
    """The backend's device `device_id`, or its first device when None."""
    devices = list(backend.devices())
    if not devices:
        raise BackendError(f"backend {backend.name!r} reports no devices")
    if device_id is None:
        return devices[0]
    for device in devices:
        if device.id == device_id:
            return device
    known = ", ".join(d.id for d in devices)
    raise BackendError(f"backend {backend.name!r} has no device {device_id!r}; it has {known}")


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
        backend = resolve_backend(spec)
        device = select_device(backend, device_id)
        limitations = tuple(getattr(backend, "limitations", ()) or ())
    except Exception as exc:
        conn.send_bytes(_dumps(f"{type(exc).__name__}: {exc}"))
        return
    conn.send_bytes(_dumps(_Ready(backend.name, device, limitations)))
    while True:
        try:
            message = pickle.loads(conn.recv_bytes())
        except EOFError:
            return
        if message is None:
            return
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
                 isolate: bool = True, seed: int = 0, sys_path: Sequence[str] = ()) -> None:
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
        self._log_offset = 0
        if isolate:
            ready = self._start()
        else:
            sys.path[:0] = [p for p in self.sys_path if p not in sys.path]
            self._backend = resolve_backend(backend)
            device = select_device(self._backend, device_id)
            ready = _Ready(self._backend.name, device,
                           tuple(getattr(self._backend, "limitations", ()) or ()))
        self.backend_name = ready.backend_name
        self.device = ready.device
        self.limitations = ready.limitations

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

    def close(self) -> None:
        """Stop the worker (politely, then by force)."""
        if self._conn is not None and self._process is not None and self._process.is_alive():
            with contextlib.suppress(OSError):  # it may have died meanwhile
                self._conn.send_bytes(_dumps(None))
            self._process.join(2)
        self._stop()
        self._drain_log()
        if self._log_path is not None:
            with contextlib.suppress(OSError):
                os.unlink(self._log_path)
            self._log_path = None

    # -- internals ----------------------------------------------------------------------------

    def _failure(self, case: Case, status: Status, reason: str) -> Verdict:
        verdict = Verdict(case.id, case.pattern, case.kind, status, reason, case.rule,
                          {"timeout_s": self.timeout_s} if status is Status.timeout else {})
        limitation = matching_limitation(self.limitations, case, self.device)
        return verdict if limitation is None else apply_limitation(verdict, limitation)

    def _drain_log(self) -> str:
        """The worker's standard error since the last call, also copied to ours."""
        if self._log_path is None:
            return ""
        try:
            with open(self._log_path, "rb") as log:
                log.seek(self._log_offset)
                data = log.read()
        except OSError:
            return ""
        self._log_offset += len(data)
        text = data.decode(errors="replace")
        if text:
            sys.stderr.write(text)
            sys.stderr.flush()
        return text

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
