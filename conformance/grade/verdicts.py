"""Grading one case on one backend and device: `judge(case, backend, device, seed=...)`.

The grading is described in docs/writing-a-backend.md and docs/architecture.md; the reference
is the expectation throughout: its partitioning of the graph, and its outputs on inputs filled
from `seed`.

- **valid**: the backend must partition the graph exactly as the reference does (the same op
  sets, each partition with the same external tensors), so the instance forms one partition of
  exactly its ops (else ``fusion-mismatch``); rejecting the graph is ``rejected-valid``. Then
  every backend partition is compiled and executed in dependency order and the graph outputs
  are compared with the reference's (``numeric-mismatch`` when outside `tolerances`).
- **near-miss**: partitioned like the reference, the numerics decide; a partitioning that only
  merges reference partitions (it fuses what the spec keeps apart) and computes right is an
  ``extension`` naming the rule it went past; any other difference is a ``fusion-mismatch``.
  Where it merges, a tensor the reference rounds to its declared type may stay f32 (the spec's
  precision inside a partition), except a bf16/f16 tensor where a near miss of a dtype rule
  ends the pattern's partition: that type is why the spec keeps the fusion apart, so it must
  still be rounded (`_declared_roundings`).
- **ill-formed**: `partition` (or `compile`) must raise a `GraphError` or an exception type the
  backend declares in ``rejection_errors``; ``accepted-invalid`` otherwise.

Any other exception from the backend is an ``error`` with its message and the end of its
traceback. A case covered by one of the backend's declared ``limitations`` is still run, then
reported ``unsupported`` with the limitation's reason; ``limitation_passed`` in the details
says whether it would have passed.

Every verdict other than a pass carries its facts as a typed record (`Details.facts`, one class
per kind of fact in `fusionspec.conformance.grade.details`), and its reason is rendered from them
(`fusionspec.conformance.grade.facts`). The details are built as records where grading learns
them (`_Stop` carries what it knows so far), never as a mapping of string keys. The known
departures the backend declares are matched against the facts and the case graph
(`fusionspec.conformance.grade.departures`); those that match are `Details.departures`.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from contextlib import nullcontext
from dataclasses import dataclass, fields, replace
from functools import partial
from typing import Any, TypeVar

import numpy as np

from fusionspec.backend import Backend, Departure, Device, Limitation
from fusionspec.backend.departures import FIELD_LIMIT, MAX_FIELDS
from fusionspec.reference import execute, fill_inputs
from fusionspec.reference.dtypes import numpy_dtype
from fusionspec.reference.partitioner import external_tensors, partition
from fusionspec.spec.dtypes import DataType
from fusionspec.spec.graph import Graph, Op, Partition
from fusionspec.spec.rules import RuleKind, UnknownRuleError, rule
from fusionspec.spec.text import MESSAGE_LIMIT, clean_text
from fusionspec.spec.types import Array

from ..answers import (
    BackendFailure,
    Failure,
    Foreign,
    OneTrip,
    clip,
    describe_exception,
    rejection_types,
    short_traceback,
)
from ..cases import STRUCTURAL_RULES, Case, CaseKind, Status
from .bounds import ancestors, error_bounds, in_order
from .culprit import MAX_SECONDS, isolate
from .departures import matching_departures
from .details import (
    AcceptedFacts,
    ContractFacts,
    Details,
    ErrorFacts,
    ExtensionFacts,
    Facts,
    NumericFacts,
    OutputSummary,
    PartitionDescription,
    RejectionFacts,
    UnsupportedFacts,
)
from .facts import diagnosed_facts, fusion_facts, nonfinite_differ, partition_facts, reason
from .prepared import Prepared
from .signatures import match_signature
from .tolerances import Bound, chain_of, compare, dtype_name, dtype_reason
from .triage import explain, who_is_right
from .verdict import Verdict

__all__ = ["judge", "matching_limitation", "apply_limitation", "rule_statement", "ancestors"]

T = TypeVar("T")

#: Seconds a culprit isolation may take past its own budget before the worker is stopped.
_COURTESY_SLACK_S = 10.0
#: Characters kept of an exception that cost a diagnosis.
_DIAGNOSIS_ERROR_LIMIT = 500


class _Stop(Exception):
    """Ends grading early with a verdict (raised and caught inside this module only): its
    reason is rendered from its facts."""

    def __init__(self, status: Status, facts: Facts, details: Details | None = None) -> None:
        self.reason = reason(facts)
        super().__init__(self.reason)
        self.status = status
        self.details = replace(details or Details(), facts=facts)


def _contract(status: Status, problem: str, message: str,
              details: Details | None = None) -> _Stop:
    """A verdict on a backend that broke the interface (`problem` names how)."""
    return _Stop(status, ContractFacts(problem=problem, message=message), details)


def judge(case: Case, backend: Backend, device: Device, *, seed: int = 0,
          departures: Sequence[Departure] | None = None,
          prepared: Prepared | None = None) -> Verdict:
    """The suite's verdict on `case` for `backend` on `device`, inputs filled from `seed`;
    the known `departures` it matches (default: those the backend declares) are recorded in
    its details. `prepared`, the reference's side of the case computed ahead
    (`grade.prepared`), is used instead of computing it again when it is that case's."""
    ahead = prepared if prepared is not None and prepared.serves(case, seed) else None
    known = departures if departures is not None else tuple(
        d for d in getattr(backend, "departures", ()) or () if isinstance(d, Departure))
    try:
        if case.kind is CaseKind.ill_formed:
            status, said, details = _judge_ill_formed(case, backend, device)
        else:
            status, said, details = _judge_well_formed(case, backend, device, seed, known,
                                                       ahead)
    except _Stop as stop:
        status, said, details = stop.status, stop.reason, stop.details
    except Exception as exc:  # a bug of the suite itself: report it on this case, go on
        facts = ErrorFacts(kind="suite",
                           message=f"the suite failed: {type(exc).__name__}: {exc}")
        status, said = Status.error, reason(facts)
        details = Details(suite_error=True, traceback=short_traceback(exc), facts=facts)
    if status is not Status.passed and known:
        details = replace(details, departures=matching_departures(known, case, status, details))
    verdict = Verdict(case.id, case.pattern, case.kind, status, said, case.rule, details)
    limitation = matching_limitation(getattr(backend, "limitations", ()), case, device)
    return verdict if limitation is None else apply_limitation(verdict, limitation)


