"""The training family of the OpenCL backend: ReLUBackward (use_dst either way),
BiasAddBackward, BatchNormTrainingBackward with 1 or 3 outputs, with and without gamma, NCX and
NXC, and train.relu_bwd_bn_bwd, checked against the reference; and the conformance suite on
train.relu_bwd_bn_bwd."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest
from testkit.accel import OnDevice, requires_device

from fusionspec.accel.families import family_for
from fusionspec.reference.dtypes import cast_to
from fusionspec.spec.dtypes import DataType
from fusionspec.spec.graph import Graph, LogicalTensor, Op

pytestmark = [requires_device, pytest.mark.filterwarnings("ignore::RuntimeWarning"),
              pytest.mark.usefixtures("kernel_form")]

F32, BF16 = DataType.f32, DataType.bf16


def _feeds(graph: Graph) -> dict[int, Any]:
    rng = np.random.default_rng(13)
    g = graph.finalize()
    feeds = {t.id: cast_to(2 * rng.standard_normal(t.shape or ()), t.dtype)
             for t in g.input_tensors}
    for op in g.ops:  # variances must be positive
        if op.kind == "BatchNormTrainingBackward":
            var = op.inputs[3]
            feeds[var.id] = cast_to(rng.uniform(0.5, 2.0, var.shape or ()), var.dtype)
    return feeds


@pytest.mark.parametrize("use_dst,dtype", [(True, F32), (False, BF16)])
def test_relu_backward(use_dst: bool, dtype: DataType) -> None:
    v, dy, dx = (LogicalTensor(i, dtype, (3, 4, 5)) for i in range(3))
    graph = Graph([Op(0, "ReLUBackward", inputs=(v, dy), outputs=(dx,),
                      attrs={"use_dst": use_dst})])
    on = OnDevice(graph)
    assert family_for(on.parts[0]).name == "training", "ReLUBackward -> training family"
    on.check(_feeds(graph), label=f"ReLUBackward use_dst={use_dst} {dtype}")


@pytest.mark.parametrize("fmt,shape", [("NCX", (4, 3, 5, 6)), ("NXC", (2, 7, 5, 3)),
                                       ("NXC", (300, 2))])
def test_bias_add_backward(fmt: str, shape: tuple[int, ...]) -> None:
    dy, db = LogicalTensor(0, F32, shape), LogicalTensor(1, F32, None)
    graph = Graph([Op(0, "BiasAddBackward", inputs=(dy,), outputs=(db,),
                      attrs={"data_format": fmt})])
    OnDevice(graph).check(_feeds(graph), label=f"BiasAddBackward {fmt} {shape}")


def _bn_bwd(shape: tuple[int, ...], fmt: str, *, gamma: bool, outputs: int, relu: bool,
            dtype: DataType = F32) -> Graph:
    channels = shape[1] if fmt == "NCX" else shape[-1]
    x, dy = LogicalTensor(0, dtype, shape), LogicalTensor(1, dtype, shape)
    mean, var = LogicalTensor(2, F32, (channels,)), LogicalTensor(3, F32, (channels,))
    ins = [x, dy, mean, var]
    if gamma:
        ins.append(LogicalTensor(4, F32, (channels,)))
    outs = [LogicalTensor(5, dtype, shape)]
    if outputs == 3:
        outs += [LogicalTensor(6, F32, (channels,)), LogicalTensor(7, F32, (channels,))]
    ops = []
    if relu:
        v, rdy, rx = (LogicalTensor(i, dtype, shape) for i in (8, 9, 10))
        ops.append(Op(1, "ReLUBackward", inputs=(v, rdy), outputs=(rx,)))
        ins[0] = rx
    ops.append(Op(0, "BatchNormTrainingBackward", inputs=tuple(ins), outputs=tuple(outs),
                  attrs={"epsilon": 1e-3, "data_format": fmt}))
    return Graph(ops)


@pytest.mark.parametrize("fmt,gamma,outputs,relu", [("NCX", True, 3, False),
                                                    ("NXC", False, 1, False),
                                                    ("NCX", False, 3, True),
                                                    ("NXC", True, 1, True)])
def test_batchnorm_backward(fmt: str, gamma: bool, outputs: int, relu: bool,
                            kernel_form: str) -> None:
    shape = (4, 3, 5, 6) if fmt == "NCX" else (2, 7, 5, 3)
    graph = _bn_bwd(shape, fmt, gamma=gamma, outputs=outputs, relu=relu)
    on = OnDevice(graph)
    assert len(on.parts) == 1, f"one partition ({[p.pattern for p in on.parts]})"
    if relu:
        assert on.parts[0].pattern == "train.relu_bwd_bn_bwd", f"pattern {on.parts[0].pattern}"
    plan = on.compiled[0].plans[0]
    names = [launch.kernel for launch in plan.launches]
    if kernel_form == "table":
        assert names == ["fs_tgather", "fs_tgather", "fs_tbnstats", "fs_tbnsrc"], \
            f"the table form gathers x and dy, then the statistics, then diff_src: {names}"
    else:
        assert len(names) == 2, f"batch norm backward is a statistics pass, then diff_src: " \
            f"{names}"
    on.check(_feeds(graph), label=f"BN backward {fmt} gamma={gamma} outputs={outputs} "
             f"relu={relu}")


def test_batchnorm_backward_bf16_long_channels() -> None:
    graph = _bn_bwd((64, 2, 40), "NCX", gamma=True, outputs=3, relu=True, dtype=BF16)
    OnDevice(graph).check(_feeds(graph), label="BN backward bf16")
