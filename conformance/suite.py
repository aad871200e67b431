"""Running the conformance suite: profiles, the plan of cases, and judging it.

A run has two phases.

**Planning** (`plan_cases`, from the run's `RunSettings`: profile, seed, selection, shard).
For each selected catalog pattern and case kind (valid, near-miss, ill-formed), hypothesis
draws cases from the catalog-derived strategies
(`fusionspec.conformance.generate.strategies`); valid cases start from the catalog instances of
`fusionspec.conformance.generate.instances` (every category member and repetition count, in f32
or int8), a deterministic floor under the random draws; near misses are drawn rule by rule, so
each rule of the pattern is exercised whatever the profile's budget. Each draw's seed is pinned
from its coordinates (`draw_seed`: pattern, kind, rule, profile and the run's ``--seed``), so the
same profile and seed draw the same cases whatever the code around the draw, and a narrower
selection (`fusionspec.conformance.selection`) draws exactly the cases the full run draws for
it. Each draw gives every case id once (`fusionspec.conformance.generate.ids.unique_cases`).
A shard draws its own share of the draws only (`Shard.split`, balanced by the cases each draw
is expected to give), so the shards of a run draw each case once between them. The selection
then keeps its cases, and the expectations file (`fusionspec.conformance.expectations`) takes
out the cases it skips. Every planned case keeps its place in the whole selection's order
(`PlannedCase.index`: its draw's rank among the selection's draws, then its place in the
draw), which orders results documents whatever judged them: one process, `jobs` workers,
shards or pytest-xdist workers. With several jobs the draws themselves are spread over
processes; the rule x setting cases of the floors, which probe the validator over the catalog
(`fusionspec.conformance.generate.rule_settings.owned_cases`), are made once, by the planning
process while the drawing processes start on the other draws, and handed to the floor draws.

**Judging** (`judge_plan`). The planned cases go to a `RunnerPool` (isolated workers, `jobs`
at a time), all in one stream so that no worker waits at the end of a pattern, and each verdict
and its wall time is recorded (`ResultsCollector`). The pool and the collector take the same
`RunSettings` as the planner: the seed that drew the cases fills their inputs and is the one
the document records.

Profiles (`PROFILES`; `Profile` and `RunSettings` live in
`fusionspec.conformance.selection`, beside the selection they go with):

- ``ci``: a bounded number of examples per pattern and kind, no example database;
- ``thorough``: many more examples, hypothesis' example database (so a failure found once is
  tried first next time), and each failing status is searched down to a minimal case
  (hypothesis' shrinking), saved next to the failures it stands for. A new ``--seed`` draws new
  cases.

A failure never stops the run: every pattern is graded, and the caller decides what fails.
"""

from __future__ import annotations

import hashlib
import pickle
import shutil
import signal
import tempfile
import time
from collections import Counter
from collections.abc import Callable, Iterator, Sequence
from concurrent.futures import FIRST_COMPLETED, Future, ProcessPoolExecutor
from concurrent.futures import wait as wait_for
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Protocol

from hypothesis import HealthCheck, Phase, find, given, seed, settings
from hypothesis import strategies as st
from hypothesis.database import DirectoryBasedExampleDatabase
from hypothesis.errors import NoSuchExample, Unsatisfiable

from fusionspec.backend import Device
from fusionspec.spec.catalog import PatternEntry, entry

from . import draw_cache
from .cases import Case, CaseKind, Status
from .expectations import Expectation, Expectations
from .generate.boundaries import boundary_near_misses
from .generate.ids import unique_cases
from .generate.instance_plans import instance_plans
from .generate.instances import instance_cases
from .generate.methods import ill_formed_floor
from .generate.model import tensor_items
from .generate.near_miss import near_miss_rules, near_misses
from .generate.rule_settings import adopt, owned_cases, rule_setting_items
from .generate.stable import source_independent
from .generate.strategies import design_cases, ill_formed_cases, near_miss_cases, valid_cases
from .generate.values import CHECK_SEED, harvesting
from .grade.prepared import Prepared
from .grade.results import ResultsCollector
from .grade.verdict import Verdict
from .selection import (
    PROFILES,
    Profile,
    RunSettings,
    Selection,
    SelectionError,
    Shard,
    case_matches,
    split_case_id,
)
from .workers import Runner, RunnerPool, lifeline, use_cache_home
from .workers.oracle_cache import OracleCache
from .workers.transport import dumps

