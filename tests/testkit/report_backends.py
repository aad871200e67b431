"""Backends for the report's tests, loaded by the runner as ``testkit.report_backends:<Class>``.

- `LimitedNeverFuses` puts every op in a partition of its own and declares SoftMax patterns a
  limitation, so its run has both failures and ``unsupported`` cases;
- `HostileErrors` fails to compile any SoftMax partition with a message full of markup, which
  the report must show as text.
"""

from __future__ import annotations

from fusionspec.backend import CompiledPartition, Device, Limitation
from fusionspec.reference.backend import ReferenceBackend
from fusionspec.reference.execute import single_op_partitions
from fusionspec.spec.graph import Graph, Partition

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
