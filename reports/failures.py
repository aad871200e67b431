"""The drill-down of one failing case: what the report shows when a failure is opened.

`failure_view` turns one entry of a results document's ``failures`` list into a `FailureView`:
the graph drawn as a chain diagram and its oneDNN JSON (both from the failure folder's
``graph.json``, when the folder is still there), expected vs actual partitions, the numerics
summary, the worst elements, the error against its bound, the smallest failing piece found by
culprit isolation (``culprit``), the backend's message and
traceback, the generated kernel source when the details carry one (``kernel_source``), the
replay commands, and every other detail as JSON so that nothing a backend reported is lost.

The failure folder is looked up next to the results file first (``failures/<name>``, so a
results folder that was moved or copied still finds its artifacts), then at the path the run
recorded. Nothing is regenerated: a missing ``graph.json`` is said, with the note the run left in
``case.json`` when there is one.
"""

from __future__ import annotations

import json
import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path, PurePath

from markupsafe import Markup

from fusionspec.conformance.grade.details import Details, PartitionDescription
from fusionspec.conformance.grade.document import FailureRecord
from fusionspec.spec.files import inside, safe_component
from fusionspec.spec.text import clean_json

from .legend import StatusInfo, status_info
from .replay import rebuilt
from .svg import MAX_DIAGRAM_OPS, DiagramOp, TensorRef, chain_diagram

__all__ = ["PartitionRow", "OutputRow", "WorstRow", "BoundView", "CulpritView", "ErrorView",
           "FailureView",
           "FailureLine", "failure_view", "failure_line", "find_folder", "MAX_JSON_CHARS"]

#: A graph.json longer than this is cut in the page (the file itself is named for the rest).
MAX_JSON_CHARS = 120_000
#: A graph.json larger than this is not read at all.
MAX_GRAPH_BYTES = 64 * 2**20

#: Detail keys the drill-down renders in their own place; any other key goes to "more details".
_SHOWN = frozenset({
    "expected_partitions", "actual_partitions", "numerics", "reason", "tensor", "dtype", "shape",
    "bound", "max_abs_error", "max_rel_error", "max_excess", "mismatches", "total", "worst",
    "stage", "error_type", "message", "traceback", "kernel_source", "suite_error", "culprit",
    "signature", "triage"})


@dataclass(frozen=True)
class PartitionRow:
    """One partition: its op kinds in order, op ids, external inputs and outputs; `matched` is
    whether the other side has a partition with the same ops."""

    kinds: str
    ops: str
    inputs: str
    outputs: str
    pattern: str
    matched: bool


@dataclass(frozen=True)
class OutputRow:
    """One graph output in the numerics summary."""

    tensor: str
    dtype: str
    passed: bool
    max_abs: str
    max_rel: str
    max_radius: str
    excess: str


@dataclass(frozen=True)
class WorstRow:
    index: str
    expected: str
    actual: str
    abs_error: str
    rel_error: str
    bound: str


@dataclass(frozen=True)
class BoundView:
    """The failing output against its error bound (per element; the largest shown)."""

    tensor: str
    dtype: str
    shape: str
    chain: str
    max_radius: str
    uncertain: str
    mismatches: str
    max_abs: str
    max_rel: str
    excess: str


@dataclass(frozen=True)
class CulpritView:
    """The smallest piece of the graph that still fails on the backend, alone."""

    kinds: str
    signature: str
    summary: str
    reason: str
    graph_json: str
    benchdnn: str


@dataclass(frozen=True)
class ErrorView:
    """An exception behind the verdict; `suite` when the suite itself failed, not the backend."""

    stage: str
    error_type: str
    message: str
    traceback: str
    suite: bool = False


@dataclass(frozen=True)
class FailureView:
    """Everything the drill-down of one failure shows (see the module docstring)."""

    anchor: str
    run_label: str
    case_id: str
    pattern: str
    kind: str
    rule: str
    rule_statement: str
    dtype: str
    status: StatusInfo
    description: str
    reason: str
    minimal_of: str
    features: tuple[tuple[str, str], ...]
    diagram: Markup | None
    diagram_note: str
    graph_json: str | None
    graph_note: str
    folder: str
    expected_partitions: tuple[PartitionRow, ...]
    actual_partitions: tuple[PartitionRow, ...]
    numerics_note: str
    outputs: tuple[OutputRow, ...]
    worst: tuple[WorstRow, ...]
    bound: BoundView | None
    culprit: CulpritView | None
    error: ErrorView | None
    kernel_source: str | None
    replay: tuple[str, ...]
    seed: str
    more: tuple[tuple[str, str], ...]
    #: What the suite found behind the failure (a mistake's signature, a declared departure,
    #: the culprit, who the float64 evaluation sides with), in sentences; "" when nothing.
    cause: str = ""


