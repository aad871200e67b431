"""The softmax family of the OpenCL backend: SoftMax on every axis, with and without stats,
both modes, narrow dtypes, strided rows, post-op epilogues ending in TypeCast or Quantize,
checked against the reference, in both kernel forms on the test device (a row per work item,
the CPU form; a work group per row, the form for devices with dedicated local memory, forced
by describing the device so)."""

from __future__ import annotations

import dataclasses
from typing import Any

import numpy as np
import pytest
from testkit.accel import OnDevice, first_info, requires_device

from fusionspec.accel.families import BuildContext, family_for
from fusionspec.reference import execute
from fusionspec.reference.dtypes import cast_to
from fusionspec.spec.dtypes import DataType
from fusionspec.spec.graph import Graph, LogicalTensor, Op

pytestmark = [requires_device, pytest.mark.filterwarnings("ignore::RuntimeWarning"),
              pytest.mark.usefixtures("kernel_form")]

F32, BF16, F16, U8 = DataType.f32, DataType.bf16, DataType.f16, DataType.u8
FORMS = ("row", "group")


def _on(graph: Graph, form: str) -> OnDevice:
    """`graph` compiled in `form` (see FORMS) on the test device."""
    info = dataclasses.replace(first_info(), local_mem_dedicated=form == "group")
    on = OnDevice(graph, ctx=BuildContext.for_device(info))
    source = on.compiled[0].kernel_source
    assert ("__local float red" in source) == (form == "group"), f"{form} form generated"
    return on


def _feeds(graph: Graph, scale: float = 3.0) -> dict[int, Any]:
    rng = np.random.default_rng(7)
    g = graph.finalize()
    return {t.id: cast_to(scale * rng.standard_normal(t.shape or ()), t.dtype)
            for t in g.input_tensors}


def _softmax(shape: tuple[int, ...], axis: int, *, dtype: DataType = F32, stats: bool = False,
             mode: str = "none") -> Graph:
    src = LogicalTensor(0, dtype, shape)
    dst = LogicalTensor(1, dtype, shape)
    outs = [dst]
    if stats:
        stat_shape = tuple(1 if k == axis % len(shape) else d for k, d in enumerate(shape))
        outs.append(LogicalTensor(2, F32, stat_shape))
    return Graph([Op(0, "SoftMax", inputs=(src,), outputs=tuple(outs),
                     attrs={"axis": axis, "mode": mode})])


@pytest.mark.parametrize("form", FORMS)
@pytest.mark.parametrize("shape,axis", [((4, 7), 1), ((2, 300, 3), 1), ((3, 5, 1000), -1),
                                        ((6, 2, 4), 0), ((1, 1), 1), ((2, 3, 4, 5), 2),
                                        ((3, 1003), 1), ((2, 37), -1)])
def test_softmax_matches_reference_on_every_axis(shape: tuple[int, ...], axis: int,
                                                 form: str) -> None:
    graph = _softmax(shape, axis, stats=True)
    on = _on(graph, form)
    assert family_for(on.parts[0]).name == "softmax", "SoftMax goes to the softmax family"
    on.check(_feeds(graph), label=f"SoftMax {shape} axis {axis} ({form} form)")


def test_backend_picks_the_form_by_local_memory() -> None:
    graph = _softmax((4, 7), 1)
    on = OnDevice(graph)
    grouped = "__local float red" in on.compiled[0].kernel_source
    assert grouped == first_info().local_mem_dedicated, \
        "a work group per row exactly where local memory is dedicated"


@pytest.mark.parametrize("form", FORMS)
@pytest.mark.parametrize("dtype", [BF16, F16])
def test_softmax_in_narrow_dtypes(dtype: DataType, form: str) -> None:
    graph = _softmax((3, 50), 1, dtype=dtype)
    _on(graph, form).check(_feeds(graph), label=f"SoftMax {dtype} ({form} form)")


