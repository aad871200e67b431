"""The same graph written another way: rewrites of a graph that the graph format allows and
that must not change its partitions or its values (renumbering, op order, op names, tensor
properties and layouts), and the joins that put more tensors or instances into one graph.

Each rewrite takes a graph and returns a new one; none validates (the cases do, through the
reference). `fusionspec.conformance.generate.graph_format` builds its cases from them, and the
metamorphic tests compare a graph with its rewritten forms.
"""

from __future__ import annotations

import random
from collections.abc import Callable, Mapping, Sequence
from dataclasses import replace

from fusionspec.spec.graph import Graph, LayoutType, LogicalTensor, Op, PropertyType
from fusionspec.spec.opschemas import carries_shape
from fusionspec.spec.validate import topological_order

__all__ = ["tensor_ids", "map_tensors", "renumber", "reordered", "renamed", "reverse_order",
           "shuffled_order", "graph_inputs", "retensored", "share_tensor", "shared_port",
           "shared_input", "beside", "declared_ports", "permuted_strides", "with_property"]


def tensor_ids(graph: Graph) -> list[int]:
    """Every tensor id of `graph`, in order of first appearance (op by op, inputs first)."""
    return list(dict.fromkeys(t.id for op in graph.ops for t in (*op.inputs, *op.outputs)))


def map_tensors(graph: Graph, fn: Callable[[LogicalTensor], LogicalTensor]) -> Graph:
    """`graph` with `fn` applied to every tensor on every port (graph settings kept)."""
    return graph.replace_ops(Op(op.id, op.kind, tuple(map(fn, op.inputs)),
                                tuple(map(fn, op.outputs)), dict(op.attrs), op.name)
                             for op in graph.ops)


def renumber(graph: Graph, op_ids: Mapping[int, int], tensors: Mapping[int, int]) -> Graph:
    """`graph` with op and tensor ids mapped (ids missing from a map are kept); op names keep
    what they were, so renumbering changes nothing else."""
    ops = [Op(op_ids.get(op.id, op.id), op.kind,
              tuple(replace(t, id=tensors.get(t.id, t.id)) for t in op.inputs),
              tuple(replace(t, id=tensors.get(t.id, t.id)) for t in op.outputs),
              dict(op.attrs), op.name) for op in graph.ops]

    def ports(ids: tuple[int, ...] | None) -> tuple[int, ...] | None:
        return None if ids is None else tuple(tensors.get(i, i) for i in ids)
    return Graph(ops, graph.engine_kind, graph.fpmath_mode, graph.fpmath_mode_apply_to_int,
                 ports(graph.input_ports), ports(graph.output_ports), graph.format_version)


def reordered(graph: Graph, order: Sequence[int]) -> Graph:
    """`graph` with its ops listed in `order` (positions into `graph.ops`)."""
    return graph.replace_ops(graph.ops[i] for i in order)


def renamed(graph: Graph, names: Callable[[Op], str]) -> Graph:
    """`graph` with every op named by `names`."""
    return graph.replace_ops(Op(op.id, op.kind, op.inputs, op.outputs, dict(op.attrs),
                                names(op)) for op in graph.ops)


def reverse_order(graph: Graph) -> list[int]:
    """Positions of `graph`'s ops in reverse topological order (every consumer before its
    producers)."""
    position = {op.id: i for i, op in enumerate(graph.ops)}
    return [position[op.id] for op in reversed(topological_order(graph.ops))]


def shuffled_order(graph: Graph, seed: int) -> list[int]:
    """A seeded permutation of `graph`'s op positions that is not a topological order (where
    the graph has an edge at all): some consumer comes before its producer."""
    rng = random.Random(seed)
    order = list(range(len(graph.ops)))
    for _ in range(64):
        rng.shuffle(order)
        if _breaks_topology(graph, order):
            return order
    return reverse_order(graph)


def _breaks_topology(graph: Graph, order: Sequence[int]) -> bool:
    at = {graph.ops[i].id: k for k, i in enumerate(order)}
    return any(at[pred.id] > at[op.id] for op in graph.ops for pred in graph.predecessors(op))


