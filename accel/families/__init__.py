"""The registry of kernel families: each partition is compiled by the first family that
matches it.

To add a family, write its module (a `KernelFamily` named ``FAMILY``, see `base`) and add it to
`FAMILIES` below; order matters only where two families match the same partition.
"""

from __future__ import annotations

from collections.abc import Sequence

from fusionspec.spec.graph import Partition

from ..errors import UnsupportedPartitionError
from . import elementwise, gemm, interpolate, pool, reduction, softmax, training
from .base import BuildContext, KernelFamily

__all__ = ["FAMILIES", "KernelFamily", "BuildContext", "family_for"]

FAMILIES: tuple[KernelFamily, ...] = (
    elementwise.FAMILY,
    gemm.FAMILY,
    softmax.FAMILY,
    pool.FAMILY,
    reduction.FAMILY,
    interpolate.FAMILY,
    training.FAMILY,
)


def family_for(partition: Partition, families: Sequence[KernelFamily] = FAMILIES) -> KernelFamily:
    """The first family that matches `partition`; UnsupportedPartitionError names the pattern
    and its ops when none does."""
    for family in families:
        if family.matches(partition):
            return family
    names = ", ".join(f.name for f in families)
    raise UnsupportedPartitionError(f"no kernel family of the OpenCL backend handles it yet "
                                    f"(families: {names})", pattern=partition.pattern,
                                    kinds=[op.kind for op in partition.ops])
