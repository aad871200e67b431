"""Shape inference checked against hand-computed shapes.

Each case declares no output shape, finalizes a one-op graph and compares the inferred output
shape with the value worked out by hand in the case's comment (conv: (in + pb + pe - eff_k)//s
+ 1 with eff_k = (k - 1)*d + 1; ConvTranspose: s*(in - 1) + eff_k + output_padding - pb - pe).
"""

from __future__ import annotations

from collections.abc import Mapping

import pytest
from testkit.spec_builders import CONV_2D, POOL_2D, D, op, single

from fusionspec.spec import UNKNOWN_DIM, AttrValue, Graph, LogicalTensor, Op
from fusionspec.spec.shapes import pads_for

U = UNKNOWN_DIM
Shape = tuple[int, ...] | None


def infer(kind: str, inputs: list[Shape], attrs: Mapping[str, AttrValue],
          n_outputs: int = 1) -> list[Shape]:
    built = op(kind, [(D.f32, s) for s in inputs], [(D.f32, None)] * n_outputs, attrs)
    done = single(built).finalize().ops[0]
    return [t.shape for t in done.outputs]


def conv(**attrs: AttrValue) -> dict[str, AttrValue]:
    return {**CONV_2D, **attrs}


CASES: list[tuple[str, str, list[Shape], dict[str, AttrValue], Shape]] = [
    # NCX + OIX: 10 - 3 + 1 = 8 per spatial dim, 8 output channels from the weights' O.
    ("conv NCX OIX", "Convolution", [(1, 3, 10, 10), (8, 3, 3, 3)],
     conv(data_format="NCX", weights_format="OIX"), (1, 8, 8, 8)),
    # NXC + XIO (both defaults): channels last, weights (kh, kw, I, O).
    ("conv NXC XIO", "Convolution", [(1, 10, 10, 3), (3, 3, 3, 8)], conv(), (1, 8, 8, 8)),
    # 2 groups: src channels 4 = weight I (2) x 2 groups; pads 1 keep 5.
    ("conv groups", "Convolution", [(1, 4, 5, 5), (6, 2, 3, 3)],
     conv(data_format="NCX", weights_format="OIX", groups=2, pads_begin=(1, 1),
          pads_end=(1, 1)), (1, 6, 5, 5)),
    # dilation 2: effective kernel 5, 10 - 5 + 1 = 6.
    ("conv dilations", "Convolution", [(1, 1, 10, 10), (1, 1, 3, 3)],
     conv(data_format="NCX", weights_format="OIX", dilations=(2, 2)), (1, 1, 6, 6)),
    # stride 2, pads 1/1: (10 + 2 - 3)//2 + 1 = 5.
    ("conv strides pads", "Convolution", [(1, 1, 10, 10), (1, 1, 3, 3)],
     conv(data_format="NCX", weights_format="OIX", strides=(2, 2), pads_begin=(1, 1),
          pads_end=(1, 1)), (1, 1, 5, 5)),
    # SAME_UPPER on 11 with stride 2: ceil(11/2) = 6 (explicit pads are overridden).
    ("conv SAME_UPPER", "Convolution", [(1, 1, 11, 11), (1, 1, 3, 3)],
     conv(data_format="NCX", weights_format="OIX", strides=(2, 2), auto_pad="SAME_UPPER",
          pads_begin=(9, 9), pads_end=(9, 9)), (1, 1, 6, 6)),
    ("conv SAME_LOWER", "Convolution", [(1, 1, 11, 11), (1, 1, 3, 3)],
     conv(data_format="NCX", weights_format="OIX", strides=(2, 2), auto_pad="SAME_LOWER"),
     (1, 1, 6, 6)),
    # VALID ignores the explicit pads: (10 - 3)//2 + 1 = 4.
    ("conv VALID", "Convolution", [(1, 1, 10, 10), (1, 1, 3, 3)],
     conv(data_format="NCX", weights_format="OIX", strides=(2, 2), auto_pad="VALID",
          pads_begin=(5, 5), pads_end=(5, 5)), (1, 1, 4, 4)),
    # 1-D convolution: rank 3.
    ("conv 1-D", "Convolution", [(2, 7, 3), (3, 3, 5)],
     {"strides": (1,), "pads_begin": (0,), "pads_end": (0,), "dilations": (1,)}, (2, 5, 5)),
    # IOX (IC 4, OC/G 3): 2*(5 - 1) + 3 + output_padding 1 - pads 2 = 10.
    ("convtranspose IOX output_padding", "ConvTranspose", [(1, 4, 5, 5), (4, 3, 3, 3)],
     conv(data_format="NCX", weights_format="IOX", strides=(2, 2), pads_begin=(1, 1),
          pads_end=(1, 1), output_padding=(1, 1)), (1, 3, 10, 10)),
    # XOI (kh, kw, OC/G 3, IC 4), channels last: 2*(5 - 1) + 3 = 11.
    ("convtranspose NXC XOI", "ConvTranspose", [(1, 5, 5, 4), (3, 3, 3, 4)],
     conv(strides=(2, 2)), (1, 11, 11, 3)),
    # groups 2: output channels = OC/G 3 x 2; stride 1: 5 + 3 - 1 = 7.
    ("convtranspose groups", "ConvTranspose", [(1, 4, 5, 5), (4, 3, 3, 3)],
     conv(data_format="NCX", weights_format="IOX", groups=2), (1, 6, 7, 7)),
    # oneDNN's own dumps carry output_padding as 12 zeros (its DNNL_MAX_NDIMS default).
    ("convtranspose 12-zero output_padding", "ConvTranspose", [(1, 4, 5, 5), (4, 3, 3, 3)],
     conv(data_format="NCX", weights_format="IOX", output_padding=(0,) * 12), (1, 3, 7, 7)),
    ("matmul 1-D src", "MatMul", [(3,), (3, 2)], {}, (2,)),
    ("matmul 1-D weights", "MatMul", [(2, 3), (3,)], {}, (2,)),
    ("matmul batch broadcast", "MatMul", [(2, 1, 4, 3), (5, 3, 6)], {}, (2, 5, 4, 6)),
    ("matmul transpose_a", "MatMul", [(3, 4), (3, 5)], {"transpose_a": True}, (4, 5)),
    ("matmul transpose_b", "MatMul", [(2, 3), (5, 3)], {"transpose_b": True}, (2, 5)),
    ("matmul both transposed", "MatMul", [(7, 3, 2), (4, 3)],
     {"transpose_a": True, "transpose_b": True}, (7, 2, 4)),
    # 5 wide, kernel 2, stride 2: floor(3/2) + 1 = 2, ceil(3/2) + 1 = 3.
    ("maxpool floor", "MaxPool", [(1, 1, 5, 5)], POOL_2D, (1, 1, 2, 2)),
    ("maxpool ceil", "MaxPool", [(1, 1, 5, 5)], {**POOL_2D, "rounding_type": "ceil"},
     (1, 1, 3, 3)),
    ("avgpool ceil", "AvgPool", [(1, 1, 5, 5)],
     {**POOL_2D, "rounding_type": "ceil", "exclude_pad": True}, (1, 1, 3, 3)),
    # MaxPool dilation 2: effective kernel 3, (7 - 3)//1 + 1 = 5; NXC by default.
    ("maxpool dilations NXC", "MaxPool", [(1, 7, 7, 2)],
     {"strides": (1, 1), "pads_begin": (0, 0), "pads_end": (0, 0), "kernel": (2, 2),
      "dilations": (2, 2)}, (1, 5, 5, 2)),
    ("maxpool 12-one dilations", "MaxPool", [(1, 1, 5, 5)],
     {**POOL_2D, "dilations": (1,) * 12}, (1, 1, 2, 2)),
    ("interpolate sizes NCX", "Interpolate", [(1, 3, 4, 4)],
     {"mode": "linear", "sizes": (8, 6), "data_format": "NCX"}, (1, 3, 8, 6)),
    # scales 1.5 and 2 on 3 and 5: floor(4.5) = 4, 10.
    ("interpolate scales NCX", "Interpolate", [(1, 3, 3, 5)],
     {"mode": "nearest", "scales": (1.5, 2.0), "data_format": "NCX"}, (1, 3, 4, 10)),
    ("interpolate sizes NXC", "Interpolate", [(1, 4, 4, 3)], {"mode": "bilinear",
                                                              "sizes": (2, 2)}, (1, 2, 2, 3)),
    ("reduce keep_dims negative axis", "ReduceSum", [(2, 3, 4)],
     {"axes": (-1,), "keep_dims": True}, (2, 3, 1)),
    ("reduce two axes", "ReduceMean", [(2, 3, 4)], {"axes": (0, -1)}, (3,)),
    ("reduce all axes", "ReduceMax", [(2, 3)], {"axes": (0, 1)}, ()),
    ("softmax keeps the shape", "SoftMax", [(4, 5, 6)], {"axis": -1}, (4, 5, 6)),
    ("biasadd backward NCX", "BiasAddBackward", [(2, 5, 3, 3)], {"data_format": "NCX"}, (5,)),
    ("binary two-way broadcast", "Subtract", [(2, 1), (1, 3)], {}, (2, 3)),
    ("binary rank-0 operand", "Divide", [(2, 3), ()], {}, (2, 3)),
]


