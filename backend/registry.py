"""Finding backends: the entry-point registry, ``module:attr`` factories, and device choice.

Backends are found through the entry-point group ``fusionspec.backends``: each entry point names
a zero-argument callable (usually the class) returning a backend; fusionspec registers its own
(``reference``, ``accel``, ``onednn``) the same way. `load_backend` also takes a factory given
as ``"module:attr"`` (`attr` of `module` is a backend class or a zero-argument callable
returning one), for backends that are not installed as packages.
"""

from __future__ import annotations

import importlib
from collections.abc import Callable, Iterable, Mapping
from importlib.metadata import entry_points

from .errors import BackendError, BackendUnavailableError
from .protocol import Backend, Device, device_problems, unavailable_reason

__all__ = ["ENTRY_POINT_GROUP", "available_backends", "backend_distributions", "load_backend",
           "select_device"]

ENTRY_POINT_GROUP = "fusionspec.backends"


def _entry_points() -> dict[str, Callable[[], object]]:
    found: dict[str, Callable[[], object]] = {}
    for ep in entry_points(group=ENTRY_POINT_GROUP):
        found.setdefault(ep.name, ep.load)
    return found


def backend_distributions() -> dict[str, str]:
    """Each registered backend's name -> the distribution that registers it, with its version
    (``mybackend 1.4.0``), read from the installed metadata without loading the backend."""
    found: dict[str, str] = {}
    for ep in entry_points(group=ENTRY_POINT_GROUP):
        dist = ep.dist
        found.setdefault(ep.name, f"{dist.name} {dist.version}" if dist is not None else "?")
    return found


def available_backends() -> list[str]:
    """Names of every registered backend (``reference`` first)."""
    return sorted(_entry_points(), key=lambda n: (n != "reference", n))


def _factory(spec: str) -> object:
    if ":" in spec:
        module_name, _, attr = spec.partition(":")
        return getattr(importlib.import_module(module_name), attr)
    loaders = _entry_points()
    if spec not in loaders:
        raise BackendError(f"no backend {spec!r}; registered: "
                           f"{', '.join(available_backends()) or 'none'}")
    return loaders[spec]()


def load_backend(spec: str) -> Backend:
    """The backend registered as `spec`, or made by the ``"module:attr"`` factory `spec`;
    `BackendError` names what went wrong (an unknown name lists the registered ones)."""
    try:
        factory = _factory(spec)
        backend = factory() if callable(factory) else factory
    except BackendError:
        raise
    except Exception as exc:  # a third-party plugin may fail in any way; report, don't crash
        raise BackendError(f"backend {spec!r} failed to load: {type(exc).__name__}: {exc}") \
            from exc
    if not isinstance(backend, Backend):
        raise BackendError(f"{spec!r} does not give a Backend (name, devices, partition, "
                           "compile)")
    return backend


def select_device(backend: Backend, device_id: str | None) -> Device:
    """The backend's device `device_id`, or its first device when None;
    `BackendUnavailableError` when the backend has no usable device or `device_id` is one it
    left out (with the backend's reason), `BackendError` for an unknown id."""
    devices = _devices(backend)
    try:
        problems = device_problems(backend)
    except Exception as exc:  # the backend's own words about its devices; say what broke
        raise BackendError(f"backend {backend.name!r}: device_problems() failed: "
                           f"{type(exc).__name__}: {exc}") from exc
    if device_id is not None and device_id in problems:
        raise BackendUnavailableError(f"device {device_id!r} of backend {backend.name!r} is "
                                      f"unavailable: {problems[device_id]}",
                                      reason=problems[device_id])
    if not devices:
        why = "; ".join(f"{k}: {v}" for k, v in problems.items())
        why = why or unavailable_reason(backend) or "it reports no devices"
        raise BackendUnavailableError(f"backend {backend.name!r} is unavailable: {why}",
                                      reason=why)
    if device_id is None:
        return devices[0]
    for device in devices:
        if device.id == device_id:
            return device
    known = ", ".join(d.id for d in devices)
    raise BackendError(f"backend {backend.name!r} has no device {device_id!r}; it has {known}")


def _devices(backend: Backend) -> list[Device]:
    """`backend.devices()` as a list of `Device` records; `BackendError` naming the backend
    when it fails or gives anything else (its answers are data to check, not to trust)."""
    try:
        found = backend.devices()
        devices = list(found) if isinstance(found, Iterable) and not isinstance(
            found, (str, bytes, Mapping)) else None
    except BackendError:
        raise
    except Exception as exc:
        raise BackendError(f"backend {backend.name!r}: devices() failed: "
                           f"{type(exc).__name__}: {exc}") from exc
    if devices is None:
        raise BackendError(f"backend {backend.name!r}: devices() must give a sequence of "
                           f"Device, got {type(found).__name__}")
    wrong = [d for d in devices if not isinstance(d, Device)]
    if wrong:
        raise BackendError(f"backend {backend.name!r}: devices() must give Device records, "
                           f"got a {type(wrong[0]).__name__}")
    return devices
