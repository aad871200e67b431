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
from .document import Doc, ReportError
from .failures import find_folder

__all__ = ["Finding", "KNOWN", "cause", "checked", "group_findings", "merge_findings",
           "findings_markdown", "unexplained",
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
    #: How many of its records each run (`run_label`) holds.
    runs: dict[str, int] = field(default_factory=dict)

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


KNOWN_DEPARTURE, NOTE, BUG = "Known departure", "Note", "Bug"

#: Explanations of findings, each as a predicate over a record, the text shown with a matching
#: finding, and its label: a known departure where oneDNN's own sources already document it
#: (its release notes, its docs or its own tests), a bug of the library, or a note (an extension).
KNOWN: Sequence[tuple[Callable[[Record], bool], str, str]] = (
    (lambda r: "[Pow" in _chain_text(r) or "Pow]" in _chain_text(r) or "->Pow" in _chain_text(r),
     "Pow is in the pages' Unary category but oneDNN neither fuses nor implements it",
     KNOWN_DEPARTURE),
    (_unary_then_binaries,
     "a Unary-headed chain takes one Binary at most; two or more binaries go to the "
     "Binary-headed pattern, leaving the Unary alone", KNOWN_DEPARTURE),
    (lambda r: "BiasAddBackward" in _chain_text(r),
     "ConvolutionBackwardWeights + BiasAddBackward is not fused, and BiasAddBackward alone is "
     "not implemented", KNOWN_DEPARTURE),
    (lambda r: str(r.get("status")) == "extension" and "post_op_count" in str(r.get("rule", "")),
     "oneDNN allows more post-ops than the pages' bound", KNOWN_DEPARTURE),
    (lambda r: str(r.get("status")) == "extension",
     "oneDNN fuses a chain the pages do not promise", NOTE),
    (lambda r: _split_before(r, ("BiasAdd",)) and "+bias" in str(r.get("description", "")),
     "BiasAdd fuses only when the base op has no bias input of its own", KNOWN_DEPARTURE),
    (lambda r: _split_before(r, ("Subtract", "Divide")) and bool(
        re.search(r"(Subtract|Divide)\([^)]*src_1", str(r.get("description", "")))),
     "Subtract and Divide fuse only when the chain enters on their first input", KNOWN_DEPARTURE),
    (lambda r: _split_before(r, ("Add",)) and "[Reorder]" in _formed(r),
     "Reorder + Add fuses only with auto_broadcast=none on the Add", KNOWN_DEPARTURE),
    (lambda r: _unsupported(r, "Reciprocal"),
     "Reciprocal is implemented only fused with a Multiply (Reciprocal + Multiply)",
     KNOWN_DEPARTURE),
    (lambda r: _unsupported(r, "Interpolate") and "align_corners" in _chain_text(r),
     "Interpolate supports only half_pixel coordinates; align_corners is unsupported",
     KNOWN_DEPARTURE),
    (lambda r: _unsupported(r, "AvgPool") and " ceil" in _chain_text(r),
     "AvgPool with ceil rounding is unsupported where padding counts (exclude_pad=false)",
     KNOWN_DEPARTURE),
    (lambda r: _unsupported(r, "BatchNormInference") and "bf16" in _chain_text(r),
     "batch normalization has no bf16 implementation", KNOWN_DEPARTURE),
    (lambda r: "crashed" in str(r.get("reason", "")),
     "a C++ exception escaped the C API, which promises a status code, and aborted the "
     "process", BUG),
)


def _known(record: Record) -> str | None:
    for predicate, text, label in KNOWN:
        if predicate(record):
            return f"{label}: {text}"
    return None


_ADD_OP_RE = re.compile(r"dnnl_graph_add_op returned (\w+) \(adding op \d+ \((\w+)\)\)")
_COMPILE_RE = re.compile(r"partition_compile returned (\w+) \(compiling partition \[([^\]]*)\]")
_FORMED_RE = re.compile(r"\[([^\[\]]*)\]")
#: Ops that only convert: a partition is named by its first other op.
_CONVERSIONS = frozenset({"Dequantize", "Quantize", "TypeCast", "Reorder"})


def _split_point(record: Record) -> str | None:
    """Where the backend cut an expected partition: ``X | Y`` for the two kinds on either side
    of the first cut (X ends one formed partition, Y starts the next), with Unary and Binary
    members abstracted."""
    reason = str(record.get("reason", ""))
    match = re.search(r"expected partition\(s\) \[([^\]]*)\]", reason)
    if not match or "the backend formed" not in reason:
        return None
    expected = match.group(1).split("->")
    formed = [p.split("->") for p in _FORMED_RE.findall(_formed(record))]
    for part in formed:
        if part and part != expected[:len(part)] and part[0] in expected:
            start = expected.index(part[0])
            before = expected[start - 1] if start > 0 else "(graph input)"
            return f"{_member(before)} | {_member(part[0])}"
        if part and part == expected[:len(part)] and len(part) < len(expected):
            return f"{_member(part[-1])} | {_member(expected[len(part)])}"
    return None


def _member(kind: str) -> str:
    if kind in UNARY and kind != "Pow":
        return "Unary"
    if kind in BINARY and kind not in _ORDERED_BINARY:
        return "Binary"
    return kind


def _limitation(record: Record) -> tuple[str, str] | None:
    """A library limitation the record shows by itself: an op its schema check refuses, a
    partition it has no kernel for, or a fusion it stops short of (where the cut is)."""
    reason = str(record.get("reason", ""))
    added = _ADD_OP_RE.search(reason)
    if added:
        kind = _member(added.group(2))
        return (f"{kind} refused when added ({added.group(1)})",
                f"Limitation: the library's op schema check refuses {kind} as the case "
                "writes it (dtype or attribute combination the pages allow)")
    compiled = _COMPILE_RE.search(reason)
    if compiled:
        kinds = [k.strip() for k in compiled.group(2).split(",")]
        main = next((k for k in kinds if k not in _CONVERSIONS), kinds[0] if kinds else "?")
        return (f"no kernel for a partition around {main} ({compiled.group(1)})",
                f"Limitation: the library forms the partition but has no kernel for it "
                f"(compile returns {compiled.group(1)})")
    if re.search(r"marks partition \[[^\]]*\] unsupported", reason):
        return ("partitions marked unsupported",
                "Limitation: the library returns the partition as unsupported (its kernels "
                "for these ops cover fewer dtypes, shapes or attributes than the pages)")
    if str(record.get("status")) == "fusion-mismatch":
        cut = _split_point(record)
        if cut is not None:
            return (f"fusion stops at {cut}",
                    f"Fusion gap: the library does not fuse across {cut} where the pages "
                    "promise one partition (the example is the reproducer)")
    return None


def _culprit(record: Record) -> Mapping[str, Any] | None:
    found = record.get("culprit")
    return found if isinstance(found, Mapping) and found.get("kinds") else None


def _fused_name(kinds: str) -> str:
    """A fused culprit by its base op: ``fused MaxPool + post-ops`` for MaxPool->Add->ReLU
    (the post-ops a failing fusion carries vary from case to case; the base op does not)."""
    ops = [k for k in kinds.split("->") if k not in _CONVERSIONS] or kinds.split("->")
    return f"fused {ops[0]} + post-ops" if len(ops) > 1 else f"fused {ops[0]}"


def cause(record: Record) -> tuple[str, str | None]:
    """What one failing (or extension) record is grouped by, and its explanation (None when
    none is recorded). In order: a known departure of the library that reproduces the
    backend's values (the verdict's ``departures``); the reference being the one that is off
    (``triage``: a suite issue); the signature of a common mistake that reproduces the
    backend's values (``signature``: one finding across ops and patterns); a cause `KNOWN`
    names; the culprit that culprit isolation found (a bug, with its smallest reproducer);
    otherwise the abstracted reason (`signature`)."""
    status = str(record.get("status", ""))
    departures = record.get("departures") or []
    if departures:
        first = departures[0]
        source = f" ({first['source']})" if first.get("source") else ""
        return (f"{status}: known departure {first['id']}",
                f"Known departure: {first['statement']}{source}")
    triage = record.get("triage") or {}
    culprit = _culprit(record)
    where = (_fused_name(str(culprit["kinds"])) if culprit and culprit.get("fused")
             else str(culprit["kinds"]) if culprit else signature(record).split(": ", 1)[-1])
    if isinstance(triage.get("reference_off"), int) and triage["reference_off"] > 0:
        return (f"suite issue: the reference is off in {where}",
                "Suite issue: the reference is further from the float64 evaluation than its "
                "own bound allows (a bug of fusionspec, to fix)")
    mistake = record.get("signature") or {}
    if mistake.get("id"):
        # One mistake shows in every op and pattern the backend runs: it is one finding.
        return (f"{status}: {mistake.get('statement') or mistake['id']}",
                f"Bug: {mistake.get('statement') or mistake['id']} (signature "
                f"{mistake['id']}, matched on the failing elements)")
    known = _known(record)
    if known is not None:
        return f"{status}: {known.split(': ', 1)[1]}", known
    limit = _limitation(record)
    if limit is not None:
        return f"{status}: {limit[0]}", limit[1]
    if culprit is not None:
        alone = "fused only" if culprit.get("fused") else "alone"
        return (f"{status}: {where} ({alone})",
                f"Bug: {culprit.get('summary', '')}; the smallest reproducer is its "
                f"culprit.json ({culprit.get('benchdnn', '')})")
    return signature(record), None


def group_findings(results: Mapping[str, Any]) -> list[Finding]:
    """Failures and extensions of `results`, grouped by `cause`, largest group first."""
    return merge_findings([results])


def merge_findings(runs: Sequence[Mapping[str, Any]]) -> list[Finding]:
    """The failures and extensions of every run in `runs`, grouped by `cause` across them
    (one bug, one finding, whichever versions show it): departures first, then extensions,
    each largest first."""
    groups: dict[str, Finding] = {}
    for results in runs:
        label = run_label(results)
        for record in [*results.get("failures", []), *results.get("extensions", [])]:
            if record.get("minimal_of"):
                continue
            key, explanation = cause(record)
            finding = groups.setdefault(key, Finding(key, str(record.get("status"))))
            finding.records.append(record)
            finding.runs[label] = finding.runs.get(label, 0) + 1
            if explanation is not None and len(explanation) > len(finding.known or ""):
                finding.known = explanation  # the fullest statement any run recorded
    return sorted(groups.values(), key=lambda f: (f.status == "extension", -len(f.records),
                                                  f.signature))


def _example_dir(record: Record) -> str | None:
    replay = record.get("replay") or {}
    folder = replay.get("dir") if isinstance(replay, Mapping) else None
    return str(folder) if folder else None


#: What `copy_examples` copies from a failure folder: these regular files, nothing else.
EXAMPLE_FILES = ("case.json", "graph.json", "inputs.npz", "replay.txt", "culprit.json")
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
        copied[str(finding.example.get("case_id"))] = str(dest)
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
    details = doc.obj("details")
    culprit = details.obj("culprit")
    if culprit.data:
        record["culprit"] = {key: culprit.text(key) for key in (
            "kinds", "signature", "summary", "reason", "benchdnn")}
        record["culprit"]["fused"] = culprit.raw("fused_only") is True
    record["departures"] = [_departure(d) for d in _departure_docs(details)]
    signature_doc = details.obj("signature")
    if signature_doc.data:
        record["signature"] = {"id": signature_doc.text("id"),
                               "statement": signature_doc.text("statement")}
    triage = details.obj("triage")
    if triage.data:
        off = triage.raw("reference_off")
        record["triage"] = {"closer": triage.text("closer"),
                            "reference_off": off if isinstance(off, int)
                            and not isinstance(off, bool) else 0,
                            "max_reference_deviation": triage.text("max_reference_deviation"),
                            "max_backend_deviation": triage.text("max_backend_deviation")}
    return record


def _departure_docs(details: Doc) -> list[Doc]:
    """The known departures a verdict names: objects (id, statement, source), or bare ids as
    earlier runs wrote them."""
    value = details.raw("departures")
    if isinstance(value, list) and all(isinstance(v, str) for v in value):
        return [Doc({"id": v}, details.source) for v in value]
    return details.objects("departures")


def _departure(doc: Doc) -> dict[str, str]:
    ident = doc.text("id")
    return {"id": ident, "statement": doc.text("statement", ident),
            "source": doc.text("source")}


def checked(results: Mapping[str, Any], source: str) -> dict[str, Any]:
    """The parts of a results document findings reads, each checked for its type (a
    `fusionspec.reports.document.ReportError` naming the field otherwise) and made plain
    strings and counts: the rest of this module then cannot trip over a wrongly typed field."""
    doc = Doc(results, source)
    device = doc.obj("device")
    checked_doc: dict[str, Any] = {
        "backend": doc.text("backend"), "started": doc.text("started"),
        "finished": doc.text("finished"), "suite_version": doc.text("suite_version"),
        "seed": doc.text("seed"), "totals": doc.counts("totals"),
        "device": {key: device.text(key) for key in ("id", "name", "driver", "runtime")},
        "failures": [_record(r) for r in doc.objects("failures")],
        "extensions": [_record(r) for r in doc.objects("extensions")]}
    label = run_label(checked_doc)
    for record in (*checked_doc["failures"], *checked_doc["extensions"]):
        record["run"] = label
    return checked_doc


#: What makes a finding explained, stated under the unexplained share.
EXPLAINED = ("A finding is explained when it carries one of these labels: *Known departure* "
             "(an alternative semantics or a missing fusion that the library's sources "
             "document, with the source), *Limitation* (the library says so itself: it refuses "
             "the op, marks the partition unsupported or has no kernel to compile it), *Bug* "
             "or *Fusion gap* (the library departs from the pages, with the smallest "
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


def _folder(record: Record, example_dirs: Mapping[str, str]) -> str | None:
    case = str(record.get("case_id"))
    return (example_dirs.get(f"{record.get('run')}:{case}") or example_dirs.get(case)
            or _example_dir(record))


def _by_run(finding: Finding) -> str:
    return ", ".join(f"{md.code(label)} {count}" for label, count in finding.runs.items())


def _entry(number: int, finding: Finding, runs: Mapping[str, Mapping[str, Any]],
           example_dirs: Mapping[str, str], *, full: bool) -> list[str]:
    ex = finding.example
    results = runs.get(str(ex.get("run")), {})
    device = results.get("device") or {}
    folder = _folder(ex, example_dirs)
    replay = _replay(str(results.get("backend", "")), str(device.get("id", "")), folder)
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
              f"- example {md.code(ex.get('case_id'))} ({md.code(ex.get('run'))}; "
              f"{md.text(ex.get('description', ''))}): {md.text(ex.get('reason'))}"]
    culprit = _culprit(ex)
    if culprit is not None and folder is not None:
        case_file = str(Path(folder, "culprit.json"))
        lines.append(f"- smallest failing piece: {md.text(culprit.get('signature', ''))}: "
                     f"{md.shell(['benchdnn', '--graph', f'--case={case_file}'])}")
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


def findings_markdown(runs: Sequence[Mapping[str, Any]], *, title: str = "Findings",
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
    by_label: dict[str, Mapping[str, Any]] = {}
    for results in runs:
        label = run_label(results)
        by_label[label] = results
        own = group_findings(results)
        left_here, failing_here = unexplained(own)
        totals = results.get("totals") or {}
        device = results.get("device") or {}
        lines.append(f"| {md.cell_code(label)} | {md.text(device.get('name', ''))}, "
                     f"{md.text(device.get('driver', ''))} | {sum(totals.values())} | "
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
