"""The tuning cache: kernel-shape choices measured on a device, kept next to the program cache.

A family's defaults are chosen from the device's properties and are meant to be good without
tuning. Where measuring helps (which register block the GEMM kernel of a CPU driver runs
fastest), `fusionspec.accel.tune` tries a handful of choices once and keeps the fastest here:
one JSON document per device under ``<program cache>/tuning/`` (``$FUSIONSPEC_ACCEL_CACHE_DIR``,
default ``~/.cache/fusionspec/opencl``), named by a sha256 of the same device identity the
program cache uses (platform, vendor, name, OpenCL version, driver version) and of the
generator's version, so a driver upgrade or a new generator starts untuned. The document maps
a family's name to its choices::

    {"version": "1", "device": "...", "choices": {"gemm": {"rm": 6, "nv": 2, "explicit_a": "auto"}},
     "measured": {...}}

`load_tuning` reads it once per process (`BuildContext.for_device` passes it to the builders,
which read their own family's entry and ignore what they do not know); nothing here measures.
With the program cache off (``FUSIONSPEC_ACCEL_CACHE_DIR=off``) there is no tuning cache
either. A damaged document counts as absent.
"""

from __future__ import annotations

import hashlib
import json
import os
import threading
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from .devices import DeviceInfo
from .runtime import GENERATOR_VERSION, cache_dir

__all__ = ["TUNING_VERSION", "Choices", "tuning_key", "tuning_path", "load_tuning",
           "save_tuning", "forget_tuning"]

#: Bump when the meaning of a family's choices changes, so old documents are not applied.
TUNING_VERSION = "1"

#: Family name -> its choices (a JSON object).
Choices = Mapping[str, Mapping[str, Any]]

_LOADED: dict[str, Choices] = {}
_LOCK = threading.Lock()


def tuning_key(info: DeviceInfo) -> str:
    """The name of `info`'s tuning document (see the module docstring)."""
    parts = (TUNING_VERSION, GENERATOR_VERSION, info.platform, info.vendor, info.name,
             info.opencl_version, info.driver)
    return hashlib.sha256("\0".join(parts).encode()).hexdigest()


def tuning_path(info: DeviceInfo) -> Path | None:
    """Where `info`'s tuning document lives, or None when the cache is off."""
    root = cache_dir()
    return None if root is None else root / "tuning" / f"{tuning_key(info)}.json"


def load_tuning(info: DeviceInfo) -> Choices:
    """`info`'s tuned choices by family (empty when it was never tuned); read once per
    process. A device without a driver handle (a made-up one, for code generation alone) has
    none."""
    if info.handle is None:
        return {}
    key = tuning_key(info)
    with _LOCK:
        found = _LOADED.get(key)
        if found is None:
            found = _LOADED[key] = _read(tuning_path(info))
        return found


def _read(path: Path | None) -> Choices:
    if path is None:
        return {}
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return {}
    choices = data.get("choices") if isinstance(data, dict) else None
    if data.get("version") != TUNING_VERSION or not isinstance(choices, dict):
        return {}
    return {str(family): dict(value) for family, value in choices.items()
            if isinstance(value, dict)}


def save_tuning(info: DeviceInfo, choices: Choices, measured: Mapping[str, Any]) -> Path | None:
    """Write `info`'s tuning document (choices by family, and the measurements behind them
    for the curious) and use it from now on in this process; the path, or None when the
    cache is off or unwritable."""
    path = tuning_path(info)
    with _LOCK:
        _LOADED[tuning_key(info)] = {family: dict(value) for family, value in choices.items()}
    if path is None:
        return None
    document = {"version": TUNING_VERSION, "device": f"{info.name} ({info.platform}, driver "
                f"{info.driver})", "choices": {k: dict(v) for k, v in choices.items()},
                "measured": dict(measured)}
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        tmp = path.with_suffix(f".{os.getpid()}.tmp")
        tmp.write_text(json.dumps(document, indent=1, sort_keys=True), encoding="utf-8")
        os.replace(tmp, path)
    except OSError:
        return None
    return path


def forget_tuning() -> None:
    """Drop what this process has read (the next `load_tuning` reads the disk again)."""
    with _LOCK:
        _LOADED.clear()
