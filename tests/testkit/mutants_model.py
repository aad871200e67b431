"""Planted broken backends that only the coverage model's ranks and narrow fills catch.

Each is the reference with one bug behind an item the generator did not draw before the model
asked for it: a reduction of a rank-1 src (reductions were drawn at ranks 2 to 4 only), a
bf16/f16 ReduceL2 with values whose squares and sums are not exact in the narrow type (its
cases were filled from the grid, exact in bf16), a bf16/f16 pool padded SAME_LOWER (a dtype
row x attribute pair), and a shape defect of a MatMul's transposed weights (an ill-formed
rule under one setting). tests/conformance/test_mutation.py runs them
as ``testkit.mutants_model:<Class>``.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import Any, ClassVar

import numpy as np

from fusionspec.backend import CompiledPartition, Device
from fusionspec.reference import execute
from fusionspec.reference.backend import ReferenceBackend
from fusionspec.reference.execute import single_op_partitions
from fusionspec.reference.partitioner import partition
from fusionspec.reference.registry import REGISTRY
from fusionspec.spec.categories import REDUCTION
from fusionspec.spec.errors import GraphError, GraphRule
from fusionspec.spec.graph import Graph, Partition
from fusionspec.spec.types import Array

from .mutants import Maker, _Compiled, _f32, _swapped, _SwapsOps
from .mutants_corners import _NARROW, NarrowReduction, narrow_fold


def _vector_taken_as_reduced(original: Callable[..., Any]) -> Callable[..., Any]:
    def reduce(src: Array, axes_input: Array | None = None, *, axes: Sequence[int],
               keep_dims: bool) -> Array:
        x = np.asarray(src)
        if x.ndim == 1:
            # the bug: a 1-D src is taken for one already reduced, its first element returned
            return _f32(x[:1])
        result: Array = original(src, axes_input, axes=axes, keep_dims=keep_dims)
        return result
    return reduce


class ReduceVectorTakenAsReduced(_SwapsOps):
    """Every reduction of a rank-1 src returns the src's first element, as if the vector were
    the result of an earlier reduction."""

    name = "reduce-vector-taken-as-reduced"
    swaps: ClassVar[Mapping[str, Maker]] = {kind: _vector_taken_as_reduced
                                            for kind in REDUCTION}


def _narrow_sum_of_squares(narrow: Any) -> Callable[..., Any]:
    # the bug: the squares and their running sum are rounded to the narrow type
    return narrow_fold(narrow, 0.0, lambda acc, x: acc + (x * x).astype(narrow).astype(
        np.float32), finish=np.sqrt)


class ReduceL2NarrowSumOfSquares(NarrowReduction):
    """A bf16/f16 ReduceL2 sums its squares in bf16/f16 instead of f32."""

    name = "reduce-l2-narrow-sum-of-squares"
    kind = "ReduceL2"

    def narrow_fn(self, narrow: Any) -> Callable[..., Any]:
        return _narrow_sum_of_squares(narrow)


def _lower_as_upper(original: Callable[..., Any]) -> Callable[..., Any]:
    def pool(src: Array, **attrs: Any) -> Array:
        if attrs.get("auto_pad") == "SAME_LOWER":
            attrs["auto_pad"] = "SAME_UPPER"  # the bug: the odd pad goes to the end
        result: Array = original(src, **attrs)
        return result
    return pool


class NarrowPoolSameLowerAsUpper(ReferenceBackend):
    """A bf16 or f16 AvgPool/MaxPool with ``auto_pad = SAME_LOWER`` puts the odd pad at the
    end, as SAME_UPPER does: one entry of a kernel table keyed by type and padding mode is
    wrong, the f32 one and the other modes right."""

    name = "narrow-pool-same-lower-as-upper"

    def compile(self, part: Partition, device: Device) -> CompiledPartition:
        if not any(op.kind in ("AvgPool", "MaxPool") and op.attrs.get("auto_pad") == "SAME_LOWER"
                   and op.inputs[0].dtype in _NARROW for op in part.ops):
            return super().compile(part, device)

        def run(inputs: Mapping[int, Array]) -> dict[int, Array]:
            with _swapped("AvgPool", _lower_as_upper(REGISTRY["AvgPool"].fn)), \
                    _swapped("MaxPool", _lower_as_upper(REGISTRY["MaxPool"].fn)):
                return execute(part, inputs)
        return _Compiled(part, run)


class TransposedWeightsUnchecked(ReferenceBackend):
    """A MatMul with ``transpose_b`` skips the check of its weights' inner dim (the check
    reads the untransposed axis, which the defect leaves alone), so such an ill-formed graph
    is accepted and run op by op."""

    name = "transposed-weights-unchecked"

    def partition(self, graph: Graph) -> list[Partition]:
        try:
            return partition(graph)
        except GraphError as exc:
            op = next((o for o in graph.ops if o.id == exc.op_id), None)
            if (exc.rule != GraphRule.shape_infer or op is None or op.kind != "MatMul"
                    or not op.attrs.get("transpose_b")):
                raise
            return single_op_partitions(graph)
