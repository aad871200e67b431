"""The facts of a verdict, as data, and the reason sentence rendered from them.

Every verdict that is not a plain pass carries ``details["facts"]``, one of the typed records
below, told apart by ``what``:

- ``fusion`` (a ``fusion-mismatch`` on partitions): the expected partitions the backend did not
  form and the partitions it formed instead (op ids and kinds), the first cut (the kinds on
  either side of it, the expected partition it cuts, the case's rule where it names one), or
  the partition whose inputs or outputs differ from the spec's;
- ``numeric`` (``numeric-mismatch``): the failing output's tensor id, the chain of op kinds
  that computes it, its dtype, whether NaN/inf disagree (``nonfinite``), the comparison's own
  summary, the worst elements (`WorstFacts`: index, the reference's value and bound, the
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
from itertools import pairwise
from typing import Any, Literal, NotRequired, TypedDict

import numpy as np

from fusionspec.reference.partitioner import external_tensors
from fusionspec.spec.graph import Graph, Op, Partition

__all__ = ["PartitionFacts", "CutFacts", "WorstFacts", "Facts", "partition_facts", "first_cut",
           "reason", "kinds_text", "diagnosed_facts", "fusion_facts", "nonfinite_differ",
           "GRAPH_INPUT"]

#: The kind named before a cut where the formed partition starts one the spec extends back.
GRAPH_INPUT = "(graph input)"


class PartitionFacts(TypedDict):
    ops: list[int]
    kinds: list[str]


class CutFacts(TypedDict):
    before: str
    after: str
    #: The kinds of the expected partition the cut falls in.
    partition: list[str]
    rule: str | None


class WorstFacts(TypedDict):
    """One failing element: its index, the reference's value and the bound around it (the
    expected interval is value ± bound), the backend's value and, once diagnosed, the float64
    value of the graph there."""

    index: list[int]
    expected: float | str
    actual: float | str
    bound: float | str
    high_precision: NotRequired[float | str]


class Facts(TypedDict):
    what: Literal["fusion", "numeric", "rejection", "error", "unsupported", "extension",
                  "accepted", "contract"]
    # fusion
    expected: NotRequired[list[PartitionFacts]]
    formed: NotRequired[list[PartitionFacts]]
    cut: NotRequired[CutFacts | None]
    wrong_io: NotRequired[dict[str, list[int]] | None]
    # numeric
    tensor: NotRequired[int]
    chain: NotRequired[list[str]]
    dtype: NotRequired[str]
    nonfinite: NotRequired[bool]
    summary: NotRequired[str]
    #: The failing elements furthest beyond their bound.
    worst: NotRequired[list[WorstFacts]]
    #: The op kinds of the smallest failing piece the culprit isolation found (None: none).
    culprit: NotRequired[list[str] | None]
    # rejection, error
    kind: NotRequired[str]
    stage: NotRequired[str]
    type: NotRequired[str]
    message: NotRequired[str]
    rule: NotRequired[str | None]
    fields: NotRequired[dict[str, str]]
    #: The exception was raised for an ill-formed graph (which asked for a rejection).
    ill_formed: NotRequired[bool]
    # unsupported, extension
    kinds: NotRequired[list[str]]
    merged: NotRequired[list[list[str]]]
    # contract
    problem: NotRequired[str]


def _sorted(ops: Sequence[Op]) -> list[Op]:
    return sorted(ops, key=lambda o: o.id)


def partition_facts(part: Partition) -> PartitionFacts:
    ops = _sorted(part.ops)
    return {"ops": [op.id for op in ops], "kinds": [op.kind for op in ops]}


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
            return {"before": GRAPH_INPUT, "after": ops[0].kind, "partition": kinds,
                    "rule": rule}
        for a, b in pairwise(ops):
            if home.get(a.id) != home.get(b.id):
                return {"before": a.kind, "after": b.kind, "partition": kinds, "rule": rule}
    return None


def _key(part: Partition) -> frozenset[int]:
    return frozenset(op.id for op in part.ops)


def fusion_facts(graph: Graph, expected: Sequence[Partition], parts: Sequence[Partition],
                 rule: str | None) -> Facts:
    """What differs between the `expected` and the formed partitions `parts` of `graph`: the
    missing and the extra partitions, the first cut, and the first formed partition whose
    inputs or outputs differ from the spec's (`rule`: the case's rule, if it names one)."""
    want = {_key(p): p for p in expected}
    got = {_key(p): p for p in parts}
    facts: Facts = {
        "what": "fusion",
        "expected": [partition_facts(p) for k, p in want.items() if k not in got],
        "formed": [partition_facts(p) for k, p in got.items() if k not in want],
        "cut": first_cut(expected, parts, rule), "wrong_io": None}
    for part in parts:
        if _key(part) not in want:
            continue
        ins, outs = external_tensors(graph, part.ops)
        have_in, have_out = sorted(t.id for t in part.inputs), sorted(t.id for t in part.outputs)
        want_in, want_out = sorted(t.id for t in ins), sorted(t.id for t in outs)
        if (have_in, have_out) != (want_in, want_out):
            facts["kinds"] = partition_facts(part)["kinds"]
            facts["wrong_io"] = {"inputs": have_in, "outputs": have_out,
                                 "want_inputs": want_in, "want_outputs": want_out}
            break
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
    what = facts["what"]
    if what == "fusion":
        io = facts.get("wrong_io")
        if io:
            return (f"partition {kinds_text(facts.get('kinds', []))} has inputs "
                    f"{io['inputs']} and outputs {io['outputs']}; the spec requires "
                    f"{io['want_inputs']} and {io['want_outputs']}")
        missing = ", ".join(kinds_text(p["kinds"]) for p in facts.get("expected", []))
        extra = ", ".join(kinds_text(p["kinds"]) for p in facts.get("formed", []))
        return f"expected partition(s) {missing}; the backend formed {extra or 'other partitions'}"
    if what == "numeric":
        return f"tensor {facts.get('tensor')}: {facts.get('summary', '')}"
    if what == "rejection":
        return (f"{facts.get('stage')}() rejected the graph: {facts.get('type')}: "
                f"{facts.get('message')}")
    if what == "error":
        return _error_reason(facts)
    if what == "unsupported":
        return f"the backend marks partition {kinds_text(facts.get('kinds', []))} unsupported"
    if what == "extension":
        merged = ", ".join(kinds_text(k) for k in facts.get("merged", []))
        return f"fused {merged} past {rule_text}, and computed it right"
    if what == "accepted":
        return f"accepted an ill-formed graph without complaint ({rule_text})"
    return facts.get("message", "")


def _error_reason(facts: Facts) -> str:
    kind = facts.get("kind")
    if kind in ("crash", "timeout", "suite"):
        return facts.get("message", "")
    said = f"{facts.get('stage')}() raised {facts.get('type')}: {facts.get('message')}"
    return f"unexpected exception for an ill-formed graph: {said}" if facts.get("ill_formed") \
        else said


def diagnosed_facts(facts: Facts, worst: object, culprit: object) -> Facts:
    """A numeric mismatch's `facts` completed by its diagnosis: the `worst` elements (the
    comparison's, with float64 values where the diagnosis computed them) and the op kinds of
    the `culprit` (the isolation's smallest failing piece, None when it found none)."""
    found: list[WorstFacts] = []
    for w in worst if isinstance(worst, list) else ():
        if not isinstance(w, dict):
            continue
        item = WorstFacts(index=[int(i) for i in w.get("index", ())],
                          expected=w.get("expected", ""), actual=w.get("actual", ""),
                          bound=w.get("bound", ""))
        if "high_precision" in w:
            item["high_precision"] = w["high_precision"]
        found.append(item)
    kinds = culprit.get("kinds") if isinstance(culprit, dict) else None
    return {**facts, "worst": found, "culprit": str(kinds).split("->") if kinds else None}
