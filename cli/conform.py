"""``fusionspec conform``: grade a backend against the spec.

    fusionspec conform --backend reference
    fusionspec conform --backend accel --device pocl-cpu --patterns 'int8.*' --jobs 2
    fusionspec conform --backend mypkg.backend:Mine --expectations ci/expectations.toml
    fusionspec conform --backend NAME --shard 2/4 --out results/shard-2
    fusionspec conform --backend NAME --case fp.conv_post_ops/valid/1a2b3c4d
    fusionspec conform --replay results/conformance/<backend>-<device>/failures/<case>
    fusionspec conform --list                      # registered backends and their devices

Draws the selected cases (the options are `fusionspec.conformance.options`, shared with the
pytest plugin), judges them with a progress bar on standard error, and writes the results
document (``results.json``), one folder per failing case and the backend process's log
(``worker.log``) under ``--out`` (default ``results/conformance/<backend>-<device>``, so every
failure can be replayed). The summary lists the failures that are not expected, each with the
command that replays it (pasted as it is, from any folder).

Exit codes: 0 when no case failed unexpectedly (``extension``, ``unsupported`` and failures the
expectations file expects do not fail a run; an expected failure that passes does only with
``--strict-expectations``); 1 when some did, or the run judged nothing; 2 for a usage error (a
bad option value, a selection that holds no case); `UNAVAILABLE_EXIT` (3) when the backend cannot
be loaded or has no usable device (that run still writes a results document saying why, so the
report shows it; a replay exits 3 too);
`INTERRUPTED_EXIT` (130) for a run stopped with Ctrl-C (what it judged is written, marked
incomplete).
"""

from __future__ import annotations

import argparse
import os
import sys
from pathlib import Path
from typing import Any

from fusionspec.backend import (
    BackendError,
    BackendUnavailableError,
    Device,
    available_backends,
)
from fusionspec.backend.describe import describe_isolated
from fusionspec.conformance.answers import WHOLE_TRACEBACK_ENV
from fusionspec.conformance.expectations import stale_lines, unexpected_pass_note
from fusionspec.conformance.grade.document import FailureRecord, ResultsDocument
from fusionspec.conformance.grade.emptiness import shows_nothing
from fusionspec.conformance.grade.results import (
    ResultsCollector,
    artifact_name,
    replay_commands,
)
from fusionspec.conformance.selection import RunSettings, SelectionError
from fusionspec.spec.files import atomic_write_text
from fusionspec.spec.text import clean_text

from .conform_log import failure_lines, time_line
from .output import check_conform_outputs, check_paths, emit, unknown_backend

HELP = "run the conformance suite against a backend and write the results"
#: The exit code of a run whose backend has no usable device.
UNAVAILABLE_EXIT = 3
#: The exit code of a run stopped with Ctrl-C (what it judged is written, marked incomplete).
INTERRUPTED_EXIT = 130
#: The exit code of a usage error (argparse's).
USAGE_EXIT = 2
#: Where results go without ``--out``.
DEFAULT_ROOT = Path("results", "conformance")


def add_arguments(parser: argparse.ArgumentParser) -> None:
    from fusionspec.conformance.options import add_flags

    add_flags(parser.add_argument)
    parser.add_argument("--jobs", type=_jobs, default=1, metavar="N",
                        help="cases judged at a time, each job in its own worker process "
                             "('auto': one per CPU core; default 1)")
    parser.add_argument("--no-isolate", action="store_true",
                        help="judge cases in this process (faster; no timeout or crash guard)")
    parser.add_argument("--junit", type=Path, metavar="FILE",
                        help="also write the verdicts as JUnit XML (one test case per case; "
                             "unsupported cases, expected failures and skips are skipped)")
    parser.add_argument("--replay", type=Path, metavar="DIR",
                        help="re-run one saved failure folder (on the recorded backend and "
                             "device unless --backend/--device say otherwise)")
    parser.add_argument("--list", action="store_true", help="list backends and devices")
    parser.add_argument("--json", action="store_true", help="machine-readable summary")
    parser.set_defaults(_parser=parser)


def _jobs(text: str) -> int:
    """``--jobs``: a positive count, or ``auto`` for one job per CPU core."""
    if text.strip().lower() == "auto":
        return max(1, len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity")
                   else os.cpu_count() or 1)
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not a number of jobs or 'auto'") \
            from None
    if value < 1:
        raise argparse.ArgumentTypeError(f"--jobs must be at least 1, got {value}")
    return value


def default_out(backend: str, device: str) -> Path:
    """``results/conformance/<backend>-<device>``."""
    return DEFAULT_ROOT / artifact_name(f"{backend}-{device}")


def _usage(args: argparse.Namespace, message: str) -> int:
    parser: argparse.ArgumentParser | None = getattr(args, "_parser", None)
    if parser is not None:
        parser.print_usage(sys.stderr)
        print(f"{parser.prog}: error: {message}", file=sys.stderr)
    else:
        print(f"fusionspec conform: error: {message}", file=sys.stderr)
    return USAGE_EXIT


