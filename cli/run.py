"""``fusionspec run FILE.json``: execute a oneDNN graph JSON file with the reference (or, with
``--backend NAME [--device ID]``, with a backend, as a replay folder's ``replay.txt`` does).
With ``--compare``, the backend's outputs are also judged against the reference's, each within
the error bound the suite gives it, and the exit code says whether they agree (0) or not (1):
how a failure folder's ``culprit.json`` is replayed on the backend and the reference at once.

The graph is loaded, finalized, partitioned (the reference partitioner, or one op per
partition with ``--single-op``) and executed; inputs come from ``--inputs in.npz`` or are
filled deterministically from ``--seed``. The graph outputs (tensors no op consumes) are
summarised on stdout and written to ``--out out.npz``; ``--save-inputs`` writes the inputs used,
so a run can be replayed exactly.

npz files are keyed by tensor id (`fusionspec.reference.arrays` holds the encoding).

What is checked before anything executes (the memory budget, the partitioning, that every input
can be filled) is `check_runnable`, which ``fusionspec validate`` runs too: a graph ``run``
refuses before executing is refused by ``validate`` with the same message.
"""

from __future__ import annotations

import argparse
import math
import sys
from typing import Any

import numpy as np

from fusionspec.reference.arrays import read_npz, write_npz
from fusionspec.reference.execute import default_partitioner, execute, single_op_partitions
from fusionspec.reference.filling import fill_inputs
from fusionspec.reference.memory import BUDGET_ENV, DEFAULT_BUDGET, budget, check_budget
from fusionspec.spec.graph import Graph, LogicalTensor, Partition
from fusionspec.spec.onednn_json import load
from fusionspec.spec.types import Array

from .output import UsageError, check_paths, emit

__all__ = ["HELP", "add_arguments", "run", "summarise", "planned_partitions", "check_runnable",
           "max_memory"]

HELP = "execute a graph JSON file with the reference and summarise its outputs"

def planned_partitions(graph: Graph, limit: int, *, single_op: bool = False,
                       ) -> list[Partition]:
    """The partitions `run` executes the finalized `graph` in, once it is known to fit in
    `limit` bytes (`MemoryBudgetError` otherwise, before anything is allocated)."""
    check_budget(graph, limit)
    return single_op_partitions(graph) if single_op else default_partitioner(graph)


def check_runnable(graph: Graph, limit: int) -> None:
    """Every check `run` makes of the finalized `graph` before executing it (without
    ``--inputs``): the memory budget, the partitioning and the filling of every input; the
    error `run` would end with otherwise."""
    planned_partitions(graph, limit)
    fill_inputs(graph, 0)


def max_memory(gigabytes: float | None) -> int:
    """``--max-memory``: the budget in bytes (`UsageError` for a value that is not positive)."""
    if gigabytes is not None and not gigabytes > 0:
        raise UsageError(f"--max-memory must be positive, got {gigabytes}")
    return budget(gigabytes)


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("file", help="oneDNN graph JSON file")
    parser.add_argument("--inputs", metavar="IN.npz", help="input arrays keyed by tensor id "
                        "(default: filled deterministically from --seed)")
    parser.add_argument("--seed", type=int, default=0, help="seed for filled inputs "
                        "(default 0)")
    parser.add_argument("--out", metavar="OUT.npz", help="write the graph outputs here")
    parser.add_argument("--save-inputs", metavar="IN.npz", help="write the inputs used here")
    parser.add_argument("--single-op", action="store_true",
                        help="run every op as its own partition (no fusion)")
    parser.add_argument("--max-memory", type=float, metavar="GB",
                        help="refuse graphs (and input files) needing more memory than this "
                             f"(default {DEFAULT_BUDGET / 2**30:g} GB, or "
                             f"${BUDGET_ENV})")
    parser.add_argument("--backend", metavar="NAME", help="run the graph on this backend "
                        "(a registered name or module:attr) instead of the reference: its "
                        "partitions, compiled for --device, executed in order")
    parser.add_argument("--device", metavar="ID", help="the backend's device (default: its "
                        "first)")
    parser.add_argument("--compare", action="store_true",
                        help="with --backend: judge its outputs against the reference's, each "
                             "within the suite's error bound (exit 1 when one differs)")
    parser.add_argument("--json", action="store_true", help="machine-readable output")


def _number(value: float) -> float | None:
    return value if math.isfinite(value) else None


