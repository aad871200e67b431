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
- how many case ids exist on one side only (the selection or the suite changed between the
  runs).

Cases are matched by id (and, for an id a run holds twice, by occurrence). Every draw of the
suite is seeded from its coordinates, so two runs with the same profile and seed produce the
same ids. The same comparison serves the report's "Changes" section, ``fusionspec diff`` (the
CI gate, `markdown` for a job summary) and ``fusionspec report --baseline``.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass

from . import markdown as md
from .document import Doc
from .legend import StatusInfo, status_info, status_order

__all__ = ["CountChange", "CaseChange", "RunDiff", "diff_runs", "pair_baselines",
           "MAX_LISTED", "markdown"]

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
    """The changes between `baseline_label` (from `baseline_source`) and `run_label`."""

    run_label: str
    baseline_label: str
    baseline_source: str
    note: str
    counts: tuple[CountChange, ...]
    new_failures: tuple[CaseChange, ...]
    new_failures_total: int
    fixed: tuple[CaseChange, ...]
    fixed_total: int
    other: tuple[CaseChange, ...]
    other_total: int
    only_before: int
    only_after: int
    #: Why the newer run cannot vouch for its cases (incomplete, unavailable), if it cannot.
    incomplete: str = ""

    @property
    def regressions(self) -> int:
        """New failures (see the module docstring)."""
        return self.new_failures_total

    @property
    def unchanged(self) -> bool:
        return not (self.counts or self.new_failures_total or self.fixed_total
                    or self.other_total or self.only_before or self.only_after)


def _label(doc: Doc) -> str:
    return f"{doc.text('backend', '?')} on {doc.obj('device').text('id', '?')}"


def _key(doc: Doc) -> tuple[str, str]:
    return doc.text("backend"), doc.obj("device").text("id")


def pair_baselines(runs: Sequence[Doc], baselines: Sequence[Doc],
                   ) -> tuple[list[tuple[Doc, Doc, str]], list[str]]:
    """(run, its baseline, note) pairs, and notes on baselines or runs left without a partner."""
    by_key: dict[tuple[str, str], Doc] = {}
    for candidate in baselines:
        by_key.setdefault(_key(candidate), candidate)
    pairs: list[tuple[Doc, Doc, str]] = []
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


def _verdicts(doc: Doc) -> dict[tuple[str, int], tuple[str, str, str, bool]]:
    """(case id, occurrence) -> (pattern, status, reason, expected to fail). A case id can
    occur twice in one run (the strategies drew the same graph twice); the n-th occurrences of
    two runs are paired."""
    seen: Counter[str] = Counter()
    found = {}
    for v in doc.objects("verdicts"):
        case_id = v.text("case_id")
        seen[case_id] += 1
        found[(case_id, seen[case_id])] = (v.text("pattern"), v.text("status"), v.text("reason"),
                                           bool(v.raw("expected")))
    return found


def _count_changes(before: Doc, after: Doc) -> tuple[CountChange, ...]:
    old, new = before.obj("patterns"), after.obj("patterns")
    changes = []
    for pattern in sorted(set(old.data) | set(new.data)):
        was = old.obj(pattern).counts("counts") if pattern in old.data else {}
        now = new.obj(pattern).counts("counts") if pattern in new.data else {}
        for status in sorted(set(was) | set(now), key=status_order):
            if was.get(status, 0) != now.get(status, 0):
                changes.append(CountChange(pattern, status_info(status), was.get(status, 0),
                                           now.get(status, 0)))
    return tuple(changes)


def diff_runs(run: Doc, baseline: Doc, note: str = "") -> RunDiff:
    """The changes from `baseline` to `run` (see the module docstring)."""
    old, new = _verdicts(baseline), _verdicts(run)
    new_failures: list[CaseChange] = []
    fixed: list[CaseChange] = []
    other: list[CaseChange] = []
    for key, (pattern, status, reason, expected) in new.items():
        after = status_info(status)
        if key not in old:
            if after.failing:
                change = CaseChange(key[0], pattern, None, after, reason, expected)
                (other if expected else new_failures).append(change)
            continue
        before = status_info(old[key][1])
        if before.name == after.name:
            continue
        change = CaseChange(key[0], pattern, before, after, reason or old[key][2], expected)
        if after.failing and not before.failing and not expected:
            new_failures.append(change)
        elif before.failing and not after.failing:
            fixed.append(change)
        else:
            other.append(change)
    only_before = [c for c in old if c not in new]
    for key in only_before:
        pattern, status, reason, _ = old[key]
        if status_info(status).failing:
            fixed.append(CaseChange(key[0], pattern, status_info(status), None,
                                    "the case is no longer generated"))
    incomplete = ""
    if run.text("unavailable"):
        incomplete = f"the run could not start: {run.text('unavailable')}"
    elif run.text("incomplete"):
        incomplete = f"the run is incomplete: {run.text('incomplete')}"
    elif not new:
        incomplete = "the run judged no case, so it shows nothing"
    return RunDiff(_label(run), _label(baseline), baseline.source, note,
                   _count_changes(baseline, run), tuple(new_failures[:MAX_LISTED]),
                   len(new_failures), tuple(fixed[:MAX_LISTED]), len(fixed),
                   tuple(other[:MAX_LISTED]), len(other), len(only_before),
                   sum(1 for c in new if c not in old), incomplete)


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
                 "**incomplete**" if d.incomplete else "no regression")
        lines += [f"### fusionspec: {_md(d.run_label)} — {state}", "",
                  f"Against {_md(d.baseline_label)} ({md.code(d.baseline_source)})."
                  + (f" {_md(d.note)}." if d.note else ""), "",
                  "| new failures | fixed | other changes | only before | only now |",
                  "|---:|---:|---:|---:|---:|",
                  f"| {d.new_failures_total} | {d.fixed_total} | {d.other_total} | "
                  f"{d.only_before} | {d.only_after} |", ""]
        if d.incomplete:
            lines += [f"> {_md(d.incomplete)}", ""]
        for title, cases, total in (("New failures", d.new_failures, d.new_failures_total),
                                    ("Fixed", d.fixed, d.fixed_total),
                                    ("Other status changes", d.other, d.other_total)):
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
