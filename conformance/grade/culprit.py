"""Culprit isolation: the smallest piece of a failing graph that the backend still gets wrong.

For a numeric mismatch, `isolate` runs pieces of the graph on the backend under test (through
the same proxy as the case, so in its worker), each fed with the reference's values of its
inputs, and judges each piece on its own with its own error bounds:

1. every op the failing output depends on, alone, producers first: the first one that fails
   is the culprit;
2. if none fails alone, consecutive runs of ops of the failing output's partition, shortest
   first: the culprit is then a chain that fails only fused;
3. the culprit is simplified while it keeps failing: its optional attributes back to their
   defaults, its bf16/f16 tensors to f32, and, for an element-wise op, its tensors cut down to
   the few failing elements.

It is bounded (`MAX_CALLS` backend calls and `MAX_SECONDS`, well inside a case's timeout);
what it found by then is kept. A piece the backend refuses (rejects, marks unsupported, or
fails on) is skipped. The result (`Culprit`) names the piece (`signature`: the op kinds,
their non-default string attributes and the dtypes, without the numbers, so that one bug is
one finding) and carries it as oneDNN graph JSON, which benchdnn's graph driver reads
(``benchdnn --graph --case=culprit.json``).
"""

from __future__ import annotations

import contextlib
import json
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from functools import partial
from typing import Any, TypeVar

import numpy as np

from fusionspec.backend import Backend, Device
from fusionspec.reference import execute
from fusionspec.reference.dtypes import cast_to
from fusionspec.spec.categories import BINARY, UNARY
from fusionspec.spec.dtypes import DataType
from fusionspec.spec.errors import FusionspecError
from fusionspec.spec.graph import Graph, LogicalTensor, Op, Partition
from fusionspec.spec.onednn_json import dumps
from fusionspec.spec.opschemas import SCHEMAS
from fusionspec.spec.types import Array

from .bounds import ancestors, output_bounds
from .details import Culprit as CulpritRecord
from .tolerances import Comparison, compare

__all__ = ["Culprit", "isolate", "MAX_CALLS", "MAX_SECONDS", "signature_of", "CULPRIT_FILE",
           "CULPRIT_INPUTS", "culprit_inputs", "against_reference"]

T = TypeVar("T")

#: The most backend calls (partition, compile, execute) one isolation makes.
MAX_CALLS = 48
#: The most seconds one isolation takes (the ci profile gives a case 60 s in all).
MAX_SECONDS = 20.0
#: The file name a failure folder keeps the culprit's graph under.
CULPRIT_FILE = "culprit.json"
#: ... and its inputs, the values the isolation fed it (``fusionspec run --inputs``).
CULPRIT_INPUTS = "culprit_inputs.npz"
#: How many failing elements an element-wise culprit is cut down to.
_KEEP = 8
#: Element-wise ops, whose tensors can be cut down to their failing elements.
_ELEMENTWISE = frozenset({*UNARY, *BINARY, "Reciprocal", "Round", "TypeCast", "Quantize",
                          "Dequantize", "ReLUBackward", "Clamp"})


@dataclass(frozen=True)
class Culprit:
    """The smallest failing piece found: its ops' kinds, the signature findings group by, a
    sentence, the piece's own failure, and the piece as oneDNN graph JSON."""

    kinds: tuple[str, ...]
    signature: str
    summary: str
    reason: str
    graph: Mapping[str, Any]
    fused_only: bool = False
    simplified: tuple[str, ...] = ()
    calls: int = 0
    inputs: Mapping[str, list[Any]] = field(default_factory=dict)

    def record(self) -> CulpritRecord:
        """The culprit as a verdict's details record it."""
        return CulpritRecord(kinds="->".join(self.kinds), signature=self.signature,
                             summary=self.summary, reason=self.reason, graph=dict(self.graph),
                             fused_only=self.fused_only, simplified=list(self.simplified),
                             calls=self.calls, inputs=dict(self.inputs),
                             benchdnn=f"benchdnn --graph --case={CULPRIT_FILE}")


class _Spent(Exception):
    """The isolation's budget is used up."""