__all__ = ["Profile", "PROFILES", "RunSettings", "Progress", "PlannedCase", "Plan", "draw_seed",
           "draw_cases", "plan_cases", "judge_plan", "run_suite", "run_collector", "OutDir",
           "INDEX_STRIDE"]


class Progress(Protocol):
    """What a run tells its caller as it goes (the command line draws a progress bar)."""

    def drawing(self, done: int, total: int) -> None:
        """`done` of `total` draws (pattern × kind × rule) are drawn."""

    def judging(self, total: int) -> None:
        """Judging starts: `total` cases to judge."""

    def judged(self, planned: PlannedCase, verdict: Verdict, seconds: float) -> None:
        """One more case is judged."""


@dataclass(frozen=True)
class PlannedCase:
    """A case of the plan: `index` is its place in the whole selection's order (before
    sharding: `INDEX_STRIDE` times its draw's rank, plus its place in the draw), `occurrence`
    counts earlier cases with the same id from 1 (a draw gives each id once, so the suite's
    plans hold 1), `expectation` is the expectations entry that matches it, if any."""

    case: Case
    index: int
    occurrence: int = 1
    expectation: Expectation | None = None


@dataclass(frozen=True)
class Plan:
    """The cases to judge, those an expectations entry skips, and how many cases the selection
    holds in the draws made (`selected`: all of them, or a shard's own)."""

    cases: tuple[PlannedCase, ...]
    skipped: tuple[PlannedCase, ...]
    selected: int
    shard: Shard | None = None


#: The gap between the indices of consecutive draws (`PlannedCase.index`): larger than any
#: draw's number of cases, so a shard numbers its cases as the whole run does without drawing
#: the others' draws.
INDEX_STRIDE = 100_000

#: Where a run writes: a folder, or a function of the backend's name and device giving one
#: (for a default that depends on which device the backend picked), or None for nowhere.
OutDir = Path | Callable[[str, Device], Path] | None

_STRATEGIES: dict[CaseKind, Callable[[PatternEntry], st.SearchStrategy[Case]]] = {
    CaseKind.valid: valid_cases,
    CaseKind.near_miss: near_miss_cases,
    CaseKind.ill_formed: ill_formed_cases,
}


def draw_seed(pattern: str, kind: CaseKind, rule: str | None, profile: str, run_seed: int,
              ) -> int:
    """The hypothesis seed of one draw: a hash of its coordinates and the run's seed."""
    key = f"{pattern}\x1f{kind.value}\x1f{rule or ''}\x1f{profile}\x1f{run_seed}"
    return int.from_bytes(hashlib.sha256(key.encode()).digest()[:8], "big")


@dataclass(frozen=True)
class _Draw:
    """One hypothesis run: the cases of `pattern` × `kind` (× `rule` for near misses)."""

    pattern: str
    kind: CaseKind
    rule: str | None
    examples: int
    floor: bool = False  # the floors come first (valid: the catalog instances and the pairs)


