"""``fusionspec bench``: does each fusion pay on a backend? Fused against op by op, timed.

    fusionspec bench --backend reference --size small
    fusionspec bench --backend accel --device pocl-cpu --patterns 'fp.matmul*' --reference
    fusionspec bench --backend NAME --size full --out results/perf/NAME --jobs 1
    fusionspec bench --list                       # the workloads and their sources

Runs the selected workloads (`fusionspec.conformance.perf.workloads`: per catalog pattern, layers
of real networks at ``--size small`` or ``full``) on the backend: the fused partition as the
backend forms it, the same ops as single-op partitions (op by op) and, with ``--reference``,
fusionspec's NumPy reference as a yardstick; the outputs of the two backend sides are checked
against each other before any timing counts. Writes the performance document
``perf.json`` under ``--out`` (default ``results/perf/<backend>-<device>``) and prints per
workload the medians (the reference's too, with ``--reference``), the op-by-op over fused
ratio, the verdict and the achieved rates. A workload that one of the backend's declared
limitations covers is not measured: it is listed as unsupported, with the reason, as
``fusionspec conform`` reports the cases they cover. Compare two documents with
``fusionspec diff OLD/perf.json NEW/perf.json`` (the perf gate).

The selection options (``--patterns``, ``--family``, ``--dtype``, ``--shard``) select as those
of ``fusionspec conform`` do, with help of their own (`BENCH_HELP`); ``--workload`` takes
workload ids or globs. ``--jobs`` defaults to 1: timing wants a quiet machine.

The backend runs in worker processes: each workload within ``--timeout`` seconds, the
backend's output sent to a log, its answers read through an allowlist and judged here (the
outputs against fusionspec's reference, the timings checked); a backend that crashes, hangs or
answers garbage gets a ``backend error`` for that workload, and the run goes on.

Exit codes: 0 when every selected workload was measured or declared unsupported (and at least
one was measured), or when ``--shard`` holds none of them (EMPTY: its document is still
written, for `merge`); 1 when one could not be measured (its record says why, with the command
that reruns it) or none was (INCOMPLETE); 2 for a usage error; 3 when the backend has no usable
device or does not load.
"""

from __future__ import annotations

import argparse
import shlex
import sys
from fnmatch import fnmatchcase
from pathlib import Path
from typing import TYPE_CHECKING, Any

from fusionspec.backend import BackendError, BackendUnavailableError
from fusionspec.conformance.grade.results import artifact_name
from fusionspec.conformance.selection import Selection, SelectionError, Shard
from fusionspec.spec.text import clean_text

from .conform import UNAVAILABLE_EXIT, _jobs
from .output import UsageError, emit, unknown_backend

if TYPE_CHECKING:
    from fusionspec.conformance.perf.records import PerfDocument, WorkloadRecord

HELP = "time each pattern's workloads fused and op by op on a backend (performance verdicts)"
#: What ``fusionspec bench --help`` says above the options.
DESCRIPTION = """\
Time the workloads of each selected catalog pattern (layers of real networks) on a backend:
the fused partition as the backend forms it against the same ops run one by one (op by op),
after checking that both give the same outputs. Each workload gets a verdict (fusion pays, fusion
does not pay, not fused) and its achieved rates; the run is written as perf.json.

examples:
  fusionspec bench --backend reference --size small
  fusionspec bench --backend accel --device pocl-cpu --patterns 'fp.matmul*' --reference
  fusionspec bench --list
  fusionspec diff OLD/perf.json NEW/perf.json     (the perf gate on two runs)"""
#: What it says below them.
EPILOG = """\
Workloads that the backend's declared limitations cover are listed as unsupported, not timed.
Exit codes: 0 every selected workload measured (or declared unsupported), or an EMPTY shard;
1 one could not be measured (its record says why and how to rerun it) or none was
(INCOMPLETE); 2 usage error; 3 no usable device, or the backend does not load."""
#: Where documents go without ``--out``.
DEFAULT_ROOT = Path("results", "perf")
#: The `fusionspec conform` options that `bench` takes, each with what it means here (the
#: values are read and checked as `conform` reads them).
BENCH_HELP = {
    "backend": "the backend to time: a registered name, or module:attr (default: reference)",
    "device": "device id of the backend (default: its first device)",
    "seed": "seed of the workloads' input data (default: 0)",
    "patterns": "catalog pattern ids or globs, comma-separated (int8.*,fp.conv_*): time their "
                "workloads (default: every pattern's)",
    "family": "pattern families, comma-separated, among {families}: time the workloads of "
              "their patterns",
    "dtype": "headline dtypes, comma-separated: time only the workloads of these (every "
             "workload is f32 or int8)",
    "shard": "time shard K of N: a stable slice of the selected workloads by workload id "
             "(join the N perf.json with `fusionspec merge`)",
}