class _Budget:
    def __init__(self, calls: int, seconds: float) -> None:
        self.left = calls
        self.used = 0
        self.deadline = time.monotonic() + seconds

    def call(self, fn: Callable[[], T]) -> T:
        if self.left <= 0 or time.monotonic() > self.deadline:
            raise _Spent
        self.left -= 1
        self.used += 1
        return fn()


def signature_of(ops: Sequence[Op], dtypes: Sequence[DataType]) -> str:
    """``GELU(mode=gelu_tanh) f32``: op kinds with their non-default string and boolean
    attributes, then the distinct dtypes; numbers are left out (one bug, one signature)."""
    parts = []
    for op in ops:
        schema = SCHEMAS.get(op.kind)
        shown = []
        for name, value in sorted(op.attrs.items()):
            if not isinstance(value, str | bool):
                continue
            spec = schema.attr_spec(name) if schema is not None else None
            if spec is not None and spec.default == value:
                continue
            shown.append(f"{name}={value}")
        parts.append(op.kind + (f"({', '.join(shown)})" if shown else ""))
    kinds = " -> ".join(parts)
    return f"{kinds} {','.join(dict.fromkeys(d.value for d in dtypes))}"


def _piece(ops: Sequence[Op]) -> Graph:
    """A graph of `ops` alone: their inputs from outside become its inputs."""
    return Graph(list(ops)).finalize()


def _dtypes(graph: Graph) -> list[DataType]:
    return [t.dtype for op in graph.ops for t in (*op.inputs, *op.outputs)]


def _fails(backend: Backend, device: Device, graph: Graph, inputs: Mapping[int, Array],
           budget: _Budget) -> tuple[bool, str, Mapping[int, Array]]:
    """Run `graph` on the backend; (whether an output is outside its bound, the comparison's
    reason, the backend's outputs). Raises _Skip when the backend does not run it."""
    parts = budget.call(lambda: list(backend.partition(graph)))
    values: dict[int, Any] = dict(inputs)
    for part in _ordered(parts):
        if not isinstance(part, Partition) or not part.supported:
            raise _Skip
        compiled = budget.call(partial(backend.compile, part, device))
        feed = {t.id: values[t.id] for t in part.inputs}
        produced = budget.call(partial(compiled.execute, feed))
        if not isinstance(produced, Mapping):
            raise _Skip
        values.update(produced)
    for _, result in against_reference(graph, inputs, values):
        if not result.passed:
            return True, result.reason, values
    return False, "", values


def against_reference(graph: Graph, inputs: Mapping[int, Array], values: Mapping[int, Any],
                      ) -> list[tuple[int, Comparison]]:
    """Each output of `graph` as a backend computed it (`values`, by tensor id) against the
    reference's on the same `inputs`, within the suite's error bound of each."""
    expected = execute(graph, inputs)
    bounds = output_bounds(graph, inputs)
    return [(t.id, compare(expected[t.id], values.get(t.id), bounds[t.id]))
            for t in graph.output_tensors]


def _ordered(parts: Sequence[Any]) -> list[Any]:
    produced = {t.id: i for i, p in enumerate(parts) if isinstance(p, Partition)
                for t in p.outputs}
    done: list[int] = []
    pending = list(range(len(parts)))
    while pending:
        ready = [i for i in pending if not isinstance(parts[i], Partition) or all(
            produced.get(t.id, i) in done or produced.get(t.id) == i
            for t in parts[i].inputs)] or pending[:1]
        done.extend(ready)
        pending = [i for i in pending if i not in ready]
    return [parts[i] for i in done]


class _Skip(Exception):
    """The backend does not run this piece (rejects it, marks it unsupported, fails)."""


def _try(backend: Backend, device: Device, graph: Graph, inputs: Mapping[int, Array],
         budget: _Budget) -> tuple[bool, str] | None:
    """Whether the piece fails, or None when the backend does not run it."""
    try:
        failed, reason, _ = _fails(backend, device, graph, inputs, budget)
    except _Spent:
        raise
    except (_Skip, FusionspecError, ValueError, TypeError, KeyError):
        return None
    except Exception:  # the backend's own failure on a piece it cannot take alone
        return None
    return failed, reason


def _inputs_for(graph: Graph, values: Mapping[int, Array]) -> dict[int, Array]:
    """The reference's values of `graph`'s inputs, in their declared storage dtypes."""
    return {t.id: cast_to(values[t.id], t.dtype) for t in graph.input_tensors}