@pytest.mark.parametrize(("label", "kind", "inputs", "attrs", "want"), CASES,
                         ids=[c[0] for c in CASES])
def test_inferred_shape(label: str, kind: str, inputs: list[Shape],
                        attrs: dict[str, AttrValue], want: Shape) -> None:
    got = infer(kind, inputs, attrs)[0]
    assert got == want, f"{label}: inferred {got}, hand-computed {want}"


def test_softmax_stats_shape() -> None:
    got = infer("SoftMax", [(4, 5)], {"axis": 1}, n_outputs=2)
    assert got == [(4, 5), (4, 1)], f"SoftMax dst/stats shapes {got}, want [(4, 5), (4, 1)]"


@pytest.mark.parametrize(("auto_pad", "begin", "end"), [("SAME_UPPER", (0,), (1,)),
                                                        ("SAME_LOWER", (1,), (0,))])
def test_same_padding_puts_the_odd_pad(auto_pad: str, begin: tuple[int, ...],
                                       end: tuple[int, ...]) -> None:
    # kernel 2, stride 1 on 4: total padding 1, at the end for UPPER and the start for LOWER.
    the_op = Op(0, "Convolution", attrs={"auto_pad": auto_pad, "pads_begin": (0,),
                                         "pads_end": (0,)})
    got = pads_for(the_op, (4,), (2,), (1,), (1,))
    assert got == (begin, end), f"{auto_pad}: pads {got}, want {(begin, end)}"


