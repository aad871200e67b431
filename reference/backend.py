"""The reference implementation as a backend, so the suite can grade it like any other.

`ReferenceBackend` partitions with `fusionspec.reference.partitioner.partition` (which
finalizes the graph first, so an ill-formed graph is rejected with the `GraphError` naming the
rule) and executes a compiled partition with `fusionspec.reference.execute`. It has one device,
``numpy``, a CPU. Graded against itself it must pass every valid case; the suite's own tests
hold it to that.
"""

from __future__ import annotations

import platform
from collections.abc import Mapping, Sequence

import ml_dtypes
import numpy as np

from fusionspec.backend import BackendError, Device
from fusionspec.spec.graph import Graph, Partition
from fusionspec.spec.types import Array

from .execute import execute
from .partitioner import partition

__all__ = ["ReferenceBackend", "ReferenceCompiledPartition", "NUMPY_DEVICE"]

#: The reference's only device: NumPy on the host CPU.
NUMPY_DEVICE = Device(
    id="numpy", kind="cpu", name=f"NumPy on {platform.machine() or 'the host CPU'}",
    driver=f"numpy {np.__version__}", runtime=f"ml_dtypes {ml_dtypes.__version__}",
    extras={"numpy": np.__version__, "ml_dtypes": ml_dtypes.__version__,
            "python": platform.python_version()})


class ReferenceCompiledPartition:
    """A partition 'compiled' by the reference: executing it runs the NumPy oracle."""

    def __init__(self, partition: Partition) -> None:
        self.partition = partition

    def execute(self, inputs: Mapping[int, Array]) -> dict[int, Array]:
        return execute(self.partition, inputs)


class ReferenceBackend:
    """fusionspec's NumPy reference behind the `Backend` protocol."""

    name = "reference"

    def devices(self) -> Sequence[Device]:
        return (NUMPY_DEVICE,)

    def partition(self, graph: Graph) -> list[Partition]:
        return partition(graph)

    def compile(self, partition: Partition, device: Device) -> ReferenceCompiledPartition:
        if device.id != NUMPY_DEVICE.id:
            raise BackendError(f"the reference backend has no device {device.id!r}; its only "
                               f"device is {NUMPY_DEVICE.id!r}")
        return ReferenceCompiledPartition(partition)