@dataclass(frozen=True)
class FailureLine:
    """A failure listed without its drill-down (past the per-pattern limit)."""

    case_id: str
    status: StatusInfo
    rule: str
    reason: str
    replay: str


# -- formatting --------------------------------------------------------------------------------

def _num(value: object, digits: int = 3) -> str:
    """A number as the report prints it (NaN and infinities arrive as strings)."""
    if isinstance(value, bool) or value is None:
        return "—" if value is None else str(value)
    if isinstance(value, int):
        return str(value)
    if isinstance(value, float):
        return f"{value:.{digits}g}" if math.isfinite(value) else str(value)
    return str(value)


def _float(value: object) -> float | None:
    if isinstance(value, bool):
        return None
    if isinstance(value, int | float):
        return float(value)
    if isinstance(value, str):
        try:
            return float(value)
        except ValueError:
            return None
    return None


def _ids(value: object) -> str:
    return ", ".join(str(v) for v in value) if isinstance(value, list) else _num(value)


def _json(value: object) -> str:
    return json.dumps(value, indent=1, sort_keys=False, ensure_ascii=False)


# -- partitions --------------------------------------------------------------------------------

def _partition_sets(parts: Sequence[PartitionDescription]) -> list[frozenset[str]]:
    return [frozenset(str(o) for o in part.ops or ()) for part in parts]


def _partition_rows(parts: Sequence[PartitionDescription],
                    other: Sequence[PartitionDescription] | None) -> tuple[PartitionRow, ...]:
    theirs = set(_partition_sets(other)) if other is not None else None
    rows = []
    for part, ops in zip(parts, _partition_sets(parts)):
        if part.not_a_partition is not None:
            rows.append(PartitionRow(f"not a partition: {part.not_a_partition}", "", "",
                                     "", "", False))
            continue
        chain = " → ".join(part.kinds) if part.kinds is not None else ""
        rows.append(PartitionRow(chain, _ids(part.ops), _ids(part.inputs), _ids(part.outputs),
                                 part.pattern or "—", theirs is None or ops in theirs))
    return tuple(rows)


def _membership(expected: Sequence[PartitionDescription],
                actual: Sequence[PartitionDescription]) -> dict[str, tuple[str, bool]]:
    """op id -> (note for its box, whether the backend partitioned it differently)."""
    exp_sets, act_sets = _partition_sets(expected), _partition_sets(actual)
    where_exp = {op: i for i, ops in enumerate(exp_sets) for op in ops}
    where_act = {op: i for i, ops in enumerate(act_sets) for op in ops}
    marks: dict[str, tuple[str, bool]] = {}
    for op in set(where_exp) | set(where_act):
        e, a = where_exp.get(op), where_act.get(op)
        if expected and actual:
            note = f"spec P{'-' if e is None else e} · backend P{'-' if a is None else a}"
            differs = e is None or a is None or exp_sets[e] != act_sets[a]
        else:
            note = f"{'spec' if expected else 'backend'} P{e if expected else a}"
            differs = False
        marks[op] = (note, differs)
    return marks


# -- the graph ---------------------------------------------------------------------------------

def find_folder(recorded: str, results_path: Path | None) -> Path | None:
    """The failure folder a results file names: ``failures/<name>`` (or ``extensions/<name>``,
    where a run keeps the cases fused beyond the spec) next to the results file first (a
    results folder that was moved still finds its artifacts), then the path the run
    recorded. Either is followed only when it resolves inside the results file's folder: a
    results document from elsewhere cannot point the report at any other folder."""
    if not recorded or results_path is None:
        return None
    root = results_path.parent
    name = safe_component(PurePath(recorded).name)
    for candidate in (Path("failures") / name, Path("extensions") / name, Path(recorded)):
        found = inside(candidate, root)
        if found is not None and found != root.resolve() and found.is_dir():
            return found
    return None


def _tensors(value: object) -> tuple[TensorRef, ...]:
    refs = []
    for item in value if isinstance(value, list) else ():
        if isinstance(item, Mapping):
            shape = item.get("shape")
            shown = "x".join(str(d) for d in shape) if isinstance(shape, list) else ""
            refs.append(TensorRef(str(item.get("id", "?")), str(item.get("dtype", "")), shown))
    return tuple(refs)


