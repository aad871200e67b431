"""Validation closes the gap with execution: every attribute value or id that the executor or a
backend would reject, or turn into NaN, is refused by `Graph.finalize()` with a typed error
naming its rule (Interpolate sizes and scales, window values past 32 bits, MaxPool dilations,
quantization axes and zero scales, repeated reduction axes, negative BatchNorm epsilon,
non-finite f32 attributes, non-integer ids and dims)."""

from __future__ import annotations

from collections.abc import Callable

import pytest

from fusionspec.spec.dtypes import DataType
from fusionspec.spec.errors import GraphError, GraphRule
from fusionspec.spec.graph import AttrValue, Graph, LogicalTensor, Op

F32, U8 = DataType.f32, DataType.u8
NCX4 = (1, 1, 4, 4)


def _one(kind: str, ins: tuple[LogicalTensor, ...], out: LogicalTensor,
         **attrs: AttrValue) -> Graph:
    return Graph([Op(0, kind, inputs=ins, outputs=(out,), attrs=attrs)])


def _pool(**attrs: AttrValue) -> Graph:
    base: dict[str, AttrValue] = {"strides": (1, 1), "kernel": (2, 2), "pads_begin": (0, 0),
                                  "pads_end": (0, 0), "data_format": "NCX"}
    return _one("MaxPool", (LogicalTensor(0, F32, NCX4),), LogicalTensor(1, F32),
                **{**base, **attrs})


def _conv(**attrs: AttrValue) -> Graph:
    base: dict[str, AttrValue] = {"strides": (1, 1), "pads_begin": (0, 0), "pads_end": (0, 0),
                                  "dilations": (1, 1), "data_format": "NCX",
                                  "weights_format": "OIX"}
    return _one("Convolution", (LogicalTensor(0, F32, NCX4), LogicalTensor(1, F32, (1, 1, 2, 2))),
                LogicalTensor(2, F32), **{**base, **attrs})


def _interp(**attrs: AttrValue) -> Graph:
    return _one("Interpolate", (LogicalTensor(0, F32, NCX4),), LogicalTensor(1, F32),
                mode="nearest", data_format="NCX", **attrs)


def _quant(**attrs: AttrValue) -> Graph:
    return _one("Quantize", (LogicalTensor(0, F32, (2, 3)),), LogicalTensor(1, U8, (2, 3)),
                **attrs)


def _unary(kind: str, **attrs: AttrValue) -> Graph:
    return _one(kind, (LogicalTensor(0, F32, (2,)),), LogicalTensor(1, F32, (2,)), **attrs)


def _bn(epsilon: float) -> Graph:
    ins = (LogicalTensor(0, F32, (1, 2, 3, 3)),
           *(LogicalTensor(i, F32, (2,)) for i in range(1, 5)))
    return _one("BatchNormInference", ins, LogicalTensor(5, F32, (1, 2, 3, 3)),
                epsilon=epsilon, data_format="NCX")


CASES: dict[str, tuple[Callable[[], Graph], str]] = {
    "Interpolate sizes 0": (lambda: _interp(sizes=(0, 2)), GraphRule.attr_range),
    "Interpolate sizes negative": (lambda: _interp(sizes=(-2, 2)), GraphRule.attr_range),
    "Interpolate scales 3e38": (lambda: _interp(scales=(3e38, 1.0)), GraphRule.shape_infer),
    "Interpolate scales 0": (lambda: _interp(scales=(0.0, 1.0)), GraphRule.shape_infer),
    "MaxPool dilation 0": (lambda: _pool(dilations=(0, 1)), GraphRule.attr_range),
    "MaxPool dilation -1": (lambda: _pool(dilations=(-1, 1)), GraphRule.attr_range),
    "Convolution stride 2^62": (lambda: _conv(strides=(2**62, 1)), GraphRule.attr_range),
    "Convolution pad 2^40": (lambda: _conv(pads_begin=(2**40, 0)), GraphRule.attr_range),
    "Quantize axis 5 of rank 2": (lambda: _quant(qtype="per_channel", axis=5,
                                                 scales=(1.0, 1.0, 1.0), zps=(0, 0, 0)),
                                  "schema.attr.quant_scales_zps"),
    "Quantize scale 0": (lambda: _quant(qtype="per_tensor", scales=(0.0,), zps=(0,)),
                         "schema.attr.quant_scales_zps"),
    "ReduceSum axes repeated": (lambda: _one("ReduceSum", (LogicalTensor(0, F32, (2, 3)),),
                                             LogicalTensor(1, F32), axes=(1, -1)),
                                GraphRule.shape_infer),
    "BatchNormInference epsilon < 0": (lambda: _bn(-1.0), GraphRule.attr_range),
    "Elu alpha NaN": (lambda: _unary("Elu", alpha=float("nan")), GraphRule.attr_finite),
    "Clamp min -inf": (lambda: _unary("Clamp", min=-float("inf"), max=1.0),
                       GraphRule.attr_finite),
    "LeakyReLU alpha inf": (lambda: _unary("LeakyReLU", alpha=float("inf")),
                            GraphRule.attr_finite),
    "float dims": (lambda: _one("ReLU", (LogicalTensor(0, F32, (2.5,)),),  # type: ignore[arg-type]
                                LogicalTensor(1, F32, (2,))), GraphRule.value_types),
    "string op id": (lambda: Graph([Op("a", "ReLU",  # type: ignore[arg-type]
                                       inputs=(LogicalTensor(0, F32, (2,)),),
                                       outputs=(LogicalTensor(1, F32, (2,)),))]),
                     GraphRule.value_types),
    "string tensor id": (lambda: _one("ReLU", (LogicalTensor("x", F32, (2,)),),  # type: ignore[arg-type]
                                      LogicalTensor(1, F32, (2,))), GraphRule.value_types),
}


@pytest.mark.parametrize("name", sorted(CASES))
def test_finalize_refuses_values_execution_cannot_take(name: str) -> None:
    make, rule = CASES[name]
    with pytest.raises(GraphError) as caught:
        make().finalize()
    assert caught.value.rule == rule, \
        f"{name}: finalize raised {caught.value.rule} ({caught.value}), expected {rule}"


def test_values_inside_the_ranges_still_validate() -> None:
    _pool(dilations=(1, 2)).finalize()
    _conv(strides=(2, 1)).finalize()
    _interp(scales=(1.5, 0.5)).finalize()
    _bn(0.0).finalize()
    _unary("Clamp", min=-3.0, max=3.0).finalize()
