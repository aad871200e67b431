"""``fusionspec patterns``: print the pattern catalog.

For each entry: its id and family, the notation, the page and section it comes from, how many
ops an instance has, the rules that apply (id, kind, device, statement) and the decisions
recorded for it. ``--json`` prints a list of objects (`PatternEntry.to_dict`); ``--family`` and
pattern ids narrow the list (an unknown id is an error, exit code 1).
"""

from __future__ import annotations

import argparse

from fusionspec.spec.catalog import PatternEntry, PatternFamily, entries, entry

from .output import emit

__all__ = ["HELP", "add_arguments", "run", "describe"]

HELP = "list the fusion patterns of the spec with their rules and recorded decisions"


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("ids", nargs="*", metavar="ID",
                        help="only these pattern ids (default: all)")
    parser.add_argument("--family", choices=[f.value for f in PatternFamily],
                        help="only the patterns of one family")
    parser.add_argument("--json", action="store_true", help="print a JSON list of objects")


def describe(entry: PatternEntry) -> str:
    """The human-readable block for one entry."""
    lines = [
        f"{entry.id}  [{entry.family.value}]",
        f"  {entry.notation}",
        f"  source: {entry.page.cite(entry.section)}",
        f"  ops: {entry.min_ops} to {entry.max_ops}",
    ]
    if entry.rules:
        lines.append("  rules:")
        for r in entry.rules:
            device = f", {r.device} only" if r.device else ""
            lines.append(f"    {r.id} ({r.kind.value}{device}): {r.statement}")
    if entry.decisions:
        lines.append("  decisions:")
        for d in entry.decisions:
            lines.append(f"    {d.id}: {d.text}")
            lines.append(f"      why: {d.reason}")
    return "\n".join(lines)


def run(args: argparse.Namespace) -> int:
    for pattern_id in args.ids:
        entry(pattern_id)  # an unknown id raises UnknownPatternError, naming the known ones
    chosen = [e for e in entries(args.family) if not args.ids or e.id in args.ids]
    text = "\n\n".join(describe(e) for e in chosen)
    emit(args, text, [e.to_dict() for e in chosen])
    return 0
