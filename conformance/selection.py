"""Which cases a run judges, and with what data: the profile and the seed that draw them, the
patterns, families, case kinds, case ids, rules and dtypes selected, a shard.

`RunSettings` holds the four that decide a run's cases (its `Profile`, its seed, its `Selection`
and its `Shard`): the planner draws from it, every runner fills the cases' inputs from its seed,
and the results document records it, so one object is the only copy of each.

A `Selection` narrows the suite in two steps. Before drawing, it decides which hypothesis draws
run at all (a pattern × kind, and for near misses a pattern × rule: `Selection.draws`), so
``--case fp.conv_post_ops/valid/1a2b3c4d`` only draws that pattern's valid cases. After drawing,
`Selection.holds` keeps the cases whose id, rule and dtype match. Every draw's seed is pinned
from its own coordinates (`fusionspec.conformance.suite.draw_seed`), so a narrower selection
draws exactly the cases the full run draws for it: the ids a full run reports can be selected
one by one.

Patterns, case ids and rules take shell-style globs (``int8.*``, ``softmax.post_ops/*``,
``structure.*``). A ``--case`` or ``--exclude`` value without a ``/`` stands for a pattern:
it selects (or leaves out) every case of the patterns it matches (`case_matches`), so
``--exclude fp.unary_binary`` leaves out that pattern's cases as ``--exclude
'fp.unary_binary/*'`` does. A value that names nothing is a `SelectionError` raised while the
command line is read, never an empty run.

A `Shard` is one of N slices of a run. The suite splits its work before drawing anything:
`Shard.split` deals out the selection's draws (pattern x kind x rule) by the number of cases
each is expected to give, the largest first, each to the lightest shard so far; a shard draws
its own draws only, so the slices depend on the selection and the profile alone (not on the
machine, the number of jobs or what is cached), never overlap, and together are the whole
selection. Work known by id alone (the benchmark's workloads) is split by `Shard.holds`: id
``c`` belongs to shard ``1 + H(c) mod N``, ``H`` being the first 8 bytes of the SHA-256 of ``c``.

>>> Shard.parse("2/3"), str(Shard(2, 3))
(Shard(index=2, count=3), '2/3')
>>> Shard.split([5, 1, 4, 2], 2)
[1, 1, 2, 2]
>>> split_case_id("fp.conv_post_ops/near-miss/structure.bound/1a2b3c4d")
('fp.conv_post_ops', 'near-miss', 'structure.bound', '1a2b3c4d')
"""

from __future__ import annotations

import hashlib
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from fnmatch import fnmatchcase
from typing import Any

from fusionspec.spec.catalog import CATALOG, PatternEntry, PatternFamily
from fusionspec.spec.errors import FusionspecError, GraphRule
from fusionspec.spec.opschemas import SCHEMAS
from fusionspec.spec.rules import RULES

from .cases import STRUCTURAL_RULES, Case, CaseKind

__all__ = ["HEADLINE_DTYPES", "SelectionError", "Shard", "Selection", "Profile", "PROFILES",
           "RunSettings", "excludes_something", "known_rule_ids", "split_case_id", "is_glob",
           "case_matches"]

#: The headline dtypes a case can carry (`Case.dtype`, the report matrix's columns; the
#: generators' ``headline_dtype`` picks one of these, and the suite's tests check that every
#: drawn case does).
HEADLINE_DTYPES: tuple[str, ...] = ("f32", "bf16", "f16", "f8", "int8")


class SelectionError(FusionspecError):
    """A selection value that names no pattern, rule, kind or case."""


def is_glob(text: str) -> bool:
    return any(c in text for c in "*?[")


def known_rule_ids() -> tuple[str, ...]:
    """Every rule id a case can carry: the catalog's rules, the structural near-miss rules,
    the graph rules and the op schemas' own constraints (sorted)."""
    found = {r.id for r in RULES} | set(STRUCTURAL_RULES) | {r.value for r in GraphRule}
    for schema in SCHEMAS.values():
        found.update(c.rule for c in schema.constraints)
    return tuple(sorted(found))


def split_case_id(case_id: str) -> tuple[str, str, str | None, str]:
    """(pattern, kind, rule or None, hash) of ``<pattern>/<kind>[/<rule>]/<hash>``;
    ValueError for text of another shape."""
    parts = case_id.split("/")
    if len(parts) == 3:
        return parts[0], parts[1], None, parts[2]
    if len(parts) == 4:
        return parts[0], parts[1], parts[2], parts[3]
    raise ValueError(f"{case_id!r} is not a case id (<pattern>/<kind>[/<rule>]/<hash>)")


