"""The facts of a verdict: how grading computes them, and the reason sentence rendered from them.

Every verdict that is not a plain pass carries `Details.facts`, one of the typed records of
`fusionspec.conformance.grade.details`, told apart by ``what`` in JSON:

- ``fusion`` (a ``fusion-mismatch`` on partitions): the expected partitions the backend did not
  form and the partitions it formed instead (op ids and kinds), the first cut (the kinds on
  either side of it, the expected partition it cuts, the case's rule where it names one), or
  the partition whose inputs or outputs differ from the spec's;
- ``numeric`` (``numeric-mismatch``): the failing output's tensor id, the chain of op kinds
  that computes it, its dtype, whether NaN/inf disagree (``nonfinite``), the comparison's own
  summary, the worst elements (`WorstElement`: index, the reference's value and bound, the
  backend's value, the float64 value) and the op kinds the culprit isolation blames;
- ``rejection`` (the backend refused the graph) and ``error`` (anything else went wrong): the
  error's kind (``rejection``, ``exception``, ``crash``, ``timeout``, ``suite``), the stage,
  the exception type, its message or the process's last words, the rule id it names and the
  structured fields it carries (`fusionspec.backend.error_fields`);
- ``unsupported`` (a partition the backend marks unsupported): its kinds;
- ``extension`` (a near miss fused and computed right): the merged partitions' kinds, the rule;
- ``accepted`` (an ill-formed graph accepted): the rule it breaks;
- ``contract`` (the backend broke the interface: a partition that is not one, an op twice, an
  output missing): the problem's id and its sentence.

`reason(facts)` renders the verdict's sentence; findings and departures read the facts, never
the sentence, so rewording a reason changes no grouping.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import replace
from itertools import pairwise
from typing import Any

import numpy as np

from fusionspec.reference.partitioner import external_tensors
from fusionspec.spec.graph import Graph, Op, Partition

from .details import (
    AcceptedFacts,
    ContractFacts,
    CutFacts,
    ErrorFacts,
    ExtensionFacts,
    Facts,
    FusionFacts,
    NumericFacts,
    PartitionRef,
    RejectionFacts,
    UnsupportedFacts,
    WorstElement,
    WrongIO,
)

__all__ = ["partition_facts", "first_cut", "reason", "kinds_text", "diagnosed_facts",
           "fusion_facts", "nonfinite_differ", "GRAPH_INPUT"]

#: The kind named before a cut where the formed partition starts one the spec extends back.
GRAPH_INPUT = "(graph input)"


def _sorted(ops: Sequence[Op]) -> list[Op]:
    return sorted(ops, key=lambda o: o.id)


def partition_facts(part: Partition) -> PartitionRef:
    ops = _sorted(part.ops)
    return PartitionRef(ops=[op.id for op in ops], kinds=[op.kind for op in ops])


def kinds_text(kinds: Sequence[str]) -> str:
    return "[" + "->".join(kinds) + "]"


def first_cut(expected: Sequence[Partition], formed: Sequence[Partition],
              rule: str | None) -> CutFacts | None:
    """Where the backend first cut a partition the spec promises: the kinds either side of
    the first pair of consecutive ops (by id) that land in different formed partitions, or
    `GRAPH_INPUT` before the first op when its formed partition also holds ops from outside.
    None when every missing expected partition lies whole inside one formed partition."""
    home = {op.id: n for n, part in enumerate(formed) for op in part.ops}
    got = {frozenset(op.id for op in p.ops) for p in formed}
    for part in expected:
        if frozenset(op.id for op in part.ops) in got:
            continue
        ops = _sorted(part.ops)
        kinds = [op.kind for op in ops]
        own = {op.id for op in ops}
        first_home = home.get(ops[0].id)
        if first_home is not None and any(
                op.id not in own and op.id < ops[0].id for op in formed[first_home].ops):
            return CutFacts(before=GRAPH_INPUT, after=ops[0].kind, partition=kinds, rule=rule)
        for a, b in pairwise(ops):
            if home.get(a.id) != home.get(b.id):
                return CutFacts(before=a.kind, after=b.kind, partition=kinds, rule=rule)
    return None


def _key(part: Partition) -> frozenset[int]:
    return frozenset(op.id for op in part.ops)


def fusion_facts(graph: Graph, expected: Sequence[Partition], parts: Sequence[Partition],
                 rule: str | None) -> FusionFacts:
    """What differs between the `expected` and the formed partitions `parts` of `graph`: the
    missing and the extra partitions, the first cut, and the first formed partition whose
    inputs or outputs differ from the spec's (`rule`: the case's rule, if it names one)."""
    want = {_key(p): p for p in expected}
    got = {_key(p): p for p in parts}
    facts = FusionFacts(expected=[partition_facts(p) for k, p in want.items() if k not in got],
                        formed=[partition_facts(p) for k, p in got.items() if k not in want],
                        cut=first_cut(expected, parts, rule))
    for part in parts:
        if _key(part) not in want:
            continue
        ins, outs = external_tensors(graph, part.ops)
        have_in, have_out = sorted(t.id for t in part.inputs), sorted(t.id for t in part.outputs)
        want_in, want_out = sorted(t.id for t in ins), sorted(t.id for t in outs)
        if (have_in, have_out) != (want_in, want_out):
            return replace(facts, kinds=partition_facts(part).kinds, wrong_io=WrongIO(
                inputs=have_in, outputs=have_out, want_inputs=want_in, want_outputs=want_out))
    return facts


def nonfinite_differ(expected: Any, actual: object) -> bool:
    """Whether the reference and the backend disagree on where NaN or inf stand."""
    if not isinstance(actual, np.ndarray) or actual.shape != np.shape(expected):
        return False
    try:
        e, a = np.asarray(expected, np.float64), actual.astype(np.float64)
    except (TypeError, ValueError):
        return False
    with np.errstate(invalid="ignore"):
        return bool(((np.isnan(e) != np.isnan(a)) | (np.isinf(e) != np.isinf(a))
                     | (np.isinf(e) & np.isinf(a) & (e != a))).any())


def reason(facts: Facts, rule_text: str = "") -> str:
    """The verdict's sentence for `facts` (`rule_text`: the rule's statement, where the
    sentence quotes it)."""
    match facts:
        case FusionFacts(wrong_io=WrongIO() as io):
            return (f"partition {kinds_text(facts.kinds or [])} has inputs {io.inputs} and "
                    f"outputs {io.outputs}; the spec requires {io.want_inputs} and "
                    f"{io.want_outputs}")
        case FusionFacts():
            missing = ", ".join(kinds_text(p.kinds) for p in facts.expected)
            extra = ", ".join(kinds_text(p.kinds) for p in facts.formed)
            return (f"expected partition(s) {missing}; the backend formed "
                    f"{extra or 'other partitions'}")
        case NumericFacts():
            return f"tensor {facts.tensor}: {facts.summary}"
        case RejectionFacts():
            return f"{facts.stage}() rejected the graph: {facts.type}: {facts.message}"
        case ErrorFacts():
            return _error_reason(facts)
        case UnsupportedFacts():
            return f"the backend marks partition {kinds_text(facts.kinds)} unsupported"
        case ExtensionFacts():
            merged = ", ".join(kinds_text(k) for k in facts.merged)
            return f"fused {merged} past {rule_text}, and computed it right"
        case AcceptedFacts():
            return f"accepted an ill-formed graph without complaint ({rule_text})"
        case ContractFacts():
            return facts.message
    raise TypeError(f"no sentence for facts of type {type(facts).__name__}")


def _error_reason(facts: ErrorFacts) -> str:
    if facts.kind in ("crash", "timeout", "suite"):
        return facts.message
    said = f"{facts.stage}() raised {facts.type}: {facts.message}"
    return f"unexpected exception for an ill-formed graph: {said}" if facts.ill_formed \
        else said


def diagnosed_facts(facts: NumericFacts, worst: Sequence[WorstElement] | None,
                    culprit_kinds: str | None) -> NumericFacts:
    """A numeric mismatch's `facts` completed by its diagnosis: the `worst` elements (the
    comparison's, with float64 values where the diagnosis computed them) and the op kinds of
    the culprit (``A->B``: the isolation's smallest failing piece; None when it found none)."""
    return replace(facts, worst=list(worst or ()),
                   culprit=culprit_kinds.split("->") if culprit_kinds else None)
