"""``fusionspec merge``: join the results documents of a sharded run into one.

    fusionspec conform --backend NAME --shard 1/3 --out shard-1   # on three machines ...
    fusionspec merge shard-*/results.json -o all/results.json

The merged document is the one an unsharded run writes (the same verdicts in the same order,
totals, patterns, rules, coverage; `fusionspec.conformance.grade.merge`), and the failure
folders of the shards are copied next to it, so its replay commands and the report work from
there. A missing shard, or one that was interrupted or could not run, makes the merged document
incomplete, and so does a merged run that judged no case.

Every folder a document names is checked before anything is copied (inside its document's
folder, no links, nothing replaced: `fusionspec.conformance.grade.gather`); the output is never
one of the inputs and is written atomically. Exit codes: 0 when the merged run passes, 1 when
it fails or is incomplete (or the documents cannot be merged: they come from different commands,
or name a folder outside their own), 2 for a usage error.

Performance documents (``perf.json`` of ``fusionspec bench --shard``) are merged by
`fusionspec.cli.perf_merge`.
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path

from fusionspec.conformance.grade.results import load_document
from fusionspec.spec.files import atomic_write_text

from .output import check_paths, emit

HELP = "join the results documents of shards (or other parts of one run) into one"


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("results", nargs="+", type=Path, metavar="RESULTS.json",
                        help="the parts' results documents")
    parser.add_argument("-o", "--out", type=Path, required=True, metavar="OUT.json",
                        help="the merged results document (failure folders are copied "
                             "beside it)")
    parser.add_argument("--json", action="store_true", help="machine-readable summary")


def run(args: argparse.Namespace) -> int:
    from fusionspec.conformance.grade.gather import gathering
    from fusionspec.conformance.grade.merge import merge_documents
    from fusionspec.conformance.perf.document import is_perf_document

    check_paths({f"RESULTS[{i}]": p for i, p in enumerate(args.results)}, {"--out": args.out})
    perf_paths = [p for p in args.results if is_perf_document(p)]
    if perf_paths:
        from .perf_merge import run_perf_merge

        return run_perf_merge(args, perf_paths)
    documents = [load_document(path) for path in args.results]
    merged = merge_documents(documents, [str(p) for p in args.results])
    with gathering(merged, list(args.results), args.out.parent) as (copied, merged):
        atomic_write_text(args.out, json.dumps(merged.to_json(), indent=1, allow_nan=False)
                          + "\n")
    verdict = merged.verdict
    lines = [f"{verdict}: {merged.backend} on {merged.device.id}: {merged.totals_text()} "
             f"({len(documents)} part(s) merged, {copied} failure folder(s) copied)"]
    if merged.incomplete:
        lines.append(f"  the run is incomplete: {merged.incomplete}")
    lines.append(f"results: {args.out}")
    emit(args, "\n".join(lines), {"ok": verdict == "PASS", "verdict": verdict,
                                  "results": str(args.out), "totals": merged.totals,
                                  "parts": len(documents), "incomplete": merged.incomplete})
    return 0 if verdict == "PASS" else 1
