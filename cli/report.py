"""``fusionspec report``: the HTML compliance report from one or more results documents.

    fusionspec report results/conformance/*/results.json -o reports/out/index.html
    fusionspec report new/results.json --baseline old/results.json

Each results document (``fusionspec conform --out DIR`` writes ``DIR/results.json``) becomes a
column of the report: several backends and devices side by side. Performance documents
(``fusionspec bench`` writes ``perf.json``; recognised by their ``format``) may be given among
them, or alone: they make the report's performance section, fused against op by op per pattern
and a roofline chart per backend and device. ``--baseline`` adds what
changed since an earlier run (new failures, fixed cases: the comparison ``fusionspec diff``
makes). The report is one self-contained HTML file; failure drill-downs read the failure folders
next to each results file.

Exit codes: 0 once the page is written, whatever the runs' verdicts (the report is wanted most
when a run failed); with ``--fail-on-failures``, 1 when a run does not PASS (FAIL, INCOMPLETE,
UNAVAILABLE or EMPTY); with ``--fail-on-regressions``, 1 when a run has new failures against
its baseline. ``--json`` says ``"ok": true`` only when every run passes and no run regressed.

Documents are read with `load_results`, so a missing file or one of another schema is a typed
error naming it. The grammar items each pattern must cover come from the suite's strategies
(`coverage_items`) and the coverage model (`all_items`: the value classes, optional ports and
ranks the op schemas allow each op of the pattern, the tensor value classes, the dtype row x
attribute pairs and the ill-formed settings) and are handed to the report as data; where the
strategies cannot be imported (hypothesis, of the ``conformance`` extra, is not installed) the
report shows the coverage recorded without the required items.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from typing import Any

from fusionspec.conformance.grade.results import load_results
from fusionspec.conformance.perf.document import is_perf_document, load_perf
from fusionspec.spec.catalog import CATALOG
from fusionspec.spec.text import clean_json

from .output import UsageError, check_paths, emit

HELP = "render the HTML compliance report from results documents"

DEFAULT_OUT = Path("reports/out/index.html")


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("results", nargs="+", type=Path, metavar="RESULTS.json",
                        help="results documents, one column each, and performance documents "
                        "(perf.json of fusionspec bench)")
    parser.add_argument("-o", "--out", type=Path, default=DEFAULT_OUT,
                        help=f"the HTML file to write (default: {DEFAULT_OUT})")
    parser.add_argument("--baseline", type=Path, action="append", default=[],
                        metavar="OLD.json", help="an earlier results document to diff against "
                        "(repeat for several backends/devices)")
    parser.add_argument("--drilldowns", type=int, default=None, metavar="N",
                        help="failures drilled down per pattern and run (default: 8)")
    parser.add_argument("--fail-on-failures", action="store_true",
                        help="exit 1 when a run does not PASS")
    parser.add_argument("--fail-on-regressions", action="store_true",
                        help="exit 1 when a run has new failures against its --baseline")
    parser.add_argument("--mutation", type=Path, metavar="FILE",
                        help="a mutation-score document (results/mutation.json, written by "
                             "nox -s mutation) to show in the report")
    parser.add_argument("--json", action="store_true", help="machine-readable summary")


def run(args: argparse.Namespace) -> int:
    from fusionspec.reports.model import DEFAULT_DRILLDOWNS, build_report
    from fusionspec.reports.mutation import mutation_view
    from fusionspec.reports.perf import perf_section
    from fusionspec.reports.render import write
    from fusionspec.reports.runs import RunInput

    check_paths({**{f"RESULTS[{i}]": p for i, p in enumerate(args.results)},
                 **{f"--baseline[{i}]": p for i, p in enumerate(args.baseline)},
                 "--mutation": args.mutation},
                {"--out": args.out})
    perf_paths = [p for p in args.results if is_perf_document(p)]
    runs = [RunInput(load_results(path), path) for path in args.results
            if path not in perf_paths]
    perf = None
    if perf_paths:
        perf = perf_section([load_perf(p) for p in perf_paths], [str(p) for p in perf_paths])
    baselines = [RunInput(load_results(path), path) for path in args.baseline]
    required = _required()
    mutation = None
    if args.mutation is not None:
        mutation = mutation_view(_read_json(args.mutation), str(args.mutation))
    report = build_report(runs, baselines=baselines, required=required, mutation=mutation,
                          max_drilldowns=DEFAULT_DRILLDOWNS if args.drilldowns is None
                          else args.drilldowns, perf=perf, methods=_methods())
    written = write(report, args.out)
    if required is None:
        print("fusionspec report: hypothesis is not installed, so the coverage charts show what "
              "was exercised but not what is required", file=sys.stderr)
    shown = sum(len(rf.views) for p in report.patterns for rf in p.failures)
    lines = [f"{run.verdict}: {run.backend} on {run.device_id}: {run.summary}"
             for run in report.runs]
    regressions = sum(d.regressions for d in report.diffs)
    for d in report.diffs:
        if d.regressions:
            lines.append(f"REGRESSION: {d.run_label}: {d.regressions} new failure(s) against "
                         f"{d.baseline_source}")
    if perf is not None:
        lines += [f"performance: {r.label}: " + (", ".join(f"{n} {v}" for v, _, n in r.counts)
                                                  or "no workload") for r in perf.runs]
    lines.append(f"report: {written} ({len(report.runs)} run(s), {report.failing} failing "
                 f"case(s), {shown} drilled down)")
    # A report of performance documents alone has no run to fail.
    passed = report.verdict == "PASS" or (not report.runs and perf is not None)
    emit(args, "\n".join(lines), {
        "ok": passed and not regressions, "written": True, "report": str(written),
        "verdict": report.verdict, "regressions": regressions,
        "runs": [{"backend": r.backend, "device": r.device_id, "verdict": r.verdict,
                  "summary": r.summary} for r in report.runs],
        "failing": report.failing, "drilled_down": shown,
        "performance": [{"run": r.label, "source": r.source,
                         "verdicts": {v: n for v, _, n in r.counts}}
                        for r in (perf.runs if perf is not None else ())]})
    if args.fail_on_failures and not passed:
        return 1
    if args.fail_on_regressions and regressions:
        return 1
    return 0


def _required() -> dict[str, tuple[tuple[str, str], ...]] | None:
    """Per pattern, the (feature, value) items its cases must reach; None without hypothesis."""
    try:
        from fusionspec.conformance.generate.coverage import coverage_items
        from fusionspec.conformance.generate.items import all_items
        from fusionspec.conformance.generate.near_miss import structure_items
    except ModuleNotFoundError as exc:
        if exc.name != "hypothesis":
            raise
        return None
    return {entry.id: coverage_items(entry) + all_items(entry) + structure_items(entry)
            for entry in CATALOG}


def _methods() -> tuple[dict[str, object], ...]:
    """The coverage model by method, as data; none without hypothesis."""
    try:
        from fusionspec.conformance.generate.items import thorough_only
        from fusionspec.conformance.generate.methods import method_table
    except ModuleNotFoundError as exc:
        if exc.name != "hypothesis":
            raise
        return ()
    return method_table(thorough_only())


def _read_json(path: Path) -> Any:
    """A JSON document the user named; a clean error when it is not one."""
    try:
        return clean_json(json.loads(path.read_text(encoding="utf-8")))
    except (OSError, ValueError, RecursionError) as exc:
        raise UsageError(f"{path}: not a JSON document: {type(exc).__name__}: {exc}") from None
