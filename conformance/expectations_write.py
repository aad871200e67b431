"""Writing an expectations file from a run (``--write-expectations FILE``).

`regenerate` takes the run's results document, the expectations file the run used (if any)
and a grouping of the run's failures by cause (`FailureGroup`: the command line groups them as
the findings report does; the grouping is given, not computed here, since findings are a layer
above this one). It writes:

- every entry of the file the run used, unchanged and in its order (reason and link
  included): an entry whose cases this run did not judge is kept as it is, and so is one that
  still matches its failures;
- with ``prune``, less the entries the run proved stale (`expectations_stale.stale_entries`);
- one ``fail`` entry per cause among the failures no entry expected, with the cause's title as
  its ``reason`` (to be reworded) and in ``finding``. Where an entry of the file already stands
  for that cause (its ``finding``), the new cases are added to it instead. Its cases are
  written compactly: ``<pattern>/*``, ``<pattern>/<kind>/*`` or ``<pattern>/<kind>/<rule>/*``
  where the run judged every case it drew there and each of them is this cause's (or already
  decided by an earlier entry), case ids elsewhere.

New entries go after the kept ones, so they never change what a kept entry decides. A failure
whose status an entry's ``verdicts`` did not list is the exception: the entry for it goes just
before that entry (on the same devices), or it could never take effect. The text is read back
and every failure of the run checked against it; a failure the file would still not expect is
reported (`Written.uncovered`), never silently dropped.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from fnmatch import fnmatchcase
from pathlib import Path
from typing import Any

from .expectations_compact import RunFacts, compact, record_fields, run_facts
from .expectations_file import (
    Expectation,
    Expectations,
    ExpectationsError,
    entry_text,
    render_toml,
)
from .expectations_stale import entry_uses, judged_all, stale_entries
from .grade.document import DeviceRecord, FailureRecord, ResultsDocument
from .outputs import same_file
from .selection import Selection

__all__ = ["FailureGroup", "Grouper", "Written", "regenerate", "expectations_toml",
           "groups_by_pattern_and_status", "check_write_options", "check_target"]

@dataclass(frozen=True)
class FailureGroup:
    """Failing cases one cause explains; `title` names the cause."""

    title: str
    case_ids: tuple[str, ...]


#: From a results document (its ``failures`` the ones no entry expects), the failures grouped.
Grouper = Callable[[ResultsDocument], Sequence[FailureGroup]]


def groups_by_pattern_and_status(document: ResultsDocument) -> list[FailureGroup]:
    """A grouping for where the findings' is not at hand: one group per pattern and status."""
    groups: dict[tuple[str, str], list[str]] = {}
    for failure in document.failures:
        groups.setdefault((failure.status, failure.pattern), []).append(failure.case_id)
    return [FailureGroup(f"{status} in {pattern}", tuple(ids))
            for (status, pattern), ids in groups.items()]


@dataclass(frozen=True)
class Written:
    """A written file's text and what went into it (entry numbers are the used file's)."""

    text: str
    entries: int
    added: int = 0
    extended: int = 0
    pruned: tuple[int, ...] = ()
    newly_expected: int = 0
    uncovered: tuple[str, ...] = ()
    note: str = ""

    def summary(self, path: str | Path) -> str:
        """The one line a run prints about the file it wrote."""
        pruned = (f"; {len(self.pruned)} stale removed (entr"
                  f"{'y' if len(self.pruned) == 1 else 'ies'} "
                  f"{', '.join(map(str, self.pruned))})" if self.pruned else "")
        line = (f"expectations: {path} ({self.entries} entries: {self.added} new, "
                f"{self.extended} extended{pruned}; {self.newly_expected} failure(s) newly "
                "expected)")
        if self.note:
            line += f"; {self.note}"
        if self.uncovered:
            line += (f"; {len(self.uncovered)} failure(s) it still does not expect: "
                     f"{', '.join(self.uncovered[:5])}")
        return line


