"""``fusionspec partition FILE.json``: the reference partitions of a oneDNN graph."""

from __future__ import annotations

import argparse

from fusionspec.reference.partitioner import partition
from fusionspec.spec.graph import Partition
from fusionspec.spec.onednn_json import load

from .output import emit

HELP = "print the reference partitions of a graph (pattern id, ops, inputs, outputs)"


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("file", help="oneDNN graph JSON file")
    parser.add_argument("--json", action="store_true", help="machine-readable output")


def partition_to_dict(p: Partition) -> dict[str, object]:
    return {"id": p.id, "pattern": p.pattern, "supported": p.supported,
            "ops": [{"id": op.id, "kind": op.kind} for op in p.ops],
            "inputs": [t.id for t in p.inputs], "outputs": [t.id for t in p.outputs]}


def run(args: argparse.Namespace) -> int:
    parts = partition(load(args.file))
    lines = []
    for p in parts:
        ops = " + ".join(f"{op.kind} {op.id}" for op in p.ops)
        flag = "" if p.supported else "  [unsupported]"
        lines.append(f"partition {p.id}: {p.pattern or '(single op)'}{flag}\n"
                     f"  ops:     {ops}\n"
                     f"  inputs:  {[t.id for t in p.inputs]}\n"
                     f"  outputs: {[t.id for t in p.outputs]}")
    fused = sum(1 for p in parts if len(p.ops) > 1)
    lines.append(f"{len(parts)} partitions ({fused} fused) for "
                 f"{sum(len(p.ops) for p in parts)} ops")
    emit(args, "\n".join(lines), {"file": args.file,
                                  "partitions": [partition_to_dict(p) for p in parts]})
    return 0
