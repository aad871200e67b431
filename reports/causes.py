"""The cause of one failing (or extension) record: what findings group it by, and why.

A verdict carries its facts as data (``details.facts``: the expected and formed partitions and
the first cut, the failing output's chain and dtype, the error's kind and structured fields),
the known departures of its backend that it matched (``details.departures``), the signature of
a common mistake its values show and the culprit isolation's smallest failing piece. `cause`
computes every group and explanation from these and from the case's own fields (status,
pattern, kind, rule, dtype); it never reads a reason or a description, so rewording a sentence
regroups nothing.

A record of a document written before verdicts carried facts has none: it is grouped by status
and pattern. The records come typed from the results document's reader
(`fusionspec.conformance.grade.details`), which has checked every field. The report layer knows
no library: what a backend knows of itself arrives as its declared departures.
"""

from __future__ import annotations

from collections.abc import Sequence

from fusionspec.conformance.grade.details import (
    AcceptedFacts,
    Culprit,
    ErrorFacts,
    ExtensionFacts,
    Facts,
    FusionFacts,
    NumericFacts,
    RejectionFacts,
    UnsupportedFacts,
)
from fusionspec.conformance.grade.document import FailureRecord
from fusionspec.spec.categories import BINARY, UNARY

__all__ = ["cause", "signature", "member"]

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


def signature(record: FailureRecord) -> str:
    """The group of a record that nothing more specific explains, from its facts (by status
    and pattern for a record without facts: documents written before verdicts carried them)."""
    facts = record.details.facts
    status = record.status
    if facts is None:
        return f"{status}: {record.pattern} (no facts recorded)"
    if isinstance(facts, NumericFacts):
        nonfinite = "NaN/inf" if facts.nonfinite else "values"
        return f"{status}: {nonfinite} differ {_chain(facts.chain)} " \
               f"({facts.dtype or record.dtype})"
    if isinstance(facts, FusionFacts):
        if facts.wrong_io is not None:
            return f"{status}: partition {_chain(facts.kinds or [])} has other inputs " \
                   "or outputs than the spec's"
        return f"{status}: expected {_parts([p.kinds for p in facts.expected])}; formed " \
               f"{_parts([p.kinds for p in facts.formed])}"
    if isinstance(facts, RejectionFacts | ErrorFacts):
        if facts.kind in ("crash", "timeout"):
            return f"{status}: the backend process " \
                   f"{'crashed' if facts.kind == 'crash' else 'hung'}"
        said = "".join(f", {k}={member(v) if k == 'op_kind' else v}"
                       for k, v in sorted((facts.fields or {}).items()))
        verb = "rejected the graph" if isinstance(facts, RejectionFacts) else "raised"
        return f"{status}: {facts.stage or ''}() {verb}: {facts.type or ''}{said}"
    if isinstance(facts, UnsupportedFacts):
        return f"{status}: partition {_chain(facts.kinds)} marked unsupported"
    if isinstance(facts, ExtensionFacts):
        return f"{status}: fused {_parts(facts.merged)} past {record.rule}"
    if isinstance(facts, AcceptedFacts):
        return f"{status}: ill-formed graph accepted ({record.rule})"
    return f"{status}: {facts.problem}"


def _culprit(record: FailureRecord) -> Culprit | None:
    found = record.details.culprit
    return found if found is not None and found.kinds else None


def _fused_name(kinds: str) -> str:
    """A fused culprit by its base op: ``fused MaxPool + post-ops`` for MaxPool->Add->ReLU
    (the post-ops a failing fusion carries vary from case to case; the base op does not)."""
    ops = [k for k in kinds.split("->") if k not in _CONVERSIONS] or kinds.split("->")
    return f"fused {ops[0]} + post-ops" if len(ops) > 1 else f"fused {ops[0]}"


def _where(culprit: Culprit) -> str:
    return _fused_name(culprit.kinds) if culprit.fused_only else culprit.kinds


def cause(record: FailureRecord) -> tuple[str, str | None]:
    """What one failing (or extension) record is grouped by, and its explanation (None when
    nothing explains it). In order: a known departure its backend declared that the verdict
    matched; the reference being the one that is off (a suite issue); the signature of a
    common mistake that reproduces the backend's values (one finding across ops and
    patterns); then from the facts: the culprit of a numeric mismatch, the cut of a fusion, a
    partition the backend itself marks unsupported, a suite error; otherwise `signature`."""
    status, details = record.status, record.details
    if details.departures:
        first = details.departures[0]
        label = first.label or "Known departure"
        source = f" ({first.source})" if first.source else ""
        return (f"{status}: {label.lower()} {first.id}",
                f"{label}: {first.statement or first.id}{source}")
    facts = details.facts
    if facts is None:
        return signature(record), None
    culprit = _culprit(record)
    where = _where(culprit) if culprit else signature(record).split(": ", 1)[-1]
    if details.triage is not None and details.triage.reference_off > 0:
        return (f"suite issue: the reference is off in {where}",
                "Suite issue: the reference is further from the float64 evaluation than its "
                "own bound allows (a bug of fusionspec, to fix)")
    mistake = details.signature
    if mistake is not None and mistake.id:
        # One mistake shows in every op and pattern the backend runs: it is one finding.
        said = mistake.statement or mistake.id
        return (f"{status}: {said}",
                f"Bug: {said} (signature {mistake.id}, matched on the failing elements)")
    return _from_facts(record, facts, culprit)


def _from_facts(record: FailureRecord, facts: Facts,
                culprit: Culprit | None) -> tuple[str, str | None]:
    status, triage = record.status, record.details.triage
    if isinstance(facts, NumericFacts) and culprit is not None:
        alone = "fused only" if culprit.fused_only else "alone"
        return (f"{status}: {_where(culprit)} ({alone})",
                f"Bug: {culprit.summary}; the smallest reproducer is its "
                "culprit.json with culprit_inputs.npz (fusionspec run culprit.json --inputs "
                "culprit_inputs.npz --backend ... --compare)")
    if isinstance(facts, NumericFacts) and triage is not None and \
            triage.closer == "reference" and triage.reference_closer == triage.failing:
        # Without a culprit (its isolation gave up), the third evaluation still says who is
        # wrong: on every failing element the reference is the nearer to float64.
        return (f"{status}: {signature(record).split(': ', 1)[-1]}",
                f"Bug: on all {triage.failing} failing element(s) the backend is further "
                "from the float64 evaluation than the reference (the example replays it)")
    if status == "accepted-invalid" and record.rule:
        return (signature(record),
                f"Bug: the backend accepts a graph that breaks rule {record.rule}, which "
                "the pages require it to reject (the example is the reproducer)")
    if isinstance(facts, FusionFacts) and facts.cut is not None and facts.cut.after:
        at = f"{member(facts.cut.before)} | {member(facts.cut.after)}"
        return (f"{status}: fusion stops at {at}",
                f"Fusion gap: the backend does not fuse across {at} where the pages promise "
                "one partition (the example is the reproducer)")
    if isinstance(facts, UnsupportedFacts):
        return (signature(record),
                "Limitation: the backend returns the partition as unsupported (it says so "
                "itself: its kernels cover fewer dtypes, shapes or attributes than the pages)")
    if isinstance(facts, ErrorFacts) and facts.kind == "suite":
        return (f"suite issue: {status} in the suite itself",
                "Suite issue: the suite failed on this case (a bug of fusionspec, to fix)")
    if isinstance(facts, ExtensionFacts):
        return (signature(record), "Note: the backend fuses a chain the pages do not promise")
    return signature(record), None
