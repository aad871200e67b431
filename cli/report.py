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

The independent catch rates (docs/mutation.md) come from ``--mutation-score`` and
``--real-bugs``, or from results/mutation_sample.json and results/real_bugs.json found beside
the results documents (their folder and the two above it); without them the report says they
were not measured. A named file that cannot be read is an error; a found one is named in the
report with the reason, so a bad score file never stops the main job's report.

Documents are read with `load_document`, so a missing file or one of another schema is a typed
error naming it. The grammar items each pattern must cover come from the suite's strategies
(`coverage_items`) and the coverage model (`all_items`: the value classes, optional ports and
ranks the op schemas allow each op of the pattern, the tensor value classes, the dtype row x
attribute pairs and the ill-formed settings) and are handed to the report as data; where the
strategies cannot be imported (hypothesis, of the ``conformance`` extra, is not installed) the
report shows the coverage recorded without the required items. The items and the model are a
function of the suite's sources: they are kept in the draw cache's folder
(`fusionspec.conformance.coverage_cache`, off with ``FUSIONSPEC_DRAW_CACHE=off``) and computed
again only when the suite changes.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from typing import TYPE_CHECKING, Any

from fusionspec.conformance.grade.results import load_document
from fusionspec.conformance.perf.document import is_perf_document, load_perf
from fusionspec.spec.text import clean_json

from .output import UsageError, check_paths, emit

if TYPE_CHECKING:
    from fusionspec.conformance.method_rows import MethodRow
    from fusionspec.reports.catch_rates import CatchRates

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
    parser.add_argument("--mutation-score", type=Path, metavar="FILE",
                        help="the sampled mutation score (written by nox -s mutation-sample; "
                             "default: results/mutation_sample.json beside the results)")
    parser.add_argument("--real-bugs", type=Path, metavar="FILE",
                        help="the real-bug score (written by nox -s real-bugs; default: "
                             "results/real_bugs.json beside the results)")
    parser.add_argument("--json", action="store_true", help="machine-readable summary")


def run(args: argparse.Namespace) -> int:
    from fusionspec.reports.catch_rates import catch_rates
    from fusionspec.reports.model import DEFAULT_DRILLDOWNS, build_report
    from fusionspec.reports.mutation import mutation_view
    from fusionspec.reports.perf import perf_section
    from fusionspec.reports.render import write
    from fusionspec.reports.runs import RunInput

    check_paths({**{f"RESULTS[{i}]": p for i, p in enumerate(args.results)},
                 **{f"--baseline[{i}]": p for i, p in enumerate(args.baseline)},
                 "--mutation": args.mutation, "--mutation-score": args.mutation_score,
                 "--real-bugs": args.real_bugs},
                {"--out": args.out})
    perf_paths = [p for p in args.results if is_perf_document(p)]
    runs = [RunInput(load_document(path), path) for path in args.results
            if path not in perf_paths]
    perf = None
    if perf_paths:
        perf = perf_section([load_perf(p) for p in perf_paths], [str(p) for p in perf_paths])
    baselines = [RunInput(load_document(path), path) for path in args.baseline]
    required, methods = _coverage()
    mutation = None
    if args.mutation is not None:
        mutation = mutation_view(_read_json(args.mutation), str(args.mutation))
    rates = catch_rates(*_catch_rate_paths(args))
    report = build_report(runs, baselines=baselines, required=required, mutation=mutation,
                          max_drilldowns=DEFAULT_DRILLDOWNS if args.drilldowns is None
                          else args.drilldowns, perf=perf, methods=methods,
                          catch_rates=rates)
    written = write(report, args.out)
    for problem in (rates.sampled_problem, rates.real_bugs_problem):
        if problem:
            print(f"fusionspec report: cannot read {problem}; the report says so",
                  file=sys.stderr)
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
    lines += _catch_rate_lines(rates)
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
                        for r in (perf.runs if perf is not None else ())],
        "catch_rates": _catch_rate_summary(rates)})
    if args.fail_on_failures and not passed:
        return 1
    if args.fail_on_regressions and regressions:
        return 1
    return 0


def _catch_rate_paths(args: argparse.Namespace) -> tuple[Path | None, Path | None]:
    """The two score documents: those named, checked now (a named file that cannot be read is
    an error), else those found beside the results (``results/`` of a
    ``results/conformance/NAME/results.json``), which the report reads or says it cannot."""
    from fusionspec.reports import catch_rates as rates

    if args.mutation_score is not None:
        rates.load_sampled(args.mutation_score)
    if args.real_bugs is not None:
        rates.load_real_bugs(args.real_bugs)
    folders = list(dict.fromkeys(folder for path in args.results
                                 for folder in list(path.parents)[:3]))

    def beside(name: str) -> Path | None:
        return next((f / name for f in folders if (f / name).is_file()), None)

    return (args.mutation_score or beside(rates.SAMPLED_FILE),
            args.real_bugs or beside(rates.REAL_BUGS_FILE))


def _catch_rate_lines(rates: CatchRates) -> list[str]:
    """The summary lines of the scores the report shows."""
    lines = []
    if rates.sampled is not None:
        t = rates.sampled.total
        lines.append(f"sampled mutation score: {t.score} ({t.killed} of {t.of} killed, 95% "
                     f"interval {t.interval}) from {rates.sampled.source}")
    if rates.real_bugs is not None:
        r = rates.real_bugs
        lines.append(f"real-bug score: {r.score} ({r.caught} of {r.bugs} applicable bugs "
                     f"caught) from {r.source}")
    return lines


def _catch_rate_summary(rates: CatchRates) -> dict[str, object]:
    """The scores for ``--json``: each as counts, or null with why."""
    s, r = rates.sampled, rates.real_bugs
    return {
        "mutation_sample": None if s is None else {
            "source": s.source, "killed": s.total.killed, "of": s.total.of,
            "tested": s.total.tested, "interval": [s.total.low, s.total.high],
            "survivors": dict(s.survivors)},
        "real_bugs": None if r is None else {
            "source": r.source, "caught": r.caught, "bugs": r.bugs,
            "not_applicable": r.not_applicable, "missed": [m.bug for m in r.misses]},
        "notes": list(rates.notes())}


def _coverage() -> tuple[dict[str, tuple[tuple[str, str], ...]] | None,
                         tuple[MethodRow, ...]]:
    """Per pattern, the (feature, value) items its cases must reach, and the coverage model by
    method, as data (read back from the draw cache's folder when this suite computed them
    before); None and none without hypothesis."""
    from fusionspec.conformance.coverage_cache import coverage_model

    model = coverage_model()
    if model is None:
        return None, ()
    return model.required, model.methods


def _read_json(path: Path) -> Any:
    """A JSON document the user named; a clean error when it is not one."""
    try:
        return clean_json(json.loads(path.read_text(encoding="utf-8")))
    except (OSError, ValueError, RecursionError) as exc:
        raise UsageError(f"{path}: not a JSON document: {type(exc).__name__}: {exc}") from None
