"""A backend's worker process: it loads the backend and answers the runner's requests.

The worker only ever calls the backend (`partition`, `compile`, `execute`) and reports what came
back; grading happens in the runner (`fusionspec.conformance.workers.runner`), so a backend cannot
change the grades. At start the worker

- leads a process group of its own (`os.setsid`), so the runner can kill it together with every
  process it started (a compiler, a helper daemon) when a case times out;
- sends its standard output and standard error, at the file-descriptor level so native
  libraries' messages go there too, to its log file: nothing a backend prints reaches the
  runner's terminal or corrupts ``--json`` output;
- dies with the runner, its process group with it, however the runner ends
  (`fusionspec.conformance.workers.lifeline`);
- caps its address space (`RLIMIT_AS`, when the runner gives a limit), so a backend that
  allocates without bound fails in its own process instead of exhausting the machine.

Requests (tuples, from `fusionspec.conformance.workers.transport.dumps`): ``("partition", graph)``,
``("compile", handle, partition, device)``, ``("execute", handle, inputs)``,
``("compile_execute", handle, partition, device, inputs)`` (both in one round trip, the usual
way grading runs a partition: the value is the kernel source and execute's own `Reply`),
``("release",)`` (forget the compiled partitions of the last case), ``("counters",)``, and
``None`` to stop. Every answer is a `Reply`: the value, or a `Failure` describing what the
backend raised.
"""

from __future__ import annotations

import os
import pickle
import signal
import sys
from collections.abc import Mapping, Sequence
from multiprocessing.connection import Connection
from typing import Any

import numpy as np

from fusionspec.backend import (
    Backend,
    BackendUnavailableError,
    counters,
    device_problems,
    load_backend,
    select_device,
)
from fusionspec.backend.checks import declared_departures
from fusionspec.spec.graph import Partition

from ..answers import Failure, Foreign, clip, describe_exception, rejection_types
from .lifeline import Ticket, hold
from .transport import Ready, Reply, dumps

__all__ = ["serve", "MESSAGE_LIMIT", "SOURCE_LIMIT"]

#: The longest exception message a reply carries (characters); the rest is cut with a note.
MESSAGE_LIMIT = 4000
#: The longest generated kernel source a reply carries.
SOURCE_LIMIT = 64_000


def isolate(log_path: str | None, memory_limit: int | None, ticket: Ticket | None) -> None:
    """Make this process a backend worker: its own process group (dying with the command
    when `ticket` is given), standard output and error into `log_path`, Ctrl-C left to the
    command, the address space capped at `memory_limit` bytes. The conformance and bench
    workers both start with it."""
    signal.signal(signal.SIGINT, signal.SIG_IGN)  # the runner handles Ctrl-C and stops us
    os.setsid()
    if ticket is not None:  # after setsid: dying with the runner takes the group along
        hold(ticket)
    if log_path is not None:
        log_fd = os.open(log_path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o644)
        for fd in (1, 2):
            os.dup2(log_fd, fd)
        os.close(log_fd)
    if memory_limit:
        import resource

        # Never above a hard limit set by the shell (raising it would fail): the lower wins.
        hard = resource.getrlimit(resource.RLIMIT_AS)[1]
        cap = memory_limit if hard == resource.RLIM_INFINITY else min(memory_limit, hard)
        resource.setrlimit(resource.RLIMIT_AS, (cap, cap))


def _failure(stage: str, exc: BaseException, backend: object | None) -> Failure:
    rejections = rejection_types(backend) if backend is not None else ()
    return describe_exception(stage, exc, rejections, MESSAGE_LIMIT)


def _partitions(found: object) -> list[object]:
    return [p if isinstance(p, Partition) else Foreign.of(p) for p in list(found)]  # type: ignore[call-overload]


def _outputs(found: object) -> object:
    if not isinstance(found, Mapping):
        return Foreign.of(found)
    return {key if isinstance(key, int) else Foreign.of(key):
            value if isinstance(value, np.ndarray) else Foreign.of(value)
            for key, value in found.items()}


class _Server:
    def __init__(self, backend: Backend, device: Any) -> None:
        self.backend = backend
        self.device = device
        self.compiled: dict[int, Any] = {}

    def handle(self, request: Sequence[Any]) -> Reply:
        verb = request[0]
        stage = {"partition": "partition", "compile": "compile", "execute": "execute",
                 "compile_execute": "compile"}.get(verb, verb)
        try:
            return Reply(value=self._do(verb, request))
        except KeyboardInterrupt:
            raise
        except BaseException as exc:  # a backend may raise anything, SystemExit included
            return Reply(failure=_failure(stage, exc, self.backend))

    def _do(self, verb: str, request: Sequence[Any]) -> object:
        if verb == "partition":
            return _partitions(self.backend.partition(request[1]))
        if verb == "compile":
            _, handle, part, device = request
            compiled = self.backend.compile(part, device)
            self.compiled[handle] = compiled
            return _source(compiled)
        if verb == "compile_execute":  # one round trip; execute's outcome is a reply of its own
            _, handle, part, device, inputs = request
            compiled = self.backend.compile(part, device)
            self.compiled[handle] = compiled
            return _source(compiled), self.handle(("execute", handle, inputs))
        if verb == "execute":
            _, handle, inputs = request
            return _outputs(self.compiled[handle].execute(inputs))
        if verb == "release":
            self.compiled.clear()
            return None
        if verb == "counters":
            return counters(self.backend)
        raise ValueError(f"unknown request {verb!r}")


def _source(compiled: object) -> str:
    try:
        source = getattr(compiled, "kernel_source", "")
    except Exception:  # a backend's property may fail; the source is only a courtesy
        return ""
    return clip(source, SOURCE_LIMIT) if isinstance(source, str) else ""


def serve(conn: Connection, spec: str, device_id: str | None, sys_path: Sequence[str],
          log_path: str | None = None, memory_limit: int | None = None,
          ticket: Ticket | None = None) -> None:
    """The worker's life: isolate, die with the runner (`ticket`), load the backend, report
    `Ready`, answer until told to stop (see the module docstring)."""
    isolate(log_path, memory_limit, ticket)
    sys.path[:0] = [p for p in sys_path if p not in sys.path]
    try:
        backend = load_backend(spec)
        device = select_device(backend, device_id)
        # Checked in the runner (`checked_identity`, then against the catalog), which names
        # the backend and the field.
        declared = getattr(backend, "limitations", ())
        limitations = tuple(declared) if isinstance(declared, (list, tuple)) else declared
        ready = Ready(backend.name, device, limitations, device_problems(backend),
                      tuple(declared_departures(backend)))
    except Exception as exc:
        unavailable = isinstance(exc, BackendUnavailableError)
        failure = _failure("unavailable" if unavailable else "load", exc, None)
        if isinstance(exc, BackendUnavailableError):
            failure = Failure(**{**vars(failure), "reason": exc.reason})
        conn.send_bytes(dumps(failure))
        return
    conn.send_bytes(dumps(ready))
    server = _Server(backend, device)
    while True:
        try:
            request = pickle.loads(conn.recv_bytes())
        except EOFError:
            return
        if request is None:
            return
        conn.send_bytes(dumps(server.handle(request)))