def _same_file(a: str | Path, b: str | Path) -> bool:
    return same_file(a, b)


def check_target(target: Path, inputs: Mapping[str, str | Path | None]) -> None:
    """Refuse to write the file over one of `inputs` (name -> path) with an ExpectationsError."""
    for name, path in inputs.items():
        if path is not None and _same_file(target, path):
            raise ExpectationsError(f"--write-expectations {target} is also {name}; write "
                                    "another file (and review the difference before replacing "
                                    "the one in use)")


def check_write_options(used: Expectations | None, target: Path | None, prune: bool,
                        sharded: bool) -> None:
    """The expectations options that cannot go together, as one ExpectationsError."""
    if target is not None and used is not None:
        check_target(target, {"the --expectations file": used.source})
    if not prune:
        return
    if target is None:
        raise ExpectationsError("--prune-expectations leaves stale entries out of the file "
                                "--write-expectations writes: give --write-expectations FILE")
    if used is None:
        raise ExpectationsError("--prune-expectations removes stale entries of the file the "
                                "run uses: give --expectations FILE")
    if sharded:
        raise ExpectationsError("--prune-expectations needs the whole selection (one shard "
                                "cannot tell a stale entry from one whose cases are in another "
                                "shard): prune from an unsharded run")


# -- the file ---------------------------------------------------------------------------------

@dataclass
class _Slot:
    """One entry of the file being written: `table` as written, `old` the entry of the used
    file it comes from (None for a new one)."""

    table: dict[str, Any]
    old: Expectation | None = None
    before: list[dict[str, Any]] = field(default_factory=list)


def _one_or_list(values: Sequence[str]) -> str | list[str]:
    return values[0] if len(values) == 1 else list(values)


def _new_table(group: FailureGroup, cases: list[str], statuses: Sequence[str],
               device: Sequence[str] = ()) -> dict[str, Any]:
    table: dict[str, Any] = {"status": "fail", "case": _one_or_list(cases)}
    if device:
        table["device"] = _one_or_list(device)
    title = entry_text(group.title)  # as reading the file back keeps it
    table.update(verdicts=_one_or_list(sorted(set(statuses))), reason=title, finding=title)
    return table


def _extendable(entry: Expectation, title: str) -> bool:
    """An entry written for the cause `title` that only lists cases (so adding cases to it
    makes it match them)."""
    return entry.status == "fail" and entry.finding == entry_text(title) and \
        bool(entry.case) and not any((entry.pattern, entry.kind, entry.rule, entry.dtype,
                                      entry.device))


def _matches(entry: Expectation, record: FailureRecord, device_id: str | None) -> bool:
    pattern, kind, rule, dtype, case_id = record_fields(record)
    return entry.matches_fields(pattern, kind, rule, dtype, case_id, device_id)


def _extend(slot: _Slot, ids: list[str], run: RunFacts,
            slots: Sequence[_Slot], met: Sequence[str]) -> list[str]:
    """Add what of `ids` can go into `slot`'s entry; the ids that cannot (an entry after it
    may match them on another device) are returned."""
    entry = slot.old
    assert entry is not None
    later = [s.old for s in slots[slots.index(slot) + 1:] if s.old is not None]
    fits = [c for c in ids if not any(_matches(e, run.failures[c], None) for e in later)]
    if not fits:
        return ids
    matchers = compact(fits, {*fits, *met}, run,
                       lambda c: run.decided.get(c, entry.number + 1) <= entry.number, later)
    globs = [m for m in matchers if m.endswith("/*")]
    cases = [c for c in entry.case if not any(fnmatchcase(c, g) for g in globs)]
    slot.table["case"] = _one_or_list([*cases, *(m for m in matchers if m not in cases)])
    if entry.verdicts:
        statuses = {run.failures[c].status for c in fits}
        slot.table["verdicts"] = _one_or_list(sorted({*entry.verdicts, *statuses}))
    return [c for c in ids if c not in fits]


