"""What travels between the runner and a backend's worker process, and how.

The runner sends a worker requests (a graph to partition, a partition to compile, inputs to
execute) and the worker answers with `Reply` records: the value, or a `Failure`
(`fusionspec.conformance.answers`) describing the exception the backend raised, so the runner
grades without ever holding the backend's own objects.

Direction matters. Requests come from the suite and are pickled as usual (graphs hold read-only
mappings, which the standard pickler refuses; `dumps` knows how to rebuild them). Replies come
from a process that runs someone else's code: `loads_reply` unpickles them with an allowlist
(plain containers and numbers, NumPy arrays and dtypes, fusionspec's graph records and the
records below; each name checked exactly before anything is imported), so a backend cannot run
code in the runner or hand it an object that grades itself. Replies are bounded in bytes
(`receive_reply`) and in the values they hold (`check_size`), so a small reply cannot stand
for a huge structure.
"""

from __future__ import annotations

import copyreg
import dataclasses
import io
import pickle
from collections.abc import Iterable
from dataclasses import dataclass, field
from multiprocessing.connection import Connection
from types import MappingProxyType
from typing import Any

from ..answers import Failure, clip

__all__ = ["Reply", "Ready", "dumps", "loads_reply", "rebuild_proxy", "UnsafeReplyError",
           "check_size", "receive_reply", "MAX_REPLY_VALUES"]


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
    #: The backend's known departures as plain data (`fusionspec.backend.departure_data`),
    #: rebuilt and checked in the runner.
    departures: tuple[Any, ...] = ()


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


#: (module, name) pairs a reply may name, exactly: the plain containers and numbers, NumPy's
#: array and dtype rebuilders, ml_dtypes' scalar types of the spec's dtypes, and the records
#: the protocol sends. A name is checked here before anything is imported.
_ALLOWED: frozenset[tuple[str, str]] = frozenset({
    ("builtins", name) for name in ("dict", "list", "tuple", "set", "frozenset", "int", "float",
                                    "complex", "str", "bytes", "bool", "NoneType", "slice")
} | {
    ("copyreg", "_reconstructor"), ("builtins", "object"),
    ("numpy", "ndarray"), ("numpy", "dtype"),
    ("numpy.core.multiarray", "_reconstruct"), ("numpy._core.multiarray", "_reconstruct"),
    ("numpy.core.multiarray", "scalar"), ("numpy._core.multiarray", "scalar"),
    ("numpy.core.numeric", "_frombuffer"), ("numpy._core.numeric", "_frombuffer"),
    ("fusionspec.conformance.workers.transport", "rebuild_proxy"),
    ("fusionspec.conformance.answers", "Failure"),
    ("fusionspec.conformance.answers", "Foreign"),
    ("fusionspec.conformance.workers.transport", "Reply"),
    ("fusionspec.conformance.workers.transport", "Ready"),
    ("fusionspec.backend.protocol", "Device"), ("fusionspec.backend.protocol", "Limitation"),
    ("fusionspec.spec.ir", "LogicalTensor"), ("fusionspec.spec.ir", "Op"),
    ("fusionspec.spec.ir", "LayoutType"), ("fusionspec.spec.ir", "PropertyType"),
    ("fusionspec.spec.graph", "Partition"), ("fusionspec.spec.dtypes", "DataType"),
} | {
    ("ml_dtypes", name) for name in ("bfloat16", "float8_e4m3fn", "float8_e5m2", "int4",
                                     "uint4")
})

#: The most values (containers, numbers, records; an array counts once) one reply may hold,
#: counting a value each time it is reached: sharing in a pickle makes a few hundred bytes
#: stand for billions of elements, which any later walk (a repr, a comparison) would visit.
MAX_REPLY_VALUES = 1_000_000


#: What each allowed name resolved to, once (a reply names a few of them many times).
_RESOLVED: dict[tuple[str, str], Any] = {}


class _ReplyUnpickler(pickle.Unpickler):
    def find_class(self, module: str, name: str) -> Any:
        found = _RESOLVED.get((module, name))
        if found is not None:
            return found
        if (module, name) in _ALLOWED:
            found = _RESOLVED[module, name] = super().find_class(module, name)
            return found
        raise UnsafeReplyError(f"a reply from the backend's process names "
                               f"{clip(module, 80)}.{clip(name, 80)}, which the runner does "
                               "not accept")


#: Types whose values hold nothing further, and the plain containers: looked up by exact type,
#: since every reply is walked and most of what it holds is one of these.
_ATOMS: frozenset[type] = frozenset({str, bytes, int, float, complex, bool, type(None)})
_SEQUENCES: frozenset[type] = frozenset({list, tuple, set, frozenset})
#: Field names of each record type met so far (`dataclasses.fields` is slow to ask each time).
_FIELDS: dict[type, tuple[str, ...]] = {}


def _children(value: object) -> Iterable[object]:
    kind = type(value)
    if kind in _ATOMS:
        return ()
    if kind is dict or kind is MappingProxyType:
        return [*value.keys(), *value.values()]  # type: ignore[attr-defined]
    if kind in _SEQUENCES:
        return value  # type: ignore[return-value]
    names = _FIELDS.get(kind)
    if names is not None:
        return [getattr(value, name, None) for name in names]
    return _other_children(value)


def _other_children(value: object) -> Iterable[object]:
    if isinstance(value, (str, bytes, int, float, complex, bool)) or value is None:
        return ()
    if isinstance(value, (dict, MappingProxyType)):
        return [*value.keys(), *value.values()]
    if isinstance(value, (list, tuple, set, frozenset)):
        return value
    import numpy as np

    if isinstance(value, np.ndarray):
        return value.flat if value.dtype == object else ()
    if dataclasses.is_dataclass(value):
        names = tuple(f.name for f in dataclasses.fields(value))
        if not isinstance(value, type):
            _FIELDS[type(value)] = names
        return [getattr(value, name, None) for name in names]
    return getattr(value, "__dict__", {}).values()


def check_size(value: object, limit: int = MAX_REPLY_VALUES) -> None:
    """`UnsafeReplyError` when `value` holds more than `limit` values (each counted as often
    as it is reached, so a self-referencing or widely shared structure is refused too)."""
    pending: list[object] = [value]
    seen = 0
    while pending:
        seen += 1
        if seen > limit:
            raise UnsafeReplyError(f"a reply from the backend's process holds more than "
                                   f"{limit} values; the runner does not accept it")
        pending.extend(_children(pending.pop()))


def loads_reply(data: bytes) -> object:
    """A reply of a worker, unpickled with the allowlist and checked for size
    (`UnsafeReplyError` otherwise)."""
    try:
        value = _ReplyUnpickler(io.BytesIO(data)).load()
    except UnsafeReplyError:
        raise
    except (pickle.UnpicklingError, EOFError, AttributeError, ImportError, IndexError,
            KeyError, TypeError, ValueError, RecursionError, MemoryError, OverflowError) as exc:
        raise UnsafeReplyError(f"a reply from the backend's process cannot be read: "
                               f"{type(exc).__name__}: {clip(str(exc), 200)}") from None
    check_size(value)
    return value


def receive_reply(conn: Connection, limit: int) -> object:
    """The next reply on `conn`, at most `limit` bytes long (`UnsafeReplyError` past it)."""
    try:
        data = conn.recv_bytes(limit)
    except OSError as exc:
        if "bad message length" in str(exc):  # multiprocessing's word for "too long"
            raise UnsafeReplyError(f"a reply from the backend's process is longer than "
                                   f"{limit} bytes") from None
        raise
    return loads_reply(data)
