"""``fusionspec explain FILE.json``: why ops of a graph were not fused with their neighbours."""

from __future__ import annotations

import argparse

from fusionspec.reference.explain import explain
from fusionspec.spec.onednn_json import load

from .output import emit

HELP = "say, for each op not fused with its neighbour, which pattern came closest and why not"


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("file", help="oneDNN graph JSON file")
    parser.add_argument("--json", action="store_true", help="machine-readable output")


def run(args: argparse.Namespace) -> int:
    found = explain(load(args.file))
    if found:
        text = "\n".join(f"op {e.op_id}: [{e.reason}] {e.message}" for e in found)
    else:
        text = "every op is fused with its neighbours"
    emit(args, text, {"file": args.file, "explanations": [e.to_dict() for e in found]})
    return 0
