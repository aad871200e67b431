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
workload the medians, the op-by-op over fused ratio, the verdict and the achieved rates.
Compare two documents with ``fusionspec diff OLD/perf.json NEW/perf.json`` (the perf gate).

The selection options (``--patterns``, ``--family``, ``--dtype``, ``--shard``) are those of
``fusionspec conform``; ``--workload`` takes workload ids or globs. ``--jobs`` defaults to 1:
timing wants a quiet machine.

Exit codes: 0 when every selected workload was measured; 1 when one could not be (its record
says why, with the command that reruns it); 2 for a usage error; 3 when the backend has no
usable device.
"""

from __future__ import annotations

import argparse
import sys
from fnmatch import fnmatchcase
from pathlib import Path
from typing import Any

from fusionspec.backend import BackendUnavailableError
from fusionspec.conformance.grade.results import artifact_name
from fusionspec.conformance.selection import Selection, SelectionError, Shard

from .conform import UNAVAILABLE_EXIT, _jobs
from .output import UsageError, emit

HELP = "time each pattern's workloads fused and op by op on a backend (performance verdicts)"
#: Where documents go without ``--out``.
DEFAULT_ROOT = Path("results", "perf")
#: The `fusionspec conform` options that `bench` takes with the same meaning.
SHARED_FLAGS = ("backend", "device", "seed", "patterns", "family", "dtype", "shard")


def add_arguments(parser: argparse.ArgumentParser) -> None:
    from fusionspec.conformance.options import FLAGS

    for flag in FLAGS:
        if flag.name in SHARED_FLAGS:
            parser.add_argument(f"--{flag.name}", dest=flag.dest, help=flag.help,
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
    parser.add_argument("--jobs", type=_jobs, default=1, metavar="N",
                        help="workloads measured at a time, each in a worker process "
                             "(default 1: timing wants a quiet machine)")
    parser.add_argument("--list", action="store_true", help="list the workloads and exit")
    parser.add_argument("--json", action="store_true", help="machine-readable summary")


def _globs(text: str) -> list[str]:
    from fusionspec.conformance.perf.workloads import WORKLOADS

    items = [item.strip() for item in text.split(",") if item.strip()]
    for item in items:
        if not any(fnmatchcase(w.id, item) for w in WORKLOADS):
            raise argparse.ArgumentTypeError(f"{item!r} matches no workload (see "
                                             "fusionspec bench --list)")
    return items


def selected(args: argparse.Namespace) -> list[Any]:
    """The workloads the options select, in table order; `UsageError` when none."""
    from fusionspec.conformance.perf.workloads import WORKLOADS

    try:
        entries = Selection(patterns=tuple(args.patterns or ()),
                            families=tuple(args.family or ())).validate().entries()
    except SelectionError as exc:
        raise UsageError(str(exc)) from None
    patterns = {e.id for e in entries}
    shard: Shard | None = args.shard
    found = [w for w in WORKLOADS if w.pattern in patterns
             and (not args.dtype or w.dtype in args.dtype)
             and (not args.workload or any(fnmatchcase(w.id, g) for g in args.workload))
             and (shard is None or shard.holds(w.id))]
    if not found and shard is None:
        raise UsageError("the selection holds no workload")
    return found


def run(args: argparse.Namespace) -> int:
    if args.list:
        return _list(args)
    from fusionspec.backend.timing import TimingPolicy
    from fusionspec.conformance.perf.bench import FULL_POLICY, SMALL_POLICY, run_bench
    from fusionspec.conformance.perf.document import write_perf

    workloads = selected(args)
    policy = SMALL_POLICY if args.size == "small" else FULL_POLICY
    if args.budget is not None:
        if not args.budget > 0:
            raise UsageError(f"--budget must be positive, got {args.budget}")
        policy = TimingPolicy(policy.warmup, policy.min_repeats, policy.max_repeats,
                              args.budget, policy.target_spread, policy.confidence)
    spec = args.backend or "reference"

    def progress(record: dict[str, Any]) -> None:
        state = record.get("verdict") or "error"
        print(f"  {record['id']}: {state}", file=sys.stderr, flush=True)

    try:
        document = run_bench(spec, workloads, device_id=args.device, size=args.size,
                             policy=policy, seed=args.seed, reference=args.reference,
                             jobs=args.jobs, shard=str(args.shard) if args.shard else None,
                             command=" ".join(["fusionspec", "bench", *sys.argv[2:]]),
                             progress=None if args.json else progress)
    except BackendUnavailableError as exc:
        emit(args, f"UNAVAILABLE: {exc}", {"ok": False, "verdict": "UNAVAILABLE",
                                           "unavailable": exc.reason})
        return UNAVAILABLE_EXIT
    out = args.out if args.out is not None else \
        DEFAULT_ROOT / artifact_name(f"{document['backend']}-{document['device']['id']}")
    written = write_perf(document, out / "perf.json")
    return _summary(args, document, written)


def _summary(args: argparse.Namespace, document: dict[str, Any], written: Path) -> int:
    records = document["workloads"]
    failed = [r for r in records if "error" in r]
    lines = [f"{document['backend']} on {document['device']['id']}, size {document['size']}: "
             f"{len(records) - len(failed)} workload(s) measured, {len(failed)} not"]
    head = f"{'workload':<58}{'fused ms':>10}{'op-by-op':>10}{'ratio':>7}  {'verdict':<20}" \
           f"{'GFLOP/s':>9}{'GB/s':>8}"
    lines += [head, "-" * len(head)]
    for r in records:
        if "error" in r:
            lines.append(f"{r['id']:<58}  error: {r['error']}")
            lines.append(f"{'':<60}rerun: {r['rerun']}")
            continue
        t, roof = r["timings"], r["roofline"]
        lines.append(f"{r['id']:<58}{t['fused']['median']:>10.3f}{t['opbyop']['median']:>10.3f}"
                     f"{r['ratio']:>7.2f}  {r['verdict']:<20}{roof['gflop_s']:>9.2f}"
                     f"{roof['gb_s']:>8.2f}")
    lines.append(f"performance document: {written}")
    verdicts: dict[str, int] = {}
    for r in records:
        if "verdict" in r:
            verdicts[r["verdict"]] = verdicts.get(r["verdict"], 0) + 1
    emit(args, "\n".join(lines), {"ok": not failed, "document": str(written),
                                  "verdicts": verdicts,
                                  "errors": {r["id"]: r["error"] for r in failed}})
    return 1 if failed else 0


def _list(args: argparse.Namespace) -> int:
    workloads = selected(args)
    lines = [f"{w.id} [{w.dtype}]: {' + '.join(op.kind for op in w.graph('small').ops)}\n"
             f"    {w.source}" for w in workloads]
    emit(args, "\n".join(lines), [{"id": w.id, "pattern": w.pattern, "dtype": w.dtype,
                                   "source": w.source, "small": dict(w.small),
                                   "full": dict(w.full)} for w in workloads])
    return 0
