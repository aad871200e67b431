"""``fusionspec diff``: the regression gate between two results documents.

    fusionspec diff baseline/results.json results/conformance/mine-gpu0/results.json
    fusionspec diff OLD.json NEW.json --markdown "$GITHUB_STEP_SUMMARY"

Compares the cases of two runs by their stable case ids (`fusionspec.reports.diff`, the same
comparison as the report's "Changes" section) and prints the new failures, the fixed cases and
the other status changes. A new failure is a case that fails in NEW, that NEW's expectations
file does not expect to fail, and that did not fail in OLD (or did not exist there).

Exit codes: 0 when NEW has no new failure, 1 when it has (or NEW is incomplete or could not run,
so it cannot vouch for its cases, or NEW left out cases that OLD ran: a narrower --patterns, a
shard, another profile; ``--allow-narrower`` accepts that on purpose), 2 for a usage error
(a document that cannot be read: not a results document, or one with a field the suite does not
know, such as a case status ``"PASS"``, named by its JSON path).
``--markdown FILE`` appends the comparison as Markdown (GitHub Actions shows
``$GITHUB_STEP_SUMMARY`` on the run's page).

Given two performance documents (``fusionspec bench``), it is the perf gate instead
(`fusionspec.cli.perf_diff`).
"""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import TYPE_CHECKING

from fusionspec.conformance.grade.document import ResultsFormatError
from fusionspec.conformance.grade.results import load_document
from fusionspec.spec.text import clean_text

from .output import UsageError, check_paths, emit

if TYPE_CHECKING:
    from fusionspec.reports.runs import RunInput

HELP = "compare two results documents; exit 1 on new failures (a CI gate)"

#: How many cases of each list the text output shows.
SHOWN = 30


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("old", type=Path, metavar="OLD.json", help="the baseline run")
    parser.add_argument("new", type=Path, metavar="NEW.json", help="the run to check")
    parser.add_argument("--markdown", type=Path, metavar="FILE",
                        help="append the comparison as Markdown to FILE (e.g. "
                             "$GITHUB_STEP_SUMMARY)")
    parser.add_argument("--threshold", type=float, metavar="FRACTION",
                        help="performance documents only: the slowdown beyond the confidence "
                             "intervals that counts as a regression (default 0.1)")
    parser.add_argument("--allow-narrower", action="store_true",
                        help="pass even when NEW left out cases (or workloads) OLD ran (a "
                             "deliberately narrower selection; the cases left out are still "
                             "listed)")
    parser.add_argument("--json", action="store_true", help="machine-readable output")


def _load(path: Path) -> RunInput:
    """The results document at `path`; a `UsageError` (exit 2, never "a regression") for one
    that cannot be read, naming the file and the field."""
    from fusionspec.reports.runs import RunInput

    try:
        return RunInput(load_document(path), path)
    except ResultsFormatError as exc:
        raise UsageError(str(exc)) from None


def run(args: argparse.Namespace) -> int:
    from fusionspec.conformance.perf.document import is_perf_document
    from fusionspec.reports.diff import diff_runs, markdown, pair_baselines

    if is_perf_document(args.old) or is_perf_document(args.new):
        from .perf_diff import run_perf

        check_paths({"OLD": args.old, "NEW": args.new}, {})
        return run_perf(args)

    check_paths({"OLD": args.old, "NEW": args.new}, {"--markdown": args.markdown})
    old = _load(args.old)
    new = _load(args.new)
    pairs, notes = pair_baselines([new], [old])
    (run_doc, base, note), = pairs  # one run and one baseline always pair
    d = diff_runs(run_doc, base, note)
    lines = [f"{d.run_label} against {d.baseline_label}: {d.new_failures_total} new "
             f"failure(s), {d.fixed_total} fixed, {d.other_total} other change(s), "
             f"{d.only_before} case(s) only in OLD, {d.only_after} only in NEW"]
    if d.note:
        lines.append(f"  note: {d.note}")
    for title, cases, total in (("new failure", d.new_failures, d.new_failures_total),
                                ("fixed", d.fixed, d.fixed_total),
                                ("changed", d.other, d.other_total),
                                ("failing in OLD, not run", d.dropped, d.dropped_total)):
        for c in cases[:SHOWN]:
            before = c.before.name if c.before else "absent"
            after = (c.after.name if c.after else "absent") + (" (expected)" if c.expected
                                                               else "")
            lines.append(f"  {title}: {c.case_id}: {before} -> {after}"
                         + (f": {c.reason}" if c.reason else ""))
        if total > SHOWN:
            lines.append(f"  ... {total - SHOWN} more {title} case(s)")
    if d.incomplete:
        lines.append(f"  {d.incomplete}")
    narrowed = bool(d.narrowed) and not args.allow_narrower
    if d.narrowed:
        lines.append(f"  narrowed: {d.narrowed}"
                     + (" (accepted: --allow-narrower)" if args.allow_narrower else
                        "; pass --allow-narrower if that is meant"))
    failed = bool(d.regressions or d.incomplete or narrowed)
    lines.append("REGRESSION" if d.regressions else "INCOMPLETE" if d.incomplete
                 else "NARROWED" if narrowed else "OK: no regression")
    if args.markdown is not None:
        args.markdown.parent.mkdir(parents=True, exist_ok=True)
        with args.markdown.open("a", encoding="utf-8") as out:
            out.write(markdown([d], notes))
    emit(args, "\n".join(clean_text(line) for line in lines), {
        "ok": not failed, "regressions": d.regressions, "incomplete": d.incomplete,
        "narrowed": d.narrowed, "narrower_allowed": bool(args.allow_narrower),
        "new_failures": [c.case_id for c in d.new_failures], "fixed": [c.case_id for c in d.fixed],
        "dropped": [c.case_id for c in d.dropped],
        "changed": [{"case_id": c.case_id, "before": c.before.name if c.before else None,
                     "after": c.after.name if c.after else None, "expected": c.expected}
                    for c in d.other],
        "totals": {"new_failures": d.new_failures_total, "fixed": d.fixed_total,
                   "changed": d.other_total, "dropped": d.dropped_total,
                   "only_old": d.only_before,
                   "only_new": d.only_after}})
    return 1 if failed else 0
