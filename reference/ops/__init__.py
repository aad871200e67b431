"""Reference op implementations, one small function per op kind, grouped by op family.

Each module lists its functions in ``OPS``; `IMPLEMENTATIONS` is the table of them all, by op
kind (a function is named after the op it implements). Adding an op: write its function in the
module of its family and add it to that module's ``OPS``.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from . import (
    binary,
    conv,
    interpolate,
    matmul,
    normalization,
    pool,
    quantization,
    reduction,
    softmax,
    training,
    unary,
)

__all__ = ["IMPLEMENTATIONS"]

_MODULES = (unary, binary, normalization, quantization, matmul, conv, pool, interpolate,
            reduction, softmax, training)

#: Op kind -> its reference function.
IMPLEMENTATIONS: dict[str, Callable[..., Any]] = {
    fn.__name__: fn for module in _MODULES for fn in module.OPS}
