"""A disk cache of drawn cases, so a second run of the same suite on the same profile does not
draw its cases again (drawing is about as costly as judging the ci profile).

Each draw (pattern x kind x rule, the unit a shard is given) is an entry of its own, so a
shard reads and writes the entries of its own draws, and a folder kept between CI runs serves
every shard, profile and seed at once. A draw is cached only where its cases are a function of
its coordinates: a derandomized profile without hypothesis' example database (the ci profile).
The key covers everything else the cases depend on: the coordinates (pattern, kind, rule,
examples, floor), the profile, the run's seed, and `code_digest` (the versions of Python,
hypothesis, NumPy and ml_dtypes, and the suite's own source files: spec, backend, reference,
conformance), so any change to the generator or the spec data is a new key; an entry of an
older suite is never read again (a CI cache keyed on `code_digest` starts afresh when it
changes, leaving those behind). Entries live in
``$XDG_CACHE_HOME/fusionspec/draws`` (``~/.cache`` when unset), written atomically; an entry
that cannot be read is dropped and drawn again. They are pickles the suite wrote itself into
the user's own cache, like the OpenCL runtimes' binary caches beside them.
``FUSIONSPEC_DRAW_CACHE=off`` turns the cache off; an absolute path there puts the entries in
that folder instead (a CI job that keeps its draws apart from the kernel caches, or a test
session sharing draws between the runs it starts).
"""

from __future__ import annotations

import hashlib
import importlib
import os
import pickle
import platform
import tempfile
from functools import cache
from importlib import metadata
from pathlib import Path

__all__ = ["ENV", "draw_key", "load_draw", "store_draw", "enabled", "cache_dir", "code_digest",
           "switched_on", "folder_of"]

#: The subpackages whose sources decide what a draw gives.
_SOURCES = ("fusionspec.spec", "fusionspec.backend", "fusionspec.reference",
            "fusionspec.conformance")
_VERSIONS = ("hypothesis", "numpy", "ml_dtypes")


#: The environment variable that turns the cache off or names its folder.
ENV = "FUSIONSPEC_DRAW_CACHE"


def switched_on(variable: str) -> bool:
    """Whether the cache the environment `variable` governs is on (anything but off/0/no)."""
    return os.environ.get(variable, "on").strip().lower() not in ("off", "0", "no", "false")


def folder_of(variable: str, name: str) -> Path:
    """The folder of a fusionspec cache: the absolute path `variable` names, or
    ``$XDG_CACHE_HOME/fusionspec/<name>`` (``~/.cache`` when unset)."""
    named = os.environ.get(variable, "").strip()
    if os.path.isabs(named):
        return Path(named)
    base = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    return Path(base) / "fusionspec" / name


def enabled() -> bool:
    return switched_on(ENV)


def cache_dir() -> Path:
    return folder_of(ENV, "draws")


@cache
def code_digest() -> str:
    """What every key of this code shares: the digest of the suite's sources and of the
    versions its draws depend on (a CI cache of the entries keys on it)."""
    digest = hashlib.sha256()
    for name in _SOURCES:
        folder = Path(str(importlib.import_module(name).__file__)).parent
        for path in sorted(p for p in folder.rglob("*") if p.suffix in (".py", ".json")):
            digest.update(str(path.relative_to(folder)).encode())
            digest.update(path.read_bytes())
    for package in _VERSIONS:
        digest.update(f"{package}={metadata.version(package)}".encode())
    digest.update(platform.python_version().encode())
    return digest.hexdigest()


def draw_key(*parts: object) -> str:
    """The cache key of a draw described by `parts` (their reprs), under this code."""
    text = "\x00".join([code_digest(), *(repr(p) for p in parts)])
    return hashlib.sha256(text.encode()).hexdigest()


def load_draw(key: str) -> object | None:
    """The cached value under `key`, or None (not cached, or unreadable: then dropped)."""
    path = cache_dir() / f"{key}.pickle"
    try:
        data = path.read_bytes()
    except OSError:
        return None
    try:
        found: object = pickle.loads(data)
    except Exception:  # a truncated or stale entry is drawn again
        path.unlink(missing_ok=True)
        return None
    return found


def store_draw(key: str, data: bytes) -> None:
    """Keep `data` (a pickle) under `key`; a cache that cannot be written is left alone."""
    folder = cache_dir()
    try:
        folder.mkdir(parents=True, exist_ok=True)
        handle, name = tempfile.mkstemp(dir=folder, prefix=".draw-", suffix=".tmp")
        with os.fdopen(handle, "wb") as out:
            out.write(data)
        os.replace(name, folder / f"{key}.pickle")
    except OSError:
        return
