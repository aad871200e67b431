"""What each expectations entry did in a run, and which entries are stale.

A results document cites the entry that decided each case it touched: an expected failure
(``expected`` on the failure), a failure of a status the entry does not expect
(``unexpected_status``), an unexpected pass and a skip (``expectations.unexpected_passes``,
``expectations.skipped``). `entry_uses` gathers these per entry.

An entry is *stale* for a run when the run covers every case the entry can match and none of
them came out as the entry says: a ``fail`` entry under which no case failed, a ``skip`` entry
that skipped nothing. An entry that reaches past the run (some of its cases lie outside the
selection, or it names another device) is not stale: the cases the run did not judge may still
fail. `in_scope` decides that cautiously from the entry's fields and the selection (when it
cannot tell, the entry is out of scope), and only a run that judged every case it drew
(`judged_all`: whole, unsharded, not interrupted) proves anything, so pruning only ever removes
entries the run has proven wrong.

`stale_lines` and `unexpected_pass_note` are how the command line and the pytest plugin report
the entries whose expected failures passed (an error under ``--strict-expectations``): every
such entry, with its passing cases.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from fnmatch import fnmatchcase
from typing import Any

from fusionspec.spec.catalog import CATALOG
from fusionspec.spec.text import clean_text

from .cases import CaseKind
from .expectations_file import Expectation
from .grade.document import CaseRecord, ResultsDocument
from .selection import Selection, case_matches, is_glob, known_rule_ids, split_case_id

__all__ = ["EntryUse", "entry_uses", "in_scope", "stale_entries", "stale_lines",
           "unexpected_pass_note", "judged_all"]

#: How many passing case ids a stale entry's line names before counting the rest.
SHOWN_CASES = 5


@dataclass
class EntryUse:
    """The cases one entry decided in a run, by what became of them."""

    met: list[str] = field(default_factory=list)
    slipped: list[str] = field(default_factory=list)
    passed: list[str] = field(default_factory=list)
    skipped: list[str] = field(default_factory=list)

    @property
    def cases(self) -> list[str]:
        return [*self.met, *self.slipped, *self.passed, *self.skipped]


def _entry_number(cited: Mapping[str, Any] | None) -> int | None:
    """The number of the entry `cited` (an entry's citation, as a record keeps it) names."""
    number = cited.get("entry") if cited is not None else None
    return number if isinstance(number, int) and not isinstance(number, bool) else None


def entry_uses(document: ResultsDocument) -> dict[int, EntryUse]:
    """Entry number (in the file the run used) -> the cases it decided in `document`."""
    uses: dict[int, EntryUse] = {}

    def note(cited: Mapping[str, Any] | None, case_id: str, bucket: str) -> None:
        number = _entry_number(cited)
        if number is not None:
            getattr(uses.setdefault(number, EntryUse()), bucket).append(case_id)

    for failure in document.failures:
        if failure.minimal_of:
            continue  # a shrunk copy of a failure counted already
        note(failure.expected, failure.case_id, "met")
        note(failure.unexpected_status, failure.case_id, "slipped")
    for passed in document.unexpected_passes:
        note(passed.extra, passed.case_id, "passed")
    for skipped in document.skipped:
        note(skipped.extra, skipped.case_id, "skipped")
    return uses


def judged_all(document: ResultsDocument) -> bool:
    """Whether `document` is a whole, unsharded run that judged (or skipped) every case its
    selection drew: only then may a case missing from it be taken as not drawn at all."""
    if document.incomplete or document.unavailable or document.shard:
        return False
    done = len(document.verdicts) + len(document.skipped)
    return document.planned is None or done >= document.planned


def _case_parts(glob: str) -> tuple[str, str]:
    """The pattern and kind parts of a case id or glob (``*`` where it does not say)."""
    try:
        pattern, kind, _, _ = split_case_id(glob)
    except ValueError:
        return "*", "*"
    return pattern, kind


def in_scope(entry: Expectation, selection: Selection, device_id: str) -> bool:
    """Whether every case `entry` can match on `device_id` is one `selection` selects (a
    conservative answer: False where the fields leave it open)."""
    if entry.device and not any(fnmatchcase(device_id, g) for g in entry.device):
        return False
    patterns = [e.id for e in CATALOG
                if (not entry.pattern or any(fnmatchcase(e.id, g) for g in entry.pattern))
                and (not entry.case or any(fnmatchcase(e.id, _case_parts(g)[0])
                                           for g in entry.case))]
    selected = {e.id for e in selection.entries()}
    if not set(patterns) <= selected:
        return False
    kinds = set(entry.kind) or {k.value for k in CaseKind}
    if entry.case:
        kinds &= {k.value for k in CaseKind
                  if any(fnmatchcase(k.value, _case_parts(g)[1]) for g in entry.case)}
    if not kinds <= {k.value for k in selection.kinds}:
        return False
    if selection.rules:
        rules = [r for r in known_rule_ids() if any(fnmatchcase(r, g) for g in entry.rule)]
        if not entry.rule or not all(any(fnmatchcase(r, g) for g in selection.rules)
                                     for r in rules):
            return False
    if selection.dtypes and (not entry.dtype or not set(entry.dtype) <= set(selection.dtypes)):
        return False
    if selection.cases or selection.excludes:
        # Only an entry of exact case ids can be checked against case globs.
        if not entry.case or any(is_glob(c) for c in entry.case):
            return False
        if selection.cases and not all(any(case_matches(c, g) for g in selection.cases)
                                       for c in entry.case):
            return False
        if any(case_matches(c, g) for c in entry.case for g in selection.excludes):
            return False
    return True


def stale_entries(entries: Sequence[Expectation], document: ResultsDocument,
                  selection: Selection | None) -> list[Expectation]:
    """The entries of `entries` (the file the run of `document` used) that the run proved
    stale (see the module doc); none unless the run judged all it drew (`judged_all`) and its
    `selection` is known."""
    if selection is None or not judged_all(document):
        return []
    uses = entry_uses(document)
    device_id = document.device.id
    stale = []
    for entry in entries:
        use = uses.get(entry.number, EntryUse())
        # A failure of another status still shows the cases fail: that entry's verdicts
        # need narrowing, its reason is not to be dropped.
        came_true = bool(use.skipped) if entry.status == "skip" else \
            bool(use.met or use.slipped)
        if not came_true and in_scope(entry, selection, device_id):
            stale.append(entry)
    return stale


def _plural(count: int, one: str, many: str) -> str:
    return f"{count} {one if count == 1 else many}"


def stale_lines(unexpected_passes: Iterable[CaseRecord], strict: bool) -> list[str]:
    """Summary lines for the entries whose cases passed (a results document's
    ``expectations.unexpected_passes``): one for every such entry (an error in strict mode, a
    note otherwise), its first passing case named, then the others."""
    by_entry: dict[object, list[CaseRecord]] = {}
    for passed in unexpected_passes:
        by_entry.setdefault(passed.extra.get("entry"), []).append(passed)
    word = "error" if strict else "note"
    lines = []
    for entry, passes in by_entry.items():
        first = passes[0]
        reason = clean_text(str(first.extra.get("reason", "")), 300)
        lines.append(f"  {word}: {first.case_id} passes, but expectations entry {entry} "
                     f"expects it to fail ({reason}); remove or narrow the entry")
        more = [p.case_id for p in passes[1:]]
        if more:
            shown = ", ".join(more[:SHOWN_CASES])
            rest = f" and {len(more) - SHOWN_CASES} more" if len(more) > SHOWN_CASES else ""
            lines.append(f"    entry {entry} also expects "
                         f"{_plural(len(more), 'more case', 'more cases')} to fail, which "
                         f"{'passes' if len(more) == 1 else 'pass'}: {shown}{rest}")
    return lines


def unexpected_pass_note(unexpected_passes: Sequence[CaseRecord], strict: bool) -> str:
    """What a run's verdict line adds when cases expected to fail passed ('' when none)."""
    if not unexpected_passes:
        return ""
    entries = len({p.extra.get("entry") for p in unexpected_passes})
    what = _plural(len(unexpected_passes), "unexpected pass", "unexpected passes")
    return (f"; {what} ({_plural(entries, 'stale entry', 'stale entries')}"
            f"{', strict' if strict else ''})")