def _diagram_ops(graph: object, marks: Mapping[str, tuple[str, bool]]) -> list[DiagramOp]:
    """The ops of a oneDNN graph JSON document, read loosely (an ill-formed graph still
    draws); ValueError when it is not one."""
    ops_json = graph.get("graph") if isinstance(graph, Mapping) else None
    if not isinstance(ops_json, list):
        raise ValueError("it has no 'graph' list of ops")
    ops = []
    for index, op in enumerate(ops_json):
        if not isinstance(op, Mapping):
            raise ValueError(f"entry {index} of 'graph' is not an op object")
        op_id = op.get("id", index)
        note, flagged = marks.get(str(op_id), ("", False))
        ops.append(DiagramOp(op_id if isinstance(op_id, int) else index, str(op.get("kind", "?")),
                             str(op.get("name", "")), _tensors(op.get("inputs")),
                             _tensors(op.get("outputs")), note, flagged))
    return ops


def _graph(folder: Path | None, marks: Mapping[str, tuple[str, bool]], title: str,
           ) -> tuple[Markup | None, str, str | None, str]:
    """(diagram, note on the diagram, graph JSON text, note on the JSON)."""
    if folder is None:
        return None, "", None, ("the failure folder is not there (it is written when the run "
                                "has --out); nothing is regenerated")
    path = folder / "graph.json"
    if inside(path, folder) is None:
        return None, "", None, f"{path} is a link out of its failure folder; not followed"
    if not path.is_file():
        notes = ""
        case = folder / "case.json"
        try:
            if inside(case, folder) is not None and case.stat().st_size <= MAX_GRAPH_BYTES:
                record = clean_json(json.loads(case.read_text(encoding="utf-8")))
                if isinstance(record, Mapping) and isinstance(record.get("notes"), list):
                    notes = "; ".join(str(n) for n in record["notes"])
        except (OSError, ValueError, RecursionError):
            notes = ""
        return None, "", None, f"no graph.json in {folder}" + (f" ({notes})" if notes else "")
    try:
        if path.stat().st_size > MAX_GRAPH_BYTES:
            return None, "", None, (f"{path} is over {MAX_GRAPH_BYTES // 2**20} MB; not "
                                    "shown")
        text = path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        return None, "", None, f"{path} cannot be read: {exc}"
    shown = text if len(text) <= MAX_JSON_CHARS else (
        text[:MAX_JSON_CHARS] + f"\n… cut at {MAX_JSON_CHARS} characters; the whole graph is "
        f"in {path}")
    try:
        ops = _diagram_ops(clean_json(json.loads(text)), marks)
    except RecursionError:
        return None, f"not drawn: {path.name} is nested too deeply", shown, ""
    except ValueError as exc:
        return None, f"not drawn: {path.name} is not a oneDNN graph ({exc})", shown, ""
    if len(ops) > MAX_DIAGRAM_OPS:
        return None, f"not drawn: {len(ops)} ops (the diagram stops at {MAX_DIAGRAM_OPS})", \
            shown, ""
    # chain_diagram escapes every text it places, so its SVG can go into the page as it is.
    return Markup(chain_diagram(ops, title=title)), "", shown, ""


# -- numerics ----------------------------------------------------------------------------------

def _outputs(details: Details) -> tuple[tuple[OutputRow, ...], str]:
    if isinstance(details.numerics, str):
        return (), details.numerics
    rows = [OutputRow(_num(row.tensor) if row.tensor is not None else "", row.dtype,
                      row.passed, _num(row.max_abs_error), _num(row.max_rel_error),
                      _num(row.max_radius), _excess(row.max_excess))
            for row in details.numerics or ()]
    return tuple(rows), ""


def _worst(details: Details) -> tuple[WorstRow, ...]:
    rows = []
    for item in details.worst or ():
        want, got = _float(item.expected), _float(item.actual)
        diff = abs(got - want) if want is not None and got is not None else None
        finite = diff is not None and math.isfinite(diff)
        rel = diff / abs(want) if finite and want and diff is not None else None
        rows.append(WorstRow(_ids(item.index), _num(item.expected, 7), _num(item.actual, 7),
                             _num(diff) if diff is not None else "—",
                             _num(rel) if rel is not None else "—", _num(item.bound)))
    return tuple(rows)


