"""``fusionspec findings``: where a graded backend departs from the spec, as Markdown.

    fusionspec findings results/conformance/onednn-*/results.json \\
        -o docs/onednn-findings.md --examples docs/onednn-findings

Groups the failing and extension cases of each results document by cause
(`fusionspec.reports.findings`) and writes one section per run and one entry per cause with a
replayable example. With ``--examples DIR`` each example's failure folder is copied under
``DIR/<run>/``, and the replay commands point there (relative to the working directory), so the
document stays replayable without the runs' output folders.

Performance documents (``fusionspec bench`` writes ``perf.json``; recognised by their
``format``) may be given among the results documents, or alone: each adds a section listing
the fusions that do not pay and the fusions the backend does not form, with what forming them
would buy where that is measurable and the command that reproduces each figure
(`fusionspec.reports.perf_findings`).
"""

from __future__ import annotations

import argparse
from pathlib import Path

from fusionspec.conformance.grade.results import load_document
from fusionspec.conformance.perf.document import is_perf_document, load_perf
from fusionspec.spec.files import atomic_write_text, inside

from .output import UsageError, check_paths, emit

HELP = "list where a backend departs from the spec (Markdown, from a results document)"


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("results", type=Path, nargs="+", metavar="RESULTS.json",
                        help="results documents, one section each, and performance "
                        "documents (perf.json of fusionspec bench)")
    parser.add_argument("-o", "--out", type=Path, required=True, help="the Markdown file")
    parser.add_argument("--examples", type=Path, metavar="DIR",
                        help="copy each finding's example folder under DIR")
    parser.add_argument("--title", default="Findings", help="the document's title")
    parser.add_argument("--intro", type=Path, metavar="FILE",
                        help="Markdown placed under the title (what was graded, how)")
    parser.add_argument("--json", action="store_true", help="machine-readable summary")


def run(args: argparse.Namespace) -> int:
    from fusionspec.reports.findings import (
        copy_examples,
        findings_markdown,
        group_findings,
        merge_findings,
        run_label,
        unexplained,
    )

    check_paths({**{f"RESULTS[{i}]": p for i, p in enumerate(args.results)},
                 "--intro": args.intro}, {"--out": args.out})
    perf_paths = [p for p in args.results if is_perf_document(p)]
    args.results = [p for p in args.results if p not in perf_paths]
    if not args.results:
        return _perf_only(args, perf_paths)
    runs = [load_document(path) for path in args.results]
    if args.examples is not None:
        _check_examples(args.examples, [run_label(r) for r in runs], args.results)
    dirs: dict[str, str] = {}
    merged = merge_findings(runs)
    departures = sum(1 for f in merged if f.status != "extension")
    extensions = sum(1 for f in merged if f.status == "extension")
    left, failing = unexplained(merged)
    for path, results in zip(args.results, runs, strict=True):
        findings = group_findings(results)
        if args.examples is not None:
            copied = copy_examples(findings, args.examples, run_label(results), path)
            label = run_label(results)
            dirs.update({f"{label}:{case}": _shown(Path(folder))
                         for case, folder in copied.items()})
    intro = args.intro.read_text(encoding="utf-8") if args.intro is not None else ""
    text = findings_markdown(runs, title=args.title, example_dirs=dirs, intro=intro)
    perf = _perf_markdown(perf_paths)
    if perf:
        text = text.rstrip("\n") + "\n\n" + perf
    args.out.parent.mkdir(parents=True, exist_ok=True)
    atomic_write_text(args.out, text)
    emit(args, f"findings: {args.out} ({len(runs)} run(s), {departures} departure(s), "
         f"{extensions} extension kind(s), {left} of {failing} failing case(s) unexplained, "
         f"{len(dirs)} example(s) copied)",
         {"ok": True, "out": str(args.out), "runs": len(runs), "departures": departures,
          "extensions": extensions, "unexplained": left, "failing": failing,
          "examples": dirs, "performance": [str(p) for p in perf_paths]})
    return 0


def _shown(folder: Path) -> str:
    """How a replay line names an example folder: relative to the current folder (the
    repository's root, where the nox session runs) when it lies inside it, else absolute; never
    a path that climbs out of the current folder and back in (a sibling checkout's name)."""
    full = folder.resolve()
    try:
        return str(full.relative_to(Path.cwd().resolve()))
    except ValueError:
        return str(full)


def _perf_markdown(paths: list[Path]) -> str:
    from fusionspec.reports.perf import perf_section
    from fusionspec.reports.perf_findings import perf_findings_markdown

    if not paths:
        return ""
    return perf_findings_markdown(perf_section([load_perf(p) for p in paths],
                                               [str(p) for p in paths]))


def _perf_only(args: argparse.Namespace, paths: list[Path]) -> int:
    """The findings of performance documents alone."""
    from fusionspec.reports.perf import perf_section
    from fusionspec.reports.perf_findings import perf_findings

    section = perf_section([load_perf(p) for p in paths], [str(p) for p in paths])
    intro = args.intro.read_text(encoding="utf-8").strip() if args.intro is not None else ""
    body = _perf_markdown(paths)
    text = f"# {args.title}\n\n" + (f"{intro}\n\n" if intro else "") + body
    args.out.parent.mkdir(parents=True, exist_ok=True)
    atomic_write_text(args.out, text)
    found = perf_findings(section)
    counts = {label: {"does_not_pay": sum(1 for f in items if f.row.verdict != "not fused"),
                      "not_fused": sum(1 for f in items if f.row.verdict == "not fused")}
              for label, items in found.items()}
    summary = "; ".join(f"{label}: {c['does_not_pay']} not paying, {c['not_fused']} not fused"
                        for label, c in counts.items())
    emit(args, f"findings: {args.out} ({summary})",
         {"ok": True, "out": str(args.out), "performance": counts})
    return 0


def _check_examples(root: Path, labels: list[str], results: list[Path]) -> None:
    """Refuse an ``--examples`` folder whose per-run subfolders (emptied before copying) hold
    one of the results documents being read."""
    for label in labels:
        target = root / label
        for path in results:
            if inside(path.resolve(), target) is not None:
                raise UsageError(f"--examples {root}: {target} holds {path}, and it is emptied "
                                 "before the examples are copied; give the examples another "
                                 "folder")