def culprit_inputs(piece: Graph, values: Mapping[int, Array],
                   kept: Mapping[str, Sequence[Any]]) -> dict[int, Array]:
    """The inputs the isolation fed the culprit `piece`, rebuilt from the reference's values of
    the case's tensors (`values`, which the piece's tensor ids name) and from the few elements
    a cut-down culprit kept (`Culprit.inputs`): what ``culprit_inputs.npz`` holds."""
    found = {}
    for t in piece.input_tensors:
        small = kept.get(str(t.id))
        source = np.asarray([float(x) for x in small], dtype=np.float64) \
            if small is not None else np.asarray(values[t.id])
        found[t.id] = cast_to(source.reshape(t.shape) if t.shape else source, t.dtype)
    return found


def isolate(graph: Graph, backend: Backend, device: Device, values: Mapping[int, Array],
            tensor: int, parts: Sequence[Partition], *, max_calls: int = MAX_CALLS,
            max_seconds: float = MAX_SECONDS) -> Culprit | None:
    """The smallest piece of `graph` on which `backend` still fails (see the module docstring);
    `values` are the reference's values of every tensor, `tensor` the failing output, `parts`
    the backend's partitions. None when no piece fails alone within the budget."""
    budget = _Budget(max_calls, max_seconds)
    chain = ancestors(graph, tensor)
    found: tuple[list[Op], str, bool] | None = None
    try:
        for op in chain:
            piece = _piece([op])
            outcome = _try(backend, device, piece, _inputs_for(piece, values), budget)
            if outcome is not None and outcome[0]:
                found = ([op], outcome[1], False)
                break
        if found is None:
            found = _fused_run(graph, backend, device, values, tensor, parts, budget)
    except _Spent:
        pass
    if found is None:
        return None
    ops, reason, fused = found
    piece = _piece(ops)
    inputs = _inputs_for(piece, values)
    simplified: list[str] = []
    if not fused and len(ops) == 1:
        with contextlib.suppress(_Spent):
            piece, inputs, reason = _simplify(piece, inputs, reason, backend, device, budget,
                                              simplified)
    return _culprit(piece, inputs, reason, fused, tuple(simplified), budget.used)


def _fused_run(graph: Graph, backend: Backend, device: Device, values: Mapping[int, Array],
               tensor: int, parts: Sequence[Partition], budget: _Budget,
               ) -> tuple[list[Op], str, bool] | None:
    """The shortest run of consecutive ops of the failing output's partition that fails."""
    owner = next((p for p in parts if any(t.id == tensor for t in p.outputs)), None)
    if owner is None:
        return None
    order = [op for op in graph.ops if op.id in {o.id for o in owner.ops}]
    for length in range(2, len(order) + 1):
        for start in range(0, len(order) - length + 1):
            ops = order[start:start + length]
            try:
                piece = _piece(ops)
            except FusionspecError:
                continue
            outcome = _try(backend, device, piece, _inputs_for(piece, values), budget)
            if outcome is not None and outcome[0]:
                return ops, outcome[1], True
    return None


def _retyped(t: LogicalTensor, dtype: DataType | None = None,
             shape: tuple[int, ...] | None = None) -> LogicalTensor:
    return LogicalTensor(t.id, dtype or t.dtype, t.shape if shape is None else shape,
                         None, t.layout_type, t.property_type)