def matching_limitation(limitations: Sequence[Limitation], case: Case,
                        device: Device) -> Limitation | None:
    """The first declared limitation that covers `case` on `device`, if any."""
    dtypes = frozenset(t.dtype.value for op in case.graph.ops
                       for t in (*op.inputs, *op.outputs))
    for limitation in limitations or ():
        if limitation.covers(pattern=case.pattern, dtype=case.dtype, device_kind=device.kind,
                             case_kind=case.kind.value, tensor_dtypes=dtypes):
            return limitation
    return None


def apply_limitation(verdict: Verdict, limitation: Limitation) -> Verdict:
    """`verdict` reported as ``unsupported``: the observed outcome moves into the details."""
    passed = verdict.status in (Status.passed, Status.extension)
    details = replace(verdict.details, limitation=limitation.reason, limitation_passed=passed,
                      observed_status=verdict.status.value, observed_reason=verdict.reason)
    return Verdict(verdict.case_id, verdict.pattern, verdict.kind, Status.unsupported,
                   f"declared limitation: {limitation.reason}", verdict.rule, details)


def rule_statement(rule_id: str | None) -> str:
    """``rule id: statement`` for a catalog or structural rule (the id alone if unknown)."""
    if rule_id is None:
        return "no rule named"
    if rule_id in STRUCTURAL_RULES:
        return f"{rule_id}: {STRUCTURAL_RULES[rule_id]}"
    try:
        return f"{rule_id}: {rule(rule_id).statement}"
    except UnknownRuleError:
        return rule_id


# -- calling the backend and the reference -------------------------------------------------

def _described(exc: BaseException, backend: object) -> Failure:
    """What grading needs to know of an exception a backend raised: here, or in its worker
    process (`BackendFailure` carries the worker's description)."""
    if isinstance(exc, BackendFailure):
        return _cleaned(exc.failure)
    return _cleaned(describe_exception("", exc, rejection_types(backend)))


