"""Running the conformance suite: profiles, and the loop over patterns and case kinds.

For each catalog pattern and each case kind (valid, near-miss, ill-formed), hypothesis draws cases
from the catalog-derived strategies (`fusionspec.conformance.generate.strategies`); valid cases
start from the catalog instances of `fusionspec.conformance.generate.instances` (every category
member and repetition count, in f32 or int8), a deterministic floor under the random draws. Every
case is judged on the backend in an isolated worker (`Runner`) and recorded (`ResultsCollector`).
The cases of one pattern and kind are drawn in one hypothesis run, so hypothesis' ``event`` records
which alternatives, counts and dtype rows were exercised.

Profiles:

- ``ci``: derandomized (the same cases on every run, so a result is reproducible from the
  command alone), a bounded number of examples per pattern and kind, no example database;
- ``thorough``: random, many more examples, hypothesis' example database (so a failure found
  once is tried first next time), and each failing status is searched down to a minimal case
  (hypothesis' shrinking), saved next to the failures it stands for.

A failure never stops the run: every pattern is graded, and the caller decides what fails.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path

from hypothesis import HealthCheck, Phase, find, given, settings
from hypothesis import strategies as st
from hypothesis.database import DirectoryBasedExampleDatabase
from hypothesis.errors import NoSuchExample, Unsatisfiable

from fusionspec.spec.catalog import CATALOG, PatternEntry, entry

from .cases import Case, CaseKind, Status, Verdict
from .generate.instances import instance_cases
from .generate.near_miss import near_miss_rules, near_misses
from .generate.strategies import ill_formed_cases, near_miss_cases, valid_cases
from .grade.results import ResultsCollector
from .pool import RunnerPool
from .runner import Runner

__all__ = ["Profile", "PROFILES", "Progress", "select_patterns", "draw_cases", "run_pattern",
           "run_suite"]


@dataclass(frozen=True)
class Profile:
    """How many cases of each kind to draw per pattern, and how."""

    name: str
    valid: int
    near_miss: int
    ill_formed: int
    derandomize: bool
    database: bool
    shrink: bool
    timeout_s: float

    def examples(self, kind: CaseKind) -> int:
        return {CaseKind.valid: self.valid, CaseKind.near_miss: self.near_miss,
                CaseKind.ill_formed: self.ill_formed}[kind]


PROFILES: dict[str, Profile] = {
    "ci": Profile("ci", valid=60, near_miss=30, ill_formed=15, derandomize=True,
                  database=False, shrink=False, timeout_s=60.0),
    "thorough": Profile("thorough", valid=300, near_miss=100, ill_formed=60, derandomize=False,
                        database=True, shrink=True, timeout_s=120.0),
}

#: Called after each case: (pattern id, case kind, case, verdict).
Progress = Callable[[str, CaseKind, Case, Verdict], None]

_STRATEGIES: dict[CaseKind, Callable[[PatternEntry], st.SearchStrategy[Case]]] = {
    CaseKind.valid: valid_cases,
    CaseKind.near_miss: near_miss_cases,
    CaseKind.ill_formed: ill_formed_cases,
}


def select_patterns(ids: Sequence[str] | None) -> list[PatternEntry]:
    """The catalog entries named by `ids` (all, in catalog order, when None or empty)."""
    if not ids:
        return list(CATALOG)
    return [entry(i) for i in ids]


def _draws(pattern: PatternEntry, kind: CaseKind, profile: Profile,
           ) -> list[tuple[st.SearchStrategy[Case], int]]:
    """The hypothesis runs of one pattern and kind: near misses get one run per rule of the
    pattern (each rule is exercised whatever the profile's budget), the others one run."""
    budget = profile.examples(kind)
    if kind is not CaseKind.near_miss:
        return [(_STRATEGIES[kind](pattern), budget)]
    rules = near_miss_rules(pattern)
    share = max(2, -(-budget // max(len(rules), 1)))
    return [(near_misses(pattern, rule).map(lambda miss: miss.case), share) for rule in rules]


def _settings(profile: Profile, examples: int, database_dir: Path | None) -> settings:
    database = None
    if profile.database and database_dir is not None:
        database = DirectoryBasedExampleDatabase(str(database_dir))
    return settings(max_examples=examples, derandomize=profile.derandomize, database=database,
                    deadline=None, print_blob=True,
                    phases=[Phase.explicit, Phase.reuse, Phase.generate],
                    suppress_health_check=list(HealthCheck))


def draw_cases(pattern: PatternEntry, kind: CaseKind, profile: Profile, *,
               database_dir: Path | None = None) -> list[Case]:
    """The cases of one pattern and kind, in the order they are judged: for valid cases a
    deterministic floor first (every category member and repetition count), then hypothesis'
    draws."""
    cases = list(instance_cases(pattern)) if kind is CaseKind.valid else []
    for part, examples in _draws(pattern, kind, profile):
        @_settings(profile, examples, database_dir)
        @given(part)
        def draw(case: Case) -> None:
            cases.append(case)

        draw()
    return cases


def run_pattern(pattern: PatternEntry, kind: CaseKind, runner: Runner | RunnerPool,
                collector: ResultsCollector, profile: Profile, *,
                progress: Progress | None = None, database_dir: Path | None = None,
                ) -> list[tuple[Case, Verdict]]:
    """Draw the cases of one pattern and kind, then judge them (several at a time when the
    runner is a pool); returns the failing ones."""
    strategy = _STRATEGIES[kind](pattern)
    failing: list[tuple[Case, Verdict]] = []
    cases = draw_cases(pattern, kind, profile, database_dir=database_dir)
    for case, verdict in zip(cases, runner.run_many(cases)):
        collector.add(case, verdict)
        if progress is not None:
            progress(pattern.id, kind, case, verdict)
        if verdict.failed:
            failing.append((case, verdict))
    if failing and profile.shrink:
        _add_minimal_cases(strategy, failing, runner, collector)
    return failing


def _add_minimal_cases(strategy: st.SearchStrategy[Case], failing: list[tuple[Case, Verdict]],
                       runner: Runner | RunnerPool, collector: ResultsCollector) -> None:
    """For each failing status, let hypothesis shrink to a smallest case with that status."""
    for status in sorted({v.status for _, v in failing}):
        first = next(c for c, v in failing if v.status is status)

        def fails_alike(case: Case, wanted: Status = status) -> bool:
            return runner.run(case).status is wanted

        try:
            smallest = find(strategy, fails_alike, settings=settings(
                max_examples=200, database=None, deadline=None,
                suppress_health_check=list(HealthCheck)))
        except (NoSuchExample, Unsatisfiable):
            continue  # the failure is too rare to find again; the original case stays saved
        collector.add_minimal(smallest, runner.run(smallest), of_case=first.id)


def run_suite(backend: str, *, device: str | None = None, patterns: Sequence[str] | None = None,
              kinds: Sequence[CaseKind] = tuple(CaseKind), profile: Profile = PROFILES["ci"],
              out_dir: Path | None = None, isolate: bool = True, seed: int = 0,
              sys_path: Sequence[str] = (), progress: Progress | None = None, jobs: int = 1,
              memory_limit: int | None = None) -> ResultsCollector:
    """Grade `backend` (a registered name or ``module:attr``) on every selected pattern,
    `jobs` cases at a time. Ctrl-C stops the run: what was judged is kept, and the collector
    is marked `interrupted` (its document `incomplete`)."""
    entries = select_patterns(patterns)
    database_dir = out_dir / "hypothesis-db" if out_dir is not None else None
    log_path = out_dir / "worker.log" if out_dir is not None else None
    with RunnerPool(backend, device, profile.timeout_s, jobs=jobs, isolate=isolate, seed=seed,
                    sys_path=sys_path, log_path=log_path, memory_limit=memory_limit) as runner:
        collector = ResultsCollector(runner.backend_name, runner.device, seed=seed,
                                     out_dir=out_dir, device_problems=runner.device_problems)
        try:
            for pattern in entries:
                for kind in kinds:
                    run_pattern(pattern, kind, runner, collector, profile, progress=progress,
                                database_dir=database_dir)
        except KeyboardInterrupt:
            collector.interrupted = True
            collector.incomplete = (f"interrupted after {collector.cases} case(s); the "
                                    "patterns and kinds not reached were not judged")
    collector.counters = dict(runner.counters)  # complete once the workers have stopped
    collector.finish()
    return collector
