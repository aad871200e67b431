"""Every op kind of the post-op generator, run alone as a kernel on the OpenCL device, against
the reference op on hypothesis-drawn f32 values (NaN, infinities, signed zeros and subnormals
included), within the suite's tolerance for that op."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest
from hypothesis import example, given, settings
from hypothesis import strategies as st
from hypothesis.extra import numpy as hnp
from testkit.accel import OnDevice, requires_device

from fusionspec.accel.codegen.epilogue import supported_kinds
from fusionspec.reference.dtypes import cast_to
from fusionspec.spec.dtypes import DataType
from fusionspec.spec.graph import Graph, LogicalTensor, Op

# The reference's NumPy calls warn on overflow and NaN, which these tests feed on purpose.
pytestmark = [requires_device, pytest.mark.filterwarnings("ignore::RuntimeWarning")]

F32, BF16, F16 = DataType.f32, DataType.bf16, DataType.f16
SHAPE = (4, 16)
SPECIALS = np.array([np.nan, np.inf, -np.inf, 0.0, -0.0, 1e-45, -1e-45, 1.5e-38, 0.5, -0.5,
                     1.5, 2.5, -2.5, 3.0, -3.0, 88.72283, -88.72283, 89.0, -89.0, 3.4e38,
                     -3.4e38, 1e-7, 20.0, -20.0, 7.0, -7.0, 100.0, -100.0, 0.1, -0.1, 1.0,
                     -1.0] * 2, dtype=np.float32).reshape(SHAPE)

#: (kind, attributes) for each unary entry; several attribute settings where they matter.
UNARY: list[tuple[str, dict[str, Any]]] = [
    ("Abs", {}), ("Clamp", {"min": -1.5, "max": 2.25}), ("Elu", {"alpha": 0.7}),
    ("Exp", {}), ("GELU", {"mode": "gelu_erf"}), ("GELU", {"mode": "gelu_tanh"}),
    ("HardSwish", {}), ("LeakyReLU", {"alpha": 0.01}), ("Log", {}), ("Pow", {"beta": 2.0}),
    ("Pow", {"beta": -0.5}), ("Pow", {"beta": 3.0}), ("ReLU", {}), ("Reciprocal", {}),
    ("Round", {}), ("Sigmoid", {}), ("SoftPlus", {"beta": 1.0}), ("SoftPlus", {"beta": -2.0}),
    ("Sqrt", {}), ("Square", {}), ("Tanh", {}),
]
BINARY = ["Add", "Subtract", "Multiply", "Divide", "Maximum", "Minimum"]

VALUES = hnp.arrays(np.float32, SHAPE, elements=st.floats(width=32, allow_nan=True,
                                                            allow_infinity=True,
                                                            allow_subnormal=True))
SETTINGS = settings(max_examples=25)

_COMPILED: dict[str, OnDevice] = {}


def _unary_graph(kind: str, attrs: dict[str, Any], dtype: DataType) -> OnDevice:
    key = f"{kind}{sorted(attrs.items())}{dtype}"
    if key not in _COMPILED:
        x, y = LogicalTensor(0, dtype, SHAPE), LogicalTensor(1, dtype, SHAPE)
        _COMPILED[key] = OnDevice(Graph([Op(0, kind, inputs=(x,), outputs=(y,), attrs=attrs)]))
    return _COMPILED[key]


def test_every_table_entry_is_tested() -> None:
    tested = {k for k, _ in UNARY} | set(BINARY) | {
        "BiasAdd", "BatchNormInference", "Quantize", "Dequantize", "TypeCast", "Reorder"}
    assert supported_kinds() == tested, \
        f"op table and tests differ: untested {supported_kinds() - tested}, " \
        f"not in the table {tested - supported_kinds()}"


@pytest.mark.parametrize(("kind", "attrs"), UNARY, ids=[f"{k}{a}" for k, a in UNARY])
def test_unary_f32(kind: str, attrs: dict[str, Any]) -> None:
    compiled = _unary_graph(kind, attrs, F32)

    @SETTINGS
    @given(VALUES)
    @example(SPECIALS)
    def check(values: np.ndarray[Any, Any]) -> None:
        compiled.check({0: values}, label=f"{kind}{attrs}")

    check()


@pytest.mark.parametrize("dtype", [BF16, F16])
@pytest.mark.parametrize("kind", ["GELU", "Sigmoid", "Round", "Exp"])
def test_unary_narrow(kind: str, dtype: DataType) -> None:
    """bf16/f16 in and out: widened exactly, computed in f32, rounded once to nearest even."""
    compiled = _unary_graph(kind, {}, dtype)

    @SETTINGS
    @given(VALUES)
    @example(SPECIALS)
    def check(values: np.ndarray[Any, Any]) -> None:
        compiled.check({0: cast_to(values, dtype)}, label=f"{kind} {dtype}")

    check()


@pytest.mark.parametrize("swap", [False, True], ids=["chain-src0", "chain-src1"])
@pytest.mark.parametrize("kind", BINARY)
def test_binary_either_operand(kind: str, swap: bool) -> None:
    """A ReLU feeding src_0 or src_1 of the binary, compiled as one kernel (the patterns fuse
    Subtract and Divide only through src_0, the int8 post-op operand enters either port)."""
    x, r = LogicalTensor(0, F32, SHAPE), LogicalTensor(1, F32, SHAPE)
    other, y = LogicalTensor(2, F32, SHAPE[-1:]), LogicalTensor(3, F32, SHAPE)
    ins = (other, r) if swap else (r, other)
    compiled = OnDevice(Graph([Op(0, "ReLU", inputs=(x,), outputs=(r,)),
                               Op(1, kind, inputs=ins, outputs=(y,))]), whole=True)

    @SETTINGS
    @given(VALUES, hnp.arrays(np.float32, SHAPE[-1:], elements=st.floats(width=32)))
    @example(SPECIALS, SPECIALS[0])
    def check(a: np.ndarray[Any, Any], b: np.ndarray[Any, Any]) -> None:
        compiled.check({0: a, 2: b}, label=f"ReLU->{kind} swap={swap}")

    check()


def test_mixed_precision_binary() -> None:
    """f32 + bf16 -> f32 and f16 * f32 -> f32, as the schema's mixed rows allow."""
    a, b = LogicalTensor(0, F32, SHAPE), LogicalTensor(1, BF16, SHAPE)
    c, d = LogicalTensor(2, F32, SHAPE), LogicalTensor(3, F16, (1, 16))
    s, m = LogicalTensor(4, F32, SHAPE), LogicalTensor(5, F32, SHAPE)
    compiled = OnDevice(Graph([Op(0, "Add", inputs=(a, b), outputs=(s,)),
                               Op(1, "Multiply", inputs=(d, c), outputs=(m,))]))

    @SETTINGS
    @given(VALUES, VALUES, VALUES)
    def check(x: np.ndarray[Any, Any], y: np.ndarray[Any, Any], z: np.ndarray[Any, Any]
              ) -> None:
        compiled.check({0: x, 1: cast_to(y, BF16), 2: z, 3: cast_to(x[:1], F16)},
                       label="mixed precision")

    check()


def test_s32_add_subtract_saturate() -> None:
    """s32 Add/Subtract are exact in 64 bits and saturate to the s32 range."""
    a, b = LogicalTensor(0, DataType.s32, (64,)), LogicalTensor(1, DataType.s32, (64,))
    s, d = LogicalTensor(2, DataType.s32, (64,)), LogicalTensor(3, DataType.s32, (64,))
    compiled = OnDevice(Graph([Op(0, "Add", inputs=(a, b), outputs=(s,)),
                               Op(1, "Subtract", inputs=(a, b), outputs=(d,))]))
    ints = hnp.arrays(np.int32, (64,), elements=st.integers(-(2 ** 31), 2 ** 31 - 1))

    @SETTINGS
    @given(ints, ints)
    def check(x: np.ndarray[Any, Any], y: np.ndarray[Any, Any]) -> None:
        compiled.check({0: x, 1: y}, label="s32 add/subtract")

    check()