def _matching(globs: Iterable[str], names: Sequence[str], what: str) -> None:
    """Raise SelectionError for the first glob that matches none of `names`."""
    for glob in globs:
        if not any(fnmatchcase(name, glob) for name in names):
            shown = ", ".join(names) if len(names) <= 30 else \
                ", ".join(names[:30]) + f", ... ({len(names)} in all)"
            raise SelectionError(f"{what} {glob!r} matches nothing; known: {shown}")


@dataclass(frozen=True)
class Shard:
    """Shard `index` of `count` (1-based), see the module docstring."""

    index: int
    count: int

    def __post_init__(self) -> None:
        if self.count < 1 or not 1 <= self.index <= self.count:
            raise ValueError(f"shard {self.index}/{self.count}: K/N needs 1 <= K <= N")

    def __str__(self) -> str:
        return f"{self.index}/{self.count}"

    @staticmethod
    def parse(text: str) -> Shard:
        """``"K/N"``; ValueError with a readable message otherwise."""
        index, slash, count = text.strip().partition("/")
        if not slash or not index.isdigit() or not count.isdigit():
            raise ValueError(f"{text!r} is not K/N (the K-th of N shards, e.g. 2/4)")
        return Shard(int(index), int(count))

    @staticmethod
    def of(case_id: str, count: int) -> int:
        """The shard (1-based, of `count`) that holds `case_id`."""
        digest = hashlib.sha256(case_id.encode("utf-8")).digest()
        return 1 + int.from_bytes(digest[:8], "big") % count

    def holds(self, case_id: str) -> bool:
        return Shard.of(case_id, self.count) == self.index

    @staticmethod
    def split(weights: Sequence[int], count: int) -> list[int]:
        """The shard (1-based, of `count`) of each work unit, `weights` being the units'
        expected sizes in a fixed order: the heaviest unit first (ties: the one listed first),
        each to the shard holding the least so far (ties: the lowest), so that the shards come
        out about even and the same on every machine."""
        loads = [0] * count
        found = [0] * len(weights)
        for unit in sorted(range(len(weights)), key=lambda i: (-weights[i], i)):
            lightest = min(range(count), key=lambda k: (loads[k], k))
            loads[lightest] += weights[unit]
            found[unit] = lightest + 1
        return found


def case_matches(case_id: str, glob: str) -> bool:
    """Whether the ``--case`` or ``--exclude`` value `glob` names the case `case_id`: it matches
    the id, or, having no ``/``, the id's pattern (a bare pattern id names all its cases)."""
    return fnmatchcase(case_id, glob) or \
        ("/" not in glob and fnmatchcase(case_id.partition("/")[0], glob))


def excludes_something(glob: str) -> bool:
    """Whether `glob` (an ``--exclude`` value) can match a case id: it matches a catalog
    pattern id, or its ``<pattern>/<kind>`` head names a pattern and kind of the catalog."""
    ids = [e.id for e in CATALOG]
    if any(fnmatchcase(i, glob) for i in ids):
        return True
    pattern, _, rest = glob.partition("/")
    kind = rest.partition("/")[0] or "*"
    return any(fnmatchcase(i, pattern) for i in ids) and \
        any(fnmatchcase(k.value, kind) for k in CaseKind)