def graph_inputs(graph: Graph) -> list[tuple[LogicalTensor, tuple[tuple[Op, int], ...]]]:
    """The graph inputs that carry data (no shape or axes list) with their (op, port) uses."""
    return [(t, graph.consumers[t.id]) for t in graph.input_tensors
            if not any(carries_shape(op.kind, port) for op, port in graph.consumers[t.id])]


def retensored(graph: Graph, changes: Mapping[int, Callable[[LogicalTensor], LogicalTensor]],
               ) -> Graph:
    """`graph` with the tensors whose ids `changes` names rewritten everywhere they appear
    (so one tensor id keeps one description)."""
    return map_tensors(graph, lambda t: changes[t.id](t) if t.id in changes else t)


def share_tensor(graph: Graph, use: tuple[Op, int], shared: LogicalTensor) -> Graph:
    """`graph` with the input port `use` (op, port) reading `shared` instead."""
    op, port = use
    inputs = (*op.inputs[:port], shared, *op.inputs[port + 1:])
    new = Op(op.id, op.kind, inputs, op.outputs, dict(op.attrs), op.name)
    return graph.replace_ops(new if o.id == op.id else o for o in graph.ops)


def _alike(a: LogicalTensor, b: LogicalTensor) -> bool:
    return a.id != b.id and a.dtype == b.dtype and a.shape == b.shape


def shared_port(graph: Graph) -> Graph | None:
    """`graph` with one op reading one graph input on two of its ports: the first op with two
    data inputs of one dtype and shape, each read by it alone (None where there is none)."""
    alone = {t.id for t, uses in graph_inputs(graph) if len(uses) == 1}
    for op in graph.ops:
        ports = [p for p, t in enumerate(op.inputs) if t.id in alone]
        for i, p in enumerate(ports):
            for q in ports[i + 1:]:
                if _alike(op.inputs[p], op.inputs[q]):
                    return share_tensor(graph, (op, q), op.inputs[p])
    return None


def shared_input(graph: Graph) -> Graph | None:
    """`graph` with one graph input read by two ops: the later of two data inputs of one dtype
    and shape, read by different ops, replaced by the earlier (None where there is none)."""
    found = [(t, uses[0]) for t, uses in graph_inputs(graph) if len(uses) == 1]
    for i, (a, (op_a, _)) in enumerate(found):
        for b, use in found[i + 1:]:
            if _alike(a, b) and use[0].id != op_a.id:
                return share_tensor(graph, use, a)
    return None


def beside(first: Graph, second: Graph, shared: Mapping[int, int] | None = None) -> Graph:
    """Both graphs in one, the second's ids moved past the first's; `shared` maps tensor ids
    of `second` to those of `first` it reads instead (graph inputs both have)."""
    op_base = max(op.id for op in first.ops) + 1
    tensor_base = max(tensor_ids(first)) + 1
    shared = shared or {}
    moved = renumber(second, {op.id: op.id + op_base for op in second.ops},
                     {t: shared.get(t, t + tensor_base) for t in tensor_ids(second)})
    moved = renamed(moved, lambda op: f"{op.kind.lower()}_{op.id}")
    return first.replace_ops((*first.ops, *moved.ops))


def declared_ports(graph: Graph) -> Graph:
    """`graph` with its input and output ports written out (as benchdnn's files do)."""
    return Graph(graph.ops, graph.engine_kind, graph.fpmath_mode, graph.fpmath_mode_apply_to_int,
                 tuple(t.id for t in graph.input_tensors),
                 tuple(t.id for t in graph.output_tensors), graph.format_version)


def permuted_strides(t: LogicalTensor) -> LogicalTensor:
    """`t` stored with its last two axes swapped in memory: dense strides, not row-major."""
    shape = t.shape or ()
    order = [*range(len(shape) - 2), len(shape) - 1, len(shape) - 2]
    stride, found = 1, [0] * len(shape)
    for axis in reversed(order):
        found[axis] = stride
        stride *= max(shape[axis], 1)
    return replace(t, strides=tuple(found), layout_type=LayoutType.strided)


def with_property(t: LogicalTensor, prop: PropertyType) -> LogicalTensor:
    return replace(t, property_type=prop)