def _excess(value: object) -> str:
    """How far past its bound the worst element is (``× its bound``)."""
    number = _float(value)
    if number is None:
        return "—"
    if math.isinf(number):
        return "bound 0"
    return f"{number:,.3g} × its bound"


def _bound(details: Details) -> BoundView | None:
    bound = details.bound
    if bound is None:
        return None
    mismatches, total = details.mismatches, details.total
    share = ""
    if mismatches is not None and total:
        share = f"{mismatches} of {total} elements ({100 * mismatches / total:.1f} %)"
    tensor = "" if details.tensor is None else str(details.tensor)
    return BoundView(tensor, bound.dtype or details.dtype or "",
                     "x".join(str(d) for d in details.shape or ()), bound.chain,
                     _num(bound.max_radius), str(bound.uncertain) if bound.uncertain else "",
                     share, _num(details.max_abs_error), _num(details.max_rel_error),
                     _excess(details.max_excess))


def _culprit(details: Details) -> CulpritView | None:
    found = details.culprit
    if found is None:
        return None
    return CulpritView(found.kinds, found.signature, found.summary, found.reason,
                       _json(found.graph) if found.graph is not None else "", found.benchdnn)


def _error(details: Details) -> ErrorView | None:
    if not (details.message or details.traceback or details.error_type):
        return None
    return ErrorView(details.stage or "", details.error_type or "", details.message or "",
                     details.traceback or "", details.suite_error is True)


# -- the views ---------------------------------------------------------------------------------

def failure_view(failure: FailureRecord, *, anchor: str, run_label: str,
                 results_path: Path | None, rule_statements: Mapping[str, str]) -> FailureView:
    """The drill-down of `failure` (an entry of a results document's ``failures``)."""
    details = failure.details
    replay = failure.replay
    expected = details.expected_partitions or []
    actual = details.actual_partitions or []
    folder = find_folder(replay.dir or "", results_path)
    diagram, diagram_note, graph_json, graph_note = _graph(
        folder, _membership(expected, actual), f"graph of {failure.case_id}")
    outputs, numerics_note = _outputs(details)
    rule = failure.rule or ""
    shown = details.to_json()
    more = tuple((key, value if isinstance(value, str) else _json(value))
                 for key, value in shown.items() if key not in _SHOWN)
    return FailureView(
        anchor=anchor, run_label=run_label, case_id=failure.case_id, pattern=failure.pattern,
        kind=failure.kind, rule=rule, rule_statement=rule_statements.get(rule, ""),
        dtype=failure.dtype or "", status=status_info(failure.status),
        description=failure.description, reason=failure.reason,
        minimal_of=failure.minimal_of or "",
        features=tuple((k, str(v)) for k, v in failure.features.items()),
        diagram=diagram, diagram_note=diagram_note, graph_json=graph_json,
        graph_note=graph_note, folder=str(folder) if folder is not None else replay.dir or "",
        expected_partitions=_partition_rows(expected, actual if actual else None),
        actual_partitions=_partition_rows(actual, expected if expected else None),
        numerics_note=numerics_note, outputs=outputs, worst=_worst(details),
        bound=_bound(details), culprit=_culprit(details), error=_error(details),
        kernel_source=details.kernel_source,
        replay=rebuilt(replay.commands), seed=str(replay.seed), more=more,
        cause=_cause(details))


def _cause(details: Details) -> str:
    """The cause of a failure in a sentence or two, from its recorded diagnosis (the same facts
    the findings group by), so the drill-down states it instead of leaving it in raw JSON."""
    said: list[str] = []
    mistake = details.signature
    if mistake is not None and mistake.statement:
        said.append(f"Bug: {mistake.statement} (signature {mistake.id}, matching "
                    f"{mistake.matched} of {mistake.failing} failing element(s)).")
    for departure in details.departures or ():
        if departure.statement:
            said.append(f"Known departure {departure.id}: {departure.statement}.")
    culprit = details.culprit
    if culprit is not None and culprit.summary:
        said.append(f"Smallest failing piece: {culprit.summary}.")
    triage = details.triage
    if triage is not None and triage.closer == "reference":
        said.append(f"On {triage.reference_closer} of {triage.failing} failing element(s) the "
                    "reference is nearer the float64 evaluation than the backend.")
    return " ".join(said)


def failure_line(failure: FailureRecord) -> FailureLine:
    commands = rebuilt(failure.replay.commands)
    return FailureLine(failure.case_id, status_info(failure.status), failure.rule or "",
                       failure.reason, commands[0] if commands else "")
