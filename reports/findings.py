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
run's output folder.

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

__all__ = ["Finding", "KNOWN", "group_findings", "findings_markdown", "copy_examples",
           "signature", "run_label"]

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
    folder = replay.get("dir") if isinstance(replay, dict) else None
    return str(folder) if folder else None


def copy_examples(findings: Sequence[Finding], target: Path) -> dict[str, str]:
    """Copy each finding's example folder under `target` (emptied first); case id -> copied
    folder."""
    copied: dict[str, str] = {}
    if target.exists():
        shutil.rmtree(target)
    for finding in findings:
        source = _example_dir(finding.example)
        if source is None or not Path(source).is_dir():
            continue
        dest = target / Path(source).name
        shutil.copytree(source, dest)
        copied[str(finding.example.get("case_id"))] = str(dest)
    return copied


def _md(text: object) -> str:
    return str(text).replace("|", "\\|").replace("\n", " ")


def _replay(backend: str, device: str, folder: str | None) -> str:
    if folder is None:
        return "no failure folder was written (run with --out)"
    return f"`fusionspec conform --backend {backend} --device {device} --replay {folder}`"


def run_label(results: Mapping[str, Any]) -> str:
    """``onednn-3.2.0-cpu``: backend, driver version and device of a results document."""
    device = results.get("device") or {}
    parts = [str(results.get("backend")), str(device.get("driver") or ""), str(device.get("id"))]
    return re.sub(r"[^A-Za-z0-9._-]+", "_", "-".join(p for p in parts if p))


def _run_section(results: Mapping[str, Any], example_dirs: Mapping[str, str]) -> list[str]:
    backend = str(results.get("backend"))
    device = results.get("device") or {}
    device_id = str(device.get("id", ""))
    findings = group_findings(results)
    totals = results.get("totals") or {}
    departures = [f for f in findings if f.status != "extension"]
    extensions = [f for f in findings if f.status == "extension"]
    lines = [
        f"## {_md(device.get('name') or backend)} (`{run_label(results)}`)", "",
        f"Backend `{backend}`, device `{device_id}`, driver {_md(device.get('driver', ''))}, "
        f"runtime {_md(device.get('runtime', ''))}; run {results.get('started')} to "
        f"{results.get('finished')}, suite {results.get('suite_version')}, seed "
        f"{results.get('seed')}.", "",
        "| status | cases |", "|---|---|",
        *[f"| {k} | {v} |" for k, v in sorted(totals.items(), key=lambda kv: -kv[1])], "",
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
            lines += [f"#### {number}. {_md(finding.signature)}", ""]
            if finding.known:
                lines += [f"{finding.known}.", ""]
            lines += [
                f"- cases: {len(finding.records)} ({', '.join(finding.kinds)}) in "
                f"{', '.join(f'`{p}`' for p in finding.patterns)}",
                f"- example `{_md(ex.get('case_id'))}` ({_md(ex.get('description', ''))}): "
                f"{_md(ex.get('reason'))}",
                f"- replay: {_replay(backend, device_id, folder)}", ""]
    return lines


def _explained(findings: Sequence[Finding]) -> list[str]:
    """A table: each explanation with how many findings and cases it accounts for."""
    by_text: dict[str, list[Finding]] = {}
    for finding in findings:
        by_text.setdefault(finding.known or "(no explanation recorded)", []).append(finding)
    rows = sorted(by_text.items(), key=lambda kv: -sum(len(f.records) for f in kv[1]))
    return ["| explanation | findings | cases |", "|---|---|---|",
            *[f"| {_md(text)} | {len(group)} | {sum(len(f.records) for f in group)} |"
              for text, group in rows], ""]


def findings_markdown(runs: Sequence[Mapping[str, Any]], *, title: str = "Findings",
                      example_dirs: Mapping[str, str] | None = None, intro: str = "") -> str:
    """The findings document for one or more results documents (see the module doc)."""
    lines = [f"# {title}", ""]
    if intro:
        lines += [intro.strip(), ""]
    lines += ["| run | cases | pass | departures | extension kinds |", "|---|---|---|---|---|"]
    for results in runs:
        findings = group_findings(results)
        totals = results.get("totals") or {}
        lines.append(f"| `{run_label(results)}` | {sum(totals.values())} | "
                     f"{totals.get('pass', 0)} | "
                     f"{sum(1 for f in findings if f.status != 'extension')} | "
                     f"{sum(1 for f in findings if f.status == 'extension')} |")
    lines.append("")
    for results in runs:
        lines += _run_section(results, example_dirs or {})
    return "\n".join(lines).rstrip() + "\n"
