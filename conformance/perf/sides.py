"""The sides of a workload on the backend under test: fused, op by op, and the reference.

- **fused**: the workload's graph as the backend partitions it, every partition compiled and
  run in order (one partition when the backend forms the pattern; several when it splits it,
  which is what not fusing costs);
- **op by op**: every op as a single-op graph, partitioned and compiled by the same backend,
  run in order with the intermediates kept in host memory, as an application without that
  fusion would run it;
- **reference**: fusionspec's NumPy reference on the same partition, an optional yardstick.

Before any timing counts, the fused and op-by-op outputs are compared (`outputs_agree`): a
fused kernel that is fast because it computes something else must not win. Each side is timed
through `fusionspec.backend.timing`: by the backend's device timer (``execute_timed``) when
every compiled partition of both backend sides has one (the op-by-op sum then adds each op's
kernel time on inputs staged from a checked run), else by the host's clock around the chain.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass

from fusionspec.backend import Backend, CompiledPartition, Device
from fusionspec.backend.agreement import agreement
from fusionspec.backend.timing import DeviceTimed, wall_clock
from fusionspec.reference import execute, fill_inputs
from fusionspec.reference.partitioner import partition as reference_partition
from fusionspec.spec.errors import FusionspecError
from fusionspec.spec.graph import Graph, LogicalTensor, Partition
from fusionspec.spec.types import Array

from ..grade.bounds import in_order
from .workloads import Workload

__all__ = ["PerfError", "Chain", "Prepared", "prepare", "outputs_agree",
           "REFERENCE_SLACK"]


class PerfError(FusionspecError):
    """A workload that cannot be measured on a backend (the message says why)."""


@dataclass
class Chain:
    """Compiled partitions run in order, each reading graph inputs and earlier outputs."""

    parts: list[tuple[Partition, CompiledPartition]]

    def run(self, inputs: Mapping[int, Array]) -> dict[int, Array]:
        """Every tensor's value after running the chain (inputs included)."""
        values = dict(inputs)
        for part, compiled in self.parts:
            values.update(compiled.execute({t.id: values[t.id] for t in part.inputs}))
        return values

    @property
    def device_timed(self) -> bool:
        return all(isinstance(c, DeviceTimed) for _, c in self.parts)

    def sampler(self, inputs: Mapping[int, Array], device_time: bool
                ) -> Callable[[], float]:
        """One run of the chain, returning its seconds: the sum of each partition's device
        time on its staged inputs, or the host's clock around the whole chain."""
        if not device_time:
            return wall_clock(lambda: self.run(inputs))
        values = self.run(inputs)
        staged = [({t.id: values[t.id] for t in part.inputs}, compiled)
                  for part, compiled in self.parts]

        def sample() -> float:
            total = 0.0
            for feeds, compiled in staged:
                assert isinstance(compiled, DeviceTimed)
                total += compiled.execute_timed(feeds)
            return total
        return sample


@dataclass
class Prepared:
    """A workload ready to time on one backend and device."""

    workload: Workload
    size: str
    graph: Graph
    inputs: dict[int, Array]
    formed: list[Partition]
    fused: Chain
    opbyop: Chain
    reference: Partition

    @property
    def fused_whole(self) -> bool:
        """Whether the backend formed one partition holding every op of the workload."""
        return len(self.formed) == 1 and len(self.formed[0].ops) == len(self.graph.ops)

    @property
    def device_time(self) -> bool:
        return self.fused.device_timed and self.opbyop.device_timed

    def outputs(self) -> tuple[dict[int, Array], dict[int, Array]]:
        """The graph outputs of the fused and of the op-by-op side."""
        ids = [t.id for t in self.graph.output_tensors]
        fused, opbyop = self.fused.run(self.inputs), self.opbyop.run(self.inputs)
        return {i: fused[i] for i in ids}, {i: opbyop[i] for i in ids}


def _check_supported(part: Partition, what: str) -> None:
    if not part.supported:
        kinds = ", ".join(op.kind for op in part.ops)
        raise PerfError(f"{what}: the backend does not support the partition of {kinds}")


def _chain(parts: Sequence[tuple[Partition, CompiledPartition]], what: str) -> Chain:
    """The compiled partitions with every producer before its consumers."""
    compiled = {id(p): c for p, c in parts}
    ordered, acyclic = in_order([p for p, _ in parts])
    if not acyclic:
        raise PerfError(f"{what}: the backend's partitions depend on each other in a cycle")
    return Chain([(p, compiled[id(p)]) for p in ordered])


def _compiled(backend: Backend, device: Device, parts: Sequence[Partition], what: str
              ) -> Chain:
    for part in parts:
        _check_supported(part, what)
    return _chain([(p, backend.compile(p, device)) for p in parts], what)


def _single(backend: Backend, graph: Graph, index: int) -> Partition:
    op = graph.ops[index]
    alone = graph.replace_ops([op], finalized=graph.finalized)
    parts = backend.partition(alone)
    if len(parts) != 1 or len(parts[0].ops) != 1:
        raise PerfError(f"op by op: the backend forms {len(parts)} partition(s) of a lone "
                        f"{op.kind}, not one")
    return parts[0]


def _op_by_op(backend: Backend, device: Device, graph: Graph) -> Chain:
    """Every op partitioned alone and compiled at once, before the next op is partitioned: a
    backend may keep the native state of only its last few ``partition`` calls (the oneDNN
    adapter keeps four graphs), and a workload has up to nine ops."""
    parts = []
    for index in range(len(graph.ops)):
        part = _single(backend, graph, index)
        _check_supported(part, "op by op")
        parts.append((part, backend.compile(part, device)))
    return _chain(parts, "op by op")


def prepare(workload: Workload, size: str, backend: Backend, device: Device, seed: int = 0
            ) -> Prepared:
    """Build, partition and compile every side of `workload` at `size`; `PerfError` when the
    backend cannot run one of them."""
    graph = workload.graph(size)
    formed = list(backend.partition(graph))
    covered = sorted(op.id for p in formed for op in p.ops)
    if covered != sorted(op.id for op in graph.ops):
        raise PerfError(f"the backend's partitions cover ops {covered} of "
                        f"{len(graph.ops)}; every op must be in one partition")
    fused = _compiled(backend, device, formed, "fused")
    opbyop = _op_by_op(backend, device, graph)
    (reference,) = reference_partition(graph)
    return Prepared(workload, size, graph, fill_inputs(graph, seed), formed, fused, opbyop,
                    reference)


#: How much further a side may lie from fusionspec's reference than from the other side: the
#: reference rounds its intermediates its own way, and the check against it only has to catch
#: a side that computes something else (the conformance suite grades accuracy).
REFERENCE_SLACK = 10.0


def outputs_agree(fused: Mapping[int, Array], opbyop: Mapping[int, Array],
                  tensors: Sequence[LogicalTensor], *, slack: float = 1.0
                  ) -> tuple[bool, float]:
    """Whether the two sides' outputs agree (`fusionspec.backend.agreement`, `slack` times
    wider), and the largest difference found."""
    worst, ok = 0.0, True
    for t in tensors:
        agrees, found = agreement(fused[t.id], opbyop[t.id], t.dtype.value, slack=slack)
        ok, worst = ok and agrees, max(worst, found)
    return ok, worst


def reference_sampler(prepared: Prepared) -> Callable[[], float]:
    """The reference's run of the workload's partition, by the host's clock."""
    part, inputs = prepared.reference, prepared.inputs
    return wall_clock(lambda: execute(part, inputs))
