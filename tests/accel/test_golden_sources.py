"""Golden kernel sources: the generated OpenCL C of a few partitions, checked in, so a change
of the generator shows up as a reviewable diff. Code generation needs no OpenCL device; the
sources are generated for made-up device descriptions: a GPU (dedicated local memory) and a
CPU (local memory in global memory, native vector width 16: the register-blocked GEMM and the
row-per-work-item SoftMax, with float8).

To accept a deliberate change: FUSIONSPEC_UPDATE_GOLDEN=1 pytest tests/accel/test_golden_sources.py
"""

from __future__ import annotations

import difflib
import os
from pathlib import Path

import pytest

from fusionspec.accel.devices import DeviceInfo
from fusionspec.accel.families import BuildContext, family_for
from fusionspec.reference.partitioner import partition
from fusionspec.spec.dtypes import DataType
from fusionspec.spec.graph import Graph, LogicalTensor, Op

GOLDEN = Path(__file__).parent / "golden"
F32, F16, U8 = DataType.f32, DataType.f16, DataType.u8


def _device(*, fp16: bool, cpu: bool = False) -> DeviceInfo:
    return DeviceInfo(
        id="test-cpu" if cpu else "test-gpu", kind="cpu" if cpu else "gpu", name="made-up",
        platform="none", vendor="none", driver="0",
        opencl_version="OpenCL 3.0", opencl_c_version="OpenCL C 1.2",
        max_work_group_size=1024, max_work_item_sizes=(1024, 1024, 64), compute_units=8,
        local_mem_size=65536, local_mem_dedicated=not cpu, global_mem_size=1 << 32,
        extensions=frozenset({"cl_khr_fp16"} if fp16 else ()), fp16=fp16, fp64=False,
        correctly_rounded_divide_sqrt=True, native_vector_width=16 if cpu else 1)


def _int8_reorder_add() -> Graph:
    shape = (2, 3, 4)
    attrs = {"qtype": "per_tensor", "scales": [0.5], "zps": [3]}
    channel = {"qtype": "per_channel", "axis": 1, "scales": [0.25, 0.5, 1.0],
               "zps": [0, 0, 0]}
    t = [LogicalTensor(i, U8 if i in (0, 1, 6) else F32, shape) for i in range(7)]
    return Graph([Op(0, "Dequantize", inputs=(t[0],), outputs=(t[2],), attrs=attrs),
                  Op(1, "Dequantize", inputs=(t[1],), outputs=(t[3],), attrs=channel),
                  Op(2, "Reorder", inputs=(t[2],), outputs=(t[4],)),
                  Op(3, "Add", inputs=(t[4], t[3]), outputs=(t[5],)),
                  Op(4, "Quantize", inputs=(t[5],), outputs=(t[6],), attrs=attrs)])


def _bn_relu_f16() -> Graph:
    shape = (2, 5, 5, 8)
    params = [LogicalTensor(i, F32, (8,)) for i in range(1, 5)]
    x, y, r = (LogicalTensor(i, F16, shape) for i in (0, 5, 6))
    return Graph([Op(0, "BatchNormInference", inputs=(x, *params), outputs=(y,),
                     attrs={"epsilon": 1e-3}),
                  Op(1, "ReLU", inputs=(y,), outputs=(r,))])


def _strided_broadcast() -> Graph:
    """Add -> Multiply -> ReLU over (2, 3, 4): src stored with its last two dims swapped
    (runtime strides, the general path), a (1, 3, 1) operand (one run of dims: a division and
    a remainder) and a (2, 1, 4) one (two runs)."""
    x = LogicalTensor(0, F32, (2, 3, 4), (12, 1, 3))
    b, c = LogicalTensor(1, F32, (1, 3, 1)), LogicalTensor(2, F32, (2, 1, 4))
    s, m, r = (LogicalTensor(i, F32, (2, 3, 4)) for i in (3, 4, 5))
    return Graph([Op(0, "Add", inputs=(x, b), outputs=(s,)),
                  Op(1, "Multiply", inputs=(s, c), outputs=(m,)),
                  Op(2, "ReLU", inputs=(m,), outputs=(r,))])


def _matmul_gelu() -> Graph:
    """MatMul + BiasAdd + GELU (erf): A read in runs, GELU's erfc as arithmetic."""
    a, w, bias = LogicalTensor(0, F32, (64, 32)), LogicalTensor(1, F32, (32, 48)), \
        LogicalTensor(2, F32, (48,))
    mm, biased, out = (LogicalTensor(i, F32, (64, 48)) for i in (3, 4, 5))
    return Graph([Op(0, "MatMul", inputs=(a, w), outputs=(mm,)),
                  Op(1, "BiasAdd", inputs=(mm, bias), outputs=(biased,)),
                  Op(2, "GELU", inputs=(biased,), outputs=(out,))])


def _conv_relu() -> Graph:
    """A 3x3 convolution (padding 1, NCX/OIX) + ReLU: the window decoded once per run of
    input channels."""
    attrs = {"strides": [1, 1], "pads_begin": [1, 1], "pads_end": [1, 1], "dilations": [1, 1],
             "data_format": "NCX", "weights_format": "OIX", "groups": 1}
    x, w = LogicalTensor(0, F32, (1, 8, 10, 10)), LogicalTensor(1, F32, (16, 8, 3, 3))
    y, r = LogicalTensor(2, F32, (1, 16, 10, 10)), LogicalTensor(3, F32, (1, 16, 10, 10))
    return Graph([Op(0, "Convolution", inputs=(x, w), outputs=(y,), attrs=attrs),
                  Op(1, "ReLU", inputs=(y,), outputs=(r,))])


def _softmax() -> Graph:
    x, y = LogicalTensor(0, F32, (16, 100)), LogicalTensor(1, F32, (16, 100))
    return Graph([Op(0, "SoftMax", inputs=(x,), outputs=(y,), attrs={"axis": -1})])


#: Golden file -> (graph, native fp16, CPU device).
CASES = {
    "int8_reorder_add.cl": (_int8_reorder_add, False, False),
    "strided_broadcast.cl": (_strided_broadcast, False, False),
    "bn_relu_f16_native.cl": (_bn_relu_f16, True, False),
    "bn_relu_f16_emulated.cl": (_bn_relu_f16, False, False),
    "matmul_bias_gelu_cpu.cl": (_matmul_gelu, False, True),
    "conv_relu_cpu.cl": (_conv_relu, False, True),
    "softmax_cpu.cl": (_softmax, False, True),
}


@pytest.mark.parametrize("name", sorted(CASES))
def test_generated_source_matches_golden(name: str) -> None:
    make, fp16, cpu = CASES[name]
    part, = partition(make().finalize())
    ctx = BuildContext.for_device(_device(fp16=fp16, cpu=cpu))
    source = family_for(part).build(part, ctx).source
    path = GOLDEN / name
    if os.environ.get("FUSIONSPEC_UPDATE_GOLDEN") == "1":
        path.write_text(source)
    assert path.is_file(), f"no golden file {path}; generate it with FUSIONSPEC_UPDATE_GOLDEN=1"
    want = path.read_text()
    diff = "".join(difflib.unified_diff(want.splitlines(True), source.splitlines(True),
                                        f"golden/{name}", "generated"))
    assert source == want, f"the generated kernel differs from golden/{name}:\n{diff}"
