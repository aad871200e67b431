"""Several runners side by side: `RunnerPool` judges `jobs` cases at a time.

Each job is a `fusionspec.conformance.workers.Runner` with its own worker process, so each keeps
its own timeout, crash recovery, memory cap and backend instance. `run_many` hands the cases to
whichever worker is free through a thread pool (its threads only wait on their worker's pipe)
and yields the verdicts in the cases' order, so a results document does not depend on the
number of jobs; `judge_many` yields each verdict with the wall time its case took. The workers
start side by side: all of them at once, or (``start=1``) the first alone, the others once the
caller knows how many cases there are (`ensure`), so a run of one case with ``--jobs 64`` starts
one worker, not 64. With one job it is a plain `Runner`.

Grading runs in this process (the runner's threads share its interpreter). The reference's
share of it, which does not depend on the backend, is prepared ahead in processes of its own
(`fusionspec.conformance.workers.ahead`, one per job) when `judge_many` has enough cases, so
the jobs pay off for a backend whose work costs about what grading costs (the reference) too.
"""

from __future__ import annotations

import queue
import time
from collections.abc import Iterator, Sequence
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from types import TracebackType

from fusionspec.backend import BackendError

from ..cases import Case
from ..grade.prepared import Prepared
from ..grade.verdict import Verdict
from ..selection import RunSettings
from .ahead import MIN_CASES, Ahead
from .runner import Runner, worker_context

__all__ = ["RunnerPool"]


class RunnerPool:
    """Up to `jobs` runners (see the module docstring), `start` of them (default: all)
    started now; the other arguments are `Runner`'s, `run_settings` the one object every
    runner shares. Worker `i > 0` logs to ``<log stem>.<i><suffix>`` beside the first one's
    log."""

    def __init__(self, backend: str, device_id: str | None = None, timeout_s: float = 60.0, *,
                 run_settings: RunSettings | None = None, jobs: int = 1, isolate: bool = True,
                 sys_path: Sequence[str] = (), log_path: Path | None = None,
                 memory_limit: int | None = None, start: int | None = None) -> None:
        if jobs < 1:
            raise ValueError(f"jobs must be at least 1, got {jobs}")
        if jobs > 1 and not isolate:
            raise BackendError("several jobs need isolated workers (drop --no-isolate)")
        self.jobs = jobs
        self.run_settings = run_settings if run_settings is not None else RunSettings()
        #: Cases whose reference side was read back from the oracle cache / computed ahead.
        self.oracle = {"read back": 0, "computed": 0}
        self.runners: list[Runner] = []
        self._threads: ThreadPoolExecutor | None = None
        self._free: queue.SimpleQueue[Runner] = queue.SimpleQueue()

        def make(index: int) -> Runner:
            log = log_path if log_path is None or index == 0 else \
                log_path.with_name(f"{log_path.stem}.{index}{log_path.suffix}")
            return Runner(backend, device_id, timeout_s, run_settings=self.run_settings,
                          isolate=isolate, sys_path=sys_path, log_path=log,
                          memory_limit=memory_limit)

        self._make = make
        if isolate:
            # The fork server and its helpers start here, in the calling thread, before the
            # starting threads: no other thread of ours writes while they start.
            worker_context()
        self.ensure(jobs if start is None else max(1, start))
        first = self.runners[0]
        self.backend_name, self.device = first.backend_name, first.device
        self.limitations, self.device_problems = first.limitations, first.device_problems
        self.departures = first.departures

    def ensure(self, count: int) -> None:
        """Have `count` workers (at most `jobs`, at least one) running, the new ones started
        side by side: each imports its backend on start (half a second for the reference,
        more for a driver)."""
        wanted = range(len(self.runners), max(1, min(count, self.jobs)))
        if not wanted:
            return
        with ThreadPoolExecutor(max_workers=len(wanted),
                                thread_name_prefix="fusionspec-start") as go:
            started = [go.submit(self._make, index) for index in wanted]
            problem: BaseException | None = None
            for future in started:
                try:
                    runner = future.result()
                except BaseException as exc:  # the first problem is raised once all are in
                    problem = problem or exc
                    continue
                self.runners.append(runner)
                self._free.put(runner)
        if problem is not None:
            self.close()
            raise problem
        if len(self.runners) > 1:
            if self._threads is not None:
                self._threads.shutdown(wait=True)
            self._threads = ThreadPoolExecutor(max_workers=len(self.runners),
                                               thread_name_prefix="fusionspec")

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

    def run(self, case: Case, *, prepared: Prepared | None = None) -> Verdict:
        runner = self._free.get()
        try:
            return runner.run(case, prepared=prepared)
        finally:
            self._free.put(runner)

    def run_many(self, cases: Sequence[Case]) -> Iterator[Verdict]:
        """The verdicts on `cases`, in order, judged `jobs` at a time."""
        if len(self.runners) == 1 or self._threads is None:
            yield from self.runners[0].run_many(cases)
            return
        yield from self._threads.map(self.run, cases)

    def judge_many(self, cases: Sequence[Case]) -> Iterator[tuple[Verdict, float]]:
        """(verdict, wall seconds) on each of `cases`, in order, judged `jobs` at a time; the
        reference's side of each case is prepared ahead where that pays (module docstring).
        The seconds are the judging's own, not the wait for a preparation."""
        first = self.runners[0]
        ahead = Ahead(cases, self.run_settings, self.jobs) if (
            first.isolate and len(cases) >= MIN_CASES) else None
        try:
            def timed(index: int) -> tuple[Verdict, float]:
                prepared = ahead.prepared(index) if ahead is not None else None
                start = time.perf_counter()
                verdict = self.run(cases[index], prepared=prepared)
                return verdict, time.perf_counter() - start

            if len(self.runners) == 1 or self._threads is None:
                yield from map(timed, range(len(cases)))
            else:
                yield from self._threads.map(timed, range(len(cases)))
        finally:
            if ahead is not None:
                ahead.close()
                self.oracle["read back"] += ahead.hits
                self.oracle["computed"] += ahead.misses

    def close(self) -> None:
        if self._threads is not None:
            self._threads.shutdown(wait=True, cancel_futures=True)
        for runner in self.runners:
            runner.close()
