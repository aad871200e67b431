"""What changed since a previous run: the report's diff against one or more baseline documents.

Each run is compared with the baseline of the same backend and device; when exactly one run and
one baseline are given they are compared even if those differ (with a note saying so). For each
pair the diff lists:

- per pattern and status, the counts before and after (only those that changed);
- *new failures* (the regressions): cases that fail now, that the run's expectations file
  does not expect to fail, and that passed, or did not exist, before;
- *fixed*: cases that failed before and no longer fail;
- other status changes (one failing status for another, pass to extension, a new failure the
  expectations file expects ...);
- *dropped*: cases that failed before and were not run now (neither fixed nor failing: the
  newer run cannot say);
- how many case ids exist on one side only (the selection or the suite changed between the
  runs), and, when the newer run left out cases of the baseline, why: the selections (profile,
  seed, shard, patterns ...) the two documents record, side by side. A run that covers less
  than its baseline cannot vouch for what it left out, so the gate treats it as a failure of
  its own (*narrowed*) unless the caller accepts it explicitly.

Cases are matched by id (and, for an id a run holds twice, by occurrence). Every draw of the
suite is seeded from its coordinates, so two runs with the same profile and seed produce the
same ids. The same comparison serves the report's "Changes" section, ``fusionspec diff`` (the
CI gate, `markdown` for a job summary) and ``fusionspec report --baseline``.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from . import markdown as md
from .labels import run_name
from .legend import StatusInfo, status_info, status_order
from .runs import RunInput

__all__ = ["CountChange", "CaseChange", "RunDiff", "diff_runs", "pair_baselines",
           "MAX_LISTED", "markdown", "narrowing"]

#: How many cases each list of the diff shows (the rest are counted).
MAX_LISTED = 60


@dataclass(frozen=True)
class CountChange:
    pattern: str
    status: StatusInfo
    before: int
    after: int

    @property
    def delta(self) -> str:
        return f"{self.after - self.before:+d}"


@dataclass(frozen=True)
class CaseChange:
    case_id: str
    pattern: str
    before: StatusInfo | None
    after: StatusInfo | None
    reason: str
    #: The expectations file of the newer run expects this failure.
    expected: bool = False


@dataclass(frozen=True)
class RunDiff:
    """The changes between `baseline_label` (from `baseline_source`) and `run_label`. The case
    lists are whole; whoever shows them caps them (`MAX_LISTED`)."""

    run_label: str
    baseline_label: str
    baseline_source: str
    note: str
    counts: tuple[CountChange, ...]
    new_failures: tuple[CaseChange, ...]
    fixed: tuple[CaseChange, ...]
    other: tuple[CaseChange, ...]
    #: Cases that failed in the baseline and were not run now.
    dropped: tuple[CaseChange, ...]
    only_before: int
    only_after: int
    #: Why the newer run cannot vouch for its cases (incomplete, unavailable), if it cannot.
    incomplete: str = ""
    #: Why the newer run covers less than the baseline (see `narrowing`), if it does.
    narrowed: str = ""

    @property
    def new_failures_total(self) -> int:
        return len(self.new_failures)

    @property
    def fixed_total(self) -> int:
        return len(self.fixed)

    @property
    def other_total(self) -> int:
        return len(self.other)

    @property
    def dropped_total(self) -> int:
        return len(self.dropped)

    @property
    def regressions(self) -> int:
        """New failures (see the module docstring)."""
        return self.new_failures_total

    @property
    def unchanged(self) -> bool:
        return not (self.counts or self.new_failures_total or self.fixed_total
                    or self.other_total or self.only_before or self.only_after)


def _label(run: RunInput) -> str:
    return run_name(run.document.backend, run.document.device.id)


def _key(run: RunInput) -> tuple[str, str]:
    return run.document.backend, run.document.device.id


def pair_baselines(runs: Sequence[RunInput], baselines: Sequence[RunInput],
                   ) -> tuple[list[tuple[RunInput, RunInput, str]], list[str]]:
    """(run, its baseline, note) pairs, and notes on baselines or runs left without a partner."""
    by_key: dict[tuple[str, str], RunInput] = {}
    for candidate in baselines:
        by_key.setdefault(_key(candidate), candidate)
    pairs: list[tuple[RunInput, RunInput, str]] = []
    used: set[int] = set()
    notes: list[str] = []
    for run in runs:
        match = by_key.get(_key(run))
        if match is not None:
            pairs.append((run, match, ""))
            used.add(id(match))
    if not pairs and len(runs) == 1 and len(baselines) == 1:
        run, base = runs[0], baselines[0]
        pairs.append((run, base, f"the baseline is {_label(base)} and this run is "
                                 f"{_label(run)}; compared anyway, as the only pair given"))
        used.add(id(base))
    paired_runs = {id(run) for run, _, _ in pairs}
    notes += [f"no baseline for {_label(r)}" for r in runs if id(r) not in paired_runs]
    notes += [f"baseline {_label(b)} ({b.source}) matches no run" for b in baselines
              if id(b) not in used]
    return pairs, notes


def _verdicts(run: RunInput) -> dict[str, tuple[str, str, str, bool]]:
    """case id -> (pattern, status, reason, expected to fail). A case id is judged once per
    run; should a document hold one twice, its first verdict stands (a merge of overlapping
    shards, say), so that no case is counted twice."""
    found: dict[str, tuple[str, str, str, bool]] = {}
    for v in run.document.verdicts:
        found.setdefault(v.case_id, (v.pattern, v.status, v.reason, bool(v.expected)))
    return found


#: The recorded facts of a run that decide which cases it draws, as `narrowing` names them.
_DRAWN_BY = (("profile", "profile"), ("seed", "seed"), ("shard", "shard"))


def _shown(value: object) -> str:
    if value in (None, "", [], {}):
        return "all" if value is not None else "none"
    if isinstance(value, list):
        return ",".join(str(v) for v in value)
    return str(value)


def narrowing(before: RunInput, after: RunInput, left_out: int) -> str:
    """Why `after` covers less than `before`, or "" when it covers every case `before` ran.
    `left_out` is the number of the baseline's case ids `after` did not run; the recorded
    selections say why (a narrower --patterns, a shard, another profile or seed, a newer suite
    that no longer draws a case)."""
    if not left_out:
        return ""
    was, now = before.document, after.document
    differences = [f"{label} {_shown(getattr(was, key))} -> {_shown(getattr(now, key))}"
                   for key, label in _DRAWN_BY if getattr(was, key) != getattr(now, key)]
    old, new = was.selection or {}, now.selection or {}
    for key in sorted(set(old) | set(new)):
        if old.get(key, []) != new.get(key, []):
            differences.append(f"{key} {_shown(old.get(key, []))} -> "
                               f"{_shown(new.get(key, []))}")
    if was.suite_version != now.suite_version:
        differences.append(f"suite {was.suite_version or '?'} -> {now.suite_version or '?'}")
    why = "; ".join(differences) if differences else "the recorded selections are the same"
    return (f"this run left out {left_out} case(s) the baseline ran ({why}): it cannot vouch "
            "for them")


def _count_changes(before: RunInput, after: RunInput) -> tuple[CountChange, ...]:
    old, new = before.document.patterns, after.document.patterns
    changes = []
    for pattern in sorted(set(old) | set(new)):
        was = old[pattern].counts if pattern in old else {}
        now = new[pattern].counts if pattern in new else {}
        for status in sorted(set(was) | set(now), key=status_order):
            if was.get(status, 0) != now.get(status, 0):
                changes.append(CountChange(pattern, status_info(status), was.get(status, 0),
                                           now.get(status, 0)))
    return tuple(changes)


def diff_runs(run: RunInput, baseline: RunInput, note: str = "") -> RunDiff:
    """The changes from `baseline` to `run` (see the module docstring)."""
    old, new = _verdicts(baseline), _verdicts(run)
    new_failures: list[CaseChange] = []
    fixed: list[CaseChange] = []
    other: list[CaseChange] = []
    for case_id, (pattern, status, reason, expected) in new.items():
        after = status_info(status)
        if case_id not in old:
            if after.failing:
                change = CaseChange(case_id, pattern, None, after, reason, expected)
                (other if expected else new_failures).append(change)
            continue
        before = status_info(old[case_id][1])
        if before.name == after.name:
            continue
        change = CaseChange(case_id, pattern, before, after, reason or old[case_id][2], expected)
        if after.failing and not before.failing and not expected:
            new_failures.append(change)
        elif before.failing and not after.failing:
            fixed.append(change)
        else:
            other.append(change)
    only_before = [c for c in old if c not in new]
    dropped = [CaseChange(c, old[c][0], status_info(old[c][1]), None, "not run this time")
               for c in only_before if status_info(old[c][1]).failing]
    incomplete = ""
    if run.document.unavailable:
        incomplete = f"the run could not start: {run.document.unavailable}"
    elif run.document.incomplete:
        incomplete = f"the run is incomplete: {run.document.incomplete}"
    elif not new:
        incomplete = "the run judged no case, so it shows nothing"
    return RunDiff(_label(run), _label(baseline), baseline.source, note,
                   _count_changes(baseline, run), tuple(new_failures), tuple(fixed),
                   tuple(other), tuple(dropped), len(only_before),
                   sum(1 for c in new if c not in old), incomplete,
                   narrowing(baseline, run, len(only_before)))


def _md(text: str) -> str:
    """`text` fit for a Markdown table cell: escaped (`fusionspec.reports.markdown`), one line,
    at most 300 characters."""
    return md.text(" ".join(text.split())[:300])


def _status(info: StatusInfo | None) -> str:
    # A document may name a status fusionspec does not know: it is text like any other.
    return _md(info.name) if info is not None else "—"


def markdown(diffs: Sequence[RunDiff], notes: Sequence[str] = ()) -> str:
    """The comparison as Markdown (a CI job summary: ``$GITHUB_STEP_SUMMARY``)."""
    lines: list[str] = []
    for d in diffs:
        state = ("**regression**" if d.regressions else
                 "**incomplete**" if d.incomplete else
                 "**narrowed**" if d.narrowed else "no regression")
        lines += [f"### fusionspec: {_md(d.run_label)} — {state}", "",
                  f"Against {_md(d.baseline_label)} ({md.code(d.baseline_source)})."
                  + (f" {_md(d.note)}." if d.note else ""), "",
                  "| new failures | fixed | other changes | only before | only now |",
                  "|---:|---:|---:|---:|---:|",
                  f"| {d.new_failures_total} | {d.fixed_total} | {d.other_total} | "
                  f"{d.only_before} | {d.only_after} |", ""]
        if d.incomplete:
            lines += [f"> {_md(d.incomplete)}", ""]
        if d.narrowed:
            lines += [f"> **narrowed**: {_md(d.narrowed)}", ""]
        for title, every, total in (("New failures", d.new_failures, d.new_failures_total),
                                    ("Fixed", d.fixed, d.fixed_total),
                                    ("Other status changes", d.other, d.other_total),
                                    ("Failing before, not run now", d.dropped,
                                     d.dropped_total)):
            cases = every[:MAX_LISTED]
            if not cases:
                continue
            lines += [f"<details{' open' if title == 'New failures' else ''}><summary>"
                      f"{title} ({total})</summary>", "",
                      "| case | before | now | reason |", "|---|---|---|---|"]
            for c in cases:
                now = _status(c.after) + (" (expected)" if c.expected else "")
                lines.append(f"| {md.cell_code(c.case_id)} | {_status(c.before)} | {now} | "
                             f"{_md(c.reason)} |")
            if total > len(cases):
                lines.append(f"| … {total - len(cases)} more | | | |")
            lines += ["", "</details>", ""]
    lines += [f"> {_md(note)}" for note in notes]
    return "\n".join(lines).rstrip() + "\n"
