"""Checking what a backend says about itself before the suite relies on it.

A backend's name, its device, its declared limitations and its device problems reach results
documents, terminals and reports, and a worker process could send anything in their place. The
runner passes them through `checked_identity` when the backend loads: each field must have its
type, or `BackendError` names the backend and the field; text is stripped of control sequences
and clipped (`fusionspec.spec.text.clean_text`); a limitation that covers every case (no
matcher at all) is refused, since it would turn any run into "all unsupported".
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, replace

from fusionspec.spec.text import clean_text

from .errors import BackendError
from .protocol import Device, Limitation

__all__ = ["Identity", "checked_identity", "MAX_LIMITATIONS", "NAME_LIMIT"]

#: The most limitations a backend may declare (a real backend declares a handful).
MAX_LIMITATIONS = 1000
#: The longest name, id or short field kept (characters).
NAME_LIMIT = 200
_REASON_LIMIT = 2000


@dataclass(frozen=True)
class Identity:
    """A backend's checked self-description."""

    name: str
    device: Device
    limitations: tuple[Limitation, ...]
    problems: dict[str, str]


def _text(spec: str, field: str, value: object, limit: int = NAME_LIMIT, *,
          empty: bool = True) -> str:
    if not isinstance(value, str):
        raise BackendError(f"backend {spec!r}: {field} must be a string, got "
                           f"{type(value).__name__}")
    text = " ".join(clean_text(value, limit).split())
    if not text and not empty:
        raise BackendError(f"backend {spec!r}: {field} is empty")
    return text


def _optional(spec: str, field: str, value: object) -> str | None:
    return None if value is None else _text(spec, field, value)


def _device(spec: str, device: object) -> Device:
    if not isinstance(device, Device):
        raise BackendError(f"backend {spec!r}: its device is a {type(device).__name__}, not a "
                           "Device")
    extras = device.extras
    if not isinstance(extras, Mapping) or len(extras) > MAX_LIMITATIONS:
        raise BackendError(f"backend {spec!r}: device.extras must be a small mapping of "
                           "strings")
    return replace(device, id=_text(spec, "device.id", device.id, empty=False),
                   kind=_text(spec, "device.kind", device.kind),
                   name=_text(spec, "device.name", device.name),
                   driver=_text(spec, "device.driver", device.driver),
                   runtime=_text(spec, "device.runtime", device.runtime),
                   extras={_text(spec, "device.extras key", k): clean_text(v, _REASON_LIMIT)
                           for k, v in extras.items()})


def _limitation(spec: str, n: int, item: object) -> Limitation:
    where = f"limitations[{n}]"
    if not isinstance(item, Limitation):
        raise BackendError(f"backend {spec!r}: {where} is a {type(item).__name__}, not a "
                           "Limitation")
    dtypes = item.tensor_dtypes
    if not isinstance(dtypes, (tuple, list)) or len(dtypes) > 64:
        raise BackendError(f"backend {spec!r}: {where}.tensor_dtypes must be a short tuple")
    checked = replace(
        item, reason=_text(spec, f"{where}.reason", item.reason, _REASON_LIMIT),
        pattern=_optional(spec, f"{where}.pattern", item.pattern),
        dtype=_optional(spec, f"{where}.dtype", item.dtype),
        device_kind=_optional(spec, f"{where}.device_kind", item.device_kind),
        case_kind=_optional(spec, f"{where}.case_kind", item.case_kind),
        tensor_dtypes=tuple(_text(spec, f"{where}.tensor_dtypes", d) for d in dtypes))
    if not any((checked.pattern, checked.dtype, checked.device_kind, checked.case_kind,
                checked.tensor_dtypes)):
        raise BackendError(f"backend {spec!r}: {where} covers every case (it names no pattern, "
                           "dtype, device kind, case kind or tensor dtype); a backend that "
                           "supports nothing has nothing to grade")
    return checked


def checked_identity(spec: str, name: object, device: object, limitations: object,
                     problems: object) -> Identity:
    """What the backend `spec` said about itself, checked and cleaned (see the module
    docstring); `BackendError` names the backend and the first bad field."""
    if not isinstance(limitations, Iterable) or isinstance(limitations, (str, bytes, Mapping)):
        raise BackendError(f"backend {spec!r}: limitations must be a sequence of Limitation")
    items = list(limitations)
    if len(items) > MAX_LIMITATIONS:
        raise BackendError(f"backend {spec!r}: more than {MAX_LIMITATIONS} limitations")
    if not isinstance(problems, Mapping) or len(problems) > MAX_LIMITATIONS:
        raise BackendError(f"backend {spec!r}: its device problems must be a small mapping")
    return Identity(
        name=_text(spec, "name", name, empty=False),
        device=_device(spec, device),
        limitations=tuple(_limitation(spec, n, item) for n, item in enumerate(items)),
        problems={_text(spec, "device problem id", k): _text(spec, f"device problem {k!r}",
                                                              v, _REASON_LIMIT)
                  for k, v in problems.items()})
