"""Planted broken backends that only the graph-format method's cases catch.

Each is the reference with one bug behind something the graph format can say that no case
said before the method drew it: ops listed consumers first, ids past 2^31, one name on
several ops, constant tensors, a graph input stored with permuted strides, two instances of a
pattern in one graph, one tensor on two ports of an op, a partition output read by two alike
ops, and the graph rules no case broke (a tensor id with two dtypes, two ops with one id).
Each docstring says which item catches it; each was run against the suite without the
method's cases and passed it. tests/conformance/test_mutation.py runs them as
``testkit.mutants_format:<Class>``.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import ClassVar

import numpy as np
from numpy.lib.stride_tricks import as_strided

from fusionspec.backend import CompiledPartition, Device
from fusionspec.reference import execute
from fusionspec.reference.backend import ReferenceBackend
from fusionspec.reference.execute import single_op_partitions
from fusionspec.reference.partitioner import external_tensors, partition
from fusionspec.spec.errors import GraphError, GraphRule
from fusionspec.spec.graph import Graph, LogicalTensor, Op, Partition, PropertyType
from fusionspec.spec.types import Array

from .mutants import _Compiled


class ExpectsTopologicalOrder(ReferenceBackend):
    """Lists a partition's inputs and outputs by one pass over its ops in the order the graph
    gave them, taking a tensor read before any op of the partition wrote it for an input: right
    while producers come first, wrong once ops come consumers first (``graph.op order``)."""

    name = "expects-topological-order"

    def partition(self, graph: Graph) -> list[Partition]:
        position = {op.id: i for i, op in enumerate(graph.ops)}
        result = []
        for p in partition(graph):
            written: set[int] = set()
            inputs: dict[int, LogicalTensor] = {}
            for op in sorted(p.ops, key=lambda o: position[o.id]):
                for t in op.inputs:
                    if t.id not in written:
                        inputs.setdefault(t.id, t)
                written |= {t.id for t in op.outputs}
            outputs = tuple(t for t in p.outputs if t.id not in inputs)
            result.append(Partition(p.id, p.ops, tuple(inputs.values()), outputs, p.pattern,
                                    p.supported))
        return result


def _int32(tid: int) -> int:
    return (tid + 2**31) % 2**32 - 2**31


class TensorIdsAsInt32(ReferenceBackend):
    """Keeps tensor ids in a signed 32-bit field: its outputs come back under the wrapped
    ids, so an id past 2^31 - 1 is lost (``graph.numbering`` = ids above 2^31)."""

    name = "tensor-ids-as-int32"

    def compile(self, part: Partition, device: Device) -> CompiledPartition:
        def run(inputs: Mapping[int, Array]) -> dict[int, Array]:
            return {_int32(k): v for k, v in execute(part, inputs).items()}
        return _Compiled(part, run)


class OpsByName(ReferenceBackend):
    """Keeps a graph's ops in a table by name, so of several ops with one name only the last
    is partitioned; the names are unique in every graph but those that share one
    (``graph.op names``)."""

    name = "ops-by-name"

    def partition(self, graph: Graph) -> list[Partition]:
        kept = {op.id for op in {op.name: op for op in graph.ops}.values()}
        result: list[Partition] = []
        for p in partition(graph):
            ops = tuple(op for op in p.ops if op.id in kept)
            if ops:
                result.append(Partition(len(result), ops, p.inputs, p.outputs, p.pattern,
                                        p.supported))
        return result


class ConstantCacheByShape(ReferenceBackend):
    """Caches constant inputs (weights a model does not change between runs) keyed by their
    dtype and shape rather than their id: a second partition with a constant of the same
    description reads the first one's values (``graph.property_type`` = constant, in two
    instances of a pattern)."""

    name = "constant-cache-by-shape"
    cache: ClassVar[dict[tuple[str, tuple[int, ...]], Array]] = {}

    def compile(self, part: Partition, device: Device) -> CompiledPartition:
        constants = [t for t in part.inputs if t.property_type is PropertyType.constant]
        if not constants:
            return super().compile(part, device)

        def run(inputs: Mapping[int, Array]) -> dict[int, Array]:
            given = dict(inputs)
            for t in constants:
                key = (t.dtype.value, tuple(t.shape or ()))
                given[t.id] = self.cache.setdefault(key, np.array(inputs[t.id]))
            return execute(part, given)
        return _Compiled(part, run)


class ReadsInputsThroughStrides(ReferenceBackend):
    """Reads an input whose strides are given through those strides from the array's
    row-major memory, as if the array were the buffer itself: right for row-major strides,
    wrong for a graph input stored with permuted strides (``graph.layout_type``)."""

    name = "reads-inputs-through-strides"

    def compile(self, part: Partition, device: Device) -> CompiledPartition:
        def run(inputs: Mapping[int, Array]) -> dict[int, Array]:
            given = dict(inputs)
            for t in part.inputs:
                if t.strides is not None and t.shape and t.strides != t.dense_strides():
                    flat = np.ascontiguousarray(inputs[t.id]).reshape(-1)
                    step = flat.itemsize
                    given[t.id] = np.array(as_strided(flat, shape=t.shape,
                                                      strides=[s * step for s in t.strides]))
            return execute(part, given)
        return _Compiled(part, run)


class FusesInstancesSharingAnInput(ReferenceBackend):
    """Batches two partitions of one pattern that read the same tensor into one partition
    (``graph.instances`` = two instances sharing an input)."""

    name = "fuses-instances-sharing-an-input"

    def partition(self, graph: Graph) -> list[Partition]:
        graph = graph.finalize()
        parts = partition(graph)
        result: list[Partition] = []
        merged: set[int] = set()
        for i, p in enumerate(parts):
            if i in merged:
                continue
            ops = list(p.ops)
            for j in range(i + 1, len(parts)):
                q = parts[j]
                if (p.pattern is not None and q.pattern == p.pattern and j not in merged
                        and {t.id for t in p.inputs} & {t.id for t in q.inputs}):
                    ops += q.ops
                    merged.add(j)
            inputs, outputs = external_tensors(graph, ops)
            result.append(Partition(len(result), tuple(ops), inputs, outputs, p.pattern))
        return result


class SharedTensorBoundOnce(ReferenceBackend):
    """Binds each input tensor of a partition to the first port that reads it; an op reading
    one tensor on two ports finds its second argument unset, zero-filled (``graph.tensor
    sharing`` = one tensor on two ports of one op)."""

    name = "shared-tensor-bound-once"

    def compile(self, part: Partition, device: Device) -> CompiledPartition:
        fresh = max(t.id for op in part.ops for t in (*op.inputs, *op.outputs)) + 1
        zeros: list[tuple[LogicalTensor, int]] = []  # (the unset argument, the tensor it names)
        ops = []
        for op in part.ops:
            seen: set[int] = set()
            inputs = []
            for t in op.inputs:
                if t.id in seen:
                    unset = LogicalTensor(fresh + len(zeros), t.dtype, t.shape)
                    zeros.append((unset, t.id))
                    t = unset
                seen.add(t.id)
                inputs.append(t)
            ops.append(Op(op.id, op.kind, tuple(inputs), op.outputs, dict(op.attrs), op.name))
        if not zeros:
            return super().compile(part, device)
        inner = Partition(part.id, tuple(ops), (*part.inputs, *(t for t, _ in zeros)),
                          part.outputs, part.pattern)

        def run(inputs: Mapping[int, Array]) -> dict[int, Array]:
            given = dict(inputs)
            for unset, named in zeros:
                given[unset.id] = np.zeros_like(inputs[named])
            return execute(inner, given)
        return _Compiled(part, run)


class MergesAlikeReaders(ReferenceBackend):
    """Folds two alike ops reading one partition output (same kind, same attributes) into
    one, then fuses it into the partition as if nothing else read the output: both readers
    end up inside it (``graph.outputs`` = a partition output read by two ops)."""

    name = "merges-alike-readers"

    def partition(self, graph: Graph) -> list[Partition]:
        graph = graph.finalize()
        parts = partition(graph)
        owner = {op.id: i for i, p in enumerate(parts) for op in p.ops}
        absorbed: dict[int, list[Op]] = {}
        for i, p in enumerate(parts):
            if p.pattern is None:
                continue
            for t in p.outputs:
                readers = [op for op, _ in graph.consumers.get(t.id, ())]
                alike = len(readers) == 2 and len({(op.kind, tuple(sorted(
                    op.attrs.items()))) for op in readers}) == 1
                if alike and all(len(parts[owner[op.id]].ops) == 1 for op in readers):
                    absorbed[i] = readers
        taken = {op.id for ops in absorbed.values() for op in ops}
        result: list[Partition] = []
        for i, p in enumerate(parts):
            if len(p.ops) == 1 and p.ops[0].id in taken:
                continue
            ops = (*p.ops, *absorbed.get(i, ()))
            inputs, outputs = external_tensors(graph, ops)
            result.append(Partition(len(result), ops, inputs, outputs, p.pattern))
        return result


class AcceptsTensorWithTwoDtypes(ReferenceBackend):
    """Takes each tensor id's dtype from its first appearance and never compares the others,
    so a graph naming one tensor with two dtypes is accepted (``graph.ill-formed``)."""

    name = "accepts-tensor-with-two-dtypes"

    def partition(self, graph: Graph) -> list[Partition]:
        try:
            return partition(graph)
        except GraphError as exc:
            if exc.rule != GraphRule.tensor_consistent:
                raise
            return single_op_partitions(graph)


class AcceptsDuplicateOpIds(ReferenceBackend):
    """Never checks that op ids are unique: a graph with two ops of one id is accepted and
    run op by op (``graph.ill-formed``)."""

    name = "accepts-duplicate-op-ids"

    def partition(self, graph: Graph) -> list[Partition]:
        try:
            return partition(graph)
        except GraphError as exc:
            if exc.rule != GraphRule.op_id_unique:
                raise
            return single_op_partitions(graph)