def _cleaned(said: Failure) -> Failure:
    """A worker's description of an exception, every field of its type, stripped of control
    sequences and clipped: a worker may send anything in these fields."""
    def text(value: object, limit: int) -> str:
        return clean_text(value if isinstance(value, str) else "", limit)

    fields = said.fields if isinstance(said.fields, dict) else {}
    return Failure(stage=text(said.stage, 40), type_name=text(said.type_name, 200) or "?",
                   message=text(said.message, MESSAGE_LIMIT),
                   rule=text(said.rule, 200) if isinstance(said.rule, str) else None,
                   is_rejection=said.is_rejection is True,
                   traceback=text(said.traceback, 4 * MESSAGE_LIMIT),
                   reason=text(said.reason, MESSAGE_LIMIT),
                   fields={text(k, FIELD_LIMIT): text(v, FIELD_LIMIT)
                           for k, v in list(fields.items())[:MAX_FIELDS]})


def _call_backend(stage: str, backend: object, fn: Callable[[], T], *,
                  rejection: Status | None) -> T:
    """Run one backend call. A declared rejection becomes `rejection` (when given), anything
    else an ``error`` naming the stage."""
    try:
        return fn()
    except (Exception, SystemExit) as exc:  # a backend may even try to end the process
        said = _described(exc, backend)
        if rejection is not None and said.is_rejection:
            facts = RejectionFacts(kind="rejection", stage=stage, type=said.type_name,
                                   message=said.message, rule=said.rule,
                                   fields=dict(said.fields))
            raise _Stop(rejection, facts, Details(stage=stage, error_type=said.type_name,
                                                  message=said.message,
                                                  error_rule=said.rule)) from None
        if stage == "execute" and said.fields.get("problem") == "output-shape":
            # The kernel ran and its result has the wrong shape (a backend built on the
            # reference's executor says so with this exception): wrong values, not a crash.
            tensor = said.fields.get("tensor", "")
            raise _contract(Status.numeric_mismatch, "wrong-shape",
                            f"execute() computed output tensor {tensor} with the wrong shape: "
                            f"{said.fields.get('detail', said.message)}",
                            Details(tensor=int(tensor) if tensor.isdigit() else None)) from None
        raised = ErrorFacts(kind="exception", stage=stage, type=said.type_name,
                            message=said.message, rule=said.rule, fields=dict(said.fields))
        raise _Stop(Status.error, raised, Details(stage=stage, error_type=said.type_name,
                                                  message=said.message,
                                                  traceback=said.traceback)) from None


def _call_reference(what: str, fn: Callable[[], T]) -> T:
    """Run a reference computation; its failure is the suite's problem, reported as error."""
    try:
        return fn()
    except Exception as exc:
        raise _Stop(Status.error, ErrorFacts(
            kind="suite", message=f"the reference could not {what} (a problem of the suite, "
                                  f"not the backend): {type(exc).__name__}: {exc}"),
            Details(suite_error=True, traceback=short_traceback(exc))) from exc


# -- ill-formed ------------------------------------------------------------------------------

def _judge_ill_formed(case: Case, backend: Backend, device: Device,
                      ) -> tuple[Status, str, Details]:
    try:
        parts = _call_backend("partition", backend, lambda: list(backend.partition(case.graph)),
                              rejection=Status.passed)
        for part in parts:
            _call_backend("compile", backend, partial(backend.compile, part, device),
                          rejection=Status.passed)
    except _Stop as stop:
        stopped = stop.details.facts
        if stop.status is Status.error and isinstance(stopped, ErrorFacts):
            marked = replace(stopped, ill_formed=True)
            raise _Stop(stop.status, marked, stop.details) from None
        got_rule = stop.details.error_rule
        details = replace(stop.details, expected_rule=case.rule,
                          rule_matches=None if got_rule is None else got_rule == case.rule)
        note = "" if got_rule in (None, case.rule) else f" (the case breaks {case.rule})"
        return Status.passed, stop.reason + note, details
    facts = AcceptedFacts(rule=case.rule)
    return (Status.accepted_invalid, reason(facts, rule_statement(case.rule)),
            Details(expected_rule=case.rule, actual_partitions=_describe_all(parts),
                    facts=facts))


# -- valid and near-miss ---------------------------------------------------------------------

