"""The backend's side of a bench run: what a bench worker process does, and nothing more.

A bench worker (`fusionspec.conformance.perf.workers`) loads the backend, says who it is (a
`Ready` greeting, as a conformance worker does) and answers two requests per workload, each
with a `Reply` of plain data (`fusionspec.conformance.workers.transport`):

- ``("prepare", workload id, size, seed)``: partition the workload's graph, compile the fused
  and the op-by-op side (`fusionspec.conformance.perf.sides.prepare`) and run each once. The
  answer: the partitions the backend formed (as lists of op ids), whether both sides have a
  device timer, and each side's graph outputs;
- ``("time", workload id, policy, reference, settle_s)``: time the prepared sides in
  alternation (`fusionspec.backend.timing.interleave`). The answer: each side's kept samples
  in seconds and why its sampling stopped.

Nothing is decided here: the command checks the outputs against its own reference, checks the
samples and computes the figures and the verdict (`fusionspec.conformance.perf.bench`), so a
backend that patches this code in its own process only changes what it claims, and a claim is
checked before it counts. `BenchServer` also answers in the command's own process for a run
without isolation.

At start the worker leads a process group of its own (so a time limit kills the helpers it
started too), sends its standard output and error to its log file at the file-descriptor level
(nothing a backend prints reaches the command's terminal or its ``--json`` output), caps its
address space, and ignores Ctrl-C (the command stops it).
"""

from __future__ import annotations

import pickle
import sys
from collections.abc import Mapping, Sequence
from multiprocessing.connection import Connection
from typing import Any

import numpy as np

from fusionspec.backend import (
    Backend,
    BackendUnavailableError,
    Device,
    device_problems,
    load_backend,
    select_device,
)
from fusionspec.backend.timing import TimingPolicy, interleave

from ..answers import Failure, describe_exception, rejection_types
from ..workers.lifeline import Ticket
from ..workers.transport import Ready, Reply, dumps
from ..workers.worker import isolate
from .sides import PerfError, Prepared, prepare, reference_sampler
from .workloads import workload

__all__ = ["BenchServer", "serve", "MESSAGE_LIMIT"]

#: The longest exception message an answer carries (characters); the rest is cut with a note.
MESSAGE_LIMIT = 4000


def _arrays(found: Mapping[int, Any], what: str) -> dict[int, np.ndarray[Any, Any]]:
    for key, value in found.items():
        if not isinstance(value, np.ndarray):
            raise PerfError(f"{what}: output {key} is a {type(value).__name__}, not an array")
    return {int(k): v for k, v in found.items()}


class BenchServer:
    """Answers a bench's requests on one backend and device (see the module docstring)."""

    def __init__(self, backend: Backend, device: Device) -> None:
        self.backend = backend
        self.device = device
        self.prepared: Prepared | None = None

    def handle(self, request: Sequence[Any]) -> Reply:
        """The answer to `request`: its value, or the `Failure` the backend raised."""
        try:
            return Reply(value=self._do(request))
        except KeyboardInterrupt:
            raise
        except BaseException as exc:  # a backend may raise anything, SystemExit included
            return Reply(failure=describe_exception(str(request[0]), exc,
                                                    rejection_types(self.backend),
                                                    MESSAGE_LIMIT))

    def _do(self, request: Sequence[Any]) -> dict[str, Any]:
        verb, ident = request[0], request[1]
        if verb == "prepare":
            _, _, size, seed = request
            self.prepared = None  # the last workload's compiled sides go first
            prepared = prepare(workload(ident), size, self.backend, self.device, seed)
            fused, opbyop = prepared.outputs()
            self.prepared = prepared
            return {"id": ident,
                    "partitions": [[op.id for op in p.ops] for p in prepared.formed],
                    "device_time": prepared.device_time,
                    "fused": _arrays(fused, "fused"), "opbyop": _arrays(opbyop, "op by op")}
        if verb == "time":
            _, _, policy, reference, settle_s = request
            held = self.prepared
            if held is None or held.workload.id != ident:
                raise PerfError(f"workload {ident} was not prepared")
            return {"id": ident, **_time(held, policy, reference, settle_s)}
        raise ValueError(f"unknown request {verb!r}")


def _time(prepared: Prepared, policy: TimingPolicy, reference: bool, settle_s: float
          ) -> dict[str, Any]:
    device_time = prepared.device_time
    sides = {"fused": prepared.fused.sampler(prepared.inputs, device_time),
             "opbyop": prepared.opbyop.sampler(prepared.inputs, device_time)}
    methods = {name: "events" if device_time else "wall" for name in sides}
    if reference:
        sides["reference"] = reference_sampler(prepared)
    times = interleave(sides, policy, methods=methods, settle_s=settle_s)
    return {"samples": {name: [float(s) for s in t.samples] for name, t in times.items()},
            "stopped": {name: t.stopped for name, t in times.items()}}


def greeting(backend: Backend, device: Device) -> Ready:
    """What a worker (or the command, without isolation) says about the loaded backend."""
    declared = getattr(backend, "limitations", ())
    limitations = tuple(declared) if isinstance(declared, (list, tuple)) else declared
    return Ready(backend.name, device, limitations, device_problems(backend))


def _send(conn: Connection, answer: object) -> None:
    try:
        data = dumps(answer)
    except Exception as exc:  # an answer holding something that does not pickle
        data = dumps(Reply(failure=describe_exception("answer", exc, (), MESSAGE_LIMIT)))
    conn.send_bytes(data)


def serve(conn: Connection, spec: str, device_id: str | None, log_path: str | None = None,
          memory_limit: int | None = None, ticket: Ticket | None = None) -> None:
    """A worker's life: isolate, die with the command (`ticket`), load the backend, greet,
    answer until told to stop."""
    isolate(log_path, memory_limit, ticket)
    try:
        backend = load_backend(spec)
        device = select_device(backend, device_id)
        ready = greeting(backend, device)
    except Exception as exc:
        unavailable = isinstance(exc, BackendUnavailableError)
        failure = describe_exception("unavailable" if unavailable else "load", exc, (),
                                     MESSAGE_LIMIT)
        if isinstance(exc, BackendUnavailableError):
            failure = Failure(**{**vars(failure), "reason": exc.reason})
        _send(conn, failure)
        return
    _send(conn, ready)
    server = BenchServer(backend, device)
    while True:
        try:
            request = pickle.loads(conn.recv_bytes())
        except EOFError:
            return
        if request is None:
            sys.stdout.flush()
            return
        _send(conn, server.handle(request))
