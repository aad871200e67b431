"""Checking what a backend says about itself before the suite relies on it.

A backend's name, its device, its declared limitations and its device problems reach results
documents, terminals and reports, and a worker process could send anything in their place. The
runner passes them through `checked_identity` when the backend loads: each field must have its
type, or `BackendError` names the backend and the field; text is stripped of control sequences
and clipped (`fusionspec.spec.text.clean_text`); a limitation that covers every case (no
matcher at all) is refused, since it would turn any run into "all unsupported".

Known departures (`fusionspec.backend.departures`) arrive as plain data and are rebuilt by
`checked_departures`, with the same care: each field typed, text cleaned and clipped, a
departure that matches nothing at all refused (it would explain every finding).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, replace

from fusionspec.spec.text import clean_text

from .departures import LABELS, Departure, OpMatch, departure_data
from .errors import BackendError
from .protocol import Device, Limitation
from .status import Status

__all__ = ["Identity", "checked_identity", "checked_departures", "declared_departures",
           "MAX_LIMITATIONS", "NAME_LIMIT"]

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


def declared_departures(backend: object) -> list[dict[str, object]]:
    """The departures `backend` declares, as plain data (`departure_data`); a declaration that
    is not a `Departure` is kept as it is, for `checked_departures` to refuse by name."""
    declared = getattr(backend, "departures", ()) or ()
    if not isinstance(declared, (tuple, list)):
        return [{"not_a_departure": type(declared).__name__}]
    return [departure_data(d) if isinstance(d, Departure) else
            {"not_a_departure": type(d).__name__} for d in declared[:MAX_LIMITATIONS + 1]]


def _strings(spec: str, where: str, value: object, limit: int = 64) -> tuple[str, ...]:
    if not isinstance(value, (list, tuple)) or len(value) > limit:
        raise BackendError(f"backend {spec!r}: {where} must be a short list of strings")
    return tuple(_text(spec, where, v) for v in value)


def _statuses(spec: str, where: str, value: object) -> tuple[Status, ...]:
    names = _strings(spec, where, value)
    unknown = [n for n in names if n not in {s.value for s in Status}]
    if unknown:
        raise BackendError(f"backend {spec!r}: {where} names no status {unknown[0]!r} (the "
                           f"statuses are {', '.join(s.value for s in Status)})")
    return tuple(Status(n) for n in names)


def _pairs(spec: str, where: str, value: object) -> tuple[tuple[str, str], ...]:
    if not isinstance(value, (list, tuple)) or len(value) > 64:
        raise BackendError(f"backend {spec!r}: {where} must be a short list of pairs")
    pairs = [_strings(spec, where, v, 2) for v in value]
    if any(len(p) != 2 for p in pairs):
        raise BackendError(f"backend {spec!r}: {where} must hold (name, value) pairs")
    return tuple((p[0], p[1]) for p in pairs)


def _departure(spec: str, n: int, item: object) -> Departure:
    where = f"departures[{n}]"
    if not isinstance(item, Mapping) or "not_a_departure" in item:
        kind = item.get("not_a_departure") if isinstance(item, Mapping) else type(item).__name__
        raise BackendError(f"backend {spec!r}: {where} is a {kind}, not a Departure")
    ops = item.get("ops", [])
    if not isinstance(ops, (list, tuple)) or len(ops) > 64 or \
            not all(isinstance(o, Mapping) for o in ops):
        raise BackendError(f"backend {spec!r}: {where}.ops must be a short list of OpMatch")
    cut = item.get("cut")
    substitute = item.get("substitute")
    label = _text(spec, f"{where}.label", item.get("label", LABELS[0]))
    if label not in LABELS:
        raise BackendError(f"backend {spec!r}: {where}.label must be one of {', '.join(LABELS)}")
    notes = item.get("notes", {})
    if not isinstance(notes, Mapping) or len(notes) > 64:
        raise BackendError(f"backend {spec!r}: {where}.notes must be a small mapping")
    checked = Departure(
        id=_text(spec, f"{where}.id", item.get("id"), empty=False),
        statement=_text(spec, f"{where}.statement", item.get("statement"), _REASON_LIMIT,
                        empty=False),
        source=_text(spec, f"{where}.source", item.get("source", ""), _REASON_LIMIT),
        label=label,
        statuses=_statuses(spec, f"{where}.statuses", item.get("statuses", [])),
        patterns=_strings(spec, f"{where}.patterns", item.get("patterns", [])),
        rules=_strings(spec, f"{where}.rules", item.get("rules", [])),
        ops=tuple(OpMatch(_text(spec, f"{where}.ops.kind", o.get("kind"), empty=False),
                          _pairs(spec, f"{where}.ops.attrs", o.get("attrs", [])),
                          _count(spec, f"{where}.ops.inputs", o.get("inputs"))) for o in ops),
        dtypes=_strings(spec, f"{where}.dtypes", item.get("dtypes", [])),
        cut=None if cut is None else _pair(spec, f"{where}.cut", cut),
        unsupported=_strings(spec, f"{where}.unsupported", item.get("unsupported", [])),
        error_kinds=_strings(spec, f"{where}.error_kinds", item.get("error_kinds", [])),
        error_fields=_pairs(spec, f"{where}.error_fields", item.get("error_fields", [])),
        substitute=None if substitute is None else _text(spec, f"{where}.substitute",
                                                         substitute, empty=False),
        notes=tuple((_text(spec, f"{where}.notes key", k),
                     _text(spec, f"{where}.notes", v, _REASON_LIMIT)) for k, v in notes.items()))
    if not any(checked.matchers):
        raise BackendError(f"backend {spec!r}: {where} ({checked.id}) matches every case (it "
                           "names no status, pattern, rule, op, dtype, cut, unsupported partition, "
                           "error or substitute), so it would explain every finding")
    return checked


def _count(spec: str, where: str, value: object) -> int | None:
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, int) or not 0 <= value <= 64:
        raise BackendError(f"backend {spec!r}: {where} must be a small whole number or None")
    return value


def _pair(spec: str, where: str, value: object) -> tuple[str, str]:
    pair = _strings(spec, where, value, 2)
    if len(pair) != 2:
        raise BackendError(f"backend {spec!r}: {where} must be two kinds, before and after")
    return pair[0], pair[1]


def checked_departures(spec: str, data: object) -> tuple[Departure, ...]:
    """The departures backend `spec` declared (as plain data, `declared_departures`), checked
    and cleaned; `BackendError` names the backend and the first bad field. Ids are unique."""
    if not isinstance(data, (list, tuple)):
        raise BackendError(f"backend {spec!r}: departures must be a sequence of Departure")
    if len(data) > MAX_LIMITATIONS:
        raise BackendError(f"backend {spec!r}: more than {MAX_LIMITATIONS} departures")
    found = tuple(_departure(spec, n, item) for n, item in enumerate(data))
    ids = [d.id for d in found]
    twice = sorted({i for i in ids if ids.count(i) > 1})
    if twice:
        raise BackendError(f"backend {spec!r}: departure ids declared twice: {', '.join(twice)}")
    return found
