"""The kernel-family interface: what a family declares and what its builder receives.

A family turns the partitions it recognises into a `KernelPlan`:

    KernelFamily(name="elementwise", matches=is_elementwise, build=build_elementwise)

- ``matches(partition) -> bool`` says, from the ops alone (kinds, pattern, attributes), whether
  the family handles the partition; it must be cheap and must not generate code;
- ``build(partition, ctx) -> KernelPlan`` generates the program and its launches; it raises
  `UnsupportedPartitionError` for a variant it cannot handle (a dtype, a layout).

`BuildContext` gives a builder the device's capabilities (`device`: work-group limit, local
memory, vector width, extensions), the dtype policy for that device (`policy`), a fresh
`Preamble` factory, the work-size helpers and the device's tuned choices (`tuned(family)`,
from `fusionspec.accel.tuning_cache`; empty when the device was never tuned). `work_group_limit`,
when set, caps every work group a builder chooses below the device's limit: the backend
rebuilds a partition with it when a generated kernel's own limit (CL_KERNEL_WORK_GROUP_SIZE,
known only once it is built) is lower.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

from fusionspec.spec.graph import Partition

from ..codegen.source import Preamble
from ..codegen.types import TypePolicy
from ..devices import DeviceInfo
from ..plan import KernelPlan
from ..runtime import launch_1d, pick_work_group
from ..tuning_cache import Choices, load_tuning

__all__ = ["KernelFamily", "BuildContext"]


@dataclass(frozen=True)
class BuildContext:
    """What a family builder may know about the target device."""

    device: DeviceInfo
    policy: TypePolicy
    work_group_limit: int | None = None
    tuning: Choices = field(default_factory=dict, compare=False)
    #: "specialised" (every partition its own program), "table" or "auto" (the table form of
    #: table form where it fits, for small domains only with "auto":
    #: `fusionspec.accel.families.forms`).
    form: str = "specialised"

    @staticmethod
    def for_device(device: DeviceInfo, work_group_limit: int | None = None, *,
                   form: str = "specialised") -> BuildContext:
        return BuildContext(device, TypePolicy(native_fp16=device.fp16), work_group_limit,
                            load_tuning(device), form)

    def tuned(self, family: str) -> Mapping[str, Any]:
        """The device's tuned choices for `family` (empty: use the defaults)."""
        return self.tuning.get(family, {})

    @property
    def max_work_group(self) -> int:
        """The largest work group a builder may choose: the device's limit, or the cap."""
        limit = self.device.max_work_group_size
        return limit if self.work_group_limit is None else min(limit, self.work_group_limit)

    def preamble(self) -> Preamble:
        return Preamble(self.policy)

    def launch_1d(self, elements: int, *, per_item: int = 1
                  ) -> tuple[tuple[int], tuple[int]]:
        """(global, local) sizes of a grid-stride loop over `elements`."""
        return launch_1d(self.device, elements, per_item=per_item,
                         kernel_limit=self.work_group_limit)

    def work_group(self, wanted: int = 256) -> int:
        """A power-of-two work-group size within the device's limits."""
        return pick_work_group(self.device, wanted, kernel_limit=self.work_group_limit)

    def reduction_work_group(self, extent: int) -> int:
        """The work group of a kernel whose work-items share a reduction over `extent` values
        (a local-memory tree): 16, 64 or 256 work-items by the extent's size class, within the
        device's limits. The size is in the program's text, so few classes keep the programs
        few; work-items past the extent only add empty leaves to the tree."""
        return self.work_group(16 if extent <= 16 else 64 if extent <= 64 else 256)


@dataclass(frozen=True)
class KernelFamily:
    """A kernel family: a name, a matcher and a builder (see the module docstring)."""

    name: str
    matches: Callable[[Partition], bool]
    build: Callable[[Partition, BuildContext], KernelPlan]
