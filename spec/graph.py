"""The graph data model: logical tensors, ops, graphs and partitions.

It mirrors oneDNN's programming model so that a user of the real API feels at home (the
tensors and ops themselves are defined in `fusionspec.spec.ir` and exported here too):

>>> from fusionspec.spec import DataType, Graph, LogicalTensor, Op
>>> x = LogicalTensor(0, DataType.f32, (2, 8))
>>> y = LogicalTensor(1, DataType.f32, (2, 8))
>>> g = Graph([Op(0, "ReLU", inputs=(x,), outputs=(y,))]).finalize()
>>> [t.id for t in g.input_tensors], [t.id for t in g.output_tensors]
([0], [1])

Everything is immutable; `Graph.finalize()` returns a new, validated graph with the schema
defaults filled into every op (see `fusionspec.spec.validate`).
"""

from __future__ import annotations

import weakref
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from functools import cached_property
from types import MappingProxyType

from .ir import (
    UNKNOWN_DIM,
    AttrValue,
    LayoutType,
    LogicalTensor,
    Op,
    PropertyType,
    ops_in_order,
    row_major_strides,
)
from .opschemas import SCHEMAS
from .validate import finalize_ops

__all__ = [
    "AttrValue",
    "LayoutType",
    "PropertyType",
    "LogicalTensor",
    "Op",
    "Graph",
    "Partition",
    "UNKNOWN_DIM",
    "row_major_strides",
    "ops_in_order",
]


@dataclass(frozen=True, eq=False)
class Graph:
    """A oneDNN graph: its ops plus the graph-level settings of the JSON format.

    `format_version`, `fpmath_mode_apply_to_int`, `input_ports` and `output_ports` are carried only
    so that a JSON file dumps back without loss.
    """

    ops: Sequence[Op]
    engine_kind: str = "cpu"
    fpmath_mode: str = "strict"
    fpmath_mode_apply_to_int: bool | None = None
    input_ports: tuple[int, ...] | None = None
    output_ports: tuple[int, ...] | None = None
    format_version: str = "3.0.0"
    finalized: bool = False

    def __post_init__(self) -> None:
        object.__setattr__(self, "ops", tuple(self.ops))
        for name in ("input_ports", "output_ports"):
            value = getattr(self, name)
            if value is not None:
                object.__setattr__(self, name, tuple(value))

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, Graph):
            return NotImplemented
        return self._key() == other._key()

    def __hash__(self) -> int:
        return hash(tuple(op.id for op in self.ops))

    def _key(self) -> tuple[object, ...]:
        return (self.ops, self.engine_kind, self.fpmath_mode, self.fpmath_mode_apply_to_int,
                self.input_ports, self.output_ports, self.format_version)

    def finalize(self) -> Graph:
        """Validate against the op schemas and return the graph with defaults filled in.

        Raises a `GraphError` subclass naming the op, the port or attribute and the rule.
        The same graph object finalized again gives the same finalized graph at once.
        """
        key = id(self)
        known = _FINALIZED.get(key)
        if known is not None and known[0]() is self:
            return known[1]
        ops = finalize_ops(self.ops, engine_kind=self.engine_kind, fpmath_mode=self.fpmath_mode)
        done = self.replace_ops(ops, finalized=True)
        if all(op.kind in SCHEMAS for op in self.ops):  # an op outside them warns each time
            _FINALIZED[key] = (weakref.ref(self, lambda _: _forget(key)), done)
        return done

    # -- queries (valid on any graph; meaningful once ids are unique) -------------------------

    @cached_property
    def op_by_id(self) -> Mapping[int, Op]:
        return MappingProxyType({op.id: op for op in self.ops})

    @cached_property
    def tensors(self) -> Mapping[int, LogicalTensor]:
        """Every logical tensor by id; where a tensor appears several times, the producer's view
        wins (then the first consumer's)."""
        found: dict[int, LogicalTensor] = {}
        for op in self.ops:
            for t in op.inputs:
                found.setdefault(t.id, t)
        for op in self.ops:
            for t in op.outputs:
                found[t.id] = t
        return MappingProxyType(found)

    @cached_property
    def producers(self) -> Mapping[int, tuple[Op, int]]:
        """Tensor id -> (producing op, output port)."""
        return MappingProxyType({t.id: (op, port) for op in self.ops
                                 for port, t in enumerate(op.outputs)})

    @cached_property
    def consumers(self) -> Mapping[int, tuple[tuple[Op, int], ...]]:
        """Tensor id -> ((consuming op, input port), ...) in op order."""
        found: dict[int, list[tuple[Op, int]]] = {}
        for op in self.ops:
            for port, t in enumerate(op.inputs):
                found.setdefault(t.id, []).append((op, port))
        return MappingProxyType({k: tuple(v) for k, v in found.items()})

    @cached_property
    def input_tensors(self) -> tuple[LogicalTensor, ...]:
        """Tensors that no op produces, in order of first use."""
        seen: dict[int, LogicalTensor] = {}
        for op in self.ops:
            for t in op.inputs:
                if t.id not in self.producers and t.id not in seen:
                    seen[t.id] = t
        return tuple(seen.values())

    @cached_property
    def output_tensors(self) -> tuple[LogicalTensor, ...]:
        """Tensors that no op consumes, in op order."""
        return tuple(t for op in self.ops for t in op.outputs if t.id not in self.consumers)

    def successors(self, op: Op) -> tuple[Op, ...]:
        seen: dict[int, Op] = {}
        for t in op.outputs:
            for consumer, _ in self.consumers.get(t.id, ()):
                seen.setdefault(consumer.id, consumer)
        return tuple(seen.values())

    def predecessors(self, op: Op) -> tuple[Op, ...]:
        seen: dict[int, Op] = {}
        for t in op.inputs:
            if t.id in self.producers:
                producer = self.producers[t.id][0]
                seen.setdefault(producer.id, producer)
        return tuple(seen.values())

    def replace_ops(self, ops: Iterable[Op], *, finalized: bool = False) -> Graph:
        """A copy of this graph with other ops and the same graph-level settings."""
        return Graph(tuple(ops), self.engine_kind, self.fpmath_mode,
                     self.fpmath_mode_apply_to_int, self.input_ports, self.output_ports,
                     self.format_version, finalized)


