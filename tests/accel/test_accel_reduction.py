"""The reduction family of the OpenCL backend: the seven reductions over various axes
(negative ones, keep_dims both ways, all axes, none; contiguous reduced blocks and strided
ones), special values, a long reduced extent, fp.reduction_post_ops, checked against the
reference in both kernel forms on the test device (an output per work item, the CPU form; a
work group per output, forced by describing the device as one with dedicated local
memory)."""

from __future__ import annotations

import dataclasses
from typing import Any

import numpy as np
import pytest
from testkit.accel import OnDevice, first_info, requires_device

from fusionspec.accel.families import BuildContext, family_for
from fusionspec.reference import execute
from fusionspec.reference.dtypes import cast_to
from fusionspec.spec.categories import REDUCTION
from fusionspec.spec.dtypes import DataType
from fusionspec.spec.graph import Graph, LogicalTensor, Op

pytestmark = [requires_device, pytest.mark.filterwarnings("ignore::RuntimeWarning"),
              pytest.mark.usefixtures("kernel_form")]

F32, BF16, S32 = DataType.f32, DataType.bf16, DataType.s32
FORMS = ("output", "group")


def _on(graph: Graph, form: str) -> OnDevice:
    """`graph` compiled in `form` (see FORMS) on the test device."""
    info = dataclasses.replace(first_info(), local_mem_dedicated=form == "group")
    on = OnDevice(graph, ctx=BuildContext.for_device(info))
    assert ("__local float red_h" in on.compiled[0].kernel_source) == (form == "group"), \
        f"{form} form generated"
    return on


def _feeds(graph: Graph, spread: float = 2.0) -> dict[int, Any]:
    rng = np.random.default_rng(5)
    g = graph.finalize()
    return {t.id: cast_to(rng.uniform(-spread, spread, t.shape or ()), t.dtype)
            for t in g.input_tensors}


def _reduce(kind: str, shape: tuple[int, ...], axes: list[int], keep: bool,
            dtype: DataType = F32) -> Graph:
    src, dst = LogicalTensor(0, dtype, shape), LogicalTensor(1, dtype, None)
    return Graph([Op(0, kind, inputs=(src,), outputs=(dst,),
                     attrs={"axes": axes, "keep_dims": keep})])


@pytest.mark.parametrize("form", FORMS)
@pytest.mark.parametrize("kind", REDUCTION)
@pytest.mark.parametrize("shape,axes,keep", [((3, 4, 5), [1], True), ((3, 4, 5), [-1, 0], False),
                                             ((2, 3, 4, 6), [0, 1, 2, 3], False),
                                             ((5, 7), [], True), ((3, 2, 21), [-1], False),
                                             ((2, 3, 4, 5), [2, 3], True)])
def test_reductions_match_reference(kind: str, shape: tuple[int, ...], axes: list[int],
                                    keep: bool, form: str) -> None:
    graph = _reduce(kind, shape, axes, keep)
    on = _on(graph, form)
    assert family_for(on.parts[0]).name == "reduction", f"{kind} goes to the reduction family"
    on.check(_feeds(graph), label=f"{kind} {shape} axes {axes} keep {keep} ({form} form)")


def test_backend_picks_the_form_by_local_memory() -> None:
    on = OnDevice(_reduce("ReduceSum", (3, 4), [1], False))
    grouped = "__local float red_h" in on.compiled[0].kernel_source
    assert grouped == first_info().local_mem_dedicated, \
        "a work group per output exactly where local memory is dedicated"


@pytest.mark.parametrize("form", FORMS)
@pytest.mark.parametrize("kind", ["ReduceSum", "ReduceL2", "ReduceMean", "ReduceL1"])
def test_long_extent_with_cancellation(kind: str, form: str) -> None:
    """Five thousand values reduced into one: the compensated sum stays within eps(f32)."""
    graph = _reduce(kind, (2, 5000), [1], False)
    _on(graph, form).check(_feeds(graph, spread=1000.0), label=f"{kind} long ({form})")


@pytest.mark.parametrize("form", FORMS)
def test_prod_and_bf16(form: str) -> None:
    graph = _reduce("ReduceProd", (4, 40), [1], True)
    _on(graph, form).check(_feeds(graph, spread=1.5), label="ReduceProd long")
    graph = _reduce("ReduceMean", (4, 40), [0], True, BF16)
    _on(graph, form).check(_feeds(graph), label="ReduceMean bf16")
    graph = _reduce("ReduceSum", (4, 40), [1], True, BF16)
    _on(graph, form).check(_feeds(graph), label="ReduceSum bf16 contiguous")


@pytest.mark.parametrize("form", FORMS)
@pytest.mark.parametrize("kind", ["ReduceMax", "ReduceMin", "ReduceSum", "ReduceL2"])
def test_nan_and_infinity_propagate(kind: str, form: str) -> None:
    graph = _reduce(kind, (3, 20), [1], False).finalize()
    x = _feeds(graph)[0]
    x[0, 1] = np.nan
    x[1, 12] = np.inf
    x[2, 0] = -np.inf
    got = _on(graph, form).run({0: x})[1]
    want = execute(graph, {0: x})[1]
    assert np.array_equal(got, want, equal_nan=True) or \
        np.allclose(got, want, rtol=2e-7, equal_nan=True), \
        f"{kind} with NaN/inf rows: {got} vs reference {want}"


def test_post_ops_and_axes_input() -> None:
    src, r = LogicalTensor(0, F32, (2, 6, 4)), LogicalTensor(1, F32, None)
    b, y, z = LogicalTensor(2, F32, (2, 1, 1)), LogicalTensor(3, F32, None), \
        LogicalTensor(4, F32, None)
    graph = Graph([Op(0, "ReduceMean", inputs=(src,), outputs=(r,),
                      attrs={"axes": [1], "keep_dims": True}),
                   Op(1, "Subtract", inputs=(r, b), outputs=(y,)),
                   Op(2, "Abs", inputs=(y,), outputs=(z,))])
    on = OnDevice(graph)
    assert len(on.parts) == 1 and on.parts[0].pattern == "fp.reduction_post_ops", \
        f"ReduceMean + 2 post-ops is one fp.reduction_post_ops partition ({on.parts[0].pattern})"
    on.check(_feeds(graph), label="fp.reduction_post_ops")
    # Axes given as an input are data: the kernel is generated once they arrive, once per
    # distinct set of axes.
    axes, summed = LogicalTensor(5, S32, (1,)), LogicalTensor(6, F32, (2, 4))
    with_input = Graph([Op(0, "ReduceSum", inputs=(src, axes), outputs=(summed,))])
    on = OnDevice(with_input)
    feeds = {0: _feeds(with_input)[0], 5: np.array([1], dtype=np.int32)}
    on.check(feeds, label="ReduceSum with its axes from an input")
    other = Graph([Op(0, "ReduceSum", inputs=(src, axes), outputs=(LogicalTensor(
        6, F32, (2, 6)),))])
    on_other = OnDevice(other)
    on_other.check({**feeds, 5: np.array([-1], dtype=np.int32)}, label="axes input [-1]")
