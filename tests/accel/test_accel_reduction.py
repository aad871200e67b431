"""The reduction family of the OpenCL backend: the seven reductions over various axes
(negative ones, keep_dims both ways, all axes, none), special values, a long reduced extent,
fp.reduction_post_ops, checked against the reference; and the conformance suite on
fp.reduction_post_ops."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest
from testkit.accel import OnDevice, requires_device

from fusionspec.accel.errors import UnsupportedPartitionError
from fusionspec.accel.families import family_for
from fusionspec.reference import execute
from fusionspec.reference.dtypes import cast_to
from fusionspec.spec.categories import REDUCTION
from fusionspec.spec.dtypes import DataType
from fusionspec.spec.graph import Graph, LogicalTensor, Op

pytestmark = [requires_device, pytest.mark.filterwarnings("ignore::RuntimeWarning")]

F32, BF16, S32 = DataType.f32, DataType.bf16, DataType.s32


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


@pytest.mark.parametrize("kind", REDUCTION)
@pytest.mark.parametrize("shape,axes,keep", [((3, 4, 5), [1], True), ((3, 4, 5), [-1, 0], False),
                                             ((2, 3, 4, 6), [0, 1, 2, 3], False),
                                             ((5, 7), [], True)])
def test_reductions_match_reference(kind: str, shape: tuple[int, ...], axes: list[int],
                                    keep: bool) -> None:
    graph = _reduce(kind, shape, axes, keep)
    on = OnDevice(graph)
    assert family_for(on.parts[0]).name == "reduction", f"{kind} goes to the reduction family"
    on.check(_feeds(graph), label=f"{kind} {shape} axes {axes} keep {keep}")


@pytest.mark.parametrize("kind", ["ReduceSum", "ReduceL2", "ReduceMean"])
def test_long_extent_with_cancellation(kind: str) -> None:
    """Five thousand values reduced into one: the compensated sum stays within eps(f32)."""
    graph = _reduce(kind, (2, 5000), [1], False)
    OnDevice(graph).check(_feeds(graph, spread=1000.0), label=f"{kind} long")


def test_prod_and_bf16() -> None:
    graph = _reduce("ReduceProd", (4, 40), [1], True)
    OnDevice(graph).check(_feeds(graph, spread=1.5), label="ReduceProd long")
    graph = _reduce("ReduceMean", (4, 40), [0], True, BF16)
    OnDevice(graph).check(_feeds(graph), label="ReduceMean bf16")


@pytest.mark.parametrize("kind", ["ReduceMax", "ReduceMin", "ReduceSum"])
def test_nan_and_infinity_propagate(kind: str) -> None:
    graph = _reduce(kind, (3, 4), [1], False).finalize()
    x = _feeds(graph)[0]
    x[0, 1] = np.nan
    x[1, 2] = np.inf
    x[2, 0] = -np.inf
    got = OnDevice(graph).run({0: x})[1]
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
    axes = LogicalTensor(5, S32, (1,))
    with_input = Graph([Op(0, "ReduceSum", inputs=(src, axes), outputs=(r,))])
    with pytest.raises(UnsupportedPartitionError, match="axes given as an input"):
        OnDevice(with_input)