def summarise(tid: int, array: Array, tensor: LogicalTensor) -> dict[str, Any]:
    """Statistics of one output: min/max/mean over its finite values, NaN and inf counts."""
    values = np.asarray(array).astype(np.float64)
    finite = values[np.isfinite(values)]
    stats: dict[str, Any] = {"id": tid, "dtype": tensor.dtype.value, "shape": list(array.shape),
                             "min": None, "max": None, "mean": None,
                             "nan": int(np.isnan(values).sum()),
                             "inf": int(np.isinf(values).sum())}
    if finite.size:
        stats.update(min=_number(float(finite.min())), max=_number(float(finite.max())),
                     mean=_number(float(finite.mean())))
    return stats


def _line(s: dict[str, Any]) -> str:
    def fmt(v: float | None) -> str:
        return "-" if v is None else f"{v:.6g}"
    extra = "".join(f"  {k} {s[k]}" for k in ("nan", "inf") if s[k])
    return (f"  tensor {s['id']}  {s['dtype']}  {s['shape']}  min {fmt(s['min'])}  "
            f"max {fmt(s['max'])}  mean {fmt(s['mean'])}{extra}")


def _on_backend(spec: str, device_id: str | None, graph: Graph,
                inputs: dict[int, Array], *, quiet: bool) -> tuple[dict[int, Array], str]:
    """The graph outputs as backend `spec` computes them, and where it ran (`BackendError`
    when the backend cannot load or run them; unless `quiet`, what the backend raised is
    printed first with its whole traceback, the backend's frames being what its author
    needs)."""
    from fusionspec.backend import load_backend, select_device
    from fusionspec.conformance.answers import short_traceback
    from fusionspec.conformance.replay import ReplayError, backend_outputs

    backend = load_backend(spec)
    device = select_device(backend, device_id)
    try:
        return backend_outputs(backend, device, graph, inputs), f"{backend.name} {device.id}"
    except ReplayError as exc:
        if exc.__cause__ is not None and not quiet:
            print(f"what {spec} raised:\n{short_traceback(exc.__cause__, whole=True)}",
                  file=sys.stderr)
        raise


def run(args: argparse.Namespace) -> int:
    check_paths({"FILE": args.file, "--inputs": args.inputs},
                {"--out": args.out, "--save-inputs": args.save_inputs})
    limit = max_memory(args.max_memory)
    graph: Graph = load(args.file).finalize()
    # The budget is checked before any input is filled or read.
    parts = planned_partitions(graph, limit, single_op=args.single_op)
    if args.inputs:
        inputs = read_npz(args.inputs, graph.input_tensors, max_bytes=limit)
        origin = f"inputs from {args.inputs}"
    else:
        inputs = fill_inputs(graph, args.seed)
        origin = f"inputs filled with seed {args.seed}"
    if args.compare and not args.backend:
        raise UsageError("--compare judges a backend against the reference: give --backend")
    verdicts: list[tuple[int, bool, str]] = []
    if args.backend:
        outputs, where = _on_backend(args.backend, args.device, graph, inputs,
                                     quiet=bool(args.json))
        origin += f", on {where}"
        if args.compare:
            verdicts = _judged(graph, inputs, outputs)
    else:
        outputs = execute(graph, inputs, partitioner=lambda _graph: parts,
                          memory_budget=limit)
    tensors = graph.tensors
    if args.save_inputs:
        write_npz(args.save_inputs, inputs, tensors)
    if args.out:
        write_npz(args.out, outputs, tensors)
    stats = [summarise(tid, arr, tensors[tid]) for tid, arr in outputs.items()]
    lines = [f"{args.file}: {len(graph.ops)} op(s) in {len(parts)} partition(s), {origin}"]
    lines += [_line(s) for s in stats]
    if args.out:
        lines.append(f"wrote {len(outputs)} output(s) to {args.out}")
    lines += [f"  tensor {tid}: {'agrees with the reference' if same else reason}"
              for tid, same, reason in verdicts]
    differs = [tid for tid, same, _ in verdicts if not same]
    if verdicts:
        lines.append(f"DIFFERS from the reference on tensor(s) {differs}" if differs
                     else "AGREES with the reference on every output")
    emit(args, "\n".join(lines), {
        "ok": not differs, "file": args.file, "ops": len(graph.ops), "partitions": len(parts),
        "inputs": args.inputs, "seed": None if args.inputs else args.seed, "out": args.out,
        "outputs": stats, "compared": [{"id": tid, "agrees": same, "reason": reason}
                                       for tid, same, reason in verdicts]})
    return 1 if differs else 0


def _judged(graph: Graph, inputs: dict[int, Array], outputs: dict[int, Array],
            ) -> list[tuple[int, bool, str]]:
    """(tensor id, agrees, why not) for each graph output: the backend's `outputs` against the
    reference's, within the suite's error bound of each."""
    from fusionspec.conformance.grade.culprit import against_reference

    return [(tid, result.passed, result.reason)
            for tid, result in against_reference(graph, inputs, outputs)]
