"""``fusionspec merge`` on performance documents: the shards of one bench run joined.

    fusionspec bench --backend NAME --shard 1/2 --out shard-1   # and 2/2 elsewhere
    fusionspec merge shard-*/perf.json -o all/perf.json

`fusionspec.cli.merge` hands over here when its inputs are performance documents (recognised by
their ``format``). The join is `fusionspec.conformance.perf.document.merge_perf`: the same
backend, device, size and seed, no workload twice. Exit codes: 0 when every workload of the
merged run was measured, 1 when one was not or the documents are not shards of one run, 2 for a
usage error (results and performance documents mixed).
"""

from __future__ import annotations

import argparse
from collections import Counter
from pathlib import Path

from .output import UsageError, emit


def run_perf_merge(args: argparse.Namespace, perf_paths: list[Path]) -> int:
    from fusionspec.conformance.perf.document import load_perf, merge_perf, write_perf

    others = [p for p in args.results if p not in perf_paths]
    if others:
        raise UsageError(f"{others[0]} is a results document and {perf_paths[0]} a performance "
                         "document; merge each kind on its own")
    documents = [load_perf(p) for p in perf_paths]
    merged = merge_perf(documents, [str(p) for p in perf_paths])
    write_perf(merged, args.out)
    workloads = merged["workloads"]
    failed = [w["id"] for w in workloads if "error" in w]
    verdicts = Counter(w["verdict"] for w in workloads if "verdict" in w)
    summary = ", ".join(f"{n} {v}" for v, n in verdicts.items()) or "no workload measured"
    lines = [f"{'PASS' if not failed else 'INCOMPLETE'}: {merged['backend']} on "
             f"{merged['device']['id']}: {len(workloads)} workload(s), {summary} "
             f"({len(documents)} part(s) merged)"]
    lines += [f"  not measured: {w}" for w in failed[:30]]
    lines.append(f"performance document: {args.out}")
    emit(args, "\n".join(lines), {"ok": not failed, "perf": str(args.out),
                                  "workloads": len(workloads), "not_measured": failed,
                                  "verdicts": dict(verdicts), "parts": len(documents)})
    return 1 if failed else 0
