"""The cause of one failing (or extension) record: what findings group it by, and why.

A verdict carries its facts as data (``details.facts``: the expected and formed partitions and
the first cut, the failing output's chain and dtype, the error's kind and structured fields),
the known departures of its backend that it matched (``details.departures``), the signature of
a common mistake its values show and the culprit isolation's smallest failing piece. `cause`
computes every group and explanation from these and from the case's own fields (status,
pattern, kind, rule, dtype); it never reads a reason or a description, so rewording a sentence
regroups nothing.

Results documents written before verdicts carried facts lack them: `legacy_cause` groups those
by status and pattern, and is the only place that handles them.

`record_facts(details)` reads the facts of one record from a results document, every field
checked for its type (a `fusionspec.reports.document.ReportError` otherwise). The report layer
knows no library: what a backend knows of itself arrives as its declared departures.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from fusionspec.spec.categories import BINARY, UNARY

from .document import Doc

__all__ = ["cause", "legacy_cause", "record_facts", "signature", "member"]

Record = Mapping[str, Any]

# Subtract and Divide stay literal: which of their inputs a chain enters on matters to fusion.
_ORDERED_BINARY = ("Subtract", "Divide")
#: Ops that only convert: a fused culprit is named by its first other op.
_CONVERSIONS = frozenset({"Dequantize", "Quantize", "TypeCast", "Reorder"})


def member(kind: str) -> str:
    """`kind`, or the category it stands for where which member stands there is incidental."""
    if kind in UNARY and kind != "Pow":
        return "Unary"
    if kind in BINARY and kind not in _ORDERED_BINARY:
        return "Binary"
    return kind


def _chain(kinds: Sequence[str]) -> str:
    """``[Unary->Binary+]``: members abstracted, a repeated member written once with ``+``."""
    out: list[str] = []
    for kind in (member(k) for k in kinds):
        if out and out[-1].rstrip("+") == kind and kind in ("Unary", "Binary"):
            out[-1] = kind + "+"
        else:
            out.append(kind)
    return "[" + "->".join(out) + "]"


def _parts(parts: Sequence[Sequence[str]]) -> str:
    """The partitions' chains, a repeated one written once with ``...``."""
    out: list[str] = []
    for text in (_chain(p) for p in parts):
        if out and out[-1].removesuffix("...") == text:
            out[-1] = text + "..."
        else:
            out.append(text)
    return ", ".join(out) or "other partitions"


def signature(record: Record) -> str:
    """The group of a record that nothing more specific explains, from its facts (the legacy
    group for a record without facts)."""
    facts = record.get("facts")
    if not isinstance(facts, Mapping) or not facts:
        return legacy_cause(record)[0]
    status, what = str(record.get("status", "")), facts.get("what")
    if what == "numeric":
        nonfinite = "NaN/inf" if facts.get("nonfinite") else "values"
        return f"{status}: {nonfinite} differ {_chain(facts.get('chain', []))} " \
               f"({facts.get('dtype') or record.get('dtype')})"
    if what == "fusion":
        if facts.get("wrong_io"):
            return f"{status}: partition {_chain(facts.get('kinds', []))} has other inputs " \
                   "or outputs than the spec's"
        return f"{status}: expected {_parts(facts.get('expected', []))}; formed " \
               f"{_parts(facts.get('formed', []))}"
    if what in ("rejection", "error"):
        kind = facts.get("kind")
        if kind in ("crash", "timeout"):
            return f"{status}: the backend process {'crashed' if kind == 'crash' else 'hung'}"
        fields = facts.get("fields") or {}
        said = "".join(f", {k}={member(v) if k == 'op_kind' else v}"
                       for k, v in sorted(fields.items()))
        verb = "rejected the graph" if what == "rejection" else "raised"
        return f"{status}: {facts.get('stage')}() {verb}: {facts.get('type')}{said}"
    if what == "unsupported":
        return f"{status}: partition {_chain(facts.get('kinds', []))} marked unsupported"
    if what == "extension":
        return f"{status}: fused {_parts(facts.get('merged', []))} past {record.get('rule')}"
    if what == "accepted":
        return f"{status}: ill-formed graph accepted ({record.get('rule')})"
    return f"{status}: {facts.get('problem')}"


