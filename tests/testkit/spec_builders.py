"""Test helpers: one valid op for every op schema, and small edits that break it in one way.

`VALID` holds, for each of the 47 kinds, an op with realistic shapes and attributes whose
declared output shapes are hand-computed. Tests derive broken variants from it with `edit`
(change a port's dtype or shape, set or drop attributes, change the port counts), so every
rule is exercised against every kind without writing 47 x N graphs by hand.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field

from fusionspec.spec import AttrValue, DataType, Graph, LogicalTensor, Op
from fusionspec.spec.categories import BINARY, REDUCTION

__all__ = ["OpCase", "VALID", "tensor", "op", "single", "edit", "D"]

D = DataType
Shape = tuple[int, ...] | None
#: (dtype, shape) of one port.
Port = tuple[DataType, Shape]

INPUT_IDS = 1  # inputs are tensors 1, 2, ...; outputs 101, 102, ...
OUTPUT_IDS = 101


def tensor(tid: int, dtype: DataType = D.f32, shape: Shape = None) -> LogicalTensor:
    return LogicalTensor(tid, dtype, shape)


def op(kind: str, inputs: Sequence[Port], outputs: Sequence[Port],
       attrs: Mapping[str, AttrValue] | None = None, op_id: int = 7) -> Op:
    """An op whose inputs are tensors 1, 2, ... and outputs 101, 102, ..."""
    ins = tuple(tensor(INPUT_IDS + i, d, s) for i, (d, s) in enumerate(inputs))
    outs = tuple(tensor(OUTPUT_IDS + i, d, s) for i, (d, s) in enumerate(outputs))
    return Op(op_id, kind, ins, outs, dict(attrs or {}))


def single(the_op: Op) -> Graph:
    return Graph((the_op,))


@dataclass(frozen=True)
class OpCase:
    """A valid op of `kind`: ports as (dtype, shape) and attributes."""

    kind: str
    inputs: tuple[Port, ...]
    outputs: tuple[Port, ...]
    attrs: Mapping[str, AttrValue] = field(default_factory=dict)

    def build(self, op_id: int = 7) -> Op:
        return op(self.kind, self.inputs, self.outputs, self.attrs, op_id)


def edit(case: OpCase, *, inputs: Sequence[Port] | None = None,
         outputs: Sequence[Port] | None = None, set_attrs: Mapping[str, AttrValue] | None = None,
         drop: Sequence[str] = (), input_dtype: Mapping[int, DataType] | None = None,
         output_dtype: Mapping[int, DataType] | None = None,
         output_shape: Mapping[int, Shape] | None = None) -> Op:
    """`case` built with one or more changes."""
    ins = list(case.inputs if inputs is None else inputs)
    outs = list(case.outputs if outputs is None else outputs)
    for index, dtype in (input_dtype or {}).items():
        ins[index] = (dtype, ins[index][1])
    for index, dtype in (output_dtype or {}).items():
        outs[index] = (dtype, outs[index][1])
    for index, shape in (output_shape or {}).items():
        outs[index] = (outs[index][0], shape)
    attrs = {k: v for k, v in case.attrs.items() if k not in drop}
    attrs.update(set_attrs or {})
    return op(case.kind, ins, outs, attrs)


def _f32(*shape: int) -> Port:
    return (D.f32, tuple(shape))


_UNARY_ATTRS: dict[str, dict[str, AttrValue]] = {
    "Abs": {}, "Clamp": {"min": -1.0, "max": 1.0}, "Elu": {"alpha": 1.0}, "Exp": {},
    "GELU": {}, "HardSwish": {}, "LeakyReLU": {"alpha": 0.01}, "Log": {}, "Sigmoid": {},
    "SoftPlus": {}, "Pow": {"beta": 2.0}, "ReLU": {}, "Round": {}, "Sqrt": {}, "Square": {},
    "Tanh": {}, "Reciprocal": {}, "Reorder": {},
}
#: Convolution attributes for 2 spatial dims, no padding, unit strides and dilations.
CONV_2D: dict[str, AttrValue] = {"strides": (1, 1), "pads_begin": (0, 0), "pads_end": (0, 0),
                                 "dilations": (1, 1)}
POOL_2D: dict[str, AttrValue] = {"strides": (2, 2), "pads_begin": (0, 0), "pads_end": (0, 0),
                                 "kernel": (2, 2), "data_format": "NCX"}


def _cases() -> list[OpCase]:
    cases = [OpCase(k, (_f32(2, 3, 4),), (_f32(2, 3, 4),), a) for k, a in _UNARY_ATTRS.items()]
    cases += [OpCase(k, (_f32(2, 3, 4), _f32(1, 3, 1)), (_f32(2, 3, 4),)) for k in BINARY]
    cases += [OpCase(k, (_f32(2, 3, 4),), (_f32(2, 4),), {"axes": (1,)}) for k in REDUCTION]
    cases += [
        # 8x8 input, 3x3 kernel, pads 1: 8 + 2 - 3 + 1 = 8.
        OpCase("Convolution", (_f32(1, 3, 8, 8), _f32(4, 3, 3, 3), _f32(4)), (_f32(1, 4, 8, 8),),
               {**CONV_2D, "pads_begin": (1, 1), "pads_end": (1, 1), "data_format": "NCX",
                "weights_format": "OIX"}),
        # IOX weights (IC=4, OC/G=2, 3, 3), stride 2: 2*(5-1) + 3 = 11.
        OpCase("ConvTranspose", (_f32(1, 4, 5, 5), _f32(4, 2, 3, 3)), (_f32(1, 2, 11, 11),),
               {**CONV_2D, "strides": (2, 2), "data_format": "NCX", "weights_format": "IOX"}),
        OpCase("MatMul", (_f32(2, 3, 4), _f32(4, 5), _f32(5)), (_f32(2, 3, 5),)),
        OpCase("Interpolate", (_f32(1, 3, 3, 3),), (_f32(1, 3, 6, 6),),
               {"mode": "nearest", "sizes": (6, 6), "data_format": "NCX"}),
        OpCase("BiasAdd", (_f32(2, 4, 4, 3), _f32(3)), (_f32(2, 4, 4, 3),)),
        OpCase("BatchNormInference", (_f32(2, 3, 4, 4), *[_f32(3)] * 4), (_f32(2, 3, 4, 4),),
               {"epsilon": 1e-5, "data_format": "NCX"}),
        OpCase("AvgPool", (_f32(1, 3, 8, 8),), (_f32(1, 3, 4, 4),),
               {**POOL_2D, "exclude_pad": False}),
        OpCase("MaxPool", (_f32(1, 3, 8, 8),), (_f32(1, 3, 4, 4),), POOL_2D),
        OpCase("Quantize", (_f32(2, 3),), ((D.u8, (2, 3)),), {"scales": (0.5,), "zps": (3,)}),
        OpCase("Dequantize", ((D.u8, (2, 3)),), (_f32(2, 3),), {"scales": (0.5,), "zps": (3,)}),
        OpCase("TypeCast", (_f32(2, 3),), ((D.bf16, (2, 3)),)),
        OpCase("SoftMax", (_f32(2, 5),), (_f32(2, 5),)),
        OpCase("ConvolutionBackwardWeights", (_f32(1, 3, 8, 8), _f32(1, 4, 6, 6)),
               (_f32(4, 3, 3, 3),),
               {**CONV_2D, "data_format": "NCX", "weights_format": "OIX",
                "weights_shape": (4, 3, 3, 3)}),
        OpCase("BiasAddBackward", (_f32(2, 4, 4, 3),), (_f32(3),)),
        OpCase("ReLUBackward", (_f32(2, 3), _f32(2, 3)), (_f32(2, 3),)),
        OpCase("BatchNormTrainingBackward",
               (_f32(2, 3, 4, 4), _f32(2, 3, 4, 4), _f32(3), _f32(3), _f32(3)),
               (_f32(2, 3, 4, 4), _f32(3), _f32(3)), {"epsilon": 1e-5, "data_format": "NCX"}),
    ]
    return cases


#: One valid op per schema kind.
VALID: dict[str, OpCase] = {case.kind: case for case in _cases()}
