"""Backends for the report's tests, loaded by the runner as ``testkit.report_backends:<Class>``.

- `LimitedNeverFuses` puts every op in a partition of its own and declares SoftMax patterns a
  limitation, so its run has both failures and ``unsupported`` cases;
- `HostileErrors` fails to compile any SoftMax partition with a message full of markup, which
  the report must show as text;
- `TruncatesAndSplitsConvTranspose` has one wrong-values bug (bf16/f16 outputs truncated) and
  leaves every ConvTranspose chain unfused: many more fusion gaps than wrong values, as a young
  backend has, to show that the wrong values still come first.
"""

from __future__ import annotations

from fusionspec.backend import CompiledPartition, Device, Limitation
from fusionspec.reference.backend import ReferenceBackend
from fusionspec.reference.execute import single_op_partitions
from fusionspec.spec.graph import Graph, Partition

from .mutants import TruncatesNarrowOutputs

#: Markup that must never become a live element of the report.
HOSTILE = "<script>alert(1)</script>"

#: The reason LimitedNeverFuses gives for its limitation.
LIMITATION_REASON = "SoftMax chains are left unfused on this device"


class LimitedNeverFuses(ReferenceBackend):
    """Every op alone in a partition; SoftMax patterns declared unsupported."""

    name = "limited-never-fuses"
    limitations = (Limitation(LIMITATION_REASON, pattern="softmax.post_ops"),)

    def partition(self, graph: Graph) -> list[Partition]:
        return single_op_partitions(graph.finalize())


class HostileErrors(ReferenceBackend):
    """Raises from compile() for any partition with a SoftMax, with markup in the message."""

    name = "hostile-errors"

    def compile(self, part: Partition, device: Device) -> CompiledPartition:
        if any(op.kind == "SoftMax" for op in part.ops):
            raise RuntimeError(f"kernel build failed: {HOSTILE}")
        return super().compile(part, device)


class TruncatesAndSplitsConvTranspose(TruncatesNarrowOutputs):
    """Truncates bf16/f16 outputs, and runs every op of a graph with a ConvTranspose alone."""

    name = "truncates-and-splits-convtranspose"

    def partition(self, graph: Graph) -> list[Partition]:
        graph = graph.finalize()
        if any(op.kind == "ConvTranspose" for op in graph.ops):
            return single_op_partitions(graph)
        return super().partition(graph)
