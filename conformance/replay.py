"""What a replay shows beyond the verdict: the backend's own outputs and the worst elements.

`backend_outputs` runs a graph on a backend the way the suite does (the backend partitions it,
each partition is compiled for the device and executed in dependency order on the arrays the
earlier ones produced) and returns the graph outputs, so a replay can save them as
``actual.npz`` next to the reference's ``expected.npz``. `worst_lines` turns the worst
elements a numeric mismatch recorded into lines a person reads.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from fusionspec.backend import Backend, BackendError, Device
from fusionspec.spec.graph import Graph, Partition
from fusionspec.spec.types import Array

from .grade.bounds import in_order
from .grade.details import Details

__all__ = ["ReplayError", "backend_outputs", "worst_lines"]


class ReplayError(BackendError):
    """The backend's outputs cannot be had: it raised, or returned something that is not the
    arrays of its partitions' outputs."""


def _partitions(backend: Backend, graph: Graph) -> list[Partition]:
    try:
        parts = list(backend.partition(graph))
    except Exception as exc:  # the backend's own failure, reported as such
        raise ReplayError(f"partition() raised {type(exc).__name__}: {exc}") from exc
    if not all(isinstance(p, Partition) for p in parts):
        raise ReplayError("partition() returned something that is not a list of Partition")
    ordered, acyclic = in_order(parts)
    if not acyclic:
        raise ReplayError("the backend's partitions depend on each other in a cycle")
    return ordered


def _run_one(backend: Backend, device: Device, part: Partition,
             values: Mapping[int, Array]) -> dict[int, Array]:
    missing = [t.id for t in part.inputs if t.id not in values]
    if missing:
        raise ReplayError(f"a partition reads tensor(s) {missing}, which no partition outputs")
    try:
        produced: Any = backend.compile(part, device).execute(
            {t.id: values[t.id] for t in part.inputs})
    except Exception as exc:
        raise ReplayError(f"compile() or execute() raised {type(exc).__name__}: {exc}") \
            from exc
    if not isinstance(produced, Mapping):
        raise ReplayError(f"execute() returned a {type(produced).__name__}, not a mapping")
    absent = [t.id for t in part.outputs if t.id not in produced]
    if absent:
        raise ReplayError(f"execute() returned no array for output tensor(s) {absent}")
    return {t.id: produced[t.id] for t in part.outputs}


def backend_outputs(backend: Backend, device: Device, graph: Graph,
                    inputs: Mapping[int, Array]) -> dict[int, Array]:
    """The outputs of `graph` (finalized) as `backend` computes them on `device` from
    `inputs`, keyed by tensor id; `ReplayError` says what the backend did wrong."""
    values: dict[int, Array] = dict(inputs)
    for part in _partitions(backend, graph):
        values.update(_run_one(backend, device, part, values))
    return {t.id: values[t.id] for t in graph.output_tensors if t.id in values}


def worst_lines(details: Details, limit: int = 8) -> list[str]:
    """The worst elements a numeric mismatch recorded (tensor, index, the reference's value,
    the backend's, the error and the bound there), one line each."""
    where = f"tensor {details.tensor} " if details.tensor is not None else ""
    lines = []
    for element in (details.worst or [])[:limit]:
        expected, actual = element.expected, element.actual
        # NaN and the infinities are recorded as text: their error is not a number.
        error = abs(actual - expected) if isinstance(expected, float) and \
            isinstance(actual, float) else None
        shown_error = f"{error:.6g}" if error is not None else "n/a"
        lines.append(f"{where}{element.index}: expected {expected}, got {actual} "
                     f"(error {shown_error}, bound {element.bound})")
    return lines
