"""``fusionspec conform``: grade a backend against the spec, pattern by pattern.

    fusionspec conform --backend reference --out results/conformance/reference
    fusionspec conform --backend accel --device pocl-cpu --patterns fp.conv_post_ops
    fusionspec conform --list                      # registered backends and their devices
    fusionspec conform --backend NAME --replay results/.../failures/<case>

Prints one line per pattern and case kind as it goes, writes the results document
(``results.json``), one folder per failing case and the backend process's log (``worker.log``:
whatever the backend and its compilers printed) under ``--out``. Exits with 0 only when no case
failed (``extension`` and ``unsupported`` do not fail a run), 1 when some did, and
`UNAVAILABLE_EXIT` (3) when the backend has no usable device: with ``--out`` that run still
writes a results document, which says why, so the report shows it.
"""

from __future__ import annotations

import argparse
import os
import sys
from collections import Counter
from pathlib import Path

from fusionspec.backend import BackendUnavailableError, Device, available_backends
from fusionspec.backend.describe import describe_isolated
from fusionspec.conformance.cases import Case, CaseKind, Status, Verdict
from fusionspec.conformance.grade.results import ResultsCollector

from .output import emit

HELP = "run the conformance suite against a backend and write the results"
#: The exit code of a run whose backend has no usable device.
UNAVAILABLE_EXIT = 3
#: The exit code of a run stopped with Ctrl-C (what it judged is written, marked incomplete).
INTERRUPTED_EXIT = 130


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--backend", default="reference",
                        help="registered backend name, or module:attr (default: reference)")
    parser.add_argument("--device", help="device id (default: the backend's first device)")
    parser.add_argument("--out", type=Path, help="folder for results.json and failure folders")
    parser.add_argument("--patterns", help="comma-separated pattern ids (default: all)")
    parser.add_argument("--kinds", type=_kinds, default=list(CaseKind), metavar="KINDS",
                        help="comma-separated case kinds among "
                             f"{', '.join(k.value for k in CaseKind)} (default: all three)")
    parser.add_argument("--profile", choices=("ci", "thorough"), default="ci")
    parser.add_argument("--seed", type=int, default=0, help="seed of the input data")
    parser.add_argument("--jobs", type=_jobs, default=1, metavar="N",
                        help="cases judged at a time, each job in its own worker process "
                             "('auto': one per CPU core; default 1)")
    parser.add_argument("--memory-limit", type=_gigabytes, default=None, metavar="GB",
                        help="address-space cap of each backend process in GB (default: half "
                             "the machine's memory; 0: no cap)")
    parser.add_argument("--no-isolate", action="store_true",
                        help="judge cases in this process (faster; no timeout or crash guard)")
    parser.add_argument("--replay", type=Path, help="re-run one saved failure folder")
    parser.add_argument("--list", action="store_true", help="list backends and devices")
    parser.add_argument("--json", action="store_true", help="machine-readable summary")


def _kinds(text: str) -> list[CaseKind]:
    """``--kinds``: one or more case kinds, comma-separated."""
    names = [k.strip() for k in text.split(",") if k.strip()]
    known = {k.value: k for k in CaseKind}
    wrong = [n for n in names if n not in known]
    if wrong or not names:
        raise argparse.ArgumentTypeError(
            f"{', '.join(map(repr, wrong)) if wrong else 'no kind'} given; choose among "
            f"{', '.join(known)}")
    return [known[n] for n in dict.fromkeys(names)]


def _gigabytes(text: str) -> int:
    """``--memory-limit``: gigabytes as a number of bytes (0 for no cap)."""
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not a number of gigabytes") from None
    if not value >= 0 or value == float("inf"):
        raise argparse.ArgumentTypeError(f"--memory-limit must be 0 or more, got {text}")
    return int(value * 2**30)


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