def legacy_cause(record: Record) -> tuple[str, str | None]:
    """LEGACY PATH, for records of results documents written before verdicts carried facts:
    grouped by status and pattern, with no explanation (nothing else about them is read)."""
    return f"{record.get('status', '')}: {record.get('pattern', '')} (no facts recorded)", None


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
    nothing explains it). In order: a known departure its backend declared that the verdict
    matched; the reference being the one that is off (a suite issue); the signature of a
    common mistake that reproduces the backend's values (one finding across ops and
    patterns); then from the facts: the culprit of a numeric mismatch, the cut of a fusion, a
    partition the backend itself marks unsupported, a suite error; otherwise `signature`."""
    status = str(record.get("status", ""))
    departures = record.get("departures") or []
    if departures:
        first = departures[0]
        label = first.get("label") or "Known departure"
        source = f" ({first['source']})" if first.get("source") else ""
        return (f"{status}: {label.lower()} {first['id']}",
                f"{label}: {first['statement']}{source}")
    facts = record.get("facts")
    if not isinstance(facts, Mapping) or not facts:
        return legacy_cause(record)
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
    return _from_facts(record, facts, culprit)


def _from_facts(record: Record, facts: Mapping[str, Any],
                culprit: Mapping[str, Any] | None) -> tuple[str, str | None]:
    status, what = str(record.get("status", "")), facts.get("what")
    if what == "numeric" and culprit is not None:
        alone = "fused only" if culprit.get("fused") else "alone"
        where = _fused_name(str(culprit["kinds"])) if culprit.get("fused") \
            else str(culprit["kinds"])
        return (f"{status}: {where} ({alone})",
                f"Bug: {culprit.get('summary', '')}; the smallest reproducer is its "
                "culprit.json with culprit_inputs.npz (fusionspec run culprit.json --inputs "
                "culprit_inputs.npz --backend ... --compare)")
    triage = record.get("triage") or {}
    if what == "numeric" and triage.get("closer") == "reference" and \
            triage.get("reference_closer") == triage.get("failing"):
        # Without a culprit (its isolation gave up), the third evaluation still says who is
        # wrong: on every failing element the reference is the nearer to float64.
        return (f"{status}: {signature(record).split(': ', 1)[-1]}",
                f"Bug: on all {triage.get('failing')} failing element(s) the backend is further "
                "from the float64 evaluation than the reference (the example replays it)")
    if status == "accepted-invalid" and record.get("rule"):
        return (signature(record),
                f"Bug: the backend accepts a graph that breaks rule {record.get('rule')}, which "
                "the pages require it to reject (the example is the reproducer)")
    cut = facts.get("cut")
    if what == "fusion" and isinstance(cut, Mapping) and cut.get("after"):
        at = f"{member(str(cut.get('before')))} | {member(str(cut.get('after')))}"
        return (f"{status}: fusion stops at {at}",
                f"Fusion gap: the backend does not fuse across {at} where the pages promise "
                "one partition (the example is the reproducer)")
    if what == "unsupported":
        return (signature(record),
                "Limitation: the backend returns the partition as unsupported (it says so "
                "itself: its kernels cover fewer dtypes, shapes or attributes than the pages)")
    if what == "error" and facts.get("kind") == "suite":
        return (f"suite issue: {status} in the suite itself",
                "Suite issue: the suite failed on this case (a bug of fusionspec, to fix)")
    if what == "extension":
        return (signature(record), "Note: the backend fuses a chain the pages do not promise")
    return signature(record), None


def _strings(value: object) -> list[str]:
    return [str(v) for v in value if isinstance(v, str | int)] if isinstance(value, list) else []


def _partitions(value: object) -> list[list[str]]:
    if not isinstance(value, list):
        return []
    return [_strings(p.get("kinds")) if isinstance(p, Mapping) else _strings(p) for p in value]


def record_facts(details: Doc) -> dict[str, Any]:
    """The facts of one record (``details.facts``), read as plain strings and lists of
    strings; {} when the document has none (written before verdicts carried them)."""
    facts = details.obj("facts")
    if not facts.data:
        return {}
    found: dict[str, Any] = {key: facts.text(key) for key in (
        "what", "dtype", "kind", "stage", "type", "rule", "problem")}
    found["nonfinite"] = facts.raw("nonfinite") is True
    found["chain"] = _strings(facts.raw("chain"))
    found["kinds"] = _strings(facts.raw("kinds"))
    found["expected"] = _partitions(facts.raw("expected"))
    found["formed"] = _partitions(facts.raw("formed"))
    found["merged"] = _partitions(facts.raw("merged"))
    found["wrong_io"] = isinstance(facts.raw("wrong_io"), Mapping)
    cut = facts.obj("cut")
    found["cut"] = {"before": cut.text("before"), "after": cut.text("after")} \
        if cut.data else None
    fields = facts.obj("fields")
    found["fields"] = {str(k): fields.text(str(k)) for k in list(fields.data)[:16]}
    return found