#: The finalized form of each graph finalized so far, by the graph's identity, kept while the
#: graph lives: a graph is immutable, and the suite finalizes the same graph object again and
#: again (to plan its values, fill it, list what it covers).
_FINALIZED: dict[int, tuple[weakref.ref[Graph], Graph]] = {}


def _forget(key: int) -> None:
    _FINALIZED.pop(key, None)


@dataclass(frozen=True, eq=False)
class Partition:
    """A set of ops a backend compiles and runs as one unit.

    `id` numbers the partition within its graph; `ops` are its ops; `inputs`/`outputs` are its
    external tensors in a deterministic order (an input is produced outside the partition or is
    a graph input; an output is read outside it or is a graph output). `pattern` is the catalog
    id of the pattern the partition instantiates, or None for a single-op partition.

    `supported` is oneDNN's ``is_supported()``: False marks a partition its backend will not
    compile (the reference marks an op it cannot execute so). A backend author leaves it True
    for every partition the backend runs; the suite grades a partition marked False in a case
    that should run as ``rejected-valid``, and never compiles it.
    """

    id: int
    ops: Sequence[Op]
    inputs: Sequence[LogicalTensor]
    outputs: Sequence[LogicalTensor]
    pattern: str | None = None
    supported: bool = True

    def __post_init__(self) -> None:
        for name in ("ops", "inputs", "outputs"):
            object.__setattr__(self, name, tuple(getattr(self, name)))

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, Partition):
            return NotImplemented
        return (self.id, self.ops, self.inputs, self.outputs, self.pattern, self.supported) == (
            other.id, other.ops, other.inputs, other.outputs, other.pattern, other.supported)

    def __hash__(self) -> int:
        return hash((self.id, tuple(op.id for op in self.ops)))

    @property
    def op_ids(self) -> tuple[int, ...]:
        return tuple(op.id for op in self.ops)

    def as_graph(self, template: Graph | None = None) -> Graph:
        """The partition's ops as a graph of their own (with `template`'s settings)."""
        if template is None:
            return Graph(self.ops)
        return template.replace_ops(self.ops, finalized=template.finalized)