def run(args: argparse.Namespace) -> int:
    from fusionspec.conformance.workers import use_cache_home

    use_cache_home()  # hypothesis' caches, not in the current folder
    if args.list:
        return _list(args)
    if args.replay is not None:
        return _replay(args)
    from fusionspec.conformance.expectations import ExpectationsError
    from fusionspec.conformance.options import read_options
    from fusionspec.conformance.suite import run_suite

    from .progress import RunProgress

    try:
        options = read_options(lambda name: getattr(args, name))
    except (SelectionError, ExpectationsError) as exc:
        return _usage(args, str(exc))
    backend = options.backend or "reference"
    mistyped = unknown_backend(backend)
    if mistyped:
        return _usage(args, mistyped)
    check_conform_outputs(options.out, args.junit, args.write_expectations, options.expectations)
    out = options.out if options.out is not None else \
        (lambda name, device: default_out(name, device.id))
    try:
        with RunProgress() as progress:
            collector = run_suite(
                backend, run_settings=options.run_settings, device=options.device,
                out_dir=out, isolate=not args.no_isolate, progress=progress, jobs=args.jobs,
                memory_limit=options.memory_limit, expectations=options.expectations,
                strict=options.strict)
    except BackendError as exc:  # unavailable, or it cannot be loaded at all
        return _unavailable(args, backend, options.device, options.run_settings, options.out,
                            exc)
    except SelectionError as exc:
        return _usage(args, str(exc))
    empty_shard = not collector.cases and not collector.skipped and options.shard is not None \
        and collector.incomplete is None
    if collector.incomplete is None and not empty_shard:
        collector.incomplete = shows_nothing(collector.verdicts, collector.skipped)
    check_conform_outputs(collector.out_dir, args.junit, args.write_expectations,
                          options.expectations)
    written = collector.write(collector.out_dir / "results.json") \
        if collector.out_dir is not None else None
    if args.write_expectations is not None:
        check_paths({"results": written, "--expectations": getattr(
            options.expectations, "source", None)}, {"--write-expectations":
                                                     args.write_expectations})
        _write_expectations(args.write_expectations, collector, options)
    _write_junit(args, collector)
    return _summary(args, collector, written, empty_shard)


def _summary(args: argparse.Namespace, collector: ResultsCollector, written: Path | None,
             empty_shard: bool) -> int:
    document = collector.document()
    totals = document.totals_text()
    verdict = "INCOMPLETE" if collector.incomplete else "FAIL" if collector.failed else \
        "EMPTY" if empty_shard else "PASS"
    shard = f" (shard {collector.shard})" if collector.shard else ""
    lines = [f"{verdict}: {collector.backend} on {collector.device.id}{shard}: {totals}"
             f"{unexpected_pass_note(document.unexpected_passes, document.strict)}"]
    if empty_shard:
        lines.append(f"  shard {collector.shard} holds none of the selected cases")
    if collector.incomplete:
        lines.append(f"  the run is incomplete: {collector.incomplete}")
    expected = sum(1 for f in document.failures if f.expected)
    if expected:
        lines.append(f"  {expected} expected failure(s) (expectations file)")
    if collector.skipped:
        lines.append(f"  {len(collector.skipped)} case(s) skipped (expectations file)")
    lines += stale_lines(document.unexpected_passes, document.strict)  # every stale entry
    unexpected = document.unexpected_failures
    lines += failure_lines(document, unexpected, lambda f: _replay_line(collector, f))
    lines.append(time_line(collector.timings, collector.oracle))
    if written is not None:
        lines.append(f"results: {written}")
    ok = not collector.failed and not collector.incomplete
    emit(args, "\n".join(lines), {
        "ok": ok, "verdict": verdict, "results": str(written or ""),
        "totals": document.totals, "incomplete": collector.incomplete,
        "unexpected_failures": len(unexpected), "expected_failures": expected,
        "unexpected_passes": len(collector.unexpected_passes),
        "skipped": len(collector.skipped), "shard": collector.shard})
    if collector.interrupted:
        return INTERRUPTED_EXIT
    return 0 if ok else 1


def _replay_line(collector: ResultsCollector, failure: FailureRecord) -> str:
    """The command replaying `failure`, with an absolute path (it works from any folder), or
    the command that draws it afresh when nothing was saved."""
    replay = failure.replay
    if collector.out_dir is None or not replay.path:
        return replay.rerun
    folder = (collector.out_dir / replay.path).resolve()
    return replay_commands(folder, collector.backend_spec, collector.device.id, False)[0]


def _write_expectations(path: Path, collector: ResultsCollector, options: Any) -> None:
    """``--write-expectations``: the file the run's expectations become, its failures
    grouped into entries as the findings report groups them (one cause, one entry)."""
    from fusionspec.conformance.expectations import FailureGroup, regenerate
    from fusionspec.reports.findings import group_findings

    def by_finding(document: ResultsDocument) -> list[FailureGroup]:
        return [FailureGroup(f.signature, tuple(r.case_id for r in f.records))
                for f in group_findings(document) if f.status != "extension"]

    title = (f"Written from a run of {collector.backend_spec} on {collector.device.id} "
             f"(profile {collector.profile}, seed {collector.seed}).")
    written = regenerate(collector.document(), by_finding, used=options.expectations,
                         selection=options.selection, prune=options.prune_expectations,
                         title=title)
    atomic_write_text(path, written.text)
    print(written.summary(path), file=sys.stderr)