@dataclass(frozen=True)
class Selection:
    """What a run judges (every field empty: everything). `patterns`, `cases` and `rules` are
    globs; `families` and `dtypes` exact names; `kinds` the case kinds drawn."""

    patterns: tuple[str, ...] = ()
    families: tuple[str, ...] = ()
    kinds: tuple[CaseKind, ...] = tuple(CaseKind)
    cases: tuple[str, ...] = ()
    rules: tuple[str, ...] = ()
    dtypes: tuple[str, ...] = ()
    #: Case ids or globs left out (`case_matches`: a pattern id or glob leaves out its cases).
    excludes: tuple[str, ...] = ()
    _case_parts: tuple[tuple[str, str, str | None], ...] = field(
        default=(), init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        parts = []
        for case in self.cases:
            try:
                pattern, kind, rule, _ = split_case_id(case)
            except ValueError:
                # A bare glob such as "fp.conv*" stands for whole case ids.
                pattern, kind, rule = case, "*", None
            parts.append((pattern, kind, rule))
        object.__setattr__(self, "_case_parts", tuple(parts))

    def validate(self) -> Selection:
        """This selection, after checking that every value names something (SelectionError
        otherwise)."""
        ids = [e.id for e in CATALOG]
        _matching(self.patterns, ids, "pattern")
        families = [f.value for f in PatternFamily]
        for family in self.families:
            if family not in families:
                raise SelectionError(f"no pattern family {family!r}; known: "
                                     f"{', '.join(families)}")
        _matching(self.rules, list(known_rule_ids()), "rule")
        for dtype in self.dtypes:
            if dtype not in HEADLINE_DTYPES:
                raise SelectionError(f"no case dtype {dtype!r}; known: "
                                     f"{', '.join(HEADLINE_DTYPES)}")
        kinds = [k.value for k in CaseKind]
        for case, (pattern, kind, _) in zip(self.cases, self._case_parts):
            if not any(fnmatchcase(i, pattern) for i in ids) or \
                    not any(fnmatchcase(k, kind) for k in kinds):
                raise SelectionError(f"case {case!r} names no pattern and kind of the catalog "
                                     "(a case id is <pattern>/<kind>[/<rule>]/<hash>)")
        for glob in self.excludes:
            if not excludes_something(glob):
                raise SelectionError(f"--exclude {glob!r} names no case of the catalog (case "
                                     "ids or globs, e.g. 'fp.conv_*' or "
                                     "'int8.*/near-miss/*')")
        if not self.entries():
            raise SelectionError("the selected patterns, families and cases have no pattern "
                                 "in common")
        return self

    # -- before drawing ----------------------------------------------------------------------

    def entries(self) -> list[PatternEntry]:
        """The catalog entries whose cases may be selected, in catalog order."""
        return [e for e in CATALOG
                if (not self.patterns or any(fnmatchcase(e.id, g) for g in self.patterns))
                and (not self.families or e.family.value in self.families)
                and (not self.cases or any(fnmatchcase(e.id, p) for p, _, _ in
                                           self._case_parts))]

    def draws(self, pattern: str, kind: CaseKind, rule: str | None = None) -> bool:
        """Whether the draw of `pattern` × `kind` (× `rule`, for near misses, which are drawn
        rule by rule) can hold a selected case."""
        if kind not in self.kinds:
            return False
        if rule is not None and self.rules and \
                not any(fnmatchcase(rule, g) for g in self.rules):
            return False
        if not self.cases:
            return True
        return any(fnmatchcase(pattern, p) and fnmatchcase(kind.value, k)
                   and (rule is None or r is None or fnmatchcase(rule, r))
                   for p, k, r in self._case_parts)

    # -- after drawing -----------------------------------------------------------------------

    def holds(self, case: Case) -> bool:
        """Whether `case` is selected."""
        if case.kind not in self.kinds:
            return False
        if self.cases and not any(case_matches(case.id, c) for c in self.cases):
            return False
        if any(case_matches(case.id, g) for g in self.excludes):
            return False
        if self.rules and (case.rule is None or
                           not any(fnmatchcase(case.rule, g) for g in self.rules)):
            return False
        return not self.dtypes or case.dtype in self.dtypes

    def exact_cases(self) -> tuple[str, ...]:
        """The case ids given without wildcards (each must be found once drawn; a bare
        pattern id stands for its cases)."""
        return tuple(c for c in self.cases if not is_glob(c) and "/" in c)

    def to_dict(self) -> dict[str, Any]:
        """The selection as the results document records it (what was asked, as given)."""
        return {"patterns": list(self.patterns), "families": list(self.families),
                "kinds": [k.value for k in self.kinds], "cases": list(self.cases),
                "rules": list(self.rules), "dtypes": list(self.dtypes),
                **({"excludes": list(self.excludes)} if self.excludes else {})}

    def arguments(self) -> list[str]:
        """The command-line flags that make this selection (for rerun commands)."""
        args: list[str] = []
        if self.patterns:
            args += ["--patterns", ",".join(self.patterns)]
        if self.families:
            args += ["--family", ",".join(self.families)]
        if tuple(self.kinds) != tuple(CaseKind):
            args += ["--kinds", ",".join(k.value for k in self.kinds)]
        for flag, values in (("--case", self.cases), ("--rule", self.rules),
                             ("--dtype", self.dtypes), ("--exclude", self.excludes)):
            if values:
                args += [flag, ",".join(values)]
        return args


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


@dataclass(frozen=True)
class RunSettings:
    """What decides the cases of a run and their data: the `profile` and `seed` draw them
    (``--profile``, ``--seed``), `selection` keeps some, `shard` judges a slice. The seed also
    fills every case's inputs, so it is each failure's replay seed.

    One object travels to the planner (`fusionspec.conformance.suite.plan_cases`), to each
    runner (`fusionspec.conformance.workers.Runner`, `RunnerPool`) and to the results collector
    (`fusionspec.conformance.grade.results.ResultsCollector`), none of which keeps a seed of its
    own: a run cannot judge cases with one seed and record another. A replay of a saved failure
    makes its runner from the seed the failure folder recorded.

    >>> RunSettings(seed=3).seed, RunSettings().profile.name
    (3, 'ci')
    """

    selection: Selection = field(default_factory=Selection)
    profile: Profile = field(default_factory=lambda: PROFILES["ci"])
    seed: int = 0
    shard: Shard | None = None

    def __post_init__(self) -> None:
        if isinstance(self.seed, bool) or not isinstance(self.seed, int) or self.seed < 0:
            raise ValueError(f"the seed must be an integer, 0 or more, got {self.seed!r}")
