"""Generated kernels stay clear of the constructs that crash an OpenCL compiler on some x86
CPUs: no 512-bit vector types. PoCL 3.0 (LLVM 14) takes the AVX-512 variant of its kernel
library on an AVX-512 CPU that LLVM 14 does not know (AMD Zen 4, targeted as ``znver3``,
without AVX-512) and aborts the process generating code for a 16-wide ``vload16``
(BENCHMARKS.md). Code generation needs no device: every catalog instance's partitions are
generated for a made-up GPU and a made-up CPU."""

from __future__ import annotations

import re

import pytest

from fusionspec.accel.backend import single_op_partitions
from fusionspec.accel.devices import DeviceInfo
from fusionspec.accel.errors import UnsupportedPartitionError
from fusionspec.accel.families import BuildContext, family_for
from fusionspec.conformance.generate.instances import instance_cases
from fusionspec.reference.partitioner import partition
from fusionspec.spec.catalog import CATALOG

#: Vector types of 512 bits or more, and the 16-wide loads and stores.
WIDE = re.compile(r"\b(?:(?:u?char|u?short|u?int|u?long|float|double|half)(?:16|32|64)|"
                  r"(?:u?long|double)8|v(?:load|store)(?:_half)?16)\b")


def _device(kind: str) -> DeviceInfo:
    return DeviceInfo(
        id=f"made-up-{kind}", kind=kind, name="made-up", platform="none", vendor="none",
        driver="0", opencl_version="OpenCL 3.0", opencl_c_version="OpenCL C 1.2",
        max_work_group_size=1024 if kind == "gpu" else 4096,
        max_work_item_sizes=(1024, 1024, 64), compute_units=8, local_mem_size=65536,
        local_mem_dedicated=kind == "gpu", global_mem_size=1 << 32,
        extensions=frozenset({"cl_khr_fp16"}), fp16=True, fp64=False,
        correctly_rounded_divide_sqrt=True)


@pytest.mark.parametrize("kind", ["cpu", "gpu"])
def test_no_generated_kernel_uses_512_bit_vectors(kind: str) -> None:
    ctx = BuildContext.for_device(_device(kind))
    checked = 0
    for pattern in CATALOG:
        for case in instance_cases(pattern):
            for part in partition(case.graph):
                for piece in (part, *single_op_partitions(part)):
                    try:
                        source = family_for(piece).build(piece, ctx).source
                    except UnsupportedPartitionError:
                        continue  # declared limitations (f8) generate nothing
                    found = sorted(set(WIDE.findall(source)))
                    assert not found, f"{pattern.id} ({case.id}) uses {found}:\n{source}"
                    checked += 1
    assert checked > 500, f"only {checked} kernels were generated; the check is too thin"
