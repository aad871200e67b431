"""The ill-formed cases of the graph-format method: what the format can write but a graph may
not say, each made so that the first check `Graph.finalize()` runs that fails is its rule.

=================================  =====================================  ===================
defect                             how                                    rule
=================================  =====================================  ===================
one op id on two ops               the last op takes the first op's id    graph.op_id.unique
one tensor id with two dtypes      a reader's copy of a tensor another    graph.tensor.
                                   op produces names another dtype        consistent
one tensor id with two shapes      ... another shape (one dim longer)     graph.tensor.
                                                                          consistent
an op reading its own output       an op whose output is like its first   graph.acyclic
                                   input reads that output instead
a cycle in a graph of more than    copies of the graph side by side past  graph.acyclic
256 ops                            256 ops (`format_large.copies`), the
                                   first with an op reading its own
                                   output
=================================  =====================================  ===================

The last one is a graph-size corner: past 256, CPython computes each count of ops afresh, so a
check comparing counts by identity goes wrong there only.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, replace

from fusionspec.spec.dtypes import DataType
from fusionspec.spec.errors import GraphError, GraphRule
from fusionspec.spec.graph import Graph, LogicalTensor, Op

from .format_large import MANY, copies
from .format_rewrites import share_tensor

__all__ = ["Defect", "DEFECTS", "ILL_FORMED"]

ILL_FORMED = "graph.ill-formed"
#: The dtype a second copy of a tensor names instead of its own.
_OTHER_DTYPE = {DataType.f32: DataType.bf16, DataType.bf16: DataType.f32,
                DataType.f16: DataType.f32, DataType.u8: DataType.s8, DataType.s8: DataType.u8,
                DataType.s32: DataType.f32}


@dataclass(frozen=True)
class Defect:
    """One defect: the item it shows, the rule it breaks, and how it is made in a graph
    (the graph and the op kind it touches, or None where it cannot be made)."""

    value: str
    rule: GraphRule
    make: Callable[[Graph], tuple[Graph, str] | None]

    def apply(self, graph: Graph) -> tuple[Graph, str] | None:
        """The defective graph and the op kind touched, if the reference rejects it with
        exactly this rule (None otherwise)."""
        made = self.make(graph)
        if made is None:
            return None
        try:
            made[0].finalize()
        except GraphError as exc:
            return made if exc.rule == self.rule else None
        return None


def _duplicate_id(graph: Graph) -> tuple[Graph, str] | None:
    if len(graph.ops) < 2:
        return None
    first, last = graph.ops[0], graph.ops[-1]
    twin = Op(first.id, last.kind, last.inputs, last.outputs, dict(last.attrs), last.name)
    return graph.replace_ops((*graph.ops[:-1], twin)), last.kind


def _inner_use(graph: Graph) -> tuple[Op, int, LogicalTensor] | None:
    """The first op port reading a tensor another op produces."""
    for op in graph.ops:
        for port, t in enumerate(op.inputs):
            if t.id in graph.producers:
                return op, port, t
    return None


def _two_dtypes(graph: Graph) -> tuple[Graph, str] | None:
    found = _inner_use(graph)
    if found is None or found[2].dtype not in _OTHER_DTYPE:
        return None
    op, port, t = found
    return share_tensor(graph, (op, port), replace(t, dtype=_OTHER_DTYPE[t.dtype])), op.kind


def _two_shapes(graph: Graph) -> tuple[Graph, str] | None:
    found = _inner_use(graph)
    if found is None or not found[2].shape:
        return None
    op, port, t = found
    shape = t.shape or ()
    return share_tensor(graph, (op, port), replace(t, shape=(*shape[:-1], shape[-1] + 1),
                                                   strides=None)), op.kind


def _own_output(graph: Graph) -> tuple[Graph, str] | None:
    for op in graph.ops:
        if op.inputs and op.outputs and (op.inputs[0].dtype, op.inputs[0].shape) == (
                op.outputs[0].dtype, op.outputs[0].shape):
            return share_tensor(graph, (op, 0), op.outputs[0]), op.kind
    return None


def _long_cycle(graph: Graph) -> tuple[Graph, str] | None:
    return _own_output(copies(graph, MANY))


DEFECTS: tuple[Defect, ...] = (
    Defect("one op id on two ops", GraphRule.op_id_unique, _duplicate_id),
    Defect("one tensor id with two dtypes", GraphRule.tensor_consistent, _two_dtypes),
    Defect("one tensor id with two shapes", GraphRule.tensor_consistent, _two_shapes),
    Defect("an op reading its own output", GraphRule.acyclic, _own_output),
    Defect("a cycle in a graph of more than 256 ops", GraphRule.acyclic, _long_cycle),
)
