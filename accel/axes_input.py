"""Reductions whose axes arrive as an input tensor: compiled once the axes are known.

A reduction kernel is generated for its axes (`fusionspec.accel.families.reduction`), but the
spec lets them come from an optional s32 input, whose values exist only when the partition
runs. `DeferredAxesPartition` reads them then, rewrites the reduction with those axes as its
attribute (the input dropped), compiles that partition once per distinct set of axes and runs
it with the other inputs.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import replace

import numpy as np

from fusionspec.backend import CompiledPartition
from fusionspec.spec.categories import REDUCTION
from fusionspec.spec.graph import Op, Partition
from fusionspec.spec.types import Array

__all__ = ["axes_inputs", "DeferredAxesPartition"]


def axes_inputs(partition: Partition) -> list[Op]:
    """The reductions of `partition` whose axes come from one of its inputs."""
    outside = {t.id for t in partition.inputs}
    return [op for op in partition.ops if op.kind in REDUCTION and len(op.inputs) > 1
            and op.inputs[1].id in outside]


class DeferredAxesPartition:
    """A partition whose reductions take their axes from inputs (see the module docstring);
    `compile` builds the rewritten partition."""

    def __init__(self, partition: Partition,
                 compile: Callable[[Partition], CompiledPartition]) -> None:
        self.partition = partition
        self._compile = compile
        self._built: dict[tuple[tuple[int, ...], ...], tuple[Partition, CompiledPartition]] = {}

    def execute(self, inputs: Mapping[int, Array]) -> dict[int, Array]:
        readers = axes_inputs(self.partition)
        key = tuple(tuple(int(a) for a in np.asarray(inputs[op.inputs[1].id]).reshape(-1))
                    for op in readers)
        if key not in self._built:
            self._built[key] = self._rewritten(readers, key)
        part, compiled = self._built[key]
        return compiled.execute({t.id: inputs[t.id] for t in part.inputs})

    def _rewritten(self, readers: list[Op], key: tuple[tuple[int, ...], ...],
                   ) -> tuple[Partition, CompiledPartition]:
        axes = {op.id: given for op, given in zip(readers, key)}
        ops = tuple(replace(op, inputs=op.inputs[:1], attrs={**op.attrs, "axes": axes[op.id]})
                    if op.id in axes else op for op in self.partition.ops)
        still_read = {t.id for op in ops for t in op.inputs}
        part = replace(self.partition, ops=ops, inputs=tuple(
            t for t in self.partition.inputs if t.id in still_read))
        return part, self._compile(part)
