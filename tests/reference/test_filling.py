"""Input filling: determinism, exactly representable values per dtype, op domains (Log, Sqrt,
Pow, BN variance, Divide), Quantize sources that land on integers, shape-carrying inputs."""

from __future__ import annotations

from typing import Any

import ml_dtypes
import numpy as np
import pytest
from testkit.reference import D, tensor

from fusionspec.reference import ExecutionError, execute, fill_inputs
from fusionspec.reference.dtypes import numpy_dtype
from fusionspec.reference.filling import fill_tensor
from fusionspec.spec.graph import Graph, Op, Partition


def _unary_graph(kind: str, dtype: D = D.f32, shape: tuple[int, ...] = (4, 64),
                 **attrs: Any) -> Graph:
    return Graph([Op(0, kind, (tensor(0, dtype, shape),), (tensor(1, dtype, shape),), attrs)])


def test_same_seed_same_data_other_seed_other_data() -> None:
    graph = _unary_graph("ReLU")
    a, b, c = fill_inputs(graph, 3), fill_inputs(graph, 3), fill_inputs(graph, 4)
    assert np.array_equal(a[0], b[0]), "the same seed gives the same data"
    assert not np.array_equal(a[0], c[0]), "another seed gives other data"


def test_a_tensor_data_does_not_depend_on_the_rest_of_the_graph() -> None:
    alone = fill_inputs(_unary_graph("Tanh"), 1)[0]
    x, y, z = tensor(0, D.f32, (4, 64)), tensor(5, D.f32, (4, 64)), tensor(6, D.f32, (4, 64))
    bigger = Graph([Op(0, "Add", (y, x), (z,))])
    assert np.array_equal(fill_inputs(bigger, 1)[0], alone), \
        "tensor 0 gets the same data whatever else the graph holds"


@pytest.mark.parametrize("dtype", [D.f32, D.bf16, D.f16])
def test_float_fills_are_exact_small_multiples_of_an_eighth(dtype: D) -> None:
    got = fill_inputs(_unary_graph("Abs", dtype), 0)[0]
    assert got.dtype == numpy_dtype(dtype), f"{dtype} filled as {got.dtype}"
    values = got.astype(np.float64)
    assert np.array_equal(values * 8, np.round(values * 8)), f"{dtype} values are k/8"
    assert values.min() >= -4 and values.max() <= 4, f"{dtype} values stay in [-4, 4]"
    assert len(np.unique(values)) > 20, "the fill uses many distinct values"


@pytest.mark.parametrize(("dtype", "lo", "hi"), [(D.s8, -8, 8), (D.u8, 0, 16),
                                                 (D.s32, -16, 16)])
def test_integer_fills_are_small(dtype: D, lo: int, hi: int) -> None:
    t = tensor(0, dtype, (1000,))
    got = fill_tensor(t, (), 0)
    assert got.dtype == numpy_dtype(dtype), f"{dtype} filled as {got.dtype}"
    assert got.min() >= lo and got.max() <= hi, f"{dtype} values in [{lo}, {hi}]"


def test_boolean_and_f8_fills() -> None:
    flags = fill_tensor(tensor(0, D.boolean, (100,)), (), 0)
    assert flags.dtype == np.bool_ and 0 < flags.sum() < 100, "booleans are mixed"
    f8 = fill_tensor(tensor(0, D.f8_e4m3, (100,)), (), 0)
    assert f8.dtype == np.dtype(ml_dtypes.float8_e4m3fn), f"f8_e4m3 filled as {f8.dtype}"
    assert np.isfinite(f8.astype(np.float32)).all(), "f8 fills are finite"


@pytest.mark.parametrize(("kind", "attrs"), [("Log", {}), ("Sqrt", {}), ("Pow", {"beta": 0.5})])
def test_domain_limited_unary_ops_get_positive_inputs(kind: str, attrs: dict[str, Any]) -> None:
    graph = _unary_graph(kind, **attrs)
    data = fill_inputs(graph, 0)
    assert data[0].min() >= 0.25, f"{kind} input is positive, min {data[0].min()}"
    out = execute(graph, data)[1]
    assert np.isfinite(out).all(), f"{kind} of the filled input is finite everywhere"


def test_divisor_and_reciprocal_are_away_from_zero() -> None:
    a, b, c = (tensor(i, D.f32, (2000,)) for i in range(3))
    graph = Graph([Op(0, "Divide", (a, b), (c,))])
    data = fill_inputs(graph, 0)
    assert np.abs(data[1]).min() >= 0.5, "Divide's divisor has magnitude >= 0.5"
    assert (data[1] < 0).any() and (data[1] > 0).any(), "the divisor takes both signs"
    assert (data[0] == 0).any(), "the dividend is unconstrained (zeros allowed)"


