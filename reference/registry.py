"""The explicit registry of reference op implementations.

Each op kind has one small NumPy function named after the op (``def Convolution(...)``), found in
`fusionspec.reference.ops`. The calling convention, which the executor relies on:

- inputs arrive positionally, in port order; floating-point inputs arrive as float32 arrays
  (bf16/f16 are widened exactly), integer inputs in their own NumPy dtype;
- attributes arrive as keyword arguments named as in the op schema, with the schema's defaults
  already filled in;
- a function that declares a ``dst_dtype`` keyword receives the output's `DataType` (Quantize,
  TypeCast need it);
- the result is one array, or a tuple for multi-output ops; floating-point results are float32
  and are *not* rounded to the declared output dtype (the executor casts at partition outputs).

Adding an op means writing its function with ``@register`` in a module of `ops`; nothing else.
"""

from __future__ import annotations

import inspect
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, TypeVar

__all__ = ["OpImpl", "register", "implementation", "implemented_kinds", "REGISTRY"]


@dataclass(frozen=True)
class OpImpl:
    kind: str
    fn: Callable[..., Any]
    wants_dst_dtype: bool


REGISTRY: dict[str, OpImpl] = {}

F = TypeVar("F", bound=Callable[..., Any])


def register(fn: F) -> F:
    """Register `fn` as the implementation of the op kind it is named after."""
    kind = fn.__name__
    if kind in REGISTRY:
        raise ValueError(f"op {kind} is registered twice")
    wants = "dst_dtype" in inspect.signature(fn).parameters
    REGISTRY[kind] = OpImpl(kind, fn, wants)
    return fn


def implementation(kind: str) -> OpImpl | None:
    _load()
    return REGISTRY.get(kind)


def implemented_kinds() -> frozenset[str]:
    _load()
    return frozenset(REGISTRY)


def _load() -> None:
    # Importing the package runs every @register; deferred so the registry has no import cycle.
    from . import ops  # noqa: F401