def _judge_well_formed(case: Case, backend: Backend, device: Device, seed: int,
                       known: Sequence[Departure], ahead: Prepared | None,
                       ) -> tuple[Status, str, Details]:
    if ahead is not None:
        graph, expected = ahead.graph, list(ahead.expected)
    else:
        graph = _call_reference("finalize this graph", case.graph.finalize)
        expected = _call_reference("partition this graph", lambda: partition(graph))
    parts = _call_backend("partition", backend, lambda: list(backend.partition(case.graph)),
                          rejection=Status.rejected_valid)
    _check_cover(graph, parts)
    fusion = _fusion(case, graph, expected, parts)
    partitions = Details(expected_partitions=_describe_all(expected),
                         actual_partitions=_describe_all(parts))
    if fusion == "mismatch":
        # Fusion is graded first and stands on its own; the numerics are still run for the
        # report's drill-down, and whatever they run into only lands in the details.
        summary: list[OutputSummary] | str
        try:
            summary = _numerics(case, graph, backend, device, parts, seed, expected,
                                ahead).summary
        except _Stop as stop:
            summary = f"{stop.status.value}: {stop.reason}"
        except Exception as exc:
            summary = f"not run: {type(exc).__name__}: {exc}"
        fused = fusion_facts(graph, expected, parts, case.rule)
        return Status.fusion_mismatch, reason(fused), replace(partitions, numerics=summary,
                                                             facts=fused)
    numerics = _numerics(case, graph, backend, device, parts, seed, expected, ahead)
    details = replace(partitions, numerics=numerics.summary)
    if numerics.failure is not None:
        failure = _diagnose(graph, backend, device, parts, numerics, known)
        found = failure.facts
        assert isinstance(found, NumericFacts), "a failing output's facts are numeric"
        facts = diagnosed_facts(found, failure.worst,
                                failure.culprit.kinds if failure.culprit else None)
        return (Status.numeric_mismatch, str(failure.reason),
                _merged(details, replace(failure, facts=facts)))
    if fusion == "extension":
        merged = [partition_facts(p).kinds for p in parts
                  if _key(p) not in {_key(e) for e in expected}]
        extension = ExtensionFacts(merged=merged, rule=case.rule)
        return (Status.extension, reason(extension, rule_statement(case.rule)),
                replace(details, facts=extension))
    return Status.passed, "", details


def _merged(base: Details, more: Details) -> Details:
    """`base` with every field `more` sets (is not None) taken from `more`."""
    return replace(base, **{f.name: getattr(more, f.name) for f in fields(Details)
                            if f.name != "extra" and getattr(more, f.name) is not None})


def _key(part: Partition) -> frozenset[int]:
    return frozenset(op.id for op in part.ops)


def _kinds(ops: Sequence[Op]) -> str:
    return "[" + "->".join(op.kind for op in sorted(ops, key=lambda o: o.id)) + "]"


def _describe(part: object) -> PartitionDescription:
    if isinstance(part, Foreign):  # what a broken backend returned, as its worker saw it
        return PartitionDescription(not_a_partition=f"{part.type_name}: {part.text}")
    if not isinstance(part, Partition):
        return PartitionDescription(not_a_partition=repr(part)[:200])
    # What a backend put in its partition is typed here, once: the details are a typed record.
    ops = sorted(part.ops, key=lambda o: o.id)
    return PartitionDescription(
        ops=[int(op.id) for op in ops], kinds=[str(op.kind) for op in ops],
        inputs=sorted(int(t.id) for t in part.inputs),
        outputs=sorted(int(t.id) for t in part.outputs),
        pattern=None if part.pattern is None else str(part.pattern),
        supported=part.supported is True)


def _describe_all(parts: Sequence[object]) -> list[PartitionDescription]:
    return [_describe(p) for p in parts]


