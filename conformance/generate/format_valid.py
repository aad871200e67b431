"""The valid cases of the graph-format method: one catalog instance of a pattern written in
the ways the graph format allows (see `fusionspec.conformance.generate.graph_format`).

Each builder takes the pattern's instances and returns the rewritten graph with the items it
shows, or None where the pattern has nothing to rewrite that way. `valid_forms` lists them
all; a form is kept only where the reference still fuses what the rewrite must not change.
"""

from __future__ import annotations

import hashlib
from collections.abc import Callable
from dataclasses import dataclass, replace
from functools import partial

from fusionspec.spec.dtypes import DataType
from fusionspec.spec.graph import (
    UNKNOWN_DIM,
    AttrValue,
    Graph,
    LayoutType,
    LogicalTensor,
    Op,
    PropertyType,
)
from fusionspec.spec.opschemas import carries_shape
from fusionspec.spec.validate import topological_order

from .format_rewrites import (
    beside,
    declared_ports,
    graph_inputs,
    permuted_strides,
    renamed,
    renumber,
    reordered,
    retensored,
    reverse_order,
    shared_input,
    shared_port,
    shuffled_order,
    tensor_ids,
    with_property,
)

__all__ = ["Form", "FORMS", "valid_forms", "FAN_OUT_KIND", "format_features", "SHARING",
           "PROPERTY", "LAYOUT", "NUMBERING", "ORDER", "NAMES", "INSTANCES", "OUTPUTS", "SHAPES",
           "FPMATH"]

SHARING, PROPERTY, LAYOUT = "graph.tensor sharing", "graph.property_type", "graph.layout_type"
NUMBERING, ORDER, NAMES = "graph.numbering", "graph.op order", "graph.op names"
INSTANCES, OUTPUTS, SHAPES = "graph.instances", "graph.outputs", "graph.shapes"
FPMATH = "graph.fpmath_mode"
#: Ids a renumbered form starts from (op ids past what a signed 32-bit integer holds, tensor
#: ids past a signed 64-bit one: the format's ids are unsigned 64-bit) and the steps between
#: them (primes, so no id lands on a round number by chance).
_OP_BASE, _OP_STEP = 2**31 + 11, 7919
_TENSOR_BASE, _TENSOR_STEP = 2**63 + 5, 104729
#: What reads a partition output twice after the instance: an op every output type allows and
#: no pattern continues a chain through once it has two readers.
FAN_OUT_KIND = {DataType.u8: "Dequantize", DataType.s8: "Dequantize"}


@dataclass(frozen=True)
class Form:
    """One way of writing an instance: its name, the items it shows beyond those read off
    the graph (`format_features`), and how it is built from (longest plan's instance,
    shortest plan's instance) and a seed."""

    name: str
    items: tuple[tuple[str, str], ...]
    build: Callable[[Graph, Graph, int], Graph | None]
    #: whether the rewrite must leave the partitions as they were (up to renaming)
    invariant: bool = True


def _inner(graph: Graph, fn: Callable[[LogicalTensor], LogicalTensor]) -> Graph:
    """`graph` with `fn` applied to the tensors one op produces and another reads (none a
    graph output)."""
    outputs = {t.id for t in graph.output_tensors}
    return retensored(graph, {t.id: fn for op in graph.ops for t in op.outputs
                              if t.id in graph.consumers and t.id not in outputs})


def _shaped_by_input(graph: Graph) -> set[int]:
    """The outputs of an op reading a shape or axes input: the suite derives that input's
    values from the output shape as the graph gives it, so it stays declared."""
    return {t.id for op in graph.ops if any(carries_shape(op.kind, p) for p in
                                            range(len(op.inputs))) for t in op.outputs}


def _reverse(base: Graph, _short: Graph, _seed: int) -> Graph:
    # The inner tensors' shapes left to shape inference, as a framework writes a graph it has
    # not run yet.
    keep = _shaped_by_input(base)
    unknown = _inner(base, lambda t: t if t.id in keep else replace(t, shape=None,
                                                                    strides=None))
    return renamed(reordered(unknown, reverse_order(unknown)), lambda op: "op")


def _renumbered(base: Graph, _short: Graph, seed: int) -> Graph:
    order = topological_order(base.ops)
    # Ids run against the topological order, so neither ids nor positions tell producers from
    # consumers.
    ops = {op.id: _OP_BASE + _OP_STEP * (len(order) - k) for k, op in enumerate(order)}
    ids = tensor_ids(base)
    tensors = {t: _TENSOR_BASE + _TENSOR_STEP * (len(ids) - k) for k, t in enumerate(ids)}
    # The inner tensors of layout undef, strides unknown: what oneDNN writes for tensors it
    # has not laid out; and every other dim of those of rank 2 or more unknown, as a framework
    # writes a graph whose batch or spatial sizes it leaves to the library (a rank-1 shape
    # whose only dim is unknown reads back from the format as no shape at all).
    keep = {tensors[t] for t in _shaped_by_input(base)}
    moved = _inner(renumber(base, ops, tensors),
                   lambda t: replace(t, layout_type=LayoutType.undef, strides=None,
                                     shape=t.shape if t.id in keep else _partly_unknown(t.shape)))
    return declared_ports(reordered(moved, shuffled_order(moved, seed)))


def _partly_unknown(shape: tuple[int, ...] | None) -> tuple[int, ...] | None:
    """`shape` with its even-numbered dims unknown, where it has two dims or more."""
    if shape is None or len(shape) < 2:
        return shape
    return tuple(UNKNOWN_DIM if i % 2 == 0 else d for i, d in enumerate(shape))