@pytest.mark.parametrize("form", FORMS)
@pytest.mark.parametrize("mode", ["none", "inf_as_zero"])
def test_rows_of_infinities_follow_the_mode(mode: str, form: str) -> None:
    """Rows of -inf, with +inf, with NaN, and rows whose leading -infs are followed by finite
    values (the running maximum of the row form starts at -inf and must not turn the sum into
    NaN)."""
    graph = _softmax((6, 21), 1, stats=True, mode=mode)
    x = _feeds(graph)[0]
    x[0, :] = -np.inf
    x[1, 2] = np.inf
    x[2, 3] = np.nan
    x[3, :11] = -np.inf
    x[4, 17:] = -np.inf
    on = _on(graph, form)
    got = on.run({0: x})
    want = execute(on.graph, {0: x})
    for tid in (1, 2):
        assert np.array_equal(np.isnan(got[tid]), np.isnan(want[tid])), \
            f"NaN positions of output {tid} agree with the reference (mode {mode})"
        finite = ~np.isnan(want[tid])
        assert np.allclose(got[tid][finite], want[tid][finite], rtol=2e-6, atol=2e-6), \
            f"output {tid} with infinite rows (mode {mode}): {got[tid]} vs {want[tid]}"


@pytest.mark.parametrize("form", FORMS)
def test_large_exponent_arguments_stay_within_tolerance(form: str) -> None:
    graph = _softmax((8, 64), 1, stats=True)
    _on(graph, form).check(_feeds(graph, scale=40.0), label=f"SoftMax wide inputs ({form})")


@pytest.mark.parametrize("form", FORMS)
def test_strided_source_rows(form: str) -> None:
    """A source produced by an earlier partition in another layout is read through its
    strides: here a transposed input array."""
    graph = _softmax((5, 9), 0).finalize()
    x = np.ascontiguousarray(_feeds(graph)[0].T).T
    assert not x.flags.c_contiguous, "the input really is strided"
    _on(graph, form).check({0: x}, label=f"SoftMax strided source ({form})")


def _post_ops(final: str) -> Graph:
    """SoftMax -> Multiply(broadcast) -> ReLU -> [TypeCast bf16 | Quantize u8]."""
    shape = (2, 16, 5)
    t = {0: LogicalTensor(0, F32, shape), 1: LogicalTensor(1, F32, shape),
         2: LogicalTensor(2, F32, (1, 16, 1)), 3: LogicalTensor(3, F32, shape),
         4: LogicalTensor(4, F32, shape)}
    ops = [Op(0, "SoftMax", inputs=(t[0],), outputs=(t[1],), attrs={"axis": 1}),
           Op(1, "Multiply", inputs=(t[1], t[2]), outputs=(t[3],)),
           Op(2, "ReLU", inputs=(t[3],), outputs=(t[4],))]
    if final == "TypeCast":
        ops.append(Op(3, "TypeCast", inputs=(t[4],), outputs=(LogicalTensor(5, BF16, shape),)))
    else:
        ops.append(Op(3, "Quantize", inputs=(t[4],), outputs=(LogicalTensor(5, U8, shape),),
                      attrs={"scales": [1 / 200.0], "zps": [3], "qtype": "per_tensor",
                             "axis": 1}))
    return Graph(ops)


@pytest.mark.parametrize("form", FORMS)
@pytest.mark.parametrize("final", ["TypeCast", "Quantize"])
def test_post_ops_epilogue(final: str, form: str) -> None:
    graph = _post_ops(final)
    on = _on(graph, form)
    assert len(on.parts) == 1 and len(on.compiled[0].plans) == 1, \
        f"SoftMax and its post-ops ending in {final} are one partition and one kernel"
    assert on.parts[0].pattern == "softmax.post_ops", f"pattern {on.parts[0].pattern}"
    on.check(_feeds(graph), label=f"softmax.post_ops -> {final}")