def test_batchnorm_variance_is_positive_and_output_finite() -> None:
    src, out = tensor(0, D.f32, (2, 3, 5)), tensor(9, D.f32, (2, 3, 5))
    params = [tensor(i, D.f32, (5,)) for i in range(1, 5)]
    graph = Graph([Op(0, "BatchNormInference", (src, *params), (out,), {"epsilon": 0.0})])
    data = fill_inputs(graph, 0)
    assert data[4].min() > 0, f"variance (input 4) is positive, min {data[4].min()}"
    assert np.isfinite(execute(graph, data)[9]).all(), "BN of filled inputs is finite"


def test_reduce_prod_stays_finite_over_long_products() -> None:
    graph = Graph([Op(0, "ReduceProd", (tensor(0, D.f16, (4, 4096)),),
                      (tensor(1, D.f16, (4,)),), {"axes": [1]})])
    data = fill_inputs(graph, 0)
    magnitudes = set(np.abs(data[0].astype(np.float32)).ravel().tolist())
    assert magnitudes <= {0.5, 1.0, 2.0}, f"ReduceProd inputs are +-{{0.5, 1, 2}}: {magnitudes}"


@pytest.mark.parametrize("dst", [D.u8, D.s8])
def test_quantize_sources_land_on_integers_inside_the_range(dst: D) -> None:
    x, q = tensor(0, D.f32, (3, 400)), tensor(1, dst, (3, 400))
    attrs = {"qtype": "per_channel", "axis": 0, "scales": [0.5, 0.1, 3.0], "zps": [0, 0, 0]}
    part = Partition(0, (Op(0, "Quantize", (x,), (q,), attrs),), (x,), (q,))
    data = fill_inputs(part, 0)
    scaled = data[0].astype(np.float64) / np.array([0.5, 0.1, 3.0])[:, None]
    assert np.abs(scaled - np.round(scaled)).max() < 1e-4, "x/scale is (nearly) an integer"
    got = execute(part, data)[1].astype(np.int64)
    lo, hi = (-8, 8) if dst is D.s8 else (0, 16)
    assert got.min() >= lo and got.max() <= hi, f"quantized values stay in [{lo}, {hi}]"
    assert np.array_equal(got, np.round(scaled)), "no tie or saturation changes the result"


def test_shape_carrying_inputs_hold_the_implied_values() -> None:
    src, axes = tensor(0, D.f32, (2, 3, 4)), tensor(1, D.s32, (2,))
    reduce = Op(0, "ReduceSum", (src, axes), (tensor(2, D.f32, (2, 1, 1)),), {"keep_dims": True})
    data = fill_tensor(axes, [(reduce, 1)], 0)
    assert sorted(data.tolist()) == [1, 2], f"axes implied by [2,3,4] -> [2,1,1]: {data}"
    dropped = Op(0, "ReduceSum", (src, axes), (tensor(2, D.f32, (3,)),))
    assert sorted(fill_tensor(axes, [(dropped, 1)], 0).tolist()) == [0, 2], \
        "without keep_dims, [2,3,4] -> [3] removes axes 0 and 2"
    sizes = tensor(3, D.s32, (2,))
    interp = Op(1, "Interpolate", (tensor(0, D.f32, (1, 4, 4, 2)), sizes),
                (tensor(4, D.f32, (1, 8, 6, 2)),), {"mode": "nearest"})
    assert fill_tensor(sizes, [(interp, 1)], 0).tolist() == [8, 6], \
        "Interpolate sizes are the NXC spatial dims of its output"


def test_unknown_shape_cannot_be_filled() -> None:
    with pytest.raises(ExecutionError, match="shape is not known"):
        fill_tensor(tensor(0, D.f32, (2, -1)), (), 0)


def test_long_matmul_reductions_get_a_thinned_src() -> None:
    src, wei, dst = (tensor(0, D.f16, (8, 4096)), tensor(1, D.f16, (4096, 16)),
                     tensor(2, D.f16, (8, 16)))
    graph = Graph([Op(0, "MatMul", (src, wei), (dst,))])
    data = fill_inputs(graph, 0)
    nonzero = np.count_nonzero(data[0].astype(np.float32), axis=1)
    assert nonzero.max() < 200, f"about 64 of 4096 src values per row are non-zero: {nonzero}"
    assert np.count_nonzero(data[1].astype(np.float32)) > 0.9 * data[1].size, \
        "the weights are not thinned (their products are already sparse)"
    assert np.isfinite(execute(graph, data)[2].astype(np.float32)).all(), \
        "an f16 MatMul over K = 4096 stays finite"
    short = Graph([Op(0, "MatMul", (tensor(0, D.f32, (8, 16)), tensor(1, D.f32, (16, 4))),
                      (tensor(2, D.f32, (8, 4)),))])
    assert np.count_nonzero(fill_inputs(short, 0)[0]) > 0.8 * 128, \
        "a short reduction keeps a dense src"