def _write_junit(args: argparse.Namespace, collector: ResultsCollector) -> None:
    """``--junit FILE``: the run's verdicts as JUnit XML."""
    if getattr(args, "junit", None) is None:
        return
    from fusionspec.conformance.junit import junit_xml
    from fusionspec.spec.files import atomic_write_text

    atomic_write_text(args.junit, junit_xml(collector.document()))


def _unavailable(args: argparse.Namespace, backend: str, device: str | None,
                 run_settings: RunSettings, out: Path | None, exc: BackendError) -> int:
    """Say why the backend cannot run (it has no usable device, or does not load); leave a
    results document that says it."""
    reason = exc.reason if isinstance(exc, BackendUnavailableError) else str(exc)
    folder = out if out is not None else default_out(backend, device or "unavailable")
    collector = ResultsCollector(backend, Device(id=device or "none", kind=""),
                                 run_settings=run_settings, unavailable=reason)
    written = collector.write(folder / "results.json")
    _write_junit(args, collector)
    text = f"UNAVAILABLE: {exc}\nresults: {written}"
    emit(args, text, {"ok": False, "verdict": "UNAVAILABLE", "unavailable": reason,
                      "results": str(written)})
    return UNAVAILABLE_EXIT


def _list(args: argparse.Namespace) -> int:
    # Each backend is loaded in a process of its own: a plugin that crashes while loading is
    # listed as unavailable, and the others are still listed.
    rows = [describe_isolated(name) for name in available_backends()]
    lines = []
    for r in rows:
        found, problems = r["devices"], r["problems"]
        shown = ", ".join(found) if found else f"unavailable ({r.get('unavailable')})"
        lines.append(f"{r['backend']}: {shown}")
        if found:
            lines += [f"  {ident} unavailable: {why}" for ident, why in problems.items()]
    emit(args, "\n".join(lines), {"backends": rows})
    return 0


def _replay(args: argparse.Namespace) -> int:
    from fusionspec.conformance.grade.results import failure_origin, load_failure
    from fusionspec.conformance.workers import Runner
    from fusionspec.reference.memory import budget, check_budget

    from .replayed import save_outputs, verdict_lines

    case, seed = load_failure(args.replay)
    recorded_backend, recorded_device = failure_origin(args.replay)
    backend = args.backend or recorded_backend
    if backend is None:
        return _usage(args, f"{args.replay} does not record its backend: pass --backend")
    if args.backend is None and backend not in available_backends():
        return _usage(args, _unregistered(args.replay, backend))
    device = args.device or _recorded_device(args.backend, recorded_backend, recorded_device)
    check_budget(case.graph, budget())  # as `run` does: before any input is filled
    # A replay is read by the backend's author: every frame of what it raised is kept (the
    # worker started below inherits this).
    os.environ[WHOLE_TRACEBACK_ENV] = "1"
    try:
        # The failure's recorded seed, not --seed: it filled the inputs the failure saw.
        with Runner(backend, device, 120.0, run_settings=RunSettings(seed=seed),
                    isolate=not args.no_isolate, memory_limit=args.memory_limit) as runner:
            verdict = runner.run(case)
            device_id = runner.device.id
            saved = save_outputs(runner, case, args.replay) if verdict.failed else []
    except BackendError as exc:
        print(f"fusionspec conform: UNAVAILABLE: {clean_text(str(exc), 2000)}", file=sys.stderr)
        return UNAVAILABLE_EXIT
    text = "\n".join([*verdict_lines(case, verdict, f"{backend} on {device_id}"), *saved])
    emit(args, clean_text(text, 8000), {"case_id": case.id, "status": verdict.status.value,
                                        "reason": verdict.reason, "backend": backend,
                                        "device": device_id,
                                        "worst": [w.to_json() for w in
                                                  verdict.details.worst or ()]})
    return 1 if verdict.failed else 0


def _recorded_device(asked: str | None, recorded_backend: str | None,
                     recorded_device: str | None) -> str | None:
    """The device a replay uses without ``--device``: the recorded one on the recorded
    backend; another backend's default device otherwise (the recorded id is not its own)."""
    return recorded_device if asked is None or asked == recorded_backend else None


def _unregistered(folder: Path, backend: str) -> str:
    """Why a failure folder's backend is not loaded on the folder's word, and the command
    that loads it when the user trusts it (the folder is data; a backend is code)."""
    import shlex

    named = clean_text(backend, 200)
    return (f"{folder} was recorded with backend {named!r}, which is not a registered backend; "
            "a failure folder does not choose the code that runs. If you trust that backend, "
            f"name it: fusionspec conform --backend {shlex.quote(named)} --replay "
            f"{shlex.quote(str(folder))}")
