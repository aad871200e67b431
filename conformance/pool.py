"""Several runners side by side: `RunnerPool` judges `jobs` cases at a time.

Each job is a `fusionspec.conformance.runner.Runner` with its own worker process, so each keeps
its own timeout, crash recovery, memory cap and backend instance. `run_many` hands the cases to
whichever worker is free through a thread pool (its threads only wait on their worker's pipe;
grading is quick next to a backend's work) and yields the verdicts in the cases' order, so a
results document does not depend on the number of jobs. With one job it is a plain `Runner`.
"""

from __future__ import annotations

import queue
from collections.abc import Iterator, Sequence
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from types import TracebackType

from fusionspec.backend import BackendError

from .cases import Case, Verdict
from .runner import Runner

__all__ = ["RunnerPool"]


class RunnerPool:
    """`jobs` runners (see the module docstring); the other arguments are `Runner`'s. Worker
    `i > 0` logs to ``<log stem>.<i><suffix>`` beside the first one's log."""

    def __init__(self, backend: str, device_id: str | None = None, timeout_s: float = 60.0, *,
                 jobs: int = 1, isolate: bool = True, seed: int = 0,
                 sys_path: Sequence[str] = (), log_path: Path | None = None,
                 memory_limit: int | None = None) -> None:
        if jobs < 1:
            raise ValueError(f"jobs must be at least 1, got {jobs}")
        if jobs > 1 and not isolate:
            raise BackendError("several jobs need isolated workers (drop --no-isolate)")
        self.runners: list[Runner] = []
        self._threads: ThreadPoolExecutor | None = None
        try:
            for index in range(jobs):
                log = log_path if log_path is None or index == 0 else \
                    log_path.with_name(f"{log_path.stem}.{index}{log_path.suffix}")
                self.runners.append(Runner(backend, device_id, timeout_s, isolate=isolate,
                                           seed=seed, sys_path=sys_path, log_path=log,
                                           memory_limit=memory_limit))
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
        if len(self.runners) == 1 or self._threads is None:
            yield from self.runners[0].run_many(cases)
            return
        yield from self._threads.map(self.run, cases)

    def close(self) -> None:
        if self._threads is not None:
            self._threads.shutdown(wait=True, cancel_futures=True)
        for runner in self.runners:
            runner.close()
