"""Findings: where a graded backend departs from the spec pages, as a Markdown document.

`findings_markdown(runs)` reads results documents (``fusionspec conform --out``), one section
each, and groups each run's failing cases, and its extensions, by cause: cases whose reasons
differ only in op ids, tensor ids, numbers and which Unary or Binary member stands where are
one finding. Each
finding lists how many cases show it, in which patterns and case kinds, one example with its
reason, and how to replay that example. Findings that match an explanation in `KNOWN` carry it,
marked "Known departure" where oneDNN's own sources already document it.

`copy_examples` copies each finding's example folder (``graph.json``, ``inputs.npz``,
``case.json``) next to the document, so the replay commands work from a checkout without the
run's output folder. Results documents are untrusted input: `checked` types every field read,
text is escaped for Markdown and replay commands are shell-quoted (`fusionspec.reports.markdown`),
and examples are copied only from folders inside the results document's own folder.

This module reads results as plain data; it imports nothing from the suite's runtime.
"""

from __future__ import annotations

import re
import shutil
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from fusionspec.spec.categories import BINARY, UNARY
from fusionspec.spec.files import inside, safe_component

from . import markdown as md
from .document import Doc
from .failures import find_folder

__all__ = ["Finding", "KNOWN", "checked", "group_findings", "findings_markdown",
           "copy_examples", "signature", "run_label", "EXAMPLE_FILES", "MAX_EXAMPLE_BYTES"]

Record = Mapping[str, Any]

# Subtract and Divide stay literal: which of their inputs a chain enters on matters to fusion.
_ORDERED_BINARY = ("Subtract", "Divide")
_UNARY_RE = re.compile(r"\b(" + "|".join(k for k in UNARY if k != "Pow") + r")\b")
_BINARY_RE = re.compile(r"\b(" + "|".join(k for k in BINARY if k not in _ORDERED_BINARY)
                        + r")\b")
_NUMBER_RE = re.compile(r"(?<![\w.])-?\d+(\.\d+)?(e[-+]?\d+)?(?![\w.])")
# "Unary->Unary->Unary" and "[Unary], [Unary]": how many times a member repeats is incidental.
_REPEAT_ARROW_RE = re.compile(r"\b(Unary|Binary)(?:->\1\b)+")
_REPEAT_PART_RE = re.compile(r"(\[[^\[\]]*\])(?:, \1)+")


def signature(record: Record) -> str:
    """The cause of one failing (or extension) record, with the incidental parts abstracted."""
    reason = str(record.get("reason", ""))
    status = str(record.get("status", ""))
    if status == "numeric-mismatch":
        # Which tensor and how far off vary; the chain (last bracket) and dtype are the cause.
        chain = reason[reason.rfind("["):] if "[" in reason else ""
        what = "NaN/inf" if "NaN" in reason else "values"
        reason = f"{what} differ {chain} ({record.get('dtype')})"
    text = _UNARY_RE.sub("Unary", reason)
    text = _BINARY_RE.sub("Binary", text)
    text = _NUMBER_RE.sub("N", text)
    text = _REPEAT_ARROW_RE.sub(r"\1+", text)
    text = _REPEAT_PART_RE.sub(r"\1...", text)
    return f"{status}: {text}"


@dataclass
class Finding:
    """One cause: its signature, the records showing it, and a known explanation if any."""

    signature: str
    status: str
    records: list[Record] = field(default_factory=list)
    known: str | None = None

    @property
    def example(self) -> Record:
        return self.records[0]

    @property
    def patterns(self) -> list[str]:
        return sorted({str(r.get("pattern")) for r in self.records})

    @property
    def kinds(self) -> list[str]:
        return sorted({str(r.get("kind")) for r in self.records})


def _chain_text(record: Record) -> str:
    return f"{record.get('reason', '')} {record.get('description', '')}"


def _unary_then_binaries(record: Record) -> bool:
    match = re.search(r"expected partition\(s\) \[([^\]]*)\]", str(record.get("reason", "")))
    if not match:
        return False
    kinds = match.group(1).split("->")
    return len(kinds) >= 3 and kinds[0] in UNARY and all(k in BINARY for k in kinds[1:])


def _formed(record: Record) -> str:
    """The "the backend formed ..." part of a fusion-mismatch reason."""
    reason = str(record.get("reason", ""))
    return reason.split("the backend formed", 1)[1] if "the backend formed" in reason else ""


def _unsupported(record: Record, kind: str) -> bool:
    return f"partition [{kind}] unsupported" in str(record.get("reason", ""))


def _split_before(record: Record, kinds: tuple[str, ...]) -> bool:
    return str(record.get("status")) == "fusion-mismatch" and any(
        f"[{kind}" in _formed(record) for kind in kinds)