def add_arguments(parser: argparse.ArgumentParser) -> None:
    from fusionspec.conformance.options import FLAGS, gigabytes
    from fusionspec.spec.catalog import PatternFamily

    families = ", ".join(f.value for f in PatternFamily)
    parser.description = DESCRIPTION
    parser.epilog = EPILOG
    parser.formatter_class = argparse.RawDescriptionHelpFormatter
    for flag in FLAGS:
        if flag.name in BENCH_HELP:
            parser.add_argument(f"--{flag.name}", dest=flag.dest,
                                help=BENCH_HELP[flag.name].format(families=families),
                                **flag.settings)
    parser.add_argument("--workload", action="extend", type=_globs, metavar="IDS",
                        help="workload ids or globs, comma-separated (see --list)")
    parser.add_argument("--size", choices=("small", "full"), default="small",
                        help="small: reduced layers, the whole catalog in minutes (default); "
                             "full: the layers as the networks have them")
    parser.add_argument("--reference", action="store_true",
                        help="also time fusionspec's NumPy reference as a yardstick")
    parser.add_argument("--budget", type=float, metavar="S",
                        help="seconds a side may sample once it has its minimum of runs "
                             "(default: 0.3 small, 2 full)")
    parser.add_argument("--out", type=Path, metavar="DIR",
                        help="folder for perf.json (default: results/perf/<backend>-<device>)")
    parser.add_argument("--timeout", type=_seconds, default=None, metavar="S",
                        help="seconds one workload may take in the backend's process, "
                             "compiling and timing included (default 300)")
    parser.add_argument("--memory-limit", type=gigabytes, metavar="GB",
                        help="address-space cap of each process the backend is timed in, in GB "
                             "(default: half the machine's memory; 0: no cap)")
    parser.add_argument("--jobs", type=_jobs, default=1, metavar="N",
                        help="workloads measured at a time, each in a worker process "
                             "(default 1: timing wants a quiet machine)")
    parser.add_argument("--list", action="store_true", help="list the workloads and exit")
    parser.add_argument("--json", action="store_true", help="machine-readable summary")


def _seconds(text: str) -> float:
    try:
        value = float(text)
    except ValueError:
        value = float("nan")
    if not 0 < value <= 86_400:
        raise argparse.ArgumentTypeError(f"{text!r} is not a number of seconds between 0 and "
                                         "86400")
    return value


def _globs(text: str) -> list[str]:
    from fusionspec.conformance.perf.workloads import WORKLOADS

    items = [item.strip() for item in text.split(",") if item.strip()]
    for item in items:
        if not any(fnmatchcase(w.id, item) for w in WORKLOADS):
            raise argparse.ArgumentTypeError(f"{item!r} matches no workload (see "
                                             "fusionspec bench --list)")
    return items


def selected(args: argparse.Namespace, *, sharded: bool = True) -> list[Any]:
    """The workloads the options select, in table order (those of ``--shard`` only when
    `sharded`); `UsageError` when none."""
    from fusionspec.conformance.perf.workloads import WORKLOADS

    try:
        entries = Selection(patterns=tuple(args.patterns or ()),
                            families=tuple(args.family or ())).validate().entries()
    except SelectionError as exc:
        raise UsageError(str(exc)) from None
    patterns = {e.id for e in entries}
    shard: Shard | None = args.shard if sharded else None
    found = [w for w in WORKLOADS if w.pattern in patterns
             and (not args.dtype or w.dtype in args.dtype)
             and (not args.workload or any(fnmatchcase(w.id, g) for g in args.workload))
             and (shard is None or shard.holds(w.id))]
    if not found and args.shard is None:
        raise UsageError("the selection holds no workload")
    return found


def command_line(args: argparse.Namespace) -> str:
    """The command that reruns this bench, quoted for a POSIX shell: the options as parsed
    (so ``--patterns=a --patterns b`` reads back as one list), never the raw ``sys.argv``."""
    words = ["fusionspec", "bench"]
    for option, value in (("--backend", args.backend), ("--device", args.device),
                          ("--size", args.size), ("--seed", args.seed),
                          ("--patterns", args.patterns), ("--family", args.family),
                          ("--dtype", args.dtype), ("--workload", args.workload),
                          ("--shard", args.shard), ("--budget", args.budget),
                          ("--timeout", args.timeout), ("--jobs", args.jobs),
                          ("--memory-limit", _gigabytes(args.memory_limit)),
                          ("--out", args.out)):
        if value is None or value == []:
            continue
        text = ",".join(map(str, value)) if isinstance(value, list) else str(value)
        words += [option, text]
    if args.reference:
        words.append("--reference")
    return shlex.join(words)


def _gigabytes(value: int | None) -> str | None:
    return None if value is None else f"{value / 2**30:g}"


