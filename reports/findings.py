"""Findings: where a graded backend departs from the spec pages, as a Markdown document.

`findings_markdown(runs)` reads results documents (``fusionspec conform --out``), one section
each, and groups each run's failing cases, and its extensions, by cause
(`fusionspec.reports.causes`: computed from each verdict's facts and the departures its backend
declared, never from its reason): one known departure, one mistake's signature, one culprit,
one cut of a fusion is one finding, whichever ops ids and Unary or Binary members stand where.
Each finding lists how many cases show it, in which patterns and case kinds, one example with
its reason, and how to replay that example; its explanation comes from the backend's own
declarations or from what the suite found (a culprit, a cut), never from a library's name.

`copy_examples` copies each finding's example folder (``graph.json``, ``inputs.npz``,
``case.json``) next to the document, so the replay commands work from a checkout without the
run's output folder. Results documents are untrusted input: their reader
(`fusionspec.conformance.grade.document`) has typed every field, text is escaped for Markdown
and replay commands are shell-quoted (`fusionspec.reports.markdown`),
and examples are copied only from folders inside the results document's own folder.

This module reads the results document's records; it imports nothing else of the suite.
"""

from __future__ import annotations

import shutil
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path

from fusionspec.conformance.grade.document import FailureRecord, ResultsDocument
from fusionspec.spec.files import inside, safe_component

from . import markdown as md
from .causes import cause, signature
from .document import ReportError
from .failures import find_folder
from .labels import run_folder
from .legend import severity

__all__ = ["Finding", "cause", "group_findings", "merge_findings",
           "findings_markdown", "unexplained",
           "copy_examples", "signature", "run_label", "EXAMPLE_FILES", "MAX_EXAMPLE_BYTES"]

@dataclass
class Finding:
    """One cause: its signature, the records showing it (the first is its example, from the
    run `example_run`), and a known explanation if any."""

    signature: str
    status: str
    records: list[FailureRecord] = field(default_factory=list)
    known: str | None = None
    #: How many of its records each run (`run_label`) holds.
    runs: dict[str, int] = field(default_factory=dict)
    example_run: str = ""

    @property
    def example(self) -> FailureRecord:
        return self.records[0]

    @property
    def patterns(self) -> list[str]:
        return sorted({r.pattern for r in self.records})

    @property
    def kinds(self) -> list[str]:
        return sorted({r.kind for r in self.records})


def group_findings(results: ResultsDocument) -> list[Finding]:
    """Failures and extensions of `results`, grouped by `cause`, largest group first."""
    return merge_findings([results])


def merge_findings(runs: Sequence[ResultsDocument]) -> list[Finding]:
    """The failures and extensions of every run in `runs`, grouped by `cause` across them
    (one bug, one finding, whichever versions show it): departures first, then extensions;
    among departures, the bugs before what the backend declares (known departures,
    limitations), then by `severity` (wrong values before missed fusions), then largest
    first."""
    groups: dict[str, Finding] = {}
    for results in runs:
        label = run_label(results)
        for record in [*results.failures, *results.extensions]:
            if record.minimal_of:
                continue
            key, explanation = cause(record)
            finding = groups.get(key)
            if finding is None:
                finding = groups[key] = Finding(key, record.status, example_run=label)
            finding.records.append(record)
            finding.runs[label] = finding.runs.get(label, 0) + 1
            if explanation is not None and len(explanation) > len(finding.known or ""):
                finding.known = explanation  # the fullest statement any run recorded
    return sorted(groups.values(), key=lambda f: (f.status == "extension", _declared(f),
                                                  severity(f.status), -len(f.records),
                                                  f.signature))


def _declared(finding: Finding) -> bool:
    """Whether the backend declared this finding itself (a known departure it matched, a
    partition it marks unsupported): those come after the bugs."""
    return bool(finding.example.details.departures) or finding.status == "unsupported"


def _example_dir(record: FailureRecord) -> str | None:
    return record.replay.dir or None


#: What `copy_examples` copies from a failure folder: these regular files, nothing else.
EXAMPLE_FILES = ("case.json", "graph.json", "inputs.npz", "replay.txt", "culprit.json",
                 "culprit_inputs.npz")
#: A file larger than this is left out of the copy.
MAX_EXAMPLE_BYTES = 64 * 2**20