def run(args: argparse.Namespace) -> int:
    if args.list:
        return _list(args)
    if args.replay is not None:
        return _replay(args)
    from fusionspec.conformance.suite import PROFILES, run_suite

    patterns = [p.strip() for p in args.patterns.split(",")] if args.patterns else None
    progress = _Progress(quiet=args.json)
    try:
        collector = run_suite(args.backend, device=args.device, patterns=patterns,
                              kinds=args.kinds, profile=PROFILES[args.profile], out_dir=args.out,
                              isolate=not args.no_isolate, seed=args.seed, progress=progress,
                              jobs=args.jobs, memory_limit=args.memory_limit)
    except BackendUnavailableError as exc:
        return _unavailable(args, exc)
    progress.flush()
    if not collector.cases and collector.incomplete is None:
        collector.incomplete = "no case was judged"
    document = collector.to_dict()
    written = collector.write(args.out / "results.json") if args.out is not None else None
    totals = ", ".join(f"{n} {s}" for s, n in sorted(collector.totals.items())) or "no case"
    verdict = "INCOMPLETE" if collector.incomplete else "FAIL" if collector.failed else "PASS"
    lines = [f"{verdict}: {collector.backend} on {collector.device.id}: {totals}"]
    if collector.incomplete:
        lines.append(f"  the run is incomplete: {collector.incomplete}")
    for failure in collector.failures[:20]:
        lines.append(f"  {failure['status']}: {failure['case_id']}: {failure['reason']}")
        for command in failure["replay"].get("commands", [])[:1]:
            lines.append(f"    replay: {command}")
    if len(collector.failures) > 20:
        lines.append(f"  ... {len(collector.failures) - 20} more failures in the results file")
    if written is not None:
        lines.append(f"results: {written}")
    ok = not collector.failed and not collector.incomplete
    emit(args, "\n".join(lines), {"ok": ok, "verdict": verdict, "results": str(written or ""),
                                  "totals": document["totals"],
                                  "incomplete": collector.incomplete})
    if collector.interrupted:
        return INTERRUPTED_EXIT
    return 0 if ok else 1


class _Progress:
    """One line per pattern and case kind: counts by status, updated as cases finish."""

    def __init__(self, *, quiet: bool) -> None:
        self.quiet = quiet
        self.key: tuple[str, CaseKind] | None = None
        self.counts: Counter[str] = Counter()
        self.live = sys.stderr.isatty()

    def __call__(self, pattern: str, kind: CaseKind, case: Case, verdict: Verdict) -> None:
        if (pattern, kind) != self.key:
            self.flush()
            self.key, self.counts = (pattern, kind), Counter()
        self.counts[verdict.status.value] += 1
        if self.live and not self.quiet:
            sys.stderr.write("\r" + self._line())
            sys.stderr.flush()

    def _line(self) -> str:
        assert self.key is not None
        pattern, kind = self.key
        counts = " ".join(f"{n} {s}" for s, n in sorted(self.counts.items()))
        bad = sum(n for s, n in self.counts.items() if Status(s) not in
                  (Status.passed, Status.extension, Status.unsupported))
        return f"{'FAIL' if bad else 'ok  '} {pattern:<34} {kind.value:<10} {counts}"

    def flush(self) -> None:
        if self.key is not None and not self.quiet:
            sys.stderr.write(("\r" if self.live else "") + self._line() + "\n")
            sys.stderr.flush()
        self.key = None


def _unavailable(args: argparse.Namespace, exc: BackendUnavailableError) -> int:
    """Say why the backend cannot run; with --out, leave a results document that says it."""
    written = None
    if args.out is not None:
        device = Device(id=args.device or "none", kind="")
        written = ResultsCollector(args.backend, device, seed=args.seed,
                                   unavailable=exc.reason).write(args.out / "results.json")
    text = f"UNAVAILABLE: {exc}" + (f"\nresults: {written}" if written else "")
    emit(args, text, {"ok": False, "unavailable": exc.reason, "results": str(written or "")})
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
    from fusionspec.conformance.grade.results import load_failure
    from fusionspec.conformance.runner import Runner

    case, seed = load_failure(args.replay)
    with Runner(args.backend, args.device, 120.0, isolate=not args.no_isolate,
                seed=seed) as runner:
        verdict = runner.run(case)
    text = (f"{verdict.status.value}: {case.id} ({case.description})\n  {verdict.reason}"
            if verdict.reason else f"{verdict.status.value}: {case.id}")
    emit(args, text, {"case_id": case.id, "status": verdict.status.value,
                      "reason": verdict.reason})
    return 1 if verdict.failed else 0
