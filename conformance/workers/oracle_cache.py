"""A disk cache of the reference's side of the cases, so a second run does not compute it again.

The reference's side of a case (`fusionspec.conformance.grade.prepared`: its partitions, the
filled inputs, every tensor's value and the error bounds) depends on the case and the seed only,
never on the backend: the main job's second backend, and every later run of the same suite,
would compute it again for nothing. It is about two thirds of what judging the ci profile costs
the reference, and a few kilobytes a case.

An entry is keyed on the case (its id, which hashes its graph, and its value domains), the seed
and `code_digest` (the suite's sources and the versions of what they compute with), so a change
to the reference or the spec data is a new key. Entries are the transport's pickles, which only
fusionspec's own processes write; each is signed with HMAC-SHA256 under a key made once per
cache folder (readable by its owner only) for its own file name
(`fusionspec.conformance.cache_files`, shared with the draw cache), and read only from a plain
file of at most `ENTRY_LIMIT` bytes: an entry whose signature does not verify (or moved from
another name), a FIFO, a link or a device is never unpickled: it is dropped and computed
again. Entries live in
``$XDG_CACHE_HOME/fusionspec/oracle/<digest>`` (``~/.cache`` when unset), written atomically;
folders of other digests untouched for `STALE_DAYS` days are removed.
``FUSIONSPEC_ORACLE_CACHE=off`` turns the cache off; an absolute path there puts it in that
folder instead.

Drawing fills it too. Choosing a case's values runs the reference on the graph with the
default seed and computes its error bounds (`fusionspec.conformance.generate.values`), which
is the reference's side of the case for a run with that seed: the drawing process stores it
here (`fusionspec.conformance.suite`), and the first run finds most of its cases already
prepared.
"""

from __future__ import annotations

import contextlib
import hashlib
import os
import shutil
import time
from pathlib import Path

from ..cache_files import MAC_BYTES, BadEntry, folder_key, read_regular, seal, unseal, write_atomic
from ..cases import Case
from ..draw_cache import code_digest, folder_of, switched_on

__all__ = ["ENV", "ENTRY_LIMIT", "OracleCache", "STALE_DAYS", "enabled"]

#: The environment variable that turns the cache off or names its folder.
ENV = "FUSIONSPEC_ORACLE_CACHE"
#: A digest's folder not touched for this many days belongs to a suite no longer run.
STALE_DAYS = 14
#: The largest entry read back or written (bytes): a case's entry is a few kilobytes.
ENTRY_LIMIT = 256 * 2**20


def enabled() -> bool:
    return switched_on(ENV)


def _root() -> Path:
    return folder_of(ENV, "oracle")


class OracleCache:
    """Signed entries of one suite's code (see the module docstring). Every method swallows the
    file system's errors: a cache that cannot be read or written is a cache that misses."""

    def __init__(self) -> None:
        self.digest = code_digest()
        self.folder: Path | None = None
        self._secret = b""
        if not enabled():
            return
        root = _root()
        try:
            root.mkdir(parents=True, exist_ok=True)
            self._secret = folder_key(root)
            self.folder = root / self.digest[:32]
            self.folder.mkdir(exist_ok=True)
            os.utime(self.folder)
            _remove_stale(root, keep=self.folder)
        except OSError:
            self.folder = None

    def _path(self, case: Case, seed: int) -> Path | None:
        if self.folder is None:
            return None
        text = "\x00".join([self.digest, case.id, repr(sorted(case.values.items())), str(seed)])
        return self.folder / hashlib.sha256(text.encode()).hexdigest()

    def load(self, case: Case, seed: int) -> bytes | None:
        """The payload stored for `case` and `seed`, if it is a plain file of at most
        `ENTRY_LIMIT` bytes signed here for that entry (anything else is dropped)."""
        path = self._path(case, seed)
        if path is None:
            return None
        try:
            return unseal(self._secret, read_regular(path, ENTRY_LIMIT), path.name.encode())
        except FileNotFoundError:
            return None
        except BadEntry:
            if not path.is_dir():
                with contextlib.suppress(OSError):
                    path.unlink()
            return None

    def store(self, case: Case, seed: int, payload: bytes) -> None:
        path = self._path(case, seed)
        if path is None or len(payload) + MAC_BYTES > ENTRY_LIMIT:
            return
        with contextlib.suppress(OSError):
            write_atomic(path, seal(self._secret, payload, path.name.encode()))


def _remove_stale(root: Path, keep: Path) -> None:
    cutoff = time.time() - STALE_DAYS * 86400
    for folder in root.iterdir():
        if folder != keep and folder.is_dir() and not folder.is_symlink() \
                and folder.stat().st_mtime < cutoff:
            shutil.rmtree(folder, ignore_errors=True)
