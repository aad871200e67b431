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

A tensor may be given a *value domain* (`DOMAINS`; ``fill_inputs(..., domains={id: name})``),
which replaces the grid above for that tensor. Three kinds:

- clean variants, for well-conditioned data with a clear signal: ``positive`` (the grid's
  positive half, [0.25, 4]: keeps a Log, Sqrt or Pow downstream of a convolution in its
  domain), ``small`` (multiples of 1/16 in [-1, 1]: keeps chains of Exp and Square far from
  overflow), ``dense`` (full-precision random values in the consumer's range instead of the
  grid: inexact products, sums and roundings everywhere);
- corners, the values where implementations go wrong: ``special`` (NaN, +-inf, -0 and +0 in
  about a quarter of the elements), ``huge`` (magnitudes up to half the type's largest value),
  ``large`` (magnitudes from 60 to 2048, half of them at the f32 exp overflow edge [60, 90]:
  where an Exp must stay finite up to 88.72 and a SoftMax must subtract the maximum),
  ``subnormal`` (magnitudes below the type's smallest normal), ``ties`` (exact rounding ties
  for the consumer: k + 0.5 for Round, a .5 tie of x/scale + zp for Quantize, the midpoint of
  two neighbours of the destination type for TypeCast and, by default, of two bf16 values),
  ``neg-inf-rows`` (a third of a SoftMax's rows all -inf, a few -inf elements elsewhere) and
  ``saturate`` (a Quantize source far beyond its destination's range). A corner changes about
  half of the elements and leaves the grid in the others; integer tensors under ``special`` or
  ``huge`` take their type's extremes;
- value boundaries (`BOUNDARY_DOMAINS`), the points where an op's definition changes
  behaviour (`fusionspec.conformance.generate.boundaries` draws them): ``overflow-edge`` (half
  of the elements within 1 of +-ln of the type's largest value, 88.72 for f32 and bf16, 11.09
  for f16, divided by a SoftPlus's |beta|: where an Exp turns to +inf, a Sigmoid to exactly 0
  and a SoftPlus to x, and a guard whose constant is a little off shows), ``integer-edge``
  (half of the elements in [2^22, 2^25] of either sign: halves below 2^23, odd integers up to
  2^24, where f32 runs out of fractional bits and a rounding by adding and subtracting 2^23
  stops being exact), ``narrow-ties`` (every element an exact tie of a narrowing conversion,
  positive in [1, 8]: half of them midpoints of two bf16 neighbours, half of two f16
  neighbours, each exact in f32; positive and at least 1 so that a Maximum against a SoftMax's
  probabilities passes them on unchanged), ``narrow-max`` (every element around the largest
  finite f16 value, 65504, or bf16 value, 2^128 - 2^120, from half an ulp below it to one past
  it: where a narrowing rounds down to that value or overflows to +inf) and ``long-sum``
  (every element full precision in
  [0.5, 1], none thinned: a MatMul or convolution summing thousands of them grows to where a
  narrow partial sum or a narrow accumulator loses more than the output's rounding allows),
  ``edge-ulps`` (every element one of the last representable inputs of the tensor's type on
  either side of where its reader's exponential overflows or its guard switches:
  `fusionspec.reference.thresholds`).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from enum import IntEnum

import numpy as np

from fusionspec.spec.attrs import attr_value
from fusionspec.spec.dtypes import DataType
from fusionspec.spec.graph import Graph, LogicalTensor, Op, Partition
from fusionspec.spec.opschemas import carries_shape
from fusionspec.spec.shapes import spatial_dims
from fusionspec.spec.types import Array

from .dtypes import cast_to, is_float_dtype, numpy_dtype
from .errors import ExecutionError
from .thresholds import edge_fill

__all__ = ["fill_inputs", "fill_tensor", "DOMAINS", "CLEAN_DOMAINS", "CORNER_DOMAINS",
           "BOUNDARY_DOMAINS", "overflow_edge"]

#: Clean variants of the grid (see the module docstring).
CLEAN_DOMAINS = ("grid", "positive", "small", "dense")
#: Corner domains (see the module docstring).
CORNER_DOMAINS = ("special", "huge", "large", "subnormal", "ties", "neg-inf-rows", "saturate")
#: Value-boundary domains (see the module docstring).
BOUNDARY_DOMAINS = ("overflow-edge", "integer-edge", "narrow-ties", "narrow-max", "long-sum",
                    "edge-ulps")
#: Every value domain a tensor may be filled from.
DOMAINS = CLEAN_DOMAINS + CORNER_DOMAINS + BOUNDARY_DOMAINS


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
#: Non-zero products per output element aimed at by a thinned MatMul/convolution src.
SAFE_TERMS = 64
_INT_RANGES: dict[DataType, tuple[int, int]] = {
    DataType.s8: (-8, 8), DataType.u8: (0, 16), DataType.s32: (-16, 16),
    DataType.s64: (-16, 16), DataType.s4: (-8, 7), DataType.u4: (0, 15),
}


def _need(op: Op, port: int) -> Need:
    if carries_shape(op.kind, port):
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


def fill_inputs(target: Partition | Graph, seed: int = 0,
                domains: Mapping[int, str] | None = None) -> dict[int, Array]:
    """Arrays for every input of `target`, keyed by tensor id, in their storage dtypes; a
    tensor listed in `domains` is filled from that value domain (see the module docstring).

    A graph is finalized first (to learn inferred shapes). Raises `ExecutionError` for an input
    whose shape is not known or an unknown domain.
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
    chosen = domains or {}
    return {t.id: fill_tensor(t, uses.get(t.id, ()), seed, chosen.get(t.id))
            for t in tensors}


def fill_tensor(tensor: LogicalTensor, uses: Iterable[tuple[Op, int]], seed: int = 0,
                domain: str | None = None) -> Array:
    """Data for one tensor consumed at `uses` ((op, input port) pairs), from `domain` when
    given; see the module doc."""
    if domain is not None and domain not in DOMAINS:
        raise ExecutionError(f"no value domain {domain!r}; known: {', '.join(DOMAINS)}",
                             tensor_id=tensor.id)
    uses = list(uses)
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
        if domain in ("special", "huge"):
            info = np.iinfo(numpy_dtype(tensor.dtype))
            lo, hi = int(info.min), int(info.max)
        return rng.integers(lo, hi, size=shape, endpoint=True).astype(numpy_dtype(tensor.dtype))
    if not is_float_dtype(numpy_dtype(tensor.dtype)):
        raise ExecutionError(f"no filling is defined for dtype {tensor.dtype}",
                             tensor_id=tensor.id)
    if domain in ("narrow-ties", "narrow-max", "long-sum"):
        values = _boundary(rng, shape, domain)
    elif need is Need.QUANTIZE_SOURCE and op is not None:
        values = _quantize_source(rng, shape, op, saturate=domain == "saturate")
    elif domain in ("positive", "small", "dense"):
        values = _clean_variant(rng, shape, need, domain, uses)
    elif need is Need.POSITIVE:
        values = rng.integers(2, 32, size=shape, endpoint=True) / 8.0
    elif need is Need.NONZERO:
        values = rng.integers(4, 32, size=shape, endpoint=True) / 8.0 * _signs(rng, shape)
    elif need is Need.PRODUCT:
        values = rng.choice(np.array([0.5, 1.0, 2.0]), size=shape) * _signs(rng, shape)
    else:
        values = rng.integers(-32, 32, size=shape, endpoint=True) / 8.0
        values = values * (rng.random(shape) < _density(uses))
    if domain in CORNER_DOMAINS or domain in ("overflow-edge", "integer-edge"):
        values = _corner(rng, np.asarray(values, dtype=np.float64), domain, tensor, uses)
    elif domain == "edge-ulps":
        values = edge_fill(np.asarray(values, dtype=np.float64), tensor, uses)
    with np.errstate(over="ignore", invalid="ignore"):
        return cast_to(np.asarray(values, dtype=np.float32), tensor.dtype)


def _clean_variant(rng: np.random.Generator, shape: tuple[int, ...], need: Need, domain: str,
                   uses: Sequence[tuple[Op, int]]) -> Array:
    """The `positive`, `small` and `dense` domains (see the module docstring)."""
    if domain == "positive":
        return rng.integers(2, 32, size=shape, endpoint=True) / 8.0
    if domain == "small":
        if need is Need.POSITIVE:
            return rng.integers(1, 16, size=shape, endpoint=True) / 16.0
        if need in (Need.NONZERO, Need.PRODUCT):
            return rng.integers(8, 16, size=shape, endpoint=True) / 16.0 * _signs(rng, shape)
        small: Array = rng.integers(-16, 16, size=shape, endpoint=True) / 16.0
        return small * (rng.random(shape) < _density(uses))
    if need is Need.POSITIVE:
        return rng.uniform(0.25, 4.0, size=shape)
    if need is Need.NONZERO:
        return rng.uniform(0.5, 4.0, size=shape) * _signs(rng, shape)
    if need is Need.PRODUCT:
        return rng.uniform(0.5, 2.0, size=shape) * _signs(rng, shape)
    dense: Array = rng.uniform(-4.0, 4.0, size=shape)
    return dense * (rng.random(shape) < _density(uses))


#: The largest finite value of each floating-point type.
_TYPE_MAX: dict[DataType, float] = {
    DataType.f32: float(np.finfo(np.float32).max), DataType.bf16: 3.3895313892515355e38,
    DataType.f16: 65504.0, DataType.f8_e4m3: 448.0, DataType.f8_e5m2: 57344.0}
#: log2 of the smallest subnormal and of the smallest normal of each floating-point type.
_SUBNORMAL_EXPONENTS: dict[DataType, tuple[int, int]] = {
    DataType.f32: (-149, -126), DataType.bf16: (-133, -126), DataType.f16: (-24, -14),
    DataType.f8_e4m3: (-9, -6), DataType.f8_e5m2: (-16, -14)}
#: Significand bits (with the implicit one) of the types a TypeCast or an output may round to.
_SIGNIFICAND_BITS: dict[DataType, int] = {DataType.bf16: 8, DataType.f16: 11}


def _corner(rng: np.random.Generator, values: Array, domain: str, tensor: LogicalTensor,
            uses: Sequence[tuple[Op, int]]) -> Array:
    """Put the corner `domain` into about half of `values` (a quarter for `special`)."""
    shape = values.shape
    if domain == "neg-inf-rows":
        return _neg_inf_rows(rng, values, uses)
    share = 0.25 if domain == "special" else 0.5
    mask: Array = np.asarray(rng.random(shape) < share)
    if mask.size and not mask.any():
        mask.flat[int(rng.integers(mask.size))] = True
    signs = _signs(rng, shape)
    if domain == "special":
        picks = np.array([np.nan, np.inf, -np.inf, -0.0, 0.0])
        corner = rng.choice(picks, size=shape)
    elif domain == "huge":
        top = _TYPE_MAX.get(tensor.dtype, _TYPE_MAX[DataType.f32])
        corner = top * rng.uniform(1 / 64, 1 / 2, size=shape) * signs
    elif domain == "large":
        # Half at the edge of the f32 exp range ([60, 90]: finite exp up to 88.72, inf past
        # it), half beyond it, log-uniform up to 2048.
        edge = rng.uniform(60.0, 90.0, size=shape)
        beyond = np.exp2(rng.uniform(np.log2(90.0), 11.0, size=shape))
        corner = np.where(rng.random(shape) < 0.5, edge, beyond) * signs
    elif domain == "subnormal":
        low, high = _SUBNORMAL_EXPONENTS.get(tensor.dtype, _SUBNORMAL_EXPONENTS[DataType.f32])
        corner = np.exp2(rng.integers(low, high - 1, size=shape, endpoint=True)) * signs
        corner = corner * rng.integers(1, 4, size=shape, endpoint=True)
    elif domain == "ties":
        corner = _ties(rng, values, tensor, uses)
    elif domain == "overflow-edge":
        corner = (overflow_edge(tensor.dtype) / _beta(uses)
                  + rng.uniform(-1.0, 1.0, size=shape)) * signs
    elif domain == "integer-edge":
        corner = rng.uniform(2.0 ** 22, 2.0 ** 25, size=shape) * signs
    else:  # saturate outside a Quantize source: far beyond any 8-bit range
        corner = rng.uniform(300.0, 1000.0, size=shape) * signs
    result: Array = np.where(mask, corner, values)
    return result


def overflow_edge(dtype: DataType) -> float:
    """ln of the largest finite value of `dtype` (f32's for the types it does not know): the
    argument where an exponential computed in f32 and stored in `dtype` turns to +inf."""
    return float(np.log(_TYPE_MAX.get(dtype, _TYPE_MAX[DataType.f32])))


def _beta(uses: Sequence[tuple[Op, int]]) -> float:
    """|beta| of a SoftPlus reading the tensor (its edge is where beta*x crosses it), else 1."""
    for op, _ in uses:
        beta = op.attrs.get("beta") if op.kind == "SoftPlus" else None
        if isinstance(beta, int | float) and beta != 0:
            return abs(float(beta))
    return 1.0


def _boundary(rng: np.random.Generator, shape: tuple[int, ...], domain: str) -> Array:
    """The ``narrow-ties`` and ``long-sum`` domains (see the module docstring)."""
    if domain == "long-sum":
        return rng.uniform(0.5, 1.0, size=shape)
    if domain == "narrow-max":
        # Around each type's largest value, from half an ulp below it to one ulp past it
        # (an ulp is 32 at f16's 65504 and 2^120 at bf16's): a third of each half rounds down
        # to the largest value, a third to +inf.
        top = np.where(rng.random(shape) < 0.5, _TYPE_MAX[DataType.f16],
                       _TYPE_MAX[DataType.bf16])
        ulp = np.where(top == _TYPE_MAX[DataType.f16], 32.0, 2.0 ** 120)
        return top + rng.uniform(-0.5, 1.0, size=shape) * ulp
    values = rng.uniform(1.0, 8.0, size=shape)
    bits = np.where(rng.random(shape) < 0.5, _SIGNIFICAND_BITS[DataType.bf16],
                    _SIGNIFICAND_BITS[DataType.f16])
    return _midpoints(values, bits)


def _ties(rng: np.random.Generator, values: Array, tensor: LogicalTensor,
          uses: Sequence[tuple[Op, int]]) -> Array:
    """Exact rounding ties for the first consumer that rounds (see the module docstring)."""
    shape = values.shape
    for op, _ in uses:
        if op.kind == "Round":
            halves = rng.integers(-8, 8, size=shape, endpoint=True) + 0.5
            return np.asarray(halves, dtype=np.float64)
        if op.kind == "Quantize":
            return _quantize_source(rng, shape, op, offset=0.5)
        if op.kind == "TypeCast" and op.outputs and op.outputs[0].dtype in _SIGNIFICAND_BITS:
            return _midpoints(values, _SIGNIFICAND_BITS[op.outputs[0].dtype])
    return _midpoints(values, _SIGNIFICAND_BITS[DataType.bf16])


def _midpoints(values: Array, bits: int | Array) -> Array:
    """For each value, the midpoint between it (truncated to `bits` significant bits) and the
    next such number away from zero: an exact tie for a rounding to that precision (exact in
    f32). Truncating keeps the pair inside the value's binade, where `step` is their spacing
    (a value rounded up to the next power of two would not be a tie there)."""
    v = np.where(values == 0, 1.0, values)
    exponent = np.floor(np.log2(np.abs(v)))
    step = np.exp2(exponent - (bits - 1))
    base = np.trunc(v / step) * step
    result: Array = base + np.sign(v) * step / 2
    return result


def _neg_inf_rows(rng: np.random.Generator, values: Array,
                  uses: Sequence[tuple[Op, int]]) -> Array:
    """A third of the rows along a SoftMax's axis all -inf, and a few single -inf elements."""
    result = np.array(values, dtype=np.float64)
    softmax = next((op for op, _ in uses if op.kind == "SoftMax"), None)
    if result.ndim == 0:
        return result
    attr = attr_value(softmax, "axis") if softmax is not None else -1
    axis = (attr if isinstance(attr, int) else 1) % result.ndim
    rows_shape = list(result.shape)
    rows_shape[axis] = 1
    rows = rng.random(rows_shape) < 1 / 3
    result = np.where(rows, -np.inf, result)
    result = np.where(rng.random(result.shape) < 1 / 16, -np.inf, result)
    return result


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


def _quantize_source(rng: np.random.Generator, shape: tuple[int, ...], op: Op, *,
                     offset: float = 0.0, saturate: bool = False) -> Array:
    """f32 values that Quantize maps exactly onto small integers of its destination type (onto
    exact .5 ties with `offset` 0.5; far outside the type's range with `saturate`)."""
    dst = op.outputs[0].dtype if op.outputs else DataType.u8
    lo, hi = _INT_RANGES.get(dst, (-8, 8))
    if saturate:
        lo, hi = (-400, 400)
    scales = np.asarray(attr_value(op, "scales"), dtype=np.float32)
    zps_attr = op.attrs.get("zps") or (0,) * scales.size
    zps = np.asarray(zps_attr, dtype=np.float32)
    axis_attr = attr_value(op, "axis")
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
    q = rng.integers(lo, hi, size=shape, endpoint=True).astype(np.float32) + np.float32(offset)
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
        values = list(spatial_dims(out_shape, str(attr_value(op, "data_format"))))
    elif op.kind == "ConvolutionBackwardWeights":
        values = list(out_shape)
    else:
        values = _reduce_axes(src_shape or (), out_shape, count,
                              bool(attr_value(op, "keep_dims")))
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
