"""Where an op's exponential leaves a floating-point type: the exact inputs around each switch.

Several unary ops compute an exponential of an *exponent* g(x) that their definitions
(`fusionspec.reference.ops.unary`, docs/semantics.md) make explicit, and switch behaviour where
g reaches ln of a type's largest finite value:

==========  ====================  ============================================================
op          exponent g(x)         what switches there
==========  ====================  ============================================================
Exp         x                     the result overflows its type: +inf past ln(max) of f32, and
                                  of bf16 or f16 when the result is stored in one
Pow         beta * ln(x)          the same for x^beta (near 0 for a negative beta)
Sigmoid     -x                    the definition's guard: exactly 0 once -x reaches
                                  `EXP_OVERFLOW_BOUND`
SoftPlus    beta * x              the guard: x once beta*x reaches `EXP_OVERFLOW_BOUND`
Tanh        2|x|                  an exp(2|x|) computed in f32 overflows (the result is +-1
                                  there, and a kernel building tanh from it gets inf/inf)
==========  ====================  ============================================================

The other ops with an exponential have no such switch a bound can judge: Elu's and SoftMax's
exponents are never positive (x <= 0, x - max), and GELU's tanh form overflows exp(-2u) only
where |GELU(x)| is below 1e-37, far inside any absolute tolerance.

A guard whose constant is rounded a little (88.7228 instead of 88.72283) or an exp evaluated a
little differently goes wrong only in the last few representable inputs before the switch, which
no spread of values hits. `edges(op, out)` are the switch points of `op` whose result is stored
in `out`; `edge_points` the representable inputs around one, in the input's own type (the
nearest to the switch, then alternately the next below and above, `EDGE_ULPS` each side);
`edge_fill` fills a tensor with them (the ``edge-ulps`` value domain of
`fusionspec.reference.filling`).
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from fusionspec.spec.attrs import attr_value
from fusionspec.spec.dtypes import DataType
from fusionspec.spec.graph import LogicalTensor, Op
from fusionspec.spec.types import Array

from .dtypes import numpy_dtype
from .ops.unary import EXP_OVERFLOW_BOUND

__all__ = ["Edge", "EDGE_ULPS", "EDGE_KINDS", "RESULT_KINDS", "edges", "edge_points", "edge_fill"]

#: Representable inputs taken on each side of a switch.
EDGE_ULPS = 4

#: The largest finite value of each type an exponential's result may be stored in.
_MAX: Mapping[DataType, float] = {
    DataType.f32: float(np.finfo(np.float32).max),
    DataType.bf16: 3.3895313892515355e38,
    DataType.f16: 65504.0,
}
#: The smallest normal value of each input type (smaller inputs are the subnormal corner's).
_TINY: Mapping[DataType, float] = {
    DataType.f32: float(np.finfo(np.float32).tiny), DataType.bf16: 2.0 ** -126,
    DataType.f16: 2.0 ** -14,
}
_BITS: Mapping[DataType, Any] = {DataType.f32: np.uint32, DataType.bf16: np.uint16,
                                 DataType.f16: np.uint16}


@dataclass(frozen=True)
class Edge:
    """One switch: what switches (`name`, the item value of the coverage model) and the input
    where it does (`at`, float64)."""

    name: str
    at: float


def _beta(op: Op) -> float:
    value = attr_value(op, "beta")
    return float(np.float32(value)) if isinstance(value, int | float) else 1.0


def _pow_at(op: Op, c: float) -> tuple[float, ...]:
    beta = _beta(op)
    return (math.exp(c / beta),) if beta != 0 and abs(c / beta) < 700 else ()


def _softplus_at(op: Op, c: float) -> tuple[float, ...]:
    beta = _beta(op)
    return (c / beta,) if beta != 0 else ()


#: Per op kind: how the switch is named (given the type), whether it is the result's own
#: overflow (so each storage type has one) rather than a fixed f32 point, and the inputs where
#: the exponent reaches a value c.
_SWITCHES: Mapping[str, tuple[Callable[[DataType], str], bool,
                              Callable[[Op, float], tuple[float, ...]]]] = {
    "Exp": (lambda t: f"exp(x) overflows {t.value}", True, lambda op, c: (c,)),
    "Pow": (lambda t: f"x^beta overflows {t.value}", True, _pow_at),
    "Sigmoid": (lambda t: "guard -x >= 88.72283", False, lambda op, c: (-c,)),
    "SoftPlus": (lambda t: "guard beta*x >= 88.72283", False, _softplus_at),
    "Tanh": (lambda t: "exp(2*abs(x)) overflows f32", False, lambda op, c: (c / 2, -c / 2)),
}
#: The op kinds with a switch.
EDGE_KINDS = frozenset(_SWITCHES)
#: The op kinds whose switch is their result's own overflow, which moves with the type it is
#: stored in (the others switch at a fixed f32 point).
RESULT_KINDS = frozenset(kind for kind, (_, own, _) in _SWITCHES.items() if own)


def edges(op: Op, out: DataType, source: DataType = DataType.f32) -> tuple[Edge, ...]:
    """The switches of `op` (reading an input of type `source` at port 0) whose result is
    stored in `out`: of the result's own overflow, f32's (inside a partition) and `out`'s;
    only those at a normal, finite input of `source`."""
    if op.kind not in _SWITCHES or source not in _TINY:
        return ()
    name, own, where = _SWITCHES[op.kind]
    if own:
        found = [(name(t), math.log(_MAX[t]))
                 for t in dict.fromkeys((DataType.f32, out)) if t in _MAX]
    else:
        guard = float(EXP_OVERFLOW_BOUND)
        found = [(name(DataType.f32), guard if op.kind in ("Sigmoid", "SoftPlus")
                  else math.log(_MAX[DataType.f32]))]
    return tuple(Edge(label, x) for label, c in found for x in where(op, c)
                 if math.isfinite(x) and _TINY[source] <= abs(x) < _MAX[source])


def edge_points(at: float, dtype: DataType, count: int = EDGE_ULPS) -> Array:
    """The representable `dtype` values around `at` (float64): the nearest one, then
    alternately the next below and the next above it, `count` on each side (fewer where the
    type's finite range ends)."""
    storage, bits = numpy_dtype(dtype), _BITS[dtype]
    centre = int(np.asarray([abs(at)], dtype=storage).view(bits)[0])
    order = [centre + step for k in range(1, count + 1) for step in (-k, k)]
    codes = np.asarray([centre, *order], dtype=np.int64)
    top = int(np.asarray([_MAX[dtype]], dtype=storage).view(bits)[0])
    codes = codes[(codes >= 0) & (codes <= top)]
    values: Array = codes.astype(bits).view(storage).astype(np.float64)
    return values * math.copysign(1.0, at)


def edge_fill(values: Array, tensor: LogicalTensor, uses: Sequence[tuple[Op, int]]) -> Array:
    """`values` with every element replaced by an input around the switches of the ops reading
    `tensor` at port 0 (`edges`), the switches taken in turn and each one's points from the
    switch outwards; `values` unchanged where no reader has a switch."""
    runs = [edge_points(edge.at, tensor.dtype)
            for op, port in uses if port == 0
            for edge in edges(op, op.outputs[0].dtype if op.outputs else DataType.f32,
                              tensor.dtype)]
    if not runs or not values.size:
        return values
    points = [float(run[i]) for i in range(max(map(len, runs))) for run in runs if i < len(run)]
    cycled = np.resize(np.asarray(points, dtype=np.float64), values.size)
    result: Array = cycled.reshape(values.shape)
    return result
