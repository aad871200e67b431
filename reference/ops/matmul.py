"""Reference MatMul (docs/semantics.md, MatMul).

A 1-D src is a row ``[1, K]`` and a 1-D weights a column ``[K, 1]``; the added dim is squeezed
from dst. ``transpose_a``/``transpose_b`` swap the last two dims and are ignored below rank 2.
Batch dims broadcast NumPy-style after left-padding with 1s; the optional bias broadcasts to
dst. Precision as in `_layout.dot` (float32 sums in exact-for-int8 blocks, float64 across).
``accumulation_mode`` only licenses a backend to sum in lower precision, so the reference, which
defines the exact value, ignores it.
"""

from __future__ import annotations

import numpy as np

from fusionspec.spec.graph import AttrValue
from fusionspec.spec.shapes import infer_matmul

from ..dtypes import to_compute
from ._layout import Array, dot, infer_shape

__all__ = ["MatMul"]


def MatMul(src: Array, weights: Array, bias: Array | None = None, /, *,
           transpose_a: bool, transpose_b: bool,
           accumulation_mode: str) -> Array:
    """Batched matrix product with NumPy batch broadcasting, plus an optional bias."""
    attrs: dict[str, AttrValue] = dict(transpose_a=transpose_a, transpose_b=transpose_b,
                                       accumulation_mode=accumulation_mode)
    shapes = [src.shape, weights.shape] + ([bias.shape] if bias is not None else [])
    dst_shape = infer_shape("MatMul", infer_matmul, attrs, shapes)
    a = src[None, :] if src.ndim == 1 else src
    b = weights[:, None] if weights.ndim == 1 else weights
    if transpose_a and src.ndim >= 2:
        a = np.swapaxes(a, -1, -2)
    if transpose_b and weights.ndim >= 2:
        b = np.swapaxes(b, -1, -2)
    dst = dot(a, b)
    # Squeeze the dims a 1-D operand added (the row of src, the column of weights).
    if weights.ndim == 1:
        dst = dst[..., 0]
    if src.ndim == 1:
        dst = dst[..., 0, :] if weights.ndim > 1 else dst[..., 0]
    if bias is not None:
        dst = dst + bias
    assert dst.shape == dst_shape, f"MatMul produced {dst.shape}, inference says {dst_shape}"
    return to_compute(dst)


#: The op implementations of this module (listed in `fusionspec.reference.ops`).
OPS = (MatMul,)