def _check_cover(graph: Graph, parts: Sequence[object]) -> None:
    """Every backend partition is a Partition, and they cover the graph's ops exactly once."""
    seen: dict[int, int] = {}
    for index, part in enumerate(parts):
        if not isinstance(part, Partition):
            kind = part.type_name if isinstance(part, Foreign) else type(part).__name__
            raise _contract(Status.error, "not-a-partition", f"partition() returned a {kind}, "
                            "not a fusionspec Partition", Details(stage="partition"))
        for op in part.ops:
            if op.id not in graph.op_by_id:
                raise _contract(Status.fusion_mismatch, "op-outside-graph", f"partition {index} "
                                f"holds op {op.id}, which is not in the graph",
                                Details(actual_partitions=_describe_all(parts)))
            if op.id in seen:
                raise _contract(Status.fusion_mismatch, "op-twice", f"op {op.id} ({op.kind}) is "
                                f"in partitions {seen[op.id]} and {index}",
                                Details(actual_partitions=_describe_all(parts)))
            seen[op.id] = index
    left = [op for op in graph.ops if op.id not in seen]
    if left:
        raise _contract(Status.fusion_mismatch, "op-uncovered", f"ops {[op.id for op in left]} "
                        f"({', '.join(op.kind for op in left)}) are in no partition",
                        Details(actual_partitions=_describe_all(parts)))


def _io_ok(graph: Graph, part: Partition) -> bool:
    want_in, want_out = external_tensors(graph, part.ops)
    return ({t.id for t in part.inputs} == {t.id for t in want_in}
            and {t.id for t in part.outputs} == {t.id for t in want_out})


def _fusion(case: Case, graph: Graph, expected: Sequence[Partition],
            parts: Sequence[Partition]) -> str:
    """``same``, ``extension`` (only merges reference partitions) or ``mismatch``; raises
    for a backend partition marked unsupported (a rejection of a valid graph)."""
    for part in parts:
        if not part.supported:
            raise _Stop(Status.rejected_valid, UnsupportedFacts(kinds=partition_facts(part).kinds),
                        Details(actual_partitions=_describe_all(parts)))
    # The reference may label an instance with an overlapping pattern that comes first in the
    # catalog (convtranspose.int8 vs int8.convtranspose_post_ops); the op sets are what count.
    if case.kind is CaseKind.valid and all(p.pattern is None for p in expected):
        raise _Stop(Status.error, ErrorFacts(
            kind="suite", message=f"the reference fuses nothing in this valid case of "
                                  f"{case.pattern} (a problem of the suite)"),
            Details(suite_error=True, expected_partitions=_describe_all(expected)))
    want = {_key(p) for p in expected}
    got = {_key(p) for p in parts}
    if not all(_io_ok(graph, p) for p in parts):
        return "mismatch"
    if want == got:
        return "same"
    coarser = all(any(w <= g for g in got) for w in want)
    if case.kind is CaseKind.near_miss and coarser:
        return "extension"
    return "mismatch"


# -- numerics --------------------------------------------------------------------------------

def _order(parts: Sequence[Partition]) -> list[Partition]:
    ordered, acyclic = in_order(parts)
    if not acyclic:
        raise _contract(Status.fusion_mismatch, "cycle", "the backend's partitions depend on "
                        "each other in a cycle (a partition is not convex)",
                        Details(actual_partitions=_describe_all(parts)))
    return ordered


def _boundaries(parts: Sequence[Partition]) -> set[int]:
    """Tensors that leave a partition (rounded to their declared type there)."""
    return {t.id for p in parts for t in p.outputs}


def _rounding_differs(graph: Graph, expected: Sequence[Partition],
                      parts: Sequence[Partition]) -> set[int]:
    """Intermediate tensors that one partitioning rounds to their declared type (a partition
    output) and the other keeps in f32 (inside a partition)."""
    produced = {t.id for op in graph.ops for t in op.outputs}
    return (_boundaries(expected) ^ _boundaries(parts)) & produced


def _declared_roundings(case: Case, expected: Sequence[Partition]) -> set[int]:
    """The bf16/f16 tensors where a near miss of a dtype rule ends the pattern's partition:
    the rule forbids going on because of that declared type (a SoftMax dst in bf16 followed by
    post-ops), so a backend that fuses past it anyway must still round the tensor to it. At
    any other boundary an extension removes, keeping the value in f32 is the spec's own
    precision inside a partition, and both values are accepted (`_rounding_differs`)."""
    if case.kind is not CaseKind.near_miss or case.rule is None:
        return set()
    try:
        if rule(case.rule).kind is not RuleKind.dtype:
            return set()
    except UnknownRuleError:  # a structural label (structure.bound, ...), not a dtype rule
        return set()
    return {t.id for part in expected if part.pattern == case.pattern for t in part.outputs
            if t.dtype in (DataType.bf16, DataType.f16)}


