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
cache folder (readable by its owner only), and an entry whose signature does not verify is
never unpickled: it is dropped and computed again. Entries live in
``$XDG_CACHE_HOME/fusionspec/oracle/<digest>`` (``~/.cache`` when unset), written atomically;
folders of other digests untouched for `STALE_DAYS` days are removed.
``FUSIONSPEC_ORACLE_CACHE=off`` turns the cache off; an absolute path there puts it in that
folder instead.
"""

from __future__ import annotations

import contextlib
import hashlib
import hmac
import os
import shutil
import tempfile
import time
from pathlib import Path

from ..cases import Case
from ..draw_cache import code_digest, folder_of, switched_on

__all__ = ["ENV", "OracleCache", "STALE_DAYS", "enabled"]

#: The environment variable that turns the cache off or names its folder.
ENV = "FUSIONSPEC_ORACLE_CACHE"
#: A digest's folder not touched for this many days belongs to a suite no longer run.
STALE_DAYS = 14
_MAC_BYTES = 32


def enabled() -> bool:
    return switched_on(ENV)


def _root() -> Path:
    return folder_of(ENV, "oracle")


def _secret(root: Path) -> bytes:
    """The signing key of `root`, made on first use (owner-only, created exclusively so two
    runs starting together agree on one)."""
    path = root / "key"
    try:
        fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    except FileExistsError:
        secret = path.read_bytes()
        if len(secret) != _MAC_BYTES:
            raise OSError(f"{path} is not a key of this cache") from None
        return secret
    secret = os.urandom(_MAC_BYTES)
    with os.fdopen(fd, "wb") as handle:
        handle.write(secret)
    return secret


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
            self._secret = _secret(root)
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

    def _mac(self, payload: bytes) -> bytes:
        return hmac.new(self._secret, payload, hashlib.sha256).digest()

    def load(self, case: Case, seed: int) -> bytes | None:
        """The payload stored for `case` and `seed`, if its signature verifies."""
        path = self._path(case, seed)
        if path is None:
            return None
        try:
            data = path.read_bytes()
        except OSError:
            return None
        mac, payload = data[:_MAC_BYTES], data[_MAC_BYTES:]
        if len(mac) == _MAC_BYTES and hmac.compare_digest(mac, self._mac(payload)):
            return payload
        with contextlib.suppress(OSError):
            path.unlink()
        return None

    def store(self, case: Case, seed: int, payload: bytes) -> None:
        path = self._path(case, seed)
        if path is None:
            return
        try:
            fd, temp = tempfile.mkstemp(dir=path.parent, prefix=".entry-")
            with os.fdopen(fd, "wb") as handle:
                handle.write(self._mac(payload) + payload)
            os.replace(temp, path)
        except OSError:
            with contextlib.suppress(OSError, UnboundLocalError):
                os.unlink(temp)


def _remove_stale(root: Path, keep: Path) -> None:
    cutoff = time.time() - STALE_DAYS * 86400
    for folder in root.iterdir():
        if folder != keep and folder.is_dir() and not folder.is_symlink() \
                and folder.stat().st_mtime < cutoff:
            shutil.rmtree(folder, ignore_errors=True)
