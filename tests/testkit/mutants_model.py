"""Planted broken backends that only the coverage model's ranks and narrow fills catch.

Each is the reference with one bug behind an item the generator did not draw before the model
asked for it: a reduction of a rank-1 src (reductions were drawn at ranks 2 to 4 only), a
bf16/f16 ReduceL2 with values whose squares and sums are not exact in the narrow type (its
cases were filled from the grid, exact in bf16), and an f16 AvgPool with channels last (a
dtype row x attribute pair). tests/conformance/test_mutation.py runs them
as ``testkit.mutants_model:<Class>``.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import Any, ClassVar

import numpy as np

from fusionspec.backend import CompiledPartition, Device
from fusionspec.reference import execute
from fusionspec.reference.backend import ReferenceBackend
from fusionspec.reference.registry import REGISTRY
from fusionspec.spec.categories import REDUCTION
from fusionspec.spec.dtypes import DataType
from fusionspec.spec.graph import Partition
from fusionspec.spec.types import Array

from .mutants import Maker, _Compiled, _f32, _swapped, _SwapsOps
from .mutants_corners import _NARROW


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
    def reduce_l2(src: Array, axes_input: Array | None = None, *, axes: Sequence[int],
                  keep_dims: bool) -> Array:
        x = np.asarray(src, dtype=np.float32)
        given = [int(a) for a in (np.asarray(axes_input).reshape(-1) if axes_input is not None
                                  else axes)]
        reduced = sorted({a % x.ndim for a in given})
        kept = [a for a in range(x.ndim) if a not in reduced]
        rows = np.transpose(x, (*kept, *reduced)).reshape(*[x.shape[a] for a in kept], -1)
        # the bug: the squares and their running sum are rounded to the narrow type
        acc = np.zeros(rows.shape[:-1], dtype=narrow)
        for i in range(rows.shape[-1]):
            square = (rows[..., i] * rows[..., i]).astype(narrow)
            acc = (acc.astype(np.float32) + square.astype(np.float32)).astype(narrow)
        out = np.sqrt(acc.astype(np.float32))
        if keep_dims:
            out = out.reshape([1 if a in reduced else d for a, d in enumerate(x.shape)])
        return _f32(out)
    return reduce_l2


class ReduceL2NarrowSumOfSquares(ReferenceBackend):
    """A bf16/f16 ReduceL2 sums its squares in bf16/f16 instead of f32."""

    name = "reduce-l2-narrow-sum-of-squares"

    def compile(self, part: Partition, device: Device) -> CompiledPartition:
        narrow = next((_NARROW[op.inputs[0].dtype] for op in part.ops
                       if op.kind == "ReduceL2" and op.inputs[0].dtype in _NARROW), None)
        if narrow is None:
            return super().compile(part, device)

        def run(inputs: Mapping[int, Array]) -> dict[int, Array]:
            with _swapped("ReduceL2", _narrow_sum_of_squares(narrow)):
                return execute(part, inputs)
        return _Compiled(part, run)


def _exclude_pad_flipped(original: Callable[..., Any]) -> Callable[..., Any]:
    def avg_pool(src: Array, **attrs: Any) -> Array:
        # the bug: this kernel variant reads the flag the other way round
        attrs["exclude_pad"] = not attrs["exclude_pad"]
        result: Array = original(src, **attrs)
        return result
    return avg_pool


class HalfChannelsLastAvgPoolFlipsExcludePad(ReferenceBackend):
    """An f16 AvgPool with channels last (NXC) takes exclude_pad the other way round: one
    entry of a kernel table keyed by type and layout is wrong, the f32 and NCX ones right."""

    name = "half-channels-last-avg-pool-flips-exclude-pad"

    def compile(self, part: Partition, device: Device) -> CompiledPartition:
        if not any(op.kind == "AvgPool" and op.inputs[0].dtype is DataType.f16
                   and op.attrs.get("data_format", "NXC") == "NXC" for op in part.ops):
            return super().compile(part, device)

        def run(inputs: Mapping[int, Array]) -> dict[int, Array]:
            with _swapped("AvgPool", _exclude_pad_flipped(REGISTRY["AvgPool"].fn)):
                return execute(part, inputs)
        return _Compiled(part, run)