def _draws(pattern: PatternEntry, kind: CaseKind, profile: Profile, selection: Selection,
           ) -> list[_Draw]:
    budget = profile.examples(kind)
    if kind is not CaseKind.near_miss:
        wanted = selection.draws(pattern.id, kind)
        return [_Draw(pattern.id, kind, None, budget, True)] if wanted else []
    rules = near_miss_rules(pattern)
    share = max(2, -(-budget // max(len(rules), 1)))
    return [_Draw(pattern.id, kind, rule, share) for rule in rules
            if selection.draws(pattern.id, kind, rule)]


def _expected(draw: _Draw) -> int:
    """About how many cases `draw` gives, from the catalog alone (what shards are balanced
    by): its budget, and on top of it the floors that grow with the pattern."""
    if draw.kind is CaseKind.near_miss:
        return draw.examples
    pattern = entry(draw.pattern)
    # Half of a pattern's rule x setting items are ill-formed cases, half valid ones just
    # inside the rule.
    inside = len(rule_setting_items(pattern)) // 2
    if draw.kind is CaseKind.ill_formed:
        return draw.examples + inside
    # A catalog instance per plan, and about three targeted corners per value class.
    return (draw.examples + len(instance_plans(pattern)) + 3 * len(tensor_items(pattern))
            + inside)


def _own_draws(draws: Sequence[_Draw], shard: Shard | None) -> list[tuple[int, _Draw]]:
    """(rank among `draws`, draw) of the draws `shard` makes (all of them without one)."""
    if shard is None:
        return list(enumerate(draws))
    owners = Shard.split([_expected(d) for d in draws], shard.count)
    return [(rank, d) for rank, (d, owner) in enumerate(zip(draws, owners))
            if owner == shard.index]


def _may_hold(draw: _Draw, case_id: str) -> bool:
    """Whether the case `case_id` would come from `draw`."""
    pattern, kind, rule, _ = split_case_id(case_id)
    return (pattern == draw.pattern and kind == draw.kind.value
            and (draw.rule is None or rule == draw.rule))


def _settings(profile: Profile, examples: int, database_dir: Path | None) -> settings:
    database = None
    if profile.database and database_dir is not None:
        database = DirectoryBasedExampleDatabase(str(database_dir))
    return settings(max_examples=examples, derandomize=profile.derandomize, database=database,
                    deadline=None, print_blob=True,
                    phases=[Phase.explicit, Phase.reuse, Phase.generate],
                    suppress_health_check=list(HealthCheck))


def _strategy(draw: _Draw) -> st.SearchStrategy[Case]:
    pattern = entry(draw.pattern)
    if draw.rule is not None:
        return near_misses(pattern, draw.rule).map(lambda miss: miss.case)
    return _STRATEGIES[draw.kind](pattern)


def _cache_key(draw: _Draw, profile: Profile, run_seed: int,
               database_dir: Path | None) -> str | None:
    """The draw cache's key for `draw`, or None where its cases are not a function of its
    coordinates (a random profile, or one that replays hypothesis' database)."""
    if not draw_cache.enabled() or not profile.derandomize or (
            profile.database and database_dir is not None):
        return None
    return draw_cache.draw_key(draw, profile, run_seed)


def _run_draw(draw: _Draw, profile: Profile, run_seed: int, database_dir: Path | None,
              ) -> list[Case]:
    """The cases of `draw`: read back from the draw cache, or drawn (and kept there); a draw
    another run is making is waited for."""
    cases = _claimed_draw(draw, profile, run_seed, database_dir, wait=True)
    if cases is None:
        raise AssertionError("a claim that waits is always held")
    return cases


def _claimed_draw(draw: _Draw, profile: Profile, run_seed: int, database_dir: Path | None,
                  *, wait: bool) -> list[Case] | None:
    """`_run_draw`, except that a draw another run is making is left (None) unless `wait`."""
    key = _cache_key(draw, profile, run_seed, database_dir)
    if key is None:
        return _draw_and_keep(draw, profile, run_seed, database_dir, None)
    found = draw_cache.load_draw(key)
    if isinstance(found, list):
        return found
    with draw_cache.claim(key, wait=wait) as held:
        if not held:
            return None
        found = draw_cache.load_draw(key)  # made by the run that held it meanwhile
        if isinstance(found, list):
            return found
        return _draw_and_keep(draw, profile, run_seed, database_dir, key)


def _draw_and_keep(draw: _Draw, profile: Profile, run_seed: int, database_dir: Path | None,
                   key: str | None) -> list[Case]:
    with harvesting() as prepared_of, source_independent():
        cases = _draw_fresh(draw, profile, run_seed, database_dir)
        if run_seed == CHECK_SEED and draw.kind is not CaseKind.ill_formed:
            _keep_prepared(cases, prepared_of)
    if key is not None:
        draw_cache.store_draw(key, dumps(cases), ids=[case.id for case in cases])
    return cases


def _keep_prepared(cases: Sequence[Case], prepared_of: Callable[[Case], Prepared | None],
                   ) -> None:
    """Keep the reference's side of `cases` that choosing their values computed (with the
    default seed) in the oracle cache, where judging them finds it instead of computing it
    again: on a first run, about half of what preparing the reference's side costs."""
    cache = OracleCache()
    if cache.folder is None:
        return
    for case in cases:
        prepared = prepared_of(case)
        if prepared is not None:
            cache.store(case, CHECK_SEED, dumps(prepared))


def _draw_fresh(draw: _Draw, profile: Profile, run_seed: int, database_dir: Path | None,
                ) -> list[Case]:
    valid = draw.kind is CaseKind.valid
    cases = list(instance_cases(entry(draw.pattern))) if draw.floor and valid else []
    if draw.rule is not None:  # the near misses of the value boundaries, on top of the draws
        cases += boundary_near_misses(entry(draw.pattern), draw.rule)
    # The floors of the dtype row x attribute pairs and of the ill-formed settings take the
    # place of as many drawn cases.
    # The rule x setting and graph-format ill-formed cases come after the draws, on top of them.
    designed: list[Case] = []
    extra: list[Case] = []
    if draw.floor and valid:
        designed = design_cases(draw.pattern, draw.examples)
    elif draw.floor:
        designed, extra = ill_formed_floor(entry(draw.pattern), draw.examples)
    cases += designed
    if len(designed) >= draw.examples:
        return unique_cases(cases + extra)

    # The seed is explicit: hypothesis would otherwise derive it from this function's source,
    # and the cases would change whenever the code around them does.
    @seed(draw_seed(draw.pattern, draw.kind, draw.rule, profile.name, run_seed))
    @_settings(profile, draw.examples - len(designed), database_dir)
    @given(_strategy(draw))
    def collect(case: Case) -> None:
        cases.append(case)

    with source_independent():
        collect()
    return unique_cases(cases + extra)


def draw_cases(pattern: PatternEntry, kind: CaseKind, profile: Profile, *, run_seed: int = 0,
               database_dir: Path | None = None, selection: Selection | None = None,
               ) -> list[Case]:
    """The cases of one pattern and kind, in the order they are judged (for valid cases the
    catalog instances first, then hypothesis' draws), each id once, before the selection
    filters them."""
    return [case for draw in _draws(pattern, kind, profile, selection or Selection())
            for case in _run_draw(draw, profile, run_seed, database_dir)]


def _ignore_sigint() -> None:
    # Ctrl-C is the parent's to handle: it stops the drawing processes itself.
    signal.signal(signal.SIGINT, signal.SIG_IGN)


def _draw_in_child(draw: _Draw, profile: Profile, run_seed: int,
                   database_dir: Path | None, handed: bytes | None = None,
                   wait: bool = True) -> bytes:
    # Graphs hold read-only mappings that the standard pickler refuses; the transport's
    # pickler rebuilds them (these bytes come from the suite's own process, so plain pickle
    # reads them back).
    use_cache_home()  # a fresh process: hypothesis' caches go where the parent's go
    if handed is not None:
        adopt(draw.pattern, draw.kind, pickle.loads(handed))
    return dumps(_claimed_draw(draw, profile, run_seed, database_dir, wait=wait))


def _probes(draw: _Draw) -> bool:
    """Whether `draw` needs the rule x setting cases of its pattern (`owned_cases`): its
    floors, valid or ill-formed."""
    return draw.floor and draw.kind is not CaseKind.near_miss


def _drawn_here(draws: Sequence[_Draw], held: Callable[[int], bool], profile: Profile,
                run_seed: int, database_dir: Path | None) -> Iterator[list[Case]]:
    """`_drawn` in this process. A draw another run is making (`held`, by rank) is not waited
    for while a later draw is free: that one is made meanwhile, then the held one is looked at
    again (two runs side by side each draw their own share, instead of the later one trailing
    the other)."""
    done: dict[int, list[Case]] = {}
    for rank, draw in enumerate(draws):
        later = rank + 1
        while rank not in done:
            if held(rank):
                while later < len(draws) and (later in done or held(later)):
                    later += 1
                if later < len(draws):
                    done[later] = _run_draw(draws[later], profile, run_seed, database_dir)
                    continue
            # Free, or nothing else left to make: read back, drawn, or waited for.
            done[rank] = _run_draw(draw, profile, run_seed, database_dir)
        yield done.pop(rank)


def _drawn(draws: Sequence[_Draw], profile: Profile, run_seed: int, database_dir: Path | None,
           jobs: int) -> Iterator[list[Case]]:
    """The cases of each draw, in order; with several jobs, drawn in as many processes."""
    keys = [_cache_key(d, profile, run_seed, database_dir) for d in draws]
    on_disk = [k is not None and (draw_cache.cache_dir() / f"{k}.pickle").is_file()
               for k in keys]
    if jobs <= 1 or len(draws) < 4 or all(on_disk):  # every draw on disk: no processes
        def held(rank: int) -> bool:  # a draw on disk is read back: no lock to look at
            key = keys[rank]
            return key is not None and not on_disk[rank] and draw_cache.held_elsewhere(key)

        yield from _drawn_here(draws, held, profile, run_seed, database_dir)
        return
    # The fork server (spawn where there is none); the processes die with this one.
    context = lifeline.context()
    with ProcessPoolExecutor(max_workers=jobs, mp_context=context, initializer=lifeline.hold,
                             initargs=(lifeline.ticket(context), _ignore_sigint)) as pool:
        futures: dict[int, Future[bytes]] = {}
        handed: dict[int, bytes | None] = {}

        def submit(rank: int, *, wait: bool) -> None:
            futures[rank] = pool.submit(_draw_in_child, draws[rank], profile, run_seed,
                                        database_dir, handed[rank], wait)

        try:
            # The floors need the rule x setting cases, which probe the catalog: this process
            # makes them once, while the drawing processes start on the other draws, and
            # hands each floor draw those of its pattern.
            for rank, draw in enumerate(draws):
                if on_disk[rank] or not _probes(draw):
                    handed[rank] = None
                    submit(rank, wait=False)
            for rank, draw in enumerate(draws):
                if rank not in futures:
                    handed[rank] = dumps(owned_cases(entry(draw.pattern), draw.kind))
                    submit(rank, wait=False)
            # A draw another run was making comes back empty: it goes to the end of the
            # queue, this time to wait for that run (by then it is mostly on disk).
            pending = {future: rank for rank, future in futures.items()}
            done: dict[int, list[Case]] = {}
            for rank in range(len(draws)):
                while rank not in done:
                    finished, _ = wait_for(pending, return_when=FIRST_COMPLETED)
                    for future in finished:
                        later = pending.pop(future)
                        found: list[Case] | None = pickle.loads(future.result())
                        if found is None:
                            submit(later, wait=True)
                            pending[futures[later]] = later
                        else:
                            done[later] = found
                yield done.pop(rank)
        except BaseException:
            for future in futures.values():
                future.cancel()
            raise


def plan_cases(run_settings: RunSettings, *, expectations: Expectations | None = None,
               device: Device | None = None, jobs: int = 1, database_dir: Path | None = None,
               progress: Progress | None = None) -> Plan:
    """Draw and select the cases of a run, or of its shard: `run_settings` says which profile,
    seed, selection and shard (see the module docstring). SelectionError when a case id given
    without wildcards is not among the cases drawn (a shard: among those of its own draws), or
    an unsharded run selects nothing (a shard may hold nothing: its plan is empty)."""
    selection, profile, shard = run_settings.selection, run_settings.profile, run_settings.shard
    run_seed = run_settings.seed
    draws = [d for pattern in selection.entries() for kind in selection.kinds
             for d in _draws(pattern, kind, profile, selection)]
    own = _own_draws(draws, shard)
    selected: list[tuple[int, Case]] = []
    made = _drawn([d for _, d in own], profile, run_seed, database_dir, jobs)
    for done, cases in enumerate(made, 1):
        rank = own[done - 1][0]
        assert len(cases) < INDEX_STRIDE, f"a draw of {len(cases)} cases overflows its indices"
        selected += [(rank * INDEX_STRIDE + place, c) for place, c in enumerate(cases)
                     if selection.holds(c)]
        if progress is not None:
            progress.drawing(done, len(own))
    found = {c.id for _, c in selected}
    missing = [c for c in selection.exact_cases() if c not in found
               and any(_may_hold(d, c) for _, d in own)]
    excluded = [(c, g) for c in missing for g in selection.excludes if case_matches(c, g)]
    if excluded:
        given, glob = excluded[0]
        raise SelectionError(f"case {given!r} is given with --case and left out by --exclude "
                             f"{glob!r}: drop one of the two")
    if missing:
        raise SelectionError(f"case {missing[0]!r} is not among the cases the {profile.name} "
                             f"profile draws with seed {run_seed}"
                             + (f" (and {len(missing) - 1} more)" if len(missing) > 1 else ""))
    if not selected and shard is None:
        raise SelectionError("the selection holds no case: no drawn case has the selected "
                             "rules, dtypes and kinds"
                             + (", or --exclude left every one out" if selection.excludes
                                else ""))
    seen: Counter[str] = Counter()
    judged: list[PlannedCase] = []
    skipped: list[PlannedCase] = []
    where = device or Device("unknown")
    for index, case in selected:
        seen[case.id] += 1
        match = expectations.match(case, where) if expectations is not None else None
        planned = PlannedCase(case, index, seen[case.id], match)
        (skipped if match is not None and match.status == "skip" else judged).append(planned)
    return Plan(tuple(judged), tuple(skipped), len(selected), shard)


def judge_plan(plan: Plan, runner: Runner | RunnerPool, collector: ResultsCollector,
               profile: Profile, *, progress: Progress | None = None) -> None:
    """Judge the plan's cases and record them (skipped ones too); in the thorough profile,
    shrink each failing status of each pattern and kind to a minimal case. Ctrl-C leaves
    what was judged recorded and raises KeyboardInterrupt."""
    for planned in plan.skipped:
        collector.skip(planned.case, index=planned.index, occurrence=planned.occurrence,
                       expectation=planned.expectation)
    if progress is not None:
        progress.judging(len(plan.cases))
    cases = [p.case for p in plan.cases]
    verdicts = runner.judge_many(cases) if isinstance(runner, RunnerPool) else \
        _timed(runner, cases)
    failing: dict[tuple[str, CaseKind], list[tuple[Case, Verdict]]] = {}
    for planned, (verdict, seconds) in zip(plan.cases, verdicts):
        collector.add(planned.case, verdict, index=planned.index,
                      occurrence=planned.occurrence, seconds=seconds,
                      expectation=planned.expectation)
        if progress is not None:
            progress.judged(planned, verdict, seconds)
        if verdict.failed:
            key = (planned.case.pattern, planned.case.kind)
            failing.setdefault(key, []).append((planned.case, verdict))
    if profile.shrink:
        for (pattern, kind), found in failing.items():
            _add_minimal_cases(_STRATEGIES[kind](entry(pattern)), found, runner, collector)


def _timed(runner: Runner, cases: Sequence[Case]) -> Iterator[tuple[Verdict, float]]:
    for case in cases:
        start = time.perf_counter()
        verdict = runner.run(case)
        yield verdict, time.perf_counter() - start


def run_collector(runner: Runner | RunnerPool, backend: str, out_dir: Path | None, *,
                  expectations: Expectations | None, strict: bool) -> ResultsCollector:
    """The collector of one run on `runner`'s backend and device (`backend` as the run was
    given it), its document headed by the run's options, its settings the runner's own: the
    one place a command and the pytest plugin say what a run's document records about how it
    was asked for."""
    return ResultsCollector(
        runner.backend_name, runner.device, run_settings=runner.run_settings, out_dir=out_dir,
        device_problems=runner.device_problems, departures=runner.departures,
        backend_spec=backend,
        expectations=expectations, strict=strict)


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


def run_suite(backend: str, *, run_settings: RunSettings | None = None,
              device: str | None = None, patterns: Sequence[str] | None = None,
              kinds: Sequence[CaseKind] | None = None, selection: Selection | None = None,
              profile: Profile | None = None, seed: int | None = None,
              shard: Shard | None = None, out_dir: OutDir = None, isolate: bool = True,
              sys_path: Sequence[str] = (), progress: Progress | None = None, jobs: int = 1,
              memory_limit: int | None = None, expectations: Expectations | None = None,
              strict: bool = False) -> ResultsCollector:
    """Grade `backend` (a registered name or ``module:attr``, recorded as given) on the cases
    `run_settings` plans, `jobs` cases at a time. Instead of `run_settings`, its parts may be
    given: `selection` (or the `patterns` and `kinds` given), `profile` (default ci), `seed`
    (default 0) and `shard`; giving both is a TypeError. Ctrl-C stops the run: what was judged
    is kept, and the collector is marked `interrupted` (its document `incomplete`).
    SelectionError when the selection names nothing."""
    chosen = _settings_of(run_settings, patterns=patterns, kinds=kinds, selection=selection,
                          profile=profile, seed=seed, shard=shard)
    log_dir = out_dir if isinstance(out_dir, Path) else None
    scratch: Path | None = None
    if callable(out_dir):
        # The default folder depends on the device the backend picks, known once a worker
        # has started: the workers log to a scratch folder meanwhile.
        scratch = log_dir = Path(tempfile.mkdtemp(prefix="fusionspec-logs-"))
    log_path = log_dir / "worker.log" if log_dir is not None else None
    try:
        collector = _run_in_pool(backend, device, chosen, out_dir, isolate, sys_path,
                                 progress, jobs, memory_limit, expectations, strict, log_path)
    finally:
        if scratch is not None:
            # Also when the workers never started: the scratch folder is this run's alone.
            _move_logs(scratch, None)
    return collector


def _settings_of(given: RunSettings | None, *, patterns: Sequence[str] | None,
                 kinds: Sequence[CaseKind] | None, selection: Selection | None,
                 profile: Profile | None, seed: int | None, shard: Shard | None,
                 ) -> RunSettings:
    """The settings `run_suite` runs with, their selection checked."""
    parts = {"patterns": patterns, "kinds": kinds, "selection": selection, "profile": profile,
             "seed": seed, "shard": shard}
    if given is not None:
        mixed = [name for name, value in parts.items() if value is not None]
        if mixed:
            raise TypeError(f"run_suite takes run_settings or {', '.join(mixed)}, not both")
    else:
        given = RunSettings(
            selection or Selection(patterns=tuple(patterns or ()),
                                   kinds=tuple(CaseKind if kinds is None else kinds)),
            PROFILES["ci"] if profile is None else profile, 0 if seed is None else seed, shard)
    chosen = replace(given.selection, kinds=tuple(given.selection.kinds)).validate()
    return replace(given, selection=chosen)


def _run_in_pool(backend: str, device: str | None, run_settings: RunSettings, out_dir: OutDir,
                 isolate: bool, sys_path: Sequence[str], progress: Progress | None, jobs: int,
                 memory_limit: int | None, expectations: Expectations | None, strict: bool,
                 log_path: Path | None) -> ResultsCollector:
    # One worker first (the plan needs its device); the others once the plan says how many
    # cases there are to share.
    clock = time.perf_counter()
    profile = run_settings.profile
    with RunnerPool(backend, device, profile.timeout_s, run_settings=run_settings, jobs=jobs,
                    isolate=isolate, sys_path=sys_path, log_path=log_path,
                    memory_limit=memory_limit, start=1) as runner:
        target = out_dir(runner.backend_name, runner.device) if callable(out_dir) else out_dir
        collector = run_collector(runner, backend, target, expectations=expectations,
                                  strict=strict)
        timings = collector.timings
        timings["starting"], clock = time.perf_counter() - clock, time.perf_counter()
        try:
            plan = plan_cases(runner.run_settings, expectations=expectations,
                              device=runner.device, jobs=jobs,
                              database_dir=target / "hypothesis-db" if target else None,
                              progress=progress)
            collector.planned = plan.selected
            timings["drawing"], clock = time.perf_counter() - clock, time.perf_counter()
            runner.ensure(len(plan.cases))
            judge_plan(plan, runner, collector, profile, progress=progress)
            timings["judging"] = time.perf_counter() - clock
        except KeyboardInterrupt:
            collector.interrupted = True
            collector.incomplete = (f"interrupted after {collector.cases} case(s); the "
                                    "cases not reached were not judged")
    collector.counters = dict(runner.counters)  # complete once the workers have stopped
    collector.oracle = dict(runner.oracle)
    collector.finish()
    if log_path is not None and callable(out_dir):
        _move_logs(log_path.parent, collector.out_dir)
    return collector


def _move_logs(scratch: Path, target: Path | None) -> None:
    if target is not None:
        target.mkdir(parents=True, exist_ok=True)
        for log in sorted(scratch.glob("worker*.log")):
            shutil.move(str(log), str(target / log.name))
    shutil.rmtree(scratch, ignore_errors=True)
