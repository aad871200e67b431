"""``fusionspec merge`` on performance documents: the shards of one bench run joined.

    fusionspec bench --backend NAME --shard 1/2 --out shard-1   # and 2/2 elsewhere
    fusionspec merge shard-*/perf.json -o all/perf.json

`fusionspec.cli.merge` hands over here when its inputs are performance documents (recognised by
their ``format``). The join is `fusionspec.conformance.perf.document.merge_perf`: the same
backend, device, size, seed and selection, no workload twice, each shard's workloads its own.
The merged run is INCOMPLETE when a shard of its split is missing, a part was incomplete, it
holds fewer workloads than the run was given, or it measured none; the output is never one of
the inputs (a usage error) and is written atomically (a link there is replaced, not followed).
Exit codes: 0 when every workload of the merged run was measured, 1 when one was not, the run is
incomplete or the documents are not parts of one run, 2 for a usage error (results and
performance documents mixed, or the output is an input).
"""

from __future__ import annotations

import argparse
from collections import Counter
from pathlib import Path

from fusionspec.spec.text import clean_text

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
    workloads = merged.workloads
    failed = [w.id for w in workloads if w.error is not None]
    verdicts = Counter(w.verdict for w in workloads if w.verdict is not None)
    incomplete = merged.incomplete or ("" if verdicts else "no workload was measured")
    summary = ", ".join(f"{n} {v}" for v, n in verdicts.items()) or "no workload measured"
    verdict = "INCOMPLETE" if incomplete else "FAIL" if failed else "PASS"
    lines = [f"{verdict}: {merged.label}: {len(workloads)} "
             f"workload(s), {summary} ({len(documents)} part(s) merged)"]
    if incomplete:
        lines.append(f"  the run is incomplete: {incomplete}")
    lines += [f"  not measured: {w}" for w in failed[:30]]
    lines.append(f"performance document: {args.out}")
    emit(args, "\n".join(clean_text(line) for line in lines), {
        "ok": verdict == "PASS", "verdict": verdict, "perf": str(args.out),
        "workloads": len(workloads), "not_measured": failed, "verdicts": dict(verdicts),
        "parts": len(documents), "incomplete": incomplete or None})
    return 0 if verdict == "PASS" else 1
