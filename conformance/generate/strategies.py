"""Hypothesis strategies for conformance cases, derived from the pattern catalog.

There is no generator written per pattern: every strategy walks the catalog entry's pattern
tree (`fusionspec.conformance.generate.plan`), draws a dtype row
(`fusionspec.conformance.generate.dtypes`) and wires a graph with random but valid shapes and
attributes (`fusionspec.conformance.generate.build`, `fusionspec.conformance.generate.attrs`).

- `valid_cases(entry)`: instances of the pattern. Every alternative, repetition count, optional
  branch, category member and dtype row is reachable. The reference partitioner puts all ops of
  such a graph in one partition of the pattern (or of an earlier catalog row the same ops also
  instantiate, which wins the tie by catalog order).
- `near_miss_cases(entry)`: well-formed graphs breaking exactly one rule of the pattern
  (`fusionspec.conformance.generate.near_miss`); `Case.rule` names it.
- `ill_formed_cases(entry=None)`: a valid instance with one defect that `Graph.finalize()`
  rejects (`fusionspec.conformance.generate.ill_formed`); `Case.rule` is the rule id it raises.

Case ids are ``<pattern>/<kind>/<hash>`` for valid cases and ``<pattern>/<kind>/<rule>/<hash>`` for
the others, the hash being the first 8 hex digits of the SHA-256 of the graph's compact oneDNN JSON:
the same graph always gets the same id. `Case.dtype` is the report matrix's column (see
`fusionspec.conformance.generate.dtypes.headline_dtype`: ``int8`` when any tensor is u8/s8, else
``bf16``, ``f16``, ``f8``, ``f32``). `Case.features` holds the grammar features (see
`fusionspec.conformance.generate.plan`), the attribute features and the ``dtype_row``; each is also
reported with `hypothesis.event` while a test runs, so hypothesis' statistics show the coverage, and
`coverage_items(entry)` lists what the valid cases of a pattern must reach between them
(`fusionspec.conformance.generate.coverage`).

Graphs are returned as built, not finalized: a backend under test receives what a user would
give it.
"""

from __future__ import annotations

import hashlib
from collections.abc import Mapping, Sequence
from typing import Any, TypeVar, cast

from hypothesis import HealthCheck, Phase, given, seed, settings
from hypothesis import strategies as st

from fusionspec.spec.catalog import CATALOG, PatternEntry
from fusionspec.spec.catalog import entry as catalog_entry
from fusionspec.spec.graph import Op
from fusionspec.spec.match import MatchError

from ..cases import Case, CaseKind
from .build import Built, build
from .coverage import case_items, coverage_items
from .dtypes import headline_dtype, plan_for_row, required_rows, row_bounds
from .ids import case_id, report_events
from .ill_formed import ill_formed
from .near_miss import near_misses
from .pairs import case_pairs, pair_design, steered, value_text
from .plan import draw_skeleton
from .stable import source_independent
from .values import ValuePlan, draw_values, value_choices, values_for, with_values

_T = TypeVar("_T")

__all__ = ["valid_cases", "valid_builds", "valid_case", "design_cases", "near_miss_cases",
           "ill_formed_cases",
           "case_id", "accepted_patterns", "coverage_items", "case_items", "headline_dtype",
           "report_events"]


def _entry(entry: PatternEntry | str) -> PatternEntry:
    return catalog_entry(entry) if isinstance(entry, str) else entry


def accepted_patterns(entry: PatternEntry | str, ops: Sequence[Op]) -> frozenset[str]:
    """The patterns a partition of `ops` (given in pattern order, as the reference
    partitioner lists them) may carry for a valid instance of `entry`: `entry` itself, and
    every earlier catalog row whose notation the same ops also instantiate, since the
    partitioner breaks such ties by catalog order."""
    entry = _entry(entry)
    found = {entry.id}
    for other in CATALOG:
        if other.id == entry.id:
            break
        try:
            other.bind(list(ops))
        except MatchError:
            continue
        found.add(other.id)
    return frozenset(found)


def draw_instance(draw: st.DrawFn, entry: PatternEntry) -> Built:
    """A valid instance: its dtype row first (every row equally likely), then the instance
    shape that row needs, then shapes and attributes."""
    row = draw(st.sampled_from(required_rows(entry)), label="dtype row")
    bounds, bias_input = row_bounds(draw, entry, row)
    skeleton = draw_skeleton(draw, entry, bounds)
    return build(draw, entry, skeleton,
                 plan_for_row(draw, entry, skeleton.steps, row, bias_input))


def valid_builds(entry: PatternEntry | str, forced: Mapping[str, Any] | None = None,
                 ) -> st.SearchStrategy[Built]:
    """A valid instance of `entry` with everything that went into it (see `Built`); the
    choices drawn with a label of `forced` take its values where the strategy offers them
    (`fusionspec.conformance.generate.pairs.steered`)."""
    return _valid_builds(_entry(entry).id, dict(forced or {}))