def _simplify(piece: Graph, inputs: dict[int, Array], reason: str, backend: Backend,
              device: Device, budget: _Budget, notes: list[str],
              ) -> tuple[Graph, dict[int, Array], str]:
    """Simplify a one-op culprit while it keeps failing: attributes, dtypes, shapes."""
    (op,) = piece.ops
    schema = SCHEMAS[op.kind]
    for name in list(op.attrs):
        spec = schema.attr_spec(name)
        if spec is None or spec.required or spec.default == op.attrs[name]:
            continue
        attrs = {k: v for k, v in op.attrs.items() if k != name}
        candidate = replace(op, attrs=attrs)
        try:
            graph = _piece([candidate])
        except FusionspecError:
            continue
        outcome = _try(backend, device, graph, inputs, budget)
        if outcome is not None and outcome[0]:
            piece, op, reason = graph, candidate, outcome[1]
            notes.append(f"{name} left to its default")
    narrow = [t for t in (*op.inputs, *op.outputs) if t.dtype in (DataType.bf16, DataType.f16)]
    if narrow:
        candidate = replace(op, inputs=tuple(_retyped(t, DataType.f32) if t in narrow else t
                                              for t in op.inputs),
                             outputs=tuple(_retyped(t, DataType.f32) if t in narrow else t
                                           for t in op.outputs))
        try:
            graph = _piece([candidate])
            wide = {t.id: cast_to(inputs[t.id], t.dtype) for t in graph.input_tensors}
            outcome = _try(backend, device, graph, wide, budget)
            if outcome is not None and outcome[0]:
                piece, op, inputs, reason = graph, candidate, wide, outcome[1]
                notes.append("f32 instead of bf16/f16")
        except FusionspecError:
            pass
    if op.kind in _ELEMENTWISE:
        piece, inputs, reason = _cut(piece, inputs, reason, backend, device, budget, notes)
    return piece, inputs, reason


def _cut(piece: Graph, inputs: dict[int, Array], reason: str, backend: Backend,
         device: Device, budget: _Budget, notes: list[str],
         ) -> tuple[Graph, dict[int, Array], str]:
    """An element-wise culprit on 1-D tensors of its failing elements only."""
    (op,) = piece.ops
    _, _, got = _fails(backend, device, piece, inputs, budget)
    out = op.outputs[0]
    expected = execute(piece, inputs)[out.id]
    bound = output_bounds(piece, inputs)[out.id]
    actual = np.asarray(got.get(out.id))
    if actual.shape != expected.shape:
        return piece, inputs, reason
    exp64, got64 = expected.astype(np.float64), actual.astype(np.float64)
    radius = np.broadcast_to(bound.radius, exp64.shape)
    with np.errstate(invalid="ignore"):
        bad = ~((np.abs(got64 - exp64) <= radius) | (np.isnan(exp64) & np.isnan(got64))
                | (exp64 == got64) | np.isinf(radius))
    where = np.flatnonzero(bad)[:_KEEP]
    if not where.size or where.size == exp64.size:
        return piece, inputs, reason
    shape = (int(where.size),)
    small_inputs: dict[int, Array] = {}
    new_inputs = []
    for t in op.inputs:
        full = np.broadcast_to(np.asarray(inputs[t.id]), exp64.shape)
        small_inputs[t.id] = np.ascontiguousarray(full.reshape(-1)[where])
        new_inputs.append(_retyped(t, shape=shape))
    candidate = replace(op, inputs=tuple(new_inputs),
                         outputs=tuple(_retyped(t, shape=shape) for t in op.outputs))
    if "auto_broadcast" in op.attrs or op.kind in BINARY:
        candidate = replace(candidate, attrs={**candidate.attrs, "auto_broadcast": "numpy"})
    try:
        graph = _piece([candidate])
    except FusionspecError:
        return piece, inputs, reason
    outcome = _try(backend, device, graph, small_inputs, budget)
    if outcome is not None and outcome[0]:
        notes.append(f"cut down to {where.size} failing element(s)")
        return graph, small_inputs, outcome[1]
    return piece, inputs, reason


def _culprit(piece: Graph, inputs: Mapping[int, Array], reason: str, fused: bool,
             simplified: tuple[str, ...], calls: int) -> Culprit:
    kinds = tuple(op.kind for op in piece.ops)
    signature = ("fused: " if fused else "") + signature_of(piece.ops, _dtypes(piece))
    where = "fused as one partition" if fused else "alone"
    summary = (f"{' -> '.join(kinds)} fails {where}, on the reference's values of its inputs"
               + (f" ({'; '.join(simplified)})" if simplified else ""))
    small = {str(k): np.asarray(v, dtype=np.float64).ravel().tolist()
             for k, v in inputs.items() if np.asarray(v).size <= _KEEP}
    return Culprit(kinds, signature, summary, reason, json.loads(dumps(piece, indent=None)),
                   fused, simplified, calls, {k: [_plain(x) for x in v]
                                              for k, v in small.items()})


def _plain(value: float) -> float | str:
    return value if np.isfinite(value) else str(value)