def _numerics(case: Case, graph: Graph, backend: Backend, device: Device,
              parts: Sequence[Partition], seed: int, expected: Sequence[Partition],
              ahead: Prepared | None = None) -> _Numerics:
    """Run the backend's partitions and compare the graph outputs with the reference's: the
    summary per output, the details of the first failing output (or None), and what its
    diagnosis needs."""
    if ahead is not None:
        inputs, reference = ahead.inputs, ahead.reference
    else:
        inputs = _call_reference("fill inputs", lambda: fill_inputs(graph, seed, case.values))
        reference = _call_reference("execute this graph", lambda: execute(
            graph, inputs, keep_intermediates=True))
    values: dict[int, object] = dict(inputs)
    sources: list[str] = []
    for part in _order(parts):
        unfed = [t.id for t in part.inputs if t.id not in values]
        if unfed:  # an intermediate the backend keeps inside another partition
            # Its compile failure, if any, still comes first.
            _call_backend("compile", backend, partial(backend.compile, part, device),
                          rejection=Status.rejected_valid)
            raise _contract(Status.fusion_mismatch, "unfed-input", f"partition "
                            f"{_kinds(part.ops)} reads tensor(s) {unfed}, which no partition "
                            "outputs", Details(tensors=unfed,
                                               actual_partitions=_describe_all(parts)))
        feed: dict[int, Any] = {t.id: values[t.id] for t in part.inputs}
        compiled, produced = _compile_and_execute(backend, part, device, feed)
        sources.append(_kernel_source(compiled, part))
        if not isinstance(produced, Mapping):
            kind = produced.type_name if isinstance(produced, Foreign) else \
                type(produced).__name__
            raise _contract(Status.numeric_mismatch, "not-a-mapping", f"execute() returned a "
                            f"{kind}, not a mapping of tensor id to array")
        for t in part.outputs:
            if t.id not in produced:
                raise _contract(Status.numeric_mismatch, "missing-output", f"execute() of "
                                f"partition {_kinds(part.ops)} returned no array for output "
                                f"tensor {t.id}", Details(tensor=t.id))
            array = produced[t.id]
            if isinstance(array, Foreign):
                raise _contract(Status.numeric_mismatch, "not-an-array", f"execute() returned "
                                f"a {array.type_name} for output tensor {t.id}, not an array",
                                Details(tensor=t.id))
            want = graph.tensors[t.id].dtype
            if isinstance(array, np.ndarray) and array.dtype != numpy_dtype(want):
                raise _contract(Status.numeric_mismatch, "wrong-dtype", dtype_reason(
                    dtype_name(array.dtype), want, ancestors(graph, t.id)),
                    Details(tensor=t.id, dtype=want.value, actual_dtype=str(array.dtype)))
            values[t.id] = array
    differs = _rounding_differs(graph, expected, parts) - _declared_roundings(case, expected)
    radii = ahead.radii if ahead is not None and not differs else _call_reference(
        "bound the errors", lambda: error_bounds(graph, inputs, expected,
                                                 rounding_differs=differs))
    summary: list[OutputSummary] = []
    failure: Details | None = None
    for t in graph.output_tensors:
        bound = Bound(t.dtype, radii[t.id], chain_of(ancestors(graph, t.id)))
        result = compare(reference[t.id], values.get(t.id), bound)
        summary.append(result.output_summary(t.id))
        if failure is None and not result.passed:
            facts = NumericFacts(tensor=t.id, chain=list(bound.chain), dtype=t.dtype.value,
                                 summary=result.reason,
                                 nonfinite=nonfinite_differ(reference[t.id], values.get(t.id)))
            failure = replace(result.failing_output(), reason=reason(facts), facts=facts,
                              tensor=t.id, dtype=t.dtype.value,
                              shape=list(reference[t.id].shape))
            if any(sources):
                failure = replace(failure, kernel_source="\n".join(src for src in sources if src))
    return _Numerics(summary, failure, inputs, reference, values, radii, expected)


@dataclass(frozen=True)
class _Numerics:
    """What `_numerics` found: each output's comparison, the first failing output's details
    (None: all pass), and what the diagnosis of that failure recomputes from."""

    summary: list[OutputSummary]
    failure: Details | None
    inputs: Mapping[int, Array]
    reference: Mapping[int, Array]
    values: Mapping[int, object]
    radii: Mapping[int, Array]
    partitions: Sequence[Partition]