# -- partially known shapes ---------------------------------------------------------------------

PARTIAL: list[tuple[str, str, list[Shape], dict[str, AttrValue], Shape]] = [
    ("conv unknown batch", "Convolution", [(U, 3, 10, 10), (8, 3, 3, 3)],
     conv(data_format="NCX", weights_format="OIX"), (U, 8, 8, 8)),
    ("conv unknown spatial dim", "Convolution", [(1, 3, U, 10), (8, 3, 3, 3)],
     conv(data_format="NCX", weights_format="OIX"), (1, 8, U, 8)),
    ("conv unknown src shape", "Convolution", [None, (8, 3, 3, 3)],
     conv(data_format="NCX", weights_format="OIX"), None),
    ("matmul unknown rows", "MatMul", [(U, 3), (3, 4)], {}, (U, 4)),
    ("relu unknown dim", "ReLU", [(2, U)], {}, (2, U)),
    ("add unknown against 1", "Add", [(U, 3), (1, 3)], {}, (U, 3)),
    ("add unknown against 4", "Add", [(U, 3), (4, 3)], {}, (4, 3)),
    ("reduce unknown rank", "ReduceSum", [None], {"axes": (0,)}, None),
]


@pytest.mark.parametrize(("label", "kind", "inputs", "attrs", "want"), PARTIAL,
                         ids=[c[0] for c in PARTIAL])
def test_partially_known_shapes(label: str, kind: str, inputs: list[Shape],
                                attrs: dict[str, AttrValue], want: Shape) -> None:
    got = infer(kind, inputs, attrs)[0]
    assert got == want, f"{label}: inferred {got}, want {want}"


def test_unknown_dims_are_filled_through_a_chain() -> None:
    # x (2, 8) -> ReLU -> y (unknown) -> Tanh -> z (2, ?): both y and z become (2, 8).
    x = LogicalTensor(0, D.f32, (2, 8))
    y = LogicalTensor(1, D.f32, None)
    z = LogicalTensor(2, D.f32, (2, U))
    graph = Graph((Op(0, "ReLU", (x,), (y,)), Op(1, "Tanh", (y,), (z,)))).finalize()
    shapes = {t.id: t.shape for o in graph.ops for t in (*o.inputs, *o.outputs)}
    assert shapes == {0: (2, 8), 1: (2, 8), 2: (2, 8)}, f"filled shapes {shapes}"


def test_declared_unknown_dims_accept_any_inferred_size() -> None:
    graph = single(op("Convolution", [(D.f32, (1, 3, 10, 10)), (D.f32, (8, 3, 3, 3))],
                      [(D.f32, (U, 8, U, U))], conv(data_format="NCX", weights_format="OIX")))
    got = graph.finalize().ops[0].outputs[0].shape
    assert got == (1, 8, 8, 8), f"declared (?, 8, ?, ?) should be filled to (1, 8, 8, 8), got {got}"


def test_reduction_axes_from_the_input_leave_the_declared_shape() -> None:
    # Regression: with the axes on the optional input, inference used the (empty) attribute
    # and rejected any declared reduced shape. The axes are data: the declaration stands.
    src = LogicalTensor(0, D.f32, (2, 3, 6))
    axes = LogicalTensor(1, D.s32, (1,))
    out = LogicalTensor(2, D.f32, (2, 6))
    graph = Graph((Op(0, "ReduceMax", (src, axes), (out,)),)).finalize()
    got = graph.ops[0].outputs[0].shape
    assert got == (2, 6), f"the declared (2, 6) of a reduction over input axes stands, got {got}"
