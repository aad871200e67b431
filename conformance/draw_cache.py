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
``$XDG_CACHE_HOME/fusionspec/draws`` (``~/.cache`` when unset), written atomically.

An entry is a pickle the suite wrote, signed (`fusionspec.conformance.cache_files`: HMAC-SHA256
under a key made once per cache folder, over the entry and its cache key, as the oracle cache
signs its own), with a header holding the digest of the pickle and, for a draw, the ids of its
cases in order. An entry is read back only if it is a plain file (never a FIFO, a device or a
link) of at most `ENTRY_LIMIT` bytes, its signature verifies for its key (an entry moved from
another key does not), its digest matches and it holds the cases it names; anything else is
never unpickled: it is dropped with a one-line warning on standard error and drawn again, so a
bad entry costs time, never a case.
Runs that share the folder share their drawing too (the main job runs its backends side by
side): a run about to draw an entry `claim`s it first, through a lock file beside it
(``<key>.lock``, an advisory lock the system drops when its process ends); a draw another run
holds is left for later, and by then it is usually on disk, so no draw is made twice at once.
``FUSIONSPEC_DRAW_CACHE=off`` turns the cache off; an absolute path there puts the entries in
that folder instead (a CI job that keeps its draws apart from the kernel caches, or a test
session sharing draws between the runs it starts).
"""

from __future__ import annotations

import contextlib
import hashlib
import importlib
import json
import os
import pickle
import platform
from collections.abc import Iterator, Sequence
from functools import cache
from importlib import metadata
from pathlib import Path

from .cache_files import (
    MAC_BYTES,
    BadEntry,
    UnusableKey,
    folder_key,
    load_signed,
    read_regular,
    say_once,
    seal,
    unseal,
    write_atomic,
)
from .cases import Case

__all__ = ["ENV", "ENTRY_LIMIT", "draw_key", "load_draw", "store_draw", "entry_path", "enabled",
           "cache_dir", "code_digest", "switched_on", "folder_of", "claim", "held_elsewhere"]

#: The subpackages whose sources decide what a draw gives.
_SOURCES = ("fusionspec.spec", "fusionspec.backend", "fusionspec.reference",
            "fusionspec.conformance")
_VERSIONS = ("hypothesis", "numpy", "ml_dtypes")


#: The environment variable that turns the cache off or names its folder.
ENV = "FUSIONSPEC_DRAW_CACHE"
#: The largest entry read back (bytes): a draw of the ci profile is well under a megabyte.
ENTRY_LIMIT = 64 * 2**20
_FORMAT = 1


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


def entry_path(key: str) -> Path:
    """Where the entry of `key` lives."""
    return cache_dir() / f"{key}.pickle"


def load_draw(key: str) -> object | None:
    """The value stored under `key`, or None: not cached, or refused (then dropped with a
    one-line warning on standard error, and drawn again; see the module docstring)."""
    return load_signed(entry_path(key), lambda path, secret: _read(path, key, secret),
                       cache="the draw cache", entry="the draw cache's entry",
                       again="drawing it again")


@contextlib.contextmanager
def claim(key: str, *, wait: bool) -> Iterator[bool]:
    """Hold the draw of `key` for this process while the block runs: yields True once it is
    held (`wait`: however long another run holds it), False at once when another run holds it
    and not `wait`. Where no lock can be taken (a folder that cannot be written, a system
    without advisory locks) it yields True: each run then draws for itself, as without the
    lock."""
    try:
        import fcntl
    except ImportError:  # no advisory locks here
        yield True
        return
    try:
        cache_dir().mkdir(parents=True, exist_ok=True)
        fd = os.open(cache_dir() / f"{key}.lock", os.O_RDWR | os.O_CREAT
                     | getattr(os, "O_NOFOLLOW", 0), 0o600)
    except OSError:
        yield True
        return
    try:
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | (0 if wait else fcntl.LOCK_NB))
        except BlockingIOError:
            yield False
            return
        except OSError:  # a file system without locks
            yield True
            return
        yield True
    finally:
        os.close(fd)  # closing drops the lock


def held_elsewhere(key: str) -> bool:
    """Whether another run holds the draw of `key` now (its entry will soon be on disk)."""
    with claim(key, wait=False) as held:
        return not held


def _off(why: str) -> None:
    say_once("the draw cache", why)


def _read(path: Path, key: str, secret: bytes) -> object:
    data = read_regular(path, ENTRY_LIMIT)
    header_line, _, payload = unseal(secret, data, key.encode()).partition(b"\n")
    try:
        header = json.loads(header_line)
    except ValueError:
        header = None
    if not isinstance(header, dict) or header.get("format") != _FORMAT:
        raise BadEntry("it is not an entry of this cache")
    if header.get("sha256") != hashlib.sha256(payload).hexdigest():
        raise BadEntry("its content does not match its digest")
    try:
        # Signed for this key with this cache's own key: a pickle this suite wrote.
        found: object = pickle.loads(payload)
    except Exception as exc:
        raise BadEntry(f"it cannot be read back ({type(exc).__name__})") from None
    ids = header.get("ids")
    if ids is not None and not _cases_of(found, ids):
        raise BadEntry("it does not hold the cases it names")
    return found


def _cases_of(found: object, ids: object) -> bool:
    """Whether `found` is the list of cases whose ids are `ids`, in that order."""
    return isinstance(found, list) and isinstance(ids, list) and len(found) == len(ids) and all(
        isinstance(case, Case) and case.id == ident for case, ident in zip(found, ids))


def store_draw(key: str, data: bytes, ids: Sequence[str] | None = None) -> None:
    """Keep `data` (a pickle) under `key`, signed, with `ids` when it holds cases (the ids of
    those cases, in order: what a read checks it still holds); a cache that cannot be written,
    or an entry larger than `ENTRY_LIMIT`, is left alone."""
    folder = cache_dir()
    header = json.dumps({"format": _FORMAT, "sha256": hashlib.sha256(data).hexdigest(),
                         "ids": None if ids is None else list(ids)}).encode()
    body = header + b"\n" + data
    if len(body) + MAC_BYTES > ENTRY_LIMIT:
        return
    try:
        folder.mkdir(parents=True, exist_ok=True)
        secret = folder_key(folder)
    except UnusableKey as exc:
        _off(str(exc))
        return
    except OSError:  # a cache that cannot be written is left alone
        return
    with contextlib.suppress(OSError):
        write_atomic(folder / f"{key}.pickle", seal(secret, body, key.encode()))