def _compile_and_execute(backend: Backend, part: Partition, device: Device,
                         feed: Mapping[int, Any]) -> tuple[Any, object]:
    """Compile `part`, then execute it on `feed`: each step graded as its own call, in one
    round trip where the backend runs in a worker (`OneTrip`)."""
    if isinstance(backend, OneTrip):
        trip = backend.compile_and_execute(part, device, feed)
        compiled = _call_backend("compile", backend, trip.compiled,
                                 rejection=Status.rejected_valid)
        return compiled, _call_backend("execute", backend, trip.outputs, rejection=None)
    compiled = _call_backend("compile", backend, partial(backend.compile, part, device),
                             rejection=Status.rejected_valid)
    return compiled, _call_backend("execute", backend, partial(compiled.execute, feed),
                                   rejection=None)


def _diagnose(graph: Graph, backend: Backend, device: Device, parts: Sequence[Partition],
              numerics: _Numerics, known: Sequence[Departure]) -> Details:
    """The failing output's details completed by its diagnosis: who is right (the float64
    evaluation, also on each worst element), the substitutes of `known` departures that
    reproduce the backend's values (``reproduced``), and the culprit (the smallest piece that
    still fails). A failure here is noted, never the verdict's end."""
    failure = numerics.failure
    assert failure is not None, "only a failing output is diagnosed"
    tensor = failure.tensor
    if tensor is None:
        return failure
    inputs, reference = numerics.inputs, numerics.reference
    actual, radius = numerics.values.get(tensor), numerics.radii[tensor]
    if not isinstance(actual, np.ndarray) or actual.shape != reference[tensor].shape:
        return failure
    try:
        triage, high = who_is_right(graph, inputs, tensor, reference[tensor], actual, radius,
                                    numerics.partitions)
        worst = [replace(w, high_precision=_json_float(float(high[tuple(w.index)])))
                 for w in failure.worst or ()]
        names = sorted({d.substitute for d in known if d.substitute is not None})
        failure = replace(failure, worst=worst, triage=triage, reproduced=explain(
            graph, inputs, parts, tensor, actual, radius, names))
    except Exception as exc:  # the diagnosis is a courtesy; the verdict stands without it
        failure = replace(failure, diagnosis_error=clip(f"{type(exc).__name__}: {exc}",
                                                        _DIAGNOSIS_ERROR_LIMIT))
    try:
        signature = match_signature(graph, inputs, tensor, reference[tensor], actual, radius,
                                    numerics.partitions or parts)
        if signature is not None:
            failure = replace(failure, signature=signature)
    except Exception as exc:  # likewise a courtesy
        failure = replace(failure, signature_error=clip(f"{type(exc).__name__}: {exc}",
                                                        _DIAGNOSIS_ERROR_LIMIT))
    # The isolation calls the backend again: in the runner's worker under a courtesy budget
    # of its own, so that a crash or a hang there costs the diagnosis, never the verdict.
    courtesy = getattr(backend, "courtesy", None)
    guard = courtesy(MAX_SECONDS + _COURTESY_SLACK_S) if callable(courtesy) else nullcontext()
    try:
        with guard:
            culprit = isolate(graph, backend, device, reference, tensor, parts)
        if culprit is not None:
            failure = replace(failure, culprit=culprit.record())
    except Exception as exc:  # Abandoned included: the verdict stands without a culprit
        failure = replace(failure, culprit_error=clip(f"{type(exc).__name__}: {exc}",
                                                      _DIAGNOSIS_ERROR_LIMIT))
    return failure


def _json_float(value: float) -> float | str:
    return value if np.isfinite(value) else str(value)


def _kernel_source(compiled: object, part: Partition) -> str:
    """The generated source a backend exposes as `kernel_source` (the report shows it for a
    numeric mismatch), headed by the partition it belongs to; '' when there is none."""
    try:
        source = getattr(compiled, "kernel_source", "")
    except Exception:  # a backend's property may fail; the source is only a courtesy
        return ""
    if not isinstance(source, str) or not source:
        return ""
    return f"// partition {part.id}: {_kinds(part.ops)}\n{source}"
