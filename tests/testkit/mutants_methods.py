"""Planted broken backends that only the coverage methods catch: every validation rule under
every setting it reads, the side input types, the attribute sources and the operand ranks.

Each is the reference with one bug in a corner no schema item listed before the methods did:
an int8 kernel that takes s8 weights only, a reduction that refuses to be given no axes, a
binary op that broadcasts under ``auto_broadcast="none"``, a TypeCast whose type check only
looks at an f32 source, a lower-rank operand aligned at the channel axis, a multi-axis
reduction that forgets to renumber its axes, and one validator check skipped per kind of rule
x setting item (a per-channel scale count, a batch norm statistic's shape). They run as
``testkit.mutants_methods:<Class>`` from tests/conformance/test_mutation.py.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import Any, ClassVar

import numpy as np

from fusionspec.reference.backend import ReferenceBackend
from fusionspec.reference.execute import single_op_partitions
from fusionspec.reference.partitioner import partition
from fusionspec.spec.categories import BINARY, REDUCTION
from fusionspec.spec.dtypes import DataType
from fusionspec.spec.errors import GraphError, GraphRule
from fusionspec.spec.graph import Graph, Op, Partition
from fusionspec.spec.types import Array

from .mutants import Maker, _f32, _SwapsOps


class Int8KernelS8WeightsOnly(ReferenceBackend):
    """The fused int8 convolution and MatMul kernels take s8 weights only: with weights of
    another type the partition is split and run op by op, with the right values."""

    name = "int8-kernel-s8-weights-only"

    def partition(self, graph: Graph) -> list[Partition]:
        graph = graph.finalize()
        found: list[Partition] = []
        for part in partition(graph):
            weights = [op.inputs[0].dtype for op in part.ops if op.kind == "Dequantize"
                       and any(o.kind in ("Convolution", "ConvTranspose", "MatMul")
                               and o.inputs[1].id == op.outputs[0].id for o in part.ops)]
            if any(d is not DataType.s8 for d in weights):
                sub = Graph(list(part.ops), graph.engine_kind, graph.fpmath_mode)
                found += [Partition(p.id * 1000 + part.id, p.ops, p.inputs, p.outputs)
                          for p in single_op_partitions(sub)]
            else:
                found.append(part)
        return found


class RejectsReductionWithoutAxes(ReferenceBackend):
    """A reduction given neither an axes attribute nor an axes input is refused as an
    invalid graph (the empty set of axes read as a missing argument)."""

    name = "rejects-reduction-without-axes"

    def partition(self, graph: Graph) -> list[Partition]:
        for op in graph.ops:
            if op.kind in REDUCTION and len(op.inputs) < 2 and not op.attrs.get("axes"):
                raise GraphError(f"{op.kind} {op.id} has no axes", rule=GraphRule.attr_required,
                                 op_id=op.id, op_kind=op.kind)
        return partition(graph)


def _accepting(rule: str, kinds: frozenset[str], also: Callable[[Graph, int], bool] | None
               = None) -> Callable[[ReferenceBackend, Graph], list[Partition]]:
    """A `partition` that lets a graph through op by op where the reference rejects it by
    `rule` at an op of `kinds` (and `also` holds for the graph and that op's id)."""
    def partition_(self: ReferenceBackend, graph: Graph) -> list[Partition]:
        try:
            return partition(graph)
        except GraphError as exc:
            op = next((o for o in graph.ops if o.id == exc.op_id), None)
            if exc.rule != rule or op is None or op.kind not in kinds or (
                    also is not None and not also(graph, op.id)):
                raise
            return single_op_partitions(graph)
    return partition_


def _under_none(graph: Graph, op_id: int) -> bool:
    """Whether the op has ``auto_broadcast = none`` and its operands broadcast under numpy."""
    op = next(o for o in graph.ops if o.id == op_id)
    if op.attrs.get("auto_broadcast") != "none":
        return False
    loose = Op(op.id, op.kind, op.inputs, op.outputs, {**op.attrs, "auto_broadcast": "numpy"},
               op.name)
    try:
        graph.replace_ops([loose if o.id == op_id else o for o in graph.ops]).finalize()
    except GraphError:
        return False
    return True


class BroadcastsUnderNone(ReferenceBackend):
    """A binary op broadcasts its operands whatever ``auto_broadcast`` says: under "none",
    operands of different shapes are accepted (and broadcast) instead of refused."""

    name = "broadcasts-under-none"
    partition = _accepting(GraphRule.shape_infer, frozenset(BINARY), _under_none)


class TypeCastChecksF32Only(ReferenceBackend):
    """TypeCast's type check is written for an f32 source: a narrow-to-narrow cast (bf16 to
    f16, or to its own type) passes it."""

    name = "typecast-checks-f32-only"
    partition = _accepting("schema.dtype.typecast", frozenset({"TypeCast"}))


class PerChannelScalesUncounted(ReferenceBackend):
    """Quantize and Dequantize check that a per-channel op has several scales, not that it has
    one per channel of its axis."""

    name = "per-channel-scales-uncounted"
    partition = _accepting(GraphRule.shape_infer, frozenset({"Quantize", "Dequantize"}))


class BatchNormStatisticsUnchecked(ReferenceBackend):
    """Batch norm takes its per-channel statistics as they come: a gamma, beta, mean or
    variance of another length is accepted (and read out of bounds, op by op)."""

    name = "batch-norm-statistics-unchecked"
    partition = _accepting(GraphRule.shape_infer, frozenset({"BatchNormInference",
                                                             "BatchNormTrainingBackward"}))


def _aligned_at_channel(original: Callable[..., Any]) -> Callable[..., Any]:
    def binary(a: Array, b: Array, **attrs: Any) -> Array:
        x, y = np.asarray(a), np.asarray(b)
        if 0 < y.ndim < x.ndim - 1:
            # the bug: a lower-rank operand is lined up from the channel axis (axis 1), as a
            # channel-first kernel reads a per-channel bias, when its dims fit there
            shape = (1, *y.shape, *([1] * (x.ndim - 1 - y.ndim)))
            if all(s in (1, d) for s, d in zip(shape, x.shape)):
                y = y.reshape(shape)
        result: Array = original(x, y, **attrs)
        return result
    return binary


class AlignsLowerRankAtChannel(_SwapsOps):
    """A binary op lines a lower-rank operand up from the channel axis instead of from the
    last axis, wherever its dims fit there."""

    name = "aligns-lower-rank-at-channel"
    swaps: ClassVar[Mapping[str, Maker]] = {kind: _aligned_at_channel for kind in BINARY}


def _not_renumbered(original: Callable[..., Any]) -> Callable[..., Any]:
    def reduce(src: Array, axes_input: Array | None = None, *, axes: Sequence[int],
               keep_dims: bool) -> Array:
        given = [int(a) for a in (np.asarray(axes_input).reshape(-1) if axes_input is not None
                                  else axes)]
        x = np.asarray(src)
        if keep_dims or len(given) < 2:
            result: Array = original(src, axes_input, axes=axes, keep_dims=keep_dims)
            return result
        # the bug: the axes are reduced one at a time, each squeezed away at once, and the
        # later ones keep their numbers though the dims before them are gone
        for a in sorted(a % x.ndim for a in given):
            if a < x.ndim:
                x = original(x, None, axes=(a,), keep_dims=False)
        return _f32(x)
    return reduce


class ReduceAxesNotRenumbered(_SwapsOps):
    """A reduction over several axes without keep_dims reduces them one by one and forgets
    that each squeeze moves the axes after it."""

    name = "reduce-axes-not-renumbered"
    swaps: ClassVar[Mapping[str, Maker]] = {kind: _not_renumbered for kind in REDUCTION}
