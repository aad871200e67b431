"""What travels between the runner and a backend's worker process, and how.

The runner sends a worker requests (a graph to partition, a partition to compile, inputs to
execute) and the worker answers with `Reply` records: the value, or a `Failure` describing the
exception the backend raised (its type, message, rule id, whether the backend declares it a
rejection, the end of its traceback), so the runner grades without ever holding the backend's
own objects.

Direction matters. Requests come from the suite and are pickled as usual (graphs hold read-only
mappings, which the standard pickler refuses; `dumps` knows how to rebuild them). Replies come
from a process that runs someone else's code: `loads_reply` unpickles them with an allowlist
(plain containers and numbers, NumPy arrays and dtypes, fusionspec's graph records and the
records below), so a backend cannot run code in the runner or hand it an object that grades
itself.
"""

from __future__ import annotations

import copyreg
import io
import pickle
from dataclasses import dataclass, field
from types import MappingProxyType
from typing import Any

__all__ = ["Failure", "Foreign", "Reply", "Ready", "BackendFailure", "dumps", "loads_reply",
           "rebuild_proxy", "UnsafeReplyError", "clip", "Abandoned"]


@dataclass(frozen=True)
class Failure:
    """An exception a backend raised, described (the runner never unpickles the exception)."""

    stage: str
    type_name: str
    message: str
    rule: str | None = None
    is_rejection: bool = False
    traceback: str = ""
    #: For a backend without a usable device (stage "unavailable"): why.
    reason: str = ""


@dataclass(frozen=True)
class Foreign:
    """An object of a type the suite does not take (where a backend returned something other
    than a partition or an array): its type and a short repr."""

    type_name: str
    text: str

    @staticmethod
    def of(obj: object) -> Foreign:
        return Foreign(type(obj).__name__, clip(repr(obj), 200))


@dataclass(frozen=True)
class Reply:
    value: Any = None
    failure: Failure | None = None


@dataclass(frozen=True)
class Ready:
    """A worker's first message: its backend loaded and its device chosen."""

    backend_name: str
    device: Any  # fusionspec.backend.Device
    limitations: tuple[Any, ...]  # fusionspec.backend.Limitation
    problems: dict[str, str] = field(default_factory=dict)


def clip(text: str, limit: int) -> str:
    """`text`, cut to `limit` characters with a note saying how much was left out."""
    if len(text) <= limit:
        return text
    return f"{text[:limit]} ... ({len(text) - limit} more characters cut)"


class BackendFailure(Exception):
    """Raised in the runner for a backend call that failed in the worker: carries the
    `Failure` the worker described (grading reads it as it would read the exception)."""

    def __init__(self, failure: Failure) -> None:
        super().__init__(failure.message)
        self.failure = failure


class Abandoned(Exception):
    """A diagnosis after the verdict (culprit isolation) ran out of its time or lost the
    worker: the runner stopped the worker and the verdict stands without the diagnosis."""


class UnsafeReplyError(pickle.UnpicklingError):
    """A reply named something outside the allowlist."""


def rebuild_proxy(items: dict[Any, Any]) -> MappingProxyType[Any, Any]:
    return MappingProxyType(items)


def _reduce_proxy(proxy: MappingProxyType[Any, Any]) -> tuple[Any, ...]:
    return rebuild_proxy, (dict(proxy),)


class _Pickler(pickle.Pickler):
    dispatch_table = copyreg.dispatch_table.copy()
    dispatch_table[MappingProxyType] = _reduce_proxy


def dumps(obj: object) -> bytes:
    buffer = io.BytesIO()
    _Pickler(buffer, protocol=pickle.HIGHEST_PROTOCOL).dump(obj)
    return buffer.getvalue()


#: (module, name) pairs a reply may name; modules whose every name is a plain data type.
_ALLOWED: frozenset[tuple[str, str]] = frozenset({
    ("builtins", name) for name in ("dict", "list", "tuple", "set", "frozenset", "int", "float",
                                    "complex", "str", "bytes", "bool", "NoneType", "slice")
} | {
    ("copyreg", "_reconstructor"), ("builtins", "object"),
    ("numpy", "ndarray"), ("numpy", "dtype"),
    ("numpy.core.multiarray", "_reconstruct"), ("numpy._core.multiarray", "_reconstruct"),
    ("numpy.core.multiarray", "scalar"), ("numpy._core.multiarray", "scalar"),
    ("numpy.core.numeric", "_frombuffer"), ("numpy._core.numeric", "_frombuffer"),
    ("fusionspec.conformance.transport", "rebuild_proxy"),
    ("fusionspec.conformance.transport", "Failure"),
    ("fusionspec.conformance.transport", "Foreign"),
    ("fusionspec.conformance.transport", "Reply"),
    ("fusionspec.conformance.transport", "Ready"),
    ("fusionspec.backend.protocol", "Device"), ("fusionspec.backend.protocol", "Limitation"),
    ("fusionspec.spec.ir", "LogicalTensor"), ("fusionspec.spec.ir", "Op"),
    ("fusionspec.spec.ir", "LayoutType"), ("fusionspec.spec.ir", "PropertyType"),
    ("fusionspec.spec.graph", "Partition"), ("fusionspec.spec.dtypes", "DataType"),
})
#: NumPy's scalar types (np.float32 ...) and ml_dtypes' (bfloat16, float8 ...) name dtypes.
_DTYPE_MODULES = ("numpy", "ml_dtypes")


class _ReplyUnpickler(pickle.Unpickler):
    def find_class(self, module: str, name: str) -> Any:
        if (module, name) in _ALLOWED:
            return super().find_class(module, name)
        if module.split(".")[0] in _DTYPE_MODULES:
            found = super().find_class(module, name)
            if isinstance(found, type) and _is_scalar_type(found):
                return found
        raise UnsafeReplyError(f"a reply from the backend's process names {module}.{name}, "
                               "which the runner does not accept")


def _is_scalar_type(kind: type) -> bool:
    import numpy as np

    return issubclass(kind, np.generic) or kind.__module__.startswith("ml_dtypes")


def loads_reply(data: bytes) -> object:
    """A reply of a worker, unpickled with the allowlist (`UnsafeReplyError` otherwise)."""
    return _ReplyUnpickler(io.BytesIO(data)).load()
