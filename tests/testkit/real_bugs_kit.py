"""Building blocks of the real-bug corpus (tests/testkit/real_bugs.py): a reference backend
whose kernels can be replaced op by op, and a partitioner hook that lets an invalid graph
through where one validation check was skipped.

`OpKernels` runs a partition op by op like the reference executor, but asks `kernel` first for
each op: a bug re-created there sees the op itself (its attributes as written, before the
schema's defaults are filled in, and the declared dtypes of its tensors), which is what the
kernels of a real backend see.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import Any

import numpy as np

from fusionspec.backend import Device
from fusionspec.reference.backend import ReferenceBackend, ReferenceCompiledPartition
from fusionspec.reference.dtypes import cast_to, widen
from fusionspec.reference.execute import partition_order, read_input, run_op, single_op_partitions
from fusionspec.reference.partitioner import partition
from fusionspec.spec.errors import GraphError
from fusionspec.spec.graph import Graph, Op, Partition
from fusionspec.spec.types import Array
from fusionspec.spec.validate import validate_op

__all__ = ["OpKernels", "accept_where", "attr", "attrs", "f32", "reference_groups",
           "with_attrs"]


def reference_groups(graph: Graph) -> tuple[Graph, list[Partition], dict[int, Partition],
                                           dict[int, list[Op]]]:
    """The finalized `graph`, the reference's partitions of it, the partition owning each op
    id, and each partition's ops as a list keyed by partition id (the groups a wrong fusion
    decision merges)."""
    graph = graph.finalize()
    parts = partition(graph)
    owner = {op.id: p for p in parts for op in p.ops}
    return graph, parts, owner, {p.id: list(p.ops) for p in parts}


def f32(values: Any) -> Array:
    return np.asarray(values).astype(np.float32)


def with_attrs(op: Op, **attrs: Any) -> Op:
    """`op` with some attributes replaced (what a kernel that misreads them computes)."""
    return Op(op.id, op.kind, op.inputs, op.outputs, {**op.attrs, **attrs}, op.name)


def attr(op: Op, key: str, default: Any = None) -> Any:
    """An attribute of `op` as the graph wrote it (the caller knows its type)."""
    return op.attrs.get(key, default)


def attrs(op: Op) -> dict[str, Any]:
    """Every attribute of `op`, the schema's defaults filled in."""
    return dict(validate_op(op).attrs)


class _Run(ReferenceCompiledPartition):
    """A compiled partition that runs `run` instead of the reference executor."""

    def __init__(self, part: Partition, run: Callable[[Mapping[int, Array]], dict[int, Array]]
                 ) -> None:
        super().__init__(part)
        self.run = run

    def execute(self, inputs: Mapping[int, Array]) -> dict[int, Array]:
        return self.run(inputs)


class OpKernels(ReferenceBackend):
    """The reference, with `kernel` asked first for every op of every partition it runs."""

    def kernel(self, op: Op, args: Sequence[Array], part: Partition,
               values: Mapping[int, Array]) -> list[Array] | None:
        """The outputs of `op` as this backend computes them (`values`: every tensor computed
        so far, by id), or None for the reference's."""
        return None

    def compile(self, part: Partition, device: Device) -> ReferenceCompiledPartition:
        def run(inputs: Mapping[int, Array]) -> dict[int, Array]:
            values = {t.id: widen(read_input(t, inputs[t.id])) for t in part.inputs}
            for op in partition_order(part):
                args = [values[t.id] for t in op.inputs]
                with np.errstate(all="ignore"):
                    results = self.kernel(op, args, part, values)
                if results is None:
                    results = run_op(op, args)
                for tensor, result in zip(op.outputs, results):
                    values[tensor.id] = result
            return {t.id: cast_to(values[t.id], t.dtype) for t in part.outputs}
        return _Run(part, run)


def accept_where(graph: Graph, rule: str | None, kinds: frozenset[str],
                 also: Callable[[Graph, Op], bool] | None = None) -> list[Partition]:
    """The reference's partitions of `graph`, or its ops one per partition where the reference
    rejects it by `rule` (any rule when None) at an op of `kinds` for which `also` holds:
    what a backend computes when that check was never written."""
    try:
        return partition(graph)
    except GraphError as exc:
        op = next((o for o in graph.ops if o.id == exc.op_id), None)
        if (rule is not None and exc.rule != rule) or op is None or op.kind not in kinds or (
                also is not None and not also(graph, op)):
            raise
        return single_op_partitions(graph)