def copy_examples(findings: Sequence[Finding], root: Path, label: str,
                  results_path: Path) -> dict[str, str]:
    """Copy each finding's example folder into ``root/<label>/`` and return case id -> copied
    folder.

    ``root/<label>`` is emptied first; `label` is made one safe path component, so what is
    emptied is always a folder strictly inside `root`. A failure folder is found as the report
    finds it (inside `results_path`'s folder, never elsewhere), and only its `EXAMPLE_FILES`
    that are regular files inside it, each under `MAX_EXAMPLE_BYTES`, are copied.
    """
    base = root.resolve()
    target = base / safe_component(label, fallback="run")
    if inside(target, base) in (None, base):  # safe_component makes this impossible
        raise ValueError(f"refusing to write examples outside {base}")
    if target.is_symlink():
        target.unlink()
    elif target.exists():
        if not _holds_only_examples(target):
            raise ReportError(f"--examples {root}: {target} holds files findings did not "
                              "write, and it would be emptied; give the examples another "
                              "folder")
        shutil.rmtree(target)
    copied: dict[str, str] = {}
    for finding in findings:
        source = find_folder(_example_dir(finding.example) or "", results_path)
        if source is None:
            continue
        dest = target / safe_component(source.name, fallback="case")
        files = [source / name for name in EXAMPLE_FILES
                 if inside(source / name, source) is not None and (source / name).is_file()
                 and (source / name).stat().st_size <= MAX_EXAMPLE_BYTES]
        if not files:
            continue
        dest.mkdir(parents=True, exist_ok=True)
        for path in files:
            shutil.copyfile(path, dest / path.name)
        copied[finding.example.case_id] = str(dest)
    return copied


def _holds_only_examples(folder: Path) -> bool:
    """Whether `folder` holds what `copy_examples` writes and nothing else: folders of
    `EXAMPLE_FILES` (an earlier run's examples, safe to replace)."""
    for case in folder.iterdir():
        if case.is_symlink() or not case.is_dir():
            return False
        if any(p.name not in EXAMPLE_FILES or p.is_symlink() or not p.is_file()
               for p in case.iterdir()):
            return False
    return True


def _replay(backend: str, device: str, folder: str | None) -> str:
    if folder is None:
        return "no failure folder was written (run with --out)"
    return md.shell(["fusionspec", "conform", "--backend", backend, "--device", device,
                     "--replay", folder])


def run_label(results: ResultsDocument) -> str:
    """``mybackend-1.2.0-cpu``: the run of a results document as one safe path component
    (`fusionspec.reports.labels.run_folder`)."""
    return run_folder(results.backend, results.device.driver, results.device.id)


#: What makes a finding explained, stated under the unexplained share.
EXPLAINED = ("A finding is explained when it carries one of these labels: *Known departure* "
             "(a departure the backend declares, with its source), *Limitation* (the backend "
             "says so itself: it marks the partition unsupported, or it declares the refusal), "
             "*Bug* or *Fusion gap* (the backend departs from the pages, with the smallest "
             "reproducer that culprit isolation found, or the example, which replays), "
             "*Suite issue* (a bug of fusionspec). Everything else is counted unexplained.")

#: Entries past this many are table rows, one line each (the document reads in five minutes).
FULL_ENTRIES = 15


def unexplained(findings: Sequence[Finding]) -> tuple[int, int]:
    """(failing cases no explanation accounts for, failing cases), extensions left out."""
    failing = [f for f in findings if f.status != "extension"]
    return (sum(len(f.records) for f in failing if f.known is None),
            sum(len(f.records) for f in failing))


def _share(part: int, whole: int) -> str:
    return f"{part} of {whole} failing cases ({100 * part / whole:.1f}%)" if whole else \
        "no failing cases"


def _folder(finding: Finding, example_dirs: Mapping[str, str]) -> str | None:
    case = finding.example.case_id
    return (example_dirs.get(f"{finding.example_run}:{case}") or example_dirs.get(case)
            or _example_dir(finding.example))


def _by_run(finding: Finding) -> str:
    return ", ".join(f"{md.code(label)} {count}" for label, count in finding.runs.items())


