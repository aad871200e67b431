"""The reference's side of the cases, prepared ahead in processes of its own.

Grading runs in the runner's process, whose threads share one interpreter: with several jobs
the backends work side by side while the reference's share of grading (its execution and the
error bounds, `fusionspec.conformance.grade.prepared`) queues for that one interpreter. `Ahead`
computes it for the next cases in `processes` processes of fusionspec's own (no backend is
loaded there), a bounded window ahead of the case being judged, so every core grades.

The processes start from the runner's fork server (never a fork of this process, which may
have loaded an OpenCL driver), ignore Ctrl-C (the runner handles it), are stopped with the
run and die with the runner however it ends (`fusionspec.conformance.workers.lifeline`).
Whatever goes wrong here (a process that died, a case that could not be prepared) leaves that
case to be judged as before, never a verdict of its own.

What was prepared is kept in the oracle cache (`fusionspec.conformance.workers.oracle_cache`):
a case found there is read back, not prepared again, and no process starts while every case is
found.
"""

from __future__ import annotations

import contextlib
import pickle
import signal
import threading
from collections.abc import Sequence
from concurrent.futures import Future, ProcessPoolExecutor
from types import TracebackType

from ..cases import Case, CaseKind
from ..grade.prepared import Prepared, prepare
from ..selection import RunSettings
from .lifeline import hold, ticket
from .oracle_cache import OracleCache
from .runner import worker_context
from .transport import dumps

__all__ = ["Ahead", "WINDOW_PER_PROCESS", "MIN_CASES"]

#: Cases prepared ahead per process: enough to keep it busy while judging catches up, few
#: enough that the prepared arrays held in memory stay small.
WINDOW_PER_PROCESS = 8
#: Fewer cases than this are not worth starting processes for (each imports the reference).
MIN_CASES = 64


def _quiet() -> None:
    signal.signal(signal.SIGINT, signal.SIG_IGN)


def _prepare_pickled(case: bytes, seed: int) -> bytes:
    # Cases and their preparations hold read-only mappings, which the plain pickler the pool
    # uses refuses: they travel as the transport's pickles, between fusionspec's own
    # processes (nothing here comes from a backend).
    found: Case = pickle.loads(case)
    return dumps(prepare(found, seed))


class Ahead:
    """`prepared(i)` is the reference's side of ``cases[i]`` (or None), inputs filled from the
    seed of `run_settings` (the runners', so that each preparation serves its case), prepared
    in `processes` processes a window ahead of the highest index asked for so far."""

    def __init__(self, cases: Sequence[Case], run_settings: RunSettings, processes: int) -> None:
        self.cases = cases
        self.run_settings = run_settings
        self.window = max(1, processes) * WINDOW_PER_PROCESS
        context = worker_context()
        self._pool = ProcessPoolExecutor(max(1, processes), mp_context=context,
                                         initializer=hold, initargs=(ticket(context), _quiet))
        self._futures: dict[int, Future[bytes]] = {}
        self._cached: dict[int, bytes] = {}
        self._submitted = 0
        self._lock = threading.Lock()
        self.cache = OracleCache()
        #: How many cases were read back from the cache, and how many prepared afresh.
        self.hits = self.misses = 0

    def __enter__(self) -> Ahead:
        return self

    def __exit__(self, exc_type: type[BaseException] | None, exc: BaseException | None,
                 tb: TracebackType | None) -> None:
        self.close()

    def prepared(self, index: int) -> Prepared | None:
        with self._lock:
            self._submit_through(index + self.window)
            future = self._futures.pop(index, None)
            payload = self._cached.pop(index, None)
        try:
            if payload is None:
                if future is None:
                    return None
                payload = future.result()
                self.cache.store(self.cases[index], self.run_settings.seed, payload)
            found = pickle.loads(payload)
        except Exception:  # a process that died or a result that did not come back
            return None
        return found if isinstance(found, Prepared) else None

    def _submit_through(self, last: int) -> None:
        end = min(last + 1, len(self.cases))
        while self._submitted < end:
            case = self.cases[self._submitted]
            if case.kind is not CaseKind.ill_formed:  # nothing to prepare for those
                kept = self.cache.load(case, self.run_settings.seed)
                if kept is not None:
                    self._cached[self._submitted] = kept
                    self.hits += 1
                else:
                    self.misses += 1
                    # A pool that broke or was shut down prepares nothing more: judged as
                    # before.
                    with contextlib.suppress(RuntimeError):
                        self._futures[self._submitted] = self._pool.submit(
                            _prepare_pickled, dumps(case), self.run_settings.seed)
            self._submitted += 1

    def close(self) -> None:
        with self._lock:
            for future in self._futures.values():
                future.cancel()
            self._futures.clear()
            self._cached.clear()
        self._pool.shutdown(wait=True, cancel_futures=True)