def _marked(graph: Graph) -> Graph:
    """`graph` with its data inputs read on port 0 variable and the others (weights, biases,
    operands, statistics) constant."""
    changes: dict[int, Callable[[LogicalTensor], LogicalTensor]] = {}
    for t, uses in graph_inputs(graph):
        prop = PropertyType.variable if any(p == 0 for _, p in uses) else PropertyType.constant
        changes[t.id] = partial(with_property, prop=prop)
    return retensored(graph, changes)


def _properties(base: Graph, _short: Graph, _seed: int) -> Graph:
    """`_marked`, with every graph input's row-major strides written out, save one of rank 2
    or more stored with its last two axes swapped, and every other tensor of layout
    ``any``."""
    marked = _marked(base)
    changes: dict[int, Callable[[LogicalTensor], LogicalTensor]] = {
        t.id: _strided for t, _ in graph_inputs(marked)}
    permuted = next((t for t, _ in graph_inputs(marked) if t.shape and len(t.shape) >= 2),
                    None)
    if permuted is not None:
        changes[permuted.id] = permuted_strides
    # Every tensor an op produces of layout any, the graph outputs included: the backend
    # chooses (the arrays it hands back are logical either way).
    changes.update({t.id: _any_layout for op in marked.ops for t in op.outputs})
    return retensored(marked, changes)


def _any_layout(t: LogicalTensor) -> LogicalTensor:
    return replace(t, layout_type=LayoutType.any, strides=None)


def _strided(t: LogicalTensor) -> LogicalTensor:
    return replace(t, strides=t.dense_strides()) if t.shape_known else t


def _two(_base: Graph, short: Graph, _seed: int) -> Graph:
    # Constant weights in both: a cache of constants must tell the two apart.
    marked = _marked(short)
    return beside(marked, marked)


def _two_sharing(_base: Graph, short: Graph, _seed: int) -> Graph | None:
    first = next((t for t, _ in graph_inputs(short)), None)
    if first is None:
        return None
    return beside(short, short, {first.id: first.id})


def _port(base: Graph, _short: Graph, _seed: int) -> Graph | None:
    return shared_port(base)


def _input(base: Graph, _short: Graph, _seed: int) -> Graph | None:
    return shared_input(base)


def _fan_out(base: Graph, _short: Graph, _seed: int) -> Graph:
    last = topological_order(base.ops)[-1].outputs[0]
    kind = FAN_OUT_KIND.get(last.dtype, "ReLU")
    attrs: dict[str, AttrValue] = {"scales": (1.0,), "zps": (0,)} if kind == "Dequantize" else {}
    out_dtype = DataType.f32 if kind == "Dequantize" else last.dtype
    first_op = max(op.id for op in base.ops) + 1
    first_tensor = max(tensor_ids(base)) + 1
    readers = [Op(first_op + i, kind, (last,),
                  (LogicalTensor(first_tensor + i, out_dtype, last.shape),), attrs)
               for i in range(2)]
    return base.replace_ops((*base.ops, *readers))


FORMS: tuple[Form, ...] = (
    Form("reverse order, one name", ((ORDER, "reverse topological"),
                                     (NAMES, "one name for every op")), _reverse),
    Form("renumbered, shuffled", ((ORDER, "shuffled"), (NUMBERING, "sparse ids"),
                                  (NUMBERING, "ids above 2^31"),
                                  (NUMBERING, "ids above 2^63"),
                                  (NUMBERING, "ids against topological order"),
                                  (OUTPUTS, "input and output ports declared")), _renumbered),
    Form("properties and layouts", (), _properties),
    Form("one tensor on two ports", ((SHARING, "one tensor on two ports of one op"),),
         _port, invariant=False),
    Form("one input read by two ops", ((SHARING, "one graph input read by two ops of one "
                                                 "partition"),), _input, invariant=False),
    Form("two instances", ((INSTANCES, "two instances of the pattern"),), _two, False),
    Form("two instances sharing an input", ((INSTANCES, "two instances sharing an input"),),
         _two_sharing, False),
    Form("fan-out of the partition output", ((OUTPUTS, "a partition output read by two "
                                                       "ops"),), _fan_out, False),
)


def valid_forms(base: Graph, short: Graph, pattern: str) -> list[tuple[Form, Graph]]:
    """Every form of `FORMS` that can be built from `base` (the longest plan's instance) and
    `short` (the shortest), in order."""
    seed = int.from_bytes(hashlib.sha256(pattern.encode()).digest()[:4], "big")
    found = []
    for form in FORMS:
        graph = form.build(base, short, seed)
        if graph is not None:
            found.append((form, graph))
    return found


def format_features(graph: Graph) -> dict[str, str]:
    """The items any graph shows by its settings and tensors alone: its fpmath_mode, the
    tensors' properties and layouts, shapes left unknown (whole, or some dims), and whether
    tensor ids and op ids overlap."""
    tensors = [t for op in graph.ops for t in (*op.inputs, *op.outputs)]
    props = {t.property_type.value for t in tensors}
    layouts = {_layout(t) for t in tensors}
    found = {PROPERTY: ",".join(sorted(props)), LAYOUT: ",".join(sorted(layouts))}
    found[FPMATH] = graph.fpmath_mode
    shapes = {"inner shapes left to inference" if t.shape is None
              else "inner dims partly unknown (-1)" for t in tensors if not t.shape_known}
    if shapes:
        found[SHAPES] = ",".join(sorted(shapes))
    if {t.id for t in tensors} & {op.id for op in graph.ops}:
        found[NUMBERING] = "tensor ids overlapping op ids"
    return found


def _layout(t: LogicalTensor) -> str:
    if t.layout_type is not LayoutType.strided:
        return t.layout_type.value
    if t.strides is None:
        return "strided without strides"
    if t.shape_known and t.strides == t.dense_strides():
        return "strided with row-major strides"
    return "strided with permuted strides"