@st.composite
def _valid_builds(draw: st.DrawFn, pattern: str, forced: Mapping[str, Any]) -> Built:
    # Takes the pattern id, not the entry, so that failures print a readable call.
    entry = catalog_entry(pattern)
    if forced:
        draw = cast(st.DrawFn, steered(draw, forced))
    built = draw_instance(draw, entry)
    report_events(entry.id, CaseKind.valid, built.features)
    return built


def valid_case(built: Built, plan: ValuePlan | None = None) -> Case:
    """The `Case` of a valid instance, its inputs filled from `plan` (default: the grid)."""
    pattern = built.entry.id
    features = {**built.features, **case_pairs(pattern, built.row, built.graph)}
    case = Case(case_id(pattern, CaseKind.valid, built.graph), CaseKind.valid, pattern,
                built.graph, None, headline_dtype(built.graph), features,
                built.describe())
    return case if plan is None else with_values(case, plan)


def valid_cases(entry: PatternEntry | str, forced: Mapping[str, Any] | None = None,
                ) -> st.SearchStrategy[Case]:
    """Valid instances of `entry` (a catalog entry or its id), each with its values: a corner
    or clean signal (`fusionspec.conformance.generate.values`); `forced` as for
    `valid_builds`."""
    return valid_builds(entry, forced).flatmap(
        lambda built: draw_values(built.graph).map(lambda plan: valid_case(built, plan)))


def design_cases(entry: PatternEntry | str, count: int) -> list[Case]:
    """The first `count` choices of `pair_design` as valid cases. Each is drawn by hypothesis
    runs of its own, seeded by the pattern and the turn: of a few instances forced to the
    choice (more where none of them will do), the first that holds the most of the pairs it
    forces that no earlier case holds (an instance may hold fewer: a mixed row needs a
    binary post-op that the chain drawn may lack), then its values. So they are the same
    whatever else is drawn, and whichever version of hypothesis draws them, they hold the
    pairs they force."""
    pattern = _entry(entry).id
    found = []
    covered: set[str] = set()
    for turn, forced in enumerate(pair_design(pattern)[:count]):
        key = int.from_bytes(hashlib.sha256(f"{pattern}\x1f{turn}".encode()).digest()[:8],
                             "big")
        wanted = _forced_pairs(forced) - covered
        built = None
        for tries in DESIGN_TRIES:
            builds = _examples(valid_builds(pattern, forced), key + tries, tries)
            if builds:
                built = max(builds, key=lambda b: len(_held(b) & wanted))
            if built is not None and wanted <= _held(built):
                break
        if built is None:
            continue
        covered |= _held(built)
        choices = _examples(value_choices(built.graph), key, 2)
        found.append(valid_case(built, values_for(built.graph, choices[-1]) if choices
                                else None))
    return found


#: Instances drawn for one choice of the pair design, the best of them kept: a few, and many
#: more where none of the few holds every pair it forces.
DESIGN_TRIES = (6, 40, 200)


def _forced_pairs(forced: Mapping[str, Any]) -> set[str]:
    """The pairs a choice of the pair design asks for, as ``attribute=row x value``."""
    row = forced["dtype row"]
    return {f"{k}={row} x {value_text(v)}" for k, v in forced.items() if k != "dtype row"}


def _held(built: Built) -> set[str]:
    """The pairs `built` holds, spelled as `_forced_pairs` spells them."""
    return {f"{key.rsplit('.', 1)[1]}={v}"
            for key, value in case_pairs(built.entry.id, built.row, built.graph).items()
            for v in value.split(",")}


def _examples(strategy: st.SearchStrategy[_T], run_seed: int, count: int) -> list[_T]:
    """What hypothesis draws from `strategy` in a run of `count` examples seeded `run_seed`,
    less the first (the simplest possible one)."""
    drawn: list[_T] = []

    @seed(run_seed)
    @settings(max_examples=count, derandomize=False, database=None, deadline=None,
              phases=[Phase.generate], suppress_health_check=list(HealthCheck))
    @given(strategy)
    def collect(value: _T) -> None:
        drawn.append(value)

    with source_independent():
        collect()
    return drawn[1:] or drawn


def near_miss_cases(entry: PatternEntry | str) -> st.SearchStrategy[Case]:
    """Well-formed graphs that break exactly one rule of `entry`."""
    return near_misses(_entry(entry)).map(lambda miss: miss.case)


def ill_formed_cases(entry: PatternEntry | str | None = None) -> st.SearchStrategy[Case]:
    """Instances of `entry` (any catalog pattern when None) with one defect that
    `Graph.finalize()` rejects; `Case.rule` is the rule id it raises."""
    if entry is None:
        return st.sampled_from(CATALOG).flatmap(lambda e: ill_formed(e)).map(
            lambda defect: defect.case)
    return ill_formed(_entry(entry)).map(lambda defect: defect.case)