def run(args: argparse.Namespace) -> int:
    if args.list:
        return _list(args)
    from fusionspec.backend.timing import TimingPolicy
    from fusionspec.conformance.perf.bench import FULL_POLICY, SMALL_POLICY, run_bench
    from fusionspec.conformance.perf.document import write_perf
    from fusionspec.conformance.perf.workers import DEFAULT_TIMEOUT_S

    workloads = selected(args)
    given = [w.id for w in selected(args, sharded=False)] if args.shard is not None else None
    policy = SMALL_POLICY if args.size == "small" else FULL_POLICY
    if args.budget is not None:
        if not args.budget > 0:
            raise UsageError(f"--budget must be positive, got {args.budget}")
        policy = TimingPolicy(policy.warmup, policy.min_repeats, policy.max_repeats,
                              args.budget, policy.target_spread, policy.confidence)
    spec = args.backend or "reference"
    mistyped = unknown_backend(spec)
    if mistyped:
        raise UsageError(mistyped)

    def progress(record: WorkloadRecord) -> None:
        state = record.verdict or ("unsupported" if record.unsupported is not None
                                   else "error")
        print(f"  {record.id}: {state}", file=sys.stderr, flush=True)

    try:
        document = run_bench(spec, workloads, device_id=args.device, size=args.size,
                             policy=policy, seed=args.seed, reference=args.reference,
                             jobs=args.jobs, shard=str(args.shard) if args.shard else None,
                             command=command_line(args), selected=given,
                             timeout_s=args.timeout or DEFAULT_TIMEOUT_S,
                             memory_limit=args.memory_limit,
                             progress=None if args.json else progress)
    except BackendError as exc:  # no usable device, or it does not load at all
        reason = exc.reason if isinstance(exc, BackendUnavailableError) else str(exc)
        emit(args, clean_text(f"UNAVAILABLE: {exc}"), {"ok": False, "verdict": "UNAVAILABLE",
                                                       "unavailable": clean_text(reason)})
        return UNAVAILABLE_EXIT
    out = args.out if args.out is not None else \
        DEFAULT_ROOT / artifact_name(f"{document.backend}-{document.device.id}")
    written = write_perf(document, out / "perf.json")
    return _summary(args, document, written)


def _summary(args: argparse.Namespace, document: PerfDocument, written: Path) -> int:
    records = document.workloads
    failed = [r for r in records if r.error is not None]
    unsupported = [r for r in records if r.unsupported is not None]
    # The reference's column only when it was timed: without --reference it would be empty.
    reference = any(r.side("reference") is not None for r in records)
    measured = len(records) - len(failed) - len(unsupported)
    shard = document.shard
    verdict = "FAIL" if failed else "EMPTY" if not records and shard else \
        "INCOMPLETE" if not measured else "PASS"
    lines = [f"{verdict}: {document.label}"
             + (f" (shard {shard})" if shard else "") + f", size {document.size}: "
             f"{measured} workload(s) measured, {len(failed)} not, {len(unsupported)} "
             "declared unsupported"]
    if verdict == "EMPTY":
        lines.append(f"  shard {shard} holds none of the selected workloads")
    elif verdict == "INCOMPLETE":
        lines.append("  the run is incomplete: no workload was measured")
    head = f"{'workload':<58}{'fused ms':>10}{'op-by-op':>10}" \
           + (f"{'ref ms':>10}" if reference else "") \
           + f"{'ratio':>7}  {'verdict':<20}{'GFLOP/s':>9}{'GB/s':>8}"
    lines += [head, "-" * len(head)]
    for r in records:
        if r.unsupported is not None:
            lines.append(f"{r.id:<58}  unsupported: {r.unsupported}")
            continue
        if r.error is not None:
            lines.append(f"{r.id:<58}  error: {r.error}")
            lines.append(f"{'':<60}rerun: {r.rerun}")
            continue
        side, roof = r.side("reference"), r.roofline
        ref = ""
        if reference:
            ref = f"{side.median:>10.3f}" if side is not None else f"{'-':>10}"
        gflop_s, gb_s = (roof.gflop_s, roof.gb_s) if roof is not None else (None, None)
        lines.append(f"{r.id:<58}{r.fused.median:>10.3f}{r.opbyop.median:>10.3f}"
                     f"{ref}{r.ratio:>7.2f}  {r.verdict:<20}{gflop_s:>9.2f}{gb_s:>8.2f}")
    lines.append(f"performance document: {written}")
    verdicts: dict[str, int] = {}
    for r in records:
        if r.verdict is not None:
            verdicts[r.verdict] = verdicts.get(r.verdict, 0) + 1
    emit(args, "\n".join(clean_text(line) for line in lines), {
        "ok": verdict in ("PASS", "EMPTY"), "verdict": verdict, "document": str(written),
        "shard": shard, "verdicts": verdicts,
        "errors": {r.id: r.error for r in failed},
        "unsupported": {r.id: r.unsupported for r in unsupported},
        "reference_ms": {r.id: side.median for r in records
                         for side in [r.side("reference")] if side is not None}})
    return 0 if verdict in ("PASS", "EMPTY") else 1


def _list(args: argparse.Namespace) -> int:
    workloads = selected(args)
    lines = [f"{w.id} [{w.dtype}]: {' + '.join(op.kind for op in w.graph('small').ops)}\n"
             f"    {w.source}" for w in workloads]
    emit(args, "\n".join(lines), [{"id": w.id, "pattern": w.pattern, "dtype": w.dtype,
                                   "source": w.source, "small": dict(w.small),
                                   "full": dict(w.full)} for w in workloads])
    return 0
