"""Deterministic input data for a partition or graph (`fill_inputs`).

The model is benchdnn's filling: values that keep the arithmetic exact or nearly so, never
overflow the small types, and respect each consuming op's domain.

- Floating-point tensors get multiples of 1/8 in [-4, 4]: exactly representable in bf16 and f16
  (and rounded onto the grid for f8), so products and sums of a few of them are exact in f32.
- s8 gets integers in [-8, 8], u8 in [0, 16], s32 in [-16, 16], booleans are random.
- Where a consumer needs it, the range narrows (the strongest need of all consumers wins):
  - positive values in [0.25, 4] for Log, Sqrt, Pow's base and BatchNorm variances;
  - magnitudes in [0.5, 4] for Divide's divisor and Reciprocal;
  - +-{0.5, 1, 2} for ReduceProd, so long products stay finite;
  - the src of a MatMul or convolution that sums more than 64 products per output is thinned
    with zeros so that about 64 remain non-zero, keeping long reductions far from overflow;
  - a Quantize source gets ``(q - zp)*scale`` for small integers q of the destination type, so
    quantization lands exactly on integers (no .5 ties, no saturation);
  - shape-carrying s32 inputs (Interpolate ``sizes``, ConvolutionBackwardWeights
    ``weights_shape``, a reduction's ``axes``) get the values the op's declared output implies.

Each tensor draws from its own generator seeded with ``(seed, tensor id)``, so a tensor's data
does not depend on the other tensors or on their order.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from enum import IntEnum

import numpy as np

from fusionspec.spec.dtypes import DataType
from fusionspec.spec.graph import Graph, LogicalTensor, Op, Partition
from fusionspec.spec.shapes import spatial_dims
from fusionspec.spec.types import Array

from .dtypes import cast_to, is_float_dtype, numpy_dtype
from .errors import ExecutionError

__all__ = ["fill_inputs", "fill_tensor"]


class Need(IntEnum):
    """What a consumer requires of its input; a larger value overrides a smaller one."""

    ANY = 0
    PRODUCT = 1
    NONZERO = 2
    POSITIVE = 3
    QUANTIZE_SOURCE = 4
    SHAPE_VALUES = 5


_POSITIVE_PORTS: dict[str, tuple[int, ...]] = {
    "Log": (0,), "Sqrt": (0,), "Pow": (0,), "BatchNormInference": (4,),
    "BatchNormTrainingBackward": (3,),
}
_NONZERO_PORTS: dict[str, tuple[int, ...]] = {"Divide": (1,), "Reciprocal": (0,)}
_SHAPE_PORTS: dict[str, int] = {"Interpolate": 1, "ConvolutionBackwardWeights": 2}
#: Non-zero products per output element aimed at by a thinned MatMul/convolution src.
SAFE_TERMS = 64
_REDUCTIONS = ("ReduceL1", "ReduceL2", "ReduceMax", "ReduceMean", "ReduceMin", "ReduceProd",
               "ReduceSum")
_INT_RANGES: dict[DataType, tuple[int, int]] = {
    DataType.s8: (-8, 8), DataType.u8: (0, 16), DataType.s32: (-16, 16),
    DataType.s64: (-16, 16), DataType.s4: (-8, 7), DataType.u4: (0, 15),
}


def _need(op: Op, port: int) -> Need:
    if op.kind in _SHAPE_PORTS and port == _SHAPE_PORTS[op.kind]:
        return Need.SHAPE_VALUES
    if op.kind in _REDUCTIONS and port == 1:
        return Need.SHAPE_VALUES
    if op.kind == "Quantize":
        return Need.QUANTIZE_SOURCE
    if port in _POSITIVE_PORTS.get(op.kind, ()):
        return Need.POSITIVE
    if port in _NONZERO_PORTS.get(op.kind, ()):
        return Need.NONZERO
    if op.kind == "ReduceProd":
        return Need.PRODUCT
    return Need.ANY


def fill_inputs(target: Partition | Graph, seed: int = 0) -> dict[int, Array]:
    """Arrays for every input of `target`, keyed by tensor id, in their storage dtypes.

    A graph is finalized first (to learn inferred shapes). Raises `ExecutionError` for an input
    whose shape is not known.
    """
    if isinstance(target, Graph):
        graph = target if target.finalized else target.finalize()
        tensors: Sequence[LogicalTensor] = graph.input_tensors
        ops: Sequence[Op] = graph.ops
    else:
        tensors, ops = target.inputs, target.ops
    uses: dict[int, list[tuple[Op, int]]] = {}
    for op in ops:
        for port, t in enumerate(op.inputs):
            uses.setdefault(t.id, []).append((op, port))
    return {t.id: fill_tensor(t, uses.get(t.id, ()), seed) for t in tensors}


def fill_tensor(tensor: LogicalTensor, uses: Iterable[tuple[Op, int]], seed: int = 0) -> Array:
    """Data for one tensor consumed at `uses` ((op, input port) pairs); see the module doc."""
    if tensor.shape is None or not tensor.shape_known:
        raise ExecutionError("cannot fill an input whose shape is not known",
                             tensor_id=tensor.id)
    shape = tensor.shape
    rng = np.random.default_rng([seed % 2**63, tensor.id % 2**63])
    need, op = Need.ANY, None
    for user, port in uses:
        if _need(user, port) > need:
            need, op = _need(user, port), user
    if need is Need.SHAPE_VALUES and op is not None:
        return _shape_values(tensor, op)
    if tensor.dtype is DataType.boolean:
        return rng.random(shape) < 0.5
    if tensor.dtype in _INT_RANGES:
        lo, hi = _INT_RANGES[tensor.dtype]
        return rng.integers(lo, hi, size=shape, endpoint=True).astype(numpy_dtype(tensor.dtype))
    if not is_float_dtype(numpy_dtype(tensor.dtype)):
        raise ExecutionError(f"no filling is defined for dtype {tensor.dtype}",
                             tensor_id=tensor.id)
    if need is Need.QUANTIZE_SOURCE and op is not None:
        values = _quantize_source(rng, shape, op)
    elif need is Need.POSITIVE:
        values = rng.integers(2, 32, size=shape, endpoint=True) / 8.0
    elif need is Need.NONZERO:
        values = rng.integers(4, 32, size=shape, endpoint=True) / 8.0 * _signs(rng, shape)
    elif need is Need.PRODUCT:
        values = rng.choice(np.array([0.5, 1.0, 2.0]), size=shape) * _signs(rng, shape)
    else:
        values = rng.integers(-32, 32, size=shape, endpoint=True) / 8.0
        values = values * (rng.random(shape) < _density(uses))
    return cast_to(np.asarray(values, dtype=np.float32), tensor.dtype)


def _density(uses: Iterable[tuple[Op, int]]) -> float:
    """The share of non-zero elements for the src of a long MatMul/convolution reduction, so
    that about `SAFE_TERMS` products per output are non-zero (benchdnn thins its fills the same
    way): sums stay far from the f16/bf16 overflow however long the reduction."""
    longest = 0
    for op, port in uses:
        if port == 0:
            longest = max(longest, _reduction_length(op) or 0)
    return min(1.0, SAFE_TERMS / longest) if longest else 1.0


def _reduction_length(op: Op) -> int | None:
    """How many products an output element of `op` sums (None when shapes are not known)."""
    if op.kind not in ("MatMul", "Convolution", "ConvTranspose") or len(op.inputs) < 2:
        return None
    src, weights = op.inputs[0].shape, op.inputs[1].shape
    if src is None or weights is None or any(d < 0 for d in (*src, *weights)):
        return None
    if op.kind == "MatMul":
        if len(src) == 1:
            return src[0]
        return src[-2] if op.attrs.get("transpose_a") is True else src[-1]
    fmt = op.attrs.get("weights_format")
    if op.kind == "Convolution":  # (OC, IC/G, K...) or (K..., IC/G, OC)
        out_channels = weights[0] if fmt == "OIX" else weights[-1]
    else:  # ConvTranspose: (IC, OC/G, K...) or (K..., OC/G, IC)
        out_channels = weights[1] if fmt == "IOX" else weights[-2]
    return int(np.prod(weights)) // max(out_channels, 1)


def _signs(rng: np.random.Generator, shape: tuple[int, ...]) -> Array:
    return np.where(rng.random(shape) < 0.5, -1.0, 1.0)


def _quantize_source(rng: np.random.Generator, shape: tuple[int, ...], op: Op) -> Array:
    """f32 values that Quantize maps exactly onto small integers of its destination type."""
    dst = op.outputs[0].dtype if op.outputs else DataType.u8
    lo, hi = _INT_RANGES.get(dst, (-8, 8))
    scales = np.asarray(op.attrs.get("scales") or (1.0,), dtype=np.float32)
    zps_attr = op.attrs.get("zps") or (0,) * scales.size
    zps = np.asarray(zps_attr, dtype=np.float32)
    axis_attr = op.attrs.get("axis", 1)
    axis = (axis_attr if isinstance(axis_attr, int) else 1) % max(len(shape), 1)
    if (op.attrs.get("qtype") == "per_channel" and len(shape) > 0
            and shape[axis] == scales.size == zps.size):
        bshape = [1] * len(shape)
        bshape[axis] = scales.size
        scales, zps = scales.reshape(bshape), zps.reshape(bshape)
    else:
        scales, zps = scales.reshape(-1)[:1].reshape(()), zps.reshape(-1)[:1].reshape(())
    if dst in (DataType.f8_e4m3, DataType.f8_e5m2):
        grid = rng.integers(-32, 32, size=shape, endpoint=True) / 8.0
        return np.asarray(grid * scales, dtype=np.float32)
    q = rng.integers(lo, hi, size=shape, endpoint=True).astype(np.float32)
    return np.asarray((q - zps) * scales, dtype=np.float32)


def _shape_values(tensor: LogicalTensor, op: Op) -> Array:
    """The s32 values a shape-carrying input must hold for `op`'s declared output."""
    assert tensor.shape is not None
    count = int(np.prod(tensor.shape)) if tensor.shape else 1
    out_shape = op.outputs[0].shape if op.outputs else None
    src_shape = op.inputs[0].shape
    if out_shape is None or any(d < 0 for d in out_shape):
        raise ExecutionError(f"cannot fill this shape input of op {op.id} ({op.kind}): its "
                             "output shape is not known", tensor_id=tensor.id)
    if op.kind == "Interpolate":
        values = list(spatial_dims(out_shape, str(op.attrs.get("data_format", "NXC"))))
    elif op.kind == "ConvolutionBackwardWeights":
        values = list(out_shape)
    else:
        values = _reduce_axes(src_shape or (), out_shape, count,
                              bool(op.attrs.get("keep_dims", False)))
    if len(values) != count:
        raise ExecutionError(f"op {op.id} ({op.kind}) implies {len(values)} values for this "
                             f"input, but it holds {count}", tensor_id=tensor.id)
    return np.asarray(values, dtype=numpy_dtype(tensor.dtype)).reshape(tensor.shape)


def _reduce_axes(src: tuple[int, ...], dst: tuple[int, ...], count: int,
                 keep_dims: bool) -> list[int]:
    """`count` axes that reduce shape `src` to `dst` (the likeliest ones first)."""
    rank = len(src)
    if keep_dims and len(dst) == rank:
        likely = [i for i in range(rank) if dst[i] == 1 and src[i] != 1]
        likely += [i for i in range(rank) if dst[i] == 1 and src[i] == 1]
    else:
        likely, j = [], 0
        for i in range(rank):
            if j < len(dst) and src[i] == dst[j]:
                j += 1
            else:
                likely.append(i)
    likely += [i for i in range(rank) if i not in likely]
    return likely[:count]