#: Explanations of findings, each as a predicate over a record, the text shown with a matching
#: finding, and whether oneDNN's own sources already document the departure
#: (notes/onednn-internals.md, section D).
KNOWN: Sequence[tuple[Callable[[Record], bool], str, bool]] = (
    (lambda r: "[Pow" in _chain_text(r) or "Pow]" in _chain_text(r) or "->Pow" in _chain_text(r),
     "Pow is in the pages' Unary category but oneDNN neither fuses nor implements it", True),
    (_unary_then_binaries,
     "a Unary-headed chain takes one Binary at most; two or more binaries go to the "
     "Binary-headed pattern, leaving the Unary alone", True),
    (lambda r: "BiasAddBackward" in _chain_text(r),
     "ConvolutionBackwardWeights + BiasAddBackward is not fused, and BiasAddBackward alone is "
     "not implemented", True),
    (lambda r: str(r.get("status")) == "extension" and "post_op_count" in str(r.get("rule", "")),
     "oneDNN allows more post-ops than the pages' bound", True),
    (lambda r: str(r.get("status")) == "extension",
     "oneDNN fuses a chain the pages do not promise", False),
    (lambda r: _split_before(r, ("BiasAdd",)) and "+bias" in str(r.get("description", "")),
     "BiasAdd fuses only when the base op has no bias input of its own", True),
    (lambda r: _split_before(r, ("Subtract", "Divide")) and bool(
        re.search(r"(Subtract|Divide)\([^)]*src_1", str(r.get("description", "")))),
     "Subtract and Divide fuse only when the chain enters on their first input", True),
    (lambda r: _split_before(r, ("Add",)) and "[Reorder]" in _formed(r),
     "Reorder + Add fuses only with auto_broadcast=none on the Add", True),
    (lambda r: _unsupported(r, "Reciprocal"),
     "Reciprocal is implemented only fused with a Multiply (Reciprocal + Multiply)", True),
    (lambda r: _unsupported(r, "Interpolate") and "align_corners" in _chain_text(r),
     "Interpolate supports only half_pixel coordinates; align_corners is unsupported", True),
    (lambda r: _unsupported(r, "AvgPool") and " ceil" in _chain_text(r),
     "AvgPool with ceil rounding is unsupported where padding counts (exclude_pad=false)", True),
    (lambda r: _unsupported(r, "BatchNormInference") and "bf16" in _chain_text(r),
     "batch normalization has no bf16 implementation", True),
    (lambda r: "crashed" in str(r.get("reason", "")),
     "a C++ exception escaped the C API and aborted the process", False),
)


def _known(record: Record) -> str | None:
    for predicate, text, documented in KNOWN:
        if predicate(record):
            return f"{'Known departure' if documented else 'Note'}: {text}"
    return None


def group_findings(results: Mapping[str, Any]) -> list[Finding]:
    """Failures and extensions of `results`, grouped by `signature`, largest group first."""
    groups: dict[str, Finding] = {}
    records = [*results.get("failures", []), *results.get("extensions", [])]
    for record in records:
        if record.get("minimal_of"):
            continue
        sig = signature(record)
        finding = groups.setdefault(sig, Finding(sig, str(record.get("status"))))
        finding.records.append(record)
    for finding in groups.values():
        finding.known = _known(finding.example)
    return sorted(groups.values(), key=lambda f: (f.status == "extension", -len(f.records),
                                                  f.signature))


def _example_dir(record: Record) -> str | None:
    replay = record.get("replay") or {}
    folder = replay.get("dir") if isinstance(replay, Mapping) else None
    return str(folder) if folder else None


#: What `copy_examples` copies from a failure folder: these regular files, nothing else.
EXAMPLE_FILES = ("case.json", "graph.json", "inputs.npz", "replay.txt")
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
        copied[str(finding.example.get("case_id"))] = str(dest)
    return copied


def _replay(backend: str, device: str, folder: str | None) -> str:
    if folder is None:
        return "no failure folder was written (run with --out)"
    return md.shell(["fusionspec", "conform", "--backend", backend, "--device", device,
                     "--replay", folder])


def run_label(results: Mapping[str, Any]) -> str:
    """``onednn-3.2.0-cpu``: backend, driver version and device of a results document, as one
    safe path component (`fusionspec.spec.files.safe_component`)."""
    device = results.get("device") or {}
    parts = [str(results.get("backend")), str(device.get("driver") or ""), str(device.get("id"))]
    return safe_component("-".join(p for p in parts if p), fallback="run")


_RECORD_FIELDS = ("case_id", "pattern", "kind", "rule", "dtype", "description", "status",
                  "reason")


def _record(doc: Doc) -> dict[str, Any]:
    record: dict[str, Any] = {key: doc.text(key) for key in _RECORD_FIELDS}
    record["minimal_of"] = doc.text("minimal_of")
    record["replay"] = {"dir": doc.obj("replay").text("dir")}
    return record


