"""Which cases a written expectations entry may claim, and its case list written compactly.

`run_facts` reads from a results document what placing new entries needs: the failures no
entry expected, which entry decided each case, and which cases the run judged under each
``<pattern>``, ``<pattern>/<kind>`` and ``<pattern>/<kind>/<rule>`` prefix. `compact` writes a
list of case ids as those prefixes' globs where the run proves a glob claims nothing it should
not: the run judged every case it drew under the prefix (no filter cut it), each of them is
one of the entry's or decided by an earlier entry, and no later entry may match a case there
(`may_overlap`, which answers True when it cannot tell). Elsewhere the ids stay as they are.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from fnmatch import fnmatchcase

from .cases import CaseKind
from .expectations_file import Expectation
from .expectations_stale import entry_uses, judged_all
from .grade.document import FailureRecord, ResultsDocument
from .selection import Selection, split_case_id

__all__ = ["RunFacts", "case_parts", "record_fields", "run_facts", "may_overlap", "compact"]


def case_parts(case_id: str) -> tuple[str, ...]:
    """(pattern, kind) or (pattern, kind, rule) of a case id; () for another shape."""
    try:
        pattern, kind, rule, _ = split_case_id(case_id)
    except ValueError:
        return ()
    return (pattern, kind) if rule is None else (pattern, kind, rule)


def record_fields(record: FailureRecord) -> tuple[str, str, str | None, str | None, str]:
    """pattern, kind, rule, dtype and id of a failure (pattern and kind read off the id where
    the record leaves them empty)."""
    parts = case_parts(record.case_id)
    pattern = record.pattern or (parts[0] if parts else "")
    kind = record.kind or (parts[1] if parts else "")
    return pattern, kind, record.rule, record.dtype, record.case_id


@dataclass
class RunFacts:
    """The facts of one run that placing and compacting entries need."""

    device_id: str
    selection: Selection | None
    complete: bool
    #: The failures no entry expected, by case id (the first occurrence).
    failures: dict[str, FailureRecord]
    #: Case id -> the entry (number in the used file) that decided it, for kept entries.
    decided: dict[str, int]
    #: Case ids judged or skipped under each (pattern,), (pattern, kind), (.., rule) prefix.
    under: dict[tuple[str, ...], set[str]] = field(default_factory=dict)

    def level_complete(self, prefix: tuple[str, ...]) -> bool:
        """Whether the run judged every case it drew under `prefix` (no filter cut it)."""
        chosen = self.selection
        if not self.complete or chosen is None:
            return False
        if chosen.dtypes or chosen.cases or chosen.excludes:
            return False
        if len(prefix) == 1:
            return set(chosen.kinds) == set(CaseKind) and not chosen.rules
        return len(prefix) > 2 or not chosen.rules


def run_facts(document: ResultsDocument, selection: Selection | None,
              kept: Sequence[Expectation]) -> RunFacts:
    """The `RunFacts` of `document`, a run that used a file whose entries `kept` stay."""
    failures: dict[str, FailureRecord] = {}
    for failure in document.unexpected_failures:
        failures.setdefault(failure.case_id, failure)
    numbers = {e.number for e in kept}
    decided = {case: number for number, use in entry_uses(document).items()
               if number in numbers for case in use.cases}
    run = RunFacts(document.device.id, selection, judged_all(document), failures, decided)
    seen = [*(v.case_id for v in document.verdicts), *(s.case_id for s in document.skipped)]
    for case_id in seen:
        parts = case_parts(case_id)
        for depth in range(1, len(parts) + 1):
            run.under.setdefault(parts[:depth], set()).add(case_id)
    return run


def _literal_prefix(glob: str) -> str:
    for at, char in enumerate(glob):
        if char in "*?[":
            return glob[:at]
    return glob


def may_overlap(entry: Expectation, prefix: tuple[str, ...]) -> bool:
    """Whether `entry` may match some case under `prefix` on some device (True when unsure)."""
    if entry.pattern and not any(fnmatchcase(prefix[0], g) for g in entry.pattern):
        return False
    if len(prefix) > 1:
        if entry.kind and prefix[1] not in entry.kind:
            return False
        if entry.rule and prefix[1] == CaseKind.valid.value:
            return False
    if len(prefix) > 2 and entry.rule and not any(fnmatchcase(prefix[2], g)
                                                  for g in entry.rule):
        return False
    text = "/".join(prefix) + "/"
    return not entry.case or any(_literal_prefix(g).startswith(text) or
                                 text.startswith(_literal_prefix(g)) for g in entry.case)


def compact(ids: Sequence[str], members: set[str], run: RunFacts,
            decided_before: Callable[[str], bool], later: Sequence[Expectation]) -> list[str]:
    """`ids` as case globs and ids: a prefix's glob where the run judged every case it drew
    under it and each is one of `members` or decided before this entry, and no entry after
    this one may match a case under it."""
    def fits(prefix: tuple[str, ...]) -> bool:
        return run.level_complete(prefix) and \
            all(c in members or decided_before(c) for c in run.under.get(prefix, ())) and \
            not any(may_overlap(e, prefix) for e in later)

    out: list[str] = []

    def walk(prefix: tuple[str, ...], here: list[str]) -> None:
        if prefix and fits(prefix):
            out.append("/".join(prefix) + "/*")
            return
        deeper: dict[tuple[str, ...], list[str]] = {}
        for case_id in here:
            parts = case_parts(case_id)
            if len(parts) > len(prefix):
                deeper.setdefault(parts[:len(prefix) + 1], []).append(case_id)
            else:
                out.append(case_id)
        for child, below in deeper.items():
            walk(child, below)

    walk((), sorted(set(ids)))
    return out