def _entry(number: int, finding: Finding, runs: Mapping[str, ResultsDocument],
           example_dirs: Mapping[str, str], *, full: bool) -> list[str]:
    ex = finding.example
    results = runs.get(finding.example_run)
    backend = results.backend if results is not None else ""
    device = results.device.id if results is not None else ""
    folder = _folder(finding, example_dirs)
    replay = _replay(backend, device, folder)
    explanation = finding.known or "(no explanation recorded)"
    if not full:
        return [f"| {number} | {md.text(finding.signature)} | {md.text(explanation)} | "
                f"{len(finding.records)}: {_by_run(finding).replace('|', chr(92) + '|')} | "
                f"{replay.replace('|', chr(92) + '|')} |"]
    lines = [f"#### {number}. {md.text(finding.signature)}", ""]
    lines += [f"{md.text(explanation)}.", "",
              f"- cases: {len(finding.records)} by run: {_by_run(finding)}; "
              f"{md.text(', '.join(finding.kinds))} in "
              f"{', '.join(md.code(p) for p in finding.patterns)}",
              f"- example {md.code(ex.case_id)} ({md.code(finding.example_run)}; "
              f"{md.text(ex.description)}): {md.text(ex.reason)}"]
    culprit = ex.details.culprit
    if culprit is not None and culprit.kinds and folder is not None:
        case_file = str(Path(folder, "culprit.json"))
        run = ["fusionspec", "run", case_file, "--inputs",
               str(Path(folder, "culprit_inputs.npz")), "--backend", backend, "--device",
               device, "--compare"]
        lines.append(f"- smallest failing piece: {md.text(culprit.signature)}: "
                     f"{md.shell(run)} (on the backend and the reference; or "
                     f"{md.shell(['benchdnn', '--graph', f'--case={case_file}'])})")
    return [*lines, f"- replay: {replay}", ""]


def _explanations(findings: Sequence[Finding]) -> list[str]:
    """A table: each kind of explanation with how many findings and cases it accounts for."""
    rows: dict[str, list[Finding]] = {}
    for finding in findings:
        if finding.status == "extension":
            continue
        kind = (finding.known or "(no explanation recorded)").split(":", 1)[0]
        rows.setdefault(kind, []).append(finding)
    ordered = sorted(rows.items(), key=lambda kv: -sum(len(f.records) for f in kv[1]))
    return ["| explanation | findings | failing cases |", "|---|---|---|",
            *[f"| {md.text(kind)} | {len(group)} | {sum(len(f.records) for f in group)} |"
              for kind, group in ordered], ""]


def findings_markdown(runs: Sequence[ResultsDocument], *, title: str = "Findings",
                      example_dirs: Mapping[str, str] | None = None, intro: str = "") -> str:
    """The findings document for one or more results documents (see the module doc): one entry
    per cause across the runs, ranked by how many cases show it, each with its explanation,
    the runs (versions) it occurs in and a replayable example; the unexplained share heads
    it. `intro` is Markdown written by the user and goes in as it is."""
    dirs = example_dirs or {}
    findings = merge_findings(runs)
    left, failing = unexplained(findings)
    lines = [f"# {md.text(title)}", ""]
    if intro:
        lines += [intro.strip(), ""]
    lines += [f"**Unexplained: {_share(left, failing)}**, in "
              f"{sum(1 for f in findings if f.status != 'extension' and f.known is None)} of "
              f"{sum(1 for f in findings if f.status != 'extension')} findings. "
              f"{EXPLAINED}", "",
              "| run | device, driver | cases | pass | failing | unexplained |",
              "|---|---|---|---|---|---|"]
    by_label: dict[str, ResultsDocument] = {}
    for results in runs:
        label = run_label(results)
        by_label[label] = results
        own = group_findings(results)
        left_here, failing_here = unexplained(own)
        totals = results.totals
        lines.append(f"| {md.cell_code(label)} | {md.text(results.device.name)}, "
                     f"{md.text(results.device.driver)} | {sum(totals.values())} | "
                     f"{totals.get('pass', 0)} | {failing_here} | {left_here} |")
    lines += ["", *_explanations(findings)]
    departures = [f for f in findings if f.status != "extension"]
    extensions = [f for f in findings if f.status == "extension"]
    for section, chosen in (("Departures from the spec", departures),
                            ("Extensions: fused beyond what the pages promise", extensions)):
        lines += [f"### {section}", ""]
        if not chosen:
            lines += ["None.", ""]
        for number, finding in enumerate(chosen[:FULL_ENTRIES], 1):
            lines += _entry(number, finding, by_label, dirs, full=True)
        if len(chosen) > FULL_ENTRIES:
            lines += ["The smaller ones, one row each:", "",
                      "| # | finding | explanation | cases by run | replay |",
                      "|---|---|---|---|---|"]
            for number, finding in enumerate(chosen[FULL_ENTRIES:], FULL_ENTRIES + 1):
                lines += _entry(number, finding, by_label, dirs, full=False)
            lines.append("")
    return "\n".join(lines).rstrip() + "\n"