def checked(results: Mapping[str, Any], source: str) -> dict[str, Any]:
    """The parts of a results document findings reads, each checked for its type (a
    `fusionspec.reports.document.ReportError` naming the field otherwise) and made plain
    strings and counts: the rest of this module then cannot trip over a wrongly typed field."""
    doc = Doc(results, source)
    device = doc.obj("device")
    return {
        "backend": doc.text("backend"), "started": doc.text("started"),
        "finished": doc.text("finished"), "suite_version": doc.text("suite_version"),
        "seed": doc.text("seed"), "totals": doc.counts("totals"),
        "device": {key: device.text(key) for key in ("id", "name", "driver", "runtime")},
        "failures": [_record(r) for r in doc.objects("failures")],
        "extensions": [_record(r) for r in doc.objects("extensions")]}


def _run_section(results: Mapping[str, Any], example_dirs: Mapping[str, str]) -> list[str]:
    backend = str(results.get("backend"))
    device = results.get("device") or {}
    device_id = str(device.get("id", ""))
    findings = group_findings(results)
    totals = results.get("totals") or {}
    departures = [f for f in findings if f.status != "extension"]
    extensions = [f for f in findings if f.status == "extension"]
    lines = [
        f"## {md.text(device.get('name') or backend)} ({md.code(run_label(results))})", "",
        f"Backend {md.code(backend)}, device {md.code(device_id)}, driver "
        f"{md.text(device.get('driver', ''))}, runtime {md.text(device.get('runtime', ''))}; "
        f"run {md.text(results.get('started'))} to {md.text(results.get('finished'))}, suite "
        f"{md.text(results.get('suite_version'))}, seed {md.text(results.get('seed'))}.", "",
        "| status | cases |", "|---|---|",
        *[f"| {md.text(k)} | {md.text(v)} |"
          for k, v in sorted(totals.items(), key=lambda kv: -kv[1])], "",
        f"{len(departures)} departures and {len(extensions)} kinds of extension, grouped from "
        "the failing and extension cases, largest first; each with one replayable example.", "",
        *_explained(findings)]
    for section, chosen in (("Departures from the spec", departures),
                            ("Extensions: fused beyond what the pages promise", extensions)):
        lines += [f"### {section}", ""]
        if not chosen:
            lines += ["None.", ""]
        for number, finding in enumerate(chosen, 1):
            ex = finding.example
            folder = example_dirs.get(str(ex.get("case_id"))) or _example_dir(ex)
            lines += [f"#### {number}. {md.text(finding.signature)}", ""]
            if finding.known:
                lines += [f"{md.text(finding.known)}.", ""]
            lines += [
                f"- cases: {len(finding.records)} ({md.text(', '.join(finding.kinds))}) in "
                f"{', '.join(md.code(p) for p in finding.patterns)}",
                f"- example {md.code(ex.get('case_id'))} "
                f"({md.text(ex.get('description', ''))}): {md.text(ex.get('reason'))}",
                f"- replay: {_replay(backend, device_id, folder)}", ""]
    return lines


def _explained(findings: Sequence[Finding]) -> list[str]:
    """A table: each explanation with how many findings and cases it accounts for."""
    by_text: dict[str, list[Finding]] = {}
    for finding in findings:
        by_text.setdefault(finding.known or "(no explanation recorded)", []).append(finding)
    rows = sorted(by_text.items(), key=lambda kv: -sum(len(f.records) for f in kv[1]))
    return ["| explanation | findings | cases |", "|---|---|---|",
            *[f"| {md.text(text)} | {len(group)} | {sum(len(f.records) for f in group)} |"
              for text, group in rows], ""]


def findings_markdown(runs: Sequence[Mapping[str, Any]], *, title: str = "Findings",
                      example_dirs: Mapping[str, str] | None = None, intro: str = "") -> str:
    """The findings document for one or more results documents (see the module doc); `intro`
    is Markdown written by the user and goes in as it is."""
    lines = [f"# {md.text(title)}", ""]
    if intro:
        lines += [intro.strip(), ""]
    lines += ["| run | cases | pass | departures | extension kinds |", "|---|---|---|---|---|"]
    for results in runs:
        findings = group_findings(results)
        totals = results.get("totals") or {}
        lines.append(f"| {md.cell_code(run_label(results))} | {sum(totals.values())} | "
                     f"{totals.get('pass', 0)} | "
                     f"{sum(1 for f in findings if f.status != 'extension')} | "
                     f"{sum(1 for f in findings if f.status == 'extension')} |")
    lines.append("")
    for results in runs:
        lines += _run_section(results, example_dirs or {})
    return "\n".join(lines).rstrip() + "\n"