def regenerate(document: ResultsDocument, group: Grouper, *, used: Expectations | None,
               selection: Selection | None, prune: bool = False, title: str = "") -> Written:
    """The expectations file for the run of `document` (see the module doc). `used` is the
    file the run used; `selection` what it selected (None: unknown, so nothing is written as a
    glob and nothing pruned)."""
    section = document.expectations
    if used is not None and section is not None and section.sha256 and \
            section.sha256 != used.sha256:
        raise ExpectationsError(f"{used.source} is not the expectations file this run used")
    entries = used.entries if used is not None else ()
    note = ""
    stale = stale_entries(entries, document, selection) if prune else []
    if prune and not judged_all(document):
        note = "stale entries not removed: the run did not judge every case it drew"
    kept = [e for e in entries if e not in stale]
    run = run_facts(document, selection, kept)
    slots = [_Slot(e.table(), e) for e in kept]
    by_number = {e.number: s for e, s in zip(kept, slots)}
    uses = entry_uses(document)
    # The grouper sees the failures no entry expected, and nothing else a cause may cover.
    unexpected = replace(document, failures=list(run.failures.values()), extensions=[],
                         limitations=[])
    appended: list[dict[str, Any]] = []
    extended: set[int] = set()
    for found in group(unexpected):
        ids = list(dict.fromkeys(c for c in found.case_ids if c in run.failures))
        slipped: dict[int, list[str]] = {}
        fresh = []
        for case_id in ids:
            past = (run.failures[case_id].unexpected_status or {}).get("entry")
            if past in by_number:
                slipped.setdefault(past, []).append(case_id)
            else:
                fresh.append(case_id)
        for number, cases in slipped.items():
            # Before the entry they slipped past, on its devices: it decides nothing else.
            target = by_number[number]
            statuses = [run.failures[c].status for c in cases]
            assert target.old is not None
            target.before.append(_new_table(found, sorted(cases), statuses, target.old.device))
        home = next((s for s in slots if s.old is not None and _extendable(s.old, found.title)),
                    None)
        if fresh and home is not None and home.old is not None:
            use = uses.get(home.old.number)
            left = _extend(home, fresh, run, slots, use.met if use is not None else [])
            if len(left) < len(fresh):
                extended.add(home.old.number)
            fresh = left
        if fresh:
            cases = compact(fresh, set(fresh), run, lambda c: c in run.decided, ())
            statuses = [run.failures[c].status for c in fresh]
            appended.append(_new_table(found, cases, statuses))
    tables = [t for s in slots for t in (*s.before, s.table)] + appended
    text = render_toml(tables, title)
    written = Expectations.parse(text, "the written expectations")
    uncovered = tuple(c for c, r in run.failures.items() if not _expects(written, r, run))
    added = len(tables) - len(slots)
    return Written(text, len(tables), added, len(extended), tuple(e.number for e in stale),
                   len(run.failures) - len(uncovered), uncovered, note)


def _expects(written: Expectations, record: FailureRecord, run: RunFacts) -> bool:
    first = next((e for e in written.entries if _matches(e, record, run.device_id)), None)
    return first is not None and first.status == "fail" and first.expects(record.status)


def expectations_toml(failures: Sequence[FailureRecord], keep: Sequence[Expectation] = (), *,
                      title: str = "", group: Grouper | None = None) -> str:
    """A file expecting every failure of `failures` (a results document's), one entry per
    group of `group` (by default `groups_by_pattern_and_status`), after the entries of `keep`
    as they are."""
    # Expected or not in the run they come from, each is to be expected by the file written;
    # no entry written names a device, so the document needs none.
    document = ResultsDocument("", DeviceRecord(""), failures=[
        replace(f, expected=None, unexpected_status=None) for f in failures])
    used = Expectations("", "", tuple(replace(e, number=n) for n, e in enumerate(keep, 1)))
    return regenerate(document, group or groups_by_pattern_and_status, used=used,
                      selection=None, title=title).text
