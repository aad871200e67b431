"""Looking up reference op implementations (the table is `fusionspec.reference.ops`).

Each op kind has one small NumPy function named after the op (``def Convolution(...)``). The
calling convention, which the executor relies on:

- inputs arrive positionally, in port order; floating-point inputs arrive as float32 arrays
  (bf16/f16 are widened exactly), integer inputs in their own NumPy dtype;
- attributes arrive as keyword arguments named as in the op schema, with the schema's defaults
  already filled in (so the functions repeat none of them);
- a function that declares a ``dst_dtype`` keyword receives the output's `DataType` (Quantize,
  TypeCast need it);
- the result is one array, or a tuple for multi-output ops; floating-point results are float32
  and are *not* rounded to the declared output dtype (the executor casts at partition outputs).
"""

from __future__ import annotations

import inspect
from collections.abc import Callable, Iterator, Mapping
from contextlib import contextmanager
from contextvars import ContextVar
from dataclasses import dataclass
from typing import Any

from .ops import IMPLEMENTATIONS

__all__ = ["OpImpl", "implementation", "implemented_kinds", "REGISTRY", "substituted"]


@dataclass(frozen=True)
class OpImpl:
    kind: str
    fn: Callable[..., Any]
    wants_dst_dtype: bool


#: Op kind -> its implementation, as the executor calls it.
REGISTRY: dict[str, OpImpl] = {
    kind: OpImpl(kind, fn, "dst_dtype" in inspect.signature(fn).parameters)
    for kind, fn in IMPLEMENTATIONS.items()}


_SUBSTITUTES: ContextVar[Mapping[str, OpImpl] | None] = ContextVar("fusionspec_substitutes",
                                                                   default=None)


@contextmanager
def substituted(functions: Mapping[str, Callable[..., Any]]) -> Iterator[None]:
    """Within this block (in this thread or task only) the executor runs `functions` instead
    of the registered implementations of their op kinds: how an alternative semantics (a known
    departure of a library) is evaluated next to the spec's, without touching `REGISTRY`."""
    subs = {kind: OpImpl(kind, fn, "dst_dtype" in inspect.signature(fn).parameters)
            for kind, fn in functions.items()}
    token = _SUBSTITUTES.set({**(_SUBSTITUTES.get() or {}), **subs})
    try:
        yield
    finally:
        _SUBSTITUTES.reset(token)


def implementation(kind: str) -> OpImpl | None:
    """The implementation the executor runs for `kind` (a `substituted` one, if any)."""
    subs = _SUBSTITUTES.get()
    return (subs.get(kind) if subs else None) or REGISTRY.get(kind)


def implemented_kinds() -> frozenset[str]:
    return frozenset(REGISTRY)
