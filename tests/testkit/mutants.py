"""Eight planted broken backends: each is the reference with one realistic bug.

The mutation-score test runs the conformance suite (ci profile) on each and checks that the
suite catches the bug with the status it deserves. They are loaded by the runner as
``testkit.mutants:<Class>`` with this folder on the path.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Mapping
from contextlib import contextmanager
from typing import Any

import numpy as np

from fusionspec.backend import CompiledPartition, Device
from fusionspec.reference import execute
from fusionspec.reference.backend import ReferenceBackend
from fusionspec.reference.execute import single_op_partitions
from fusionspec.reference.partitioner import external_tensors, partition
from fusionspec.reference.registry import REGISTRY, OpImpl
from fusionspec.spec.categories import BINARY, UNARY
from fusionspec.spec.errors import GraphError
from fusionspec.spec.graph import Graph, Partition
from fusionspec.spec.types import Array


@contextmanager
def _swapped(kind: str, fn: Callable[..., Any]) -> Iterator[None]:
    """Run with the reference implementation of `kind` replaced by `fn`."""
    saved = REGISTRY[kind]
    REGISTRY[kind] = OpImpl(kind, fn, saved.wants_dst_dtype)
    try:
        yield
    finally:
        REGISTRY[kind] = saved


class _Compiled:
    def __init__(self, part: Partition, run: Callable[[Mapping[int, Array]], dict[int, Array]]
                 ) -> None:
        self.partition = part
        self.run = run

    def execute(self, inputs: Mapping[int, Array]) -> dict[int, Array]:
        return self.run(inputs)


class DropsLastPostOp(ReferenceBackend):
    """Partitions right, but the fused kernel forgets its last unary/binary post-op."""

    name = "drops-last-post-op"

    def compile(self, part: Partition, device: Device) -> CompiledPartition:
        last = part.ops[-1]
        if len(part.ops) < 2 or last.kind not in (*UNARY, *BINARY):
            return super().compile(part, device)
        rest = [op for op in part.ops if op is not last]
        before = last.inputs[0]

        def run(inputs: Mapping[int, Array]) -> dict[int, Array]:
            inner = Partition(part.id, rest, part.inputs, (before,))
            values = execute(inner, inputs)
            out = last.outputs[0]
            return {out.id: values[before.id].astype(execute_dtype(out.dtype.value))}
        return _Compiled(part, run)


def execute_dtype(name: str) -> Any:
    from fusionspec.reference.dtypes import numpy_dtype
    from fusionspec.spec.dtypes import DataType

    return numpy_dtype(DataType(name))


class NeverFuses(ReferenceBackend):
    """Every op in a partition of its own."""

    name = "never-fuses"

    def partition(self, graph: Graph) -> list[Partition]:
        return single_op_partitions(graph.finalize())


class FusesOneTooMany(ReferenceBackend):
    """Takes the op after each fused chain into the chain too (and computes it right)."""

    name = "fuses-one-too-many"

    def partition(self, graph: Graph) -> list[Partition]:
        graph = graph.finalize()
        parts = partition(graph)
        owner = {op.id: p for p in parts for op in p.ops}
        merged: dict[int, list[Any]] = {p.id: list(p.ops) for p in parts}
        absorbed: set[int] = set()
        for p in parts:
            if p.pattern is None or p.id in absorbed or len(p.ops) < 2:
                continue
            users = graph.consumers.get(p.ops[-1].outputs[0].id, ())
            if len(users) == 1:
                nxt = owner[users[0][0].id]
                if nxt.id != p.id and len(nxt.ops) == 1 and nxt.id not in absorbed:
                    merged[p.id] += list(nxt.ops)
                    absorbed.add(nxt.id)
        result = []
        for p in parts:
            if p.id in absorbed:
                continue
            ins, outs = external_tensors(graph, merged[p.id])
            result.append(Partition(p.id, merged[p.id], ins, outs, p.pattern))
        return result


def _quantize_half_away(src: Array, *, scales: tuple[float, ...], zps: tuple[int, ...] = (),
                        qtype: str = "per_tensor", axis: int = 1, dst_dtype: Any = None,
                        ) -> Array:
    scale = np.asarray(scales, dtype=np.float64)
    zp = np.asarray(zps or (0,) * len(scales), dtype=np.float64)
    if qtype == "per_channel":
        shape = [1] * src.ndim
        shape[axis % src.ndim] = scale.size
        scale, zp = scale.reshape(shape), zp.reshape(shape)
    value = np.nan_to_num(src.astype(np.float64) / scale + zp, nan=0.0)
    rounded = np.sign(value) * np.floor(np.abs(value) + 0.5)  # half away from zero
    low, high = (0, 255) if str(dst_dtype) == "u8" else (-128, 127)
    return np.clip(rounded, low, high).astype(np.uint8 if str(dst_dtype) == "u8" else np.int8)


class RoundsQuantizeHalfAway(ReferenceBackend):
    """Quantize rounds half away from zero instead of half to even."""

    name = "rounds-quantize-half-away"

    def compile(self, part: Partition, device: Device) -> CompiledPartition:
        def run(inputs: Mapping[int, Array]) -> dict[int, Array]:
            with _swapped("Quantize", _quantize_half_away):
                return execute(part, inputs)
        return _Compiled(part, run)


def _bias_add_channels_last(src: Array, bias: Array, *, data_format: str = "NXC") -> Array:
    # The bug: data_format is ignored and the bias is indexed along the last axis (cycling
    # through it when the lengths differ, as an unchecked kernel would).
    index = np.arange(src.shape[-1]) % bias.shape[0]
    return (src + bias[index]).astype(np.float32)


class IgnoresBiasAddDataFormat(ReferenceBackend):
    """BiasAdd always adds along the last axis, as if every tensor were NXC."""

    name = "ignores-biasadd-data-format"

    def compile(self, part: Partition, device: Device) -> CompiledPartition:
        def run(inputs: Mapping[int, Array]) -> dict[int, Array]:
            with _swapped("BiasAdd", _bias_add_channels_last):
                return execute(part, inputs)
        return _Compiled(part, run)


class GeluTanhForErf(ReferenceBackend):
    """GELU always uses the tanh approximation, even when gelu_erf is asked."""

    name = "gelu-tanh-for-erf"

    def compile(self, part: Partition, device: Device) -> CompiledPartition:
        gelu = REGISTRY["GELU"].fn

        def tanh_gelu(src: Array, *, mode: str = "gelu_erf") -> Array:
            result: Array = gelu(src, mode="gelu_tanh")
            return result

        def run(inputs: Mapping[int, Array]) -> dict[int, Array]:
            with _swapped("GELU", tanh_gelu):
                return execute(part, inputs)
        return _Compiled(part, run)


class AcceptsIllFormed(ReferenceBackend):
    """Skips validation: an ill-formed graph is partitioned one op per partition."""

    name = "accepts-ill-formed"

    def partition(self, graph: Graph) -> list[Partition]:
        try:
            return partition(graph)
        except GraphError:
            return single_op_partitions(graph)


class WrongOutputDtype(ReferenceBackend):
    """Computes right but hands every output back as float32, whatever its declared type."""

    name = "wrong-output-dtype"

    def compile(self, part: Partition, device: Device) -> CompiledPartition:
        def run(inputs: Mapping[int, Array]) -> dict[int, Array]:
            return {k: np.asarray(v, dtype=np.float64).astype(np.float32)
                    for k, v in execute(part, inputs).items()}
        return _Compiled(part, run)
