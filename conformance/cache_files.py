"""The files of fusionspec's disk caches (drawn cases, the reference's side of the cases): read
back only if fusionspec wrote them, and read without following a link or blocking.

An entry is signed with HMAC-SHA256 under a key made once per cache folder (``key``, created
exclusively, readable by its owner only), over its payload and what the caller binds it to (its
cache key): an entry whose signature does not verify was not written here for that key, and is
never unpickled. `read_regular` opens a plain file only: a FIFO, a device or a symbolic link is
refused before it is opened (`os.lstat`), and the open itself neither follows a link nor blocks
(``O_NOFOLLOW | O_NONBLOCK``); an entry larger than the caller's limit is refused unread.
`BadEntry` says why an entry was refused; a missing one is `FileNotFoundError`.
"""

from __future__ import annotations

import contextlib
import hashlib
import hmac
import os
import stat
import sys
import tempfile
from collections.abc import Callable
from pathlib import Path
from typing import TypeVar

from fusionspec.spec.text import clean_text

__all__ = ["BadEntry", "UnusableKey", "MAC_BYTES", "folder_key", "read_regular", "seal", "unseal",
           "write_atomic", "load_signed", "say_once"]

T = TypeVar("T")
_SAID: set[str] = set()

#: The length of a signature and of a folder's key (bytes).
MAC_BYTES = 32


class BadEntry(Exception):
    """A cache entry that is not read back (the message says why)."""


class UnusableKey(OSError):
    """A cache folder's key file that is not one this cache made (the message says why)."""


def folder_key(root: Path) -> bytes:
    """The signing key of the cache folder `root`, made on first use (owner-only, and put in
    place whole, so two runs starting together agree on one and neither reads half of it).
    `UnusableKey` when the key there is not a plain file of `MAC_BYTES` bytes that is its
    owner's alone; `OSError` when there is none and none can be made."""
    path = root / "key"
    if not os.path.lexists(path):
        _make_key(path)
    try:
        secret = read_regular(path, MAC_BYTES)
    except BadEntry as exc:
        raise UnusableKey(f"{path} {exc}") from None
    info = path.lstat()
    if len(secret) != MAC_BYTES or info.st_mode & 0o077 or (
            hasattr(os, "getuid") and info.st_uid != os.getuid()):
        raise UnusableKey(f"{path} is not a key of this cache (32 bytes, its owner's "
                          "alone)") from None
    return secret


def _make_key(path: Path) -> None:
    """Write a new key beside `path` and link it there: the link fails if another run put its
    key there first (that one is kept), and a reader never sees a key being written."""
    fd, temp = tempfile.mkstemp(dir=path.parent, prefix=".key-", suffix=".tmp")  # mode 0600
    try:
        with os.fdopen(fd, "wb") as handle:
            handle.write(os.urandom(MAC_BYTES))
        os.link(temp, path)
    except FileExistsError:
        pass
    except OSError:  # a file system without hard links: the key is made in place
        with contextlib.suppress(FileExistsError):
            fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL
                         | getattr(os, "O_NOFOLLOW", 0), 0o600)
            with os.fdopen(fd, "wb") as handle:
                handle.write(os.urandom(MAC_BYTES))
    finally:
        with contextlib.suppress(OSError):
            os.unlink(temp)


def _mac(secret: bytes, bound: bytes, payload: bytes) -> bytes:
    # The length of `bound` goes first, so no (bound, payload) pair signs as another.
    message = len(bound).to_bytes(8, "big") + bound + payload
    return hmac.new(secret, message, hashlib.sha256).digest()


def seal(secret: bytes, payload: bytes, bound: bytes = b"") -> bytes:
    """`payload` signed under `secret` for `bound` (what `unseal` checks)."""
    return _mac(secret, bound, payload) + payload


def unseal(secret: bytes, data: bytes, bound: bytes = b"") -> bytes:
    """The payload of `data` sealed under `secret` for `bound`; `BadEntry` if it was not."""
    mac, payload = data[:MAC_BYTES], data[MAC_BYTES:]
    if len(mac) != MAC_BYTES or not hmac.compare_digest(mac, _mac(secret, bound, payload)):
        raise BadEntry("its signature does not verify (not written here for this key)")
    return payload


def read_regular(path: Path, limit: int) -> bytes:
    """The bytes of the plain file `path`, at most `limit` of them (see the module
    docstring); `FileNotFoundError` if there is none, `BadEntry` if it is refused."""
    try:
        info = os.lstat(path)
    except FileNotFoundError:
        raise
    except OSError as exc:
        raise BadEntry(f"cannot be examined ({exc.strerror})") from None
    if not stat.S_ISREG(info.st_mode):
        raise BadEntry(f"is not a plain file ({_kind(info.st_mode)})")
    if info.st_size > limit:
        raise BadEntry(f"is larger than {limit} bytes ({info.st_size})")
    flags = os.O_RDONLY | getattr(os, "O_NOFOLLOW", 0) | getattr(os, "O_NONBLOCK", 0) \
        | getattr(os, "O_CLOEXEC", 0) | getattr(os, "O_BINARY", 0)
    try:
        fd = os.open(path, flags)
    except FileNotFoundError:
        raise
    except OSError as exc:
        raise BadEntry(f"cannot be opened ({exc.strerror})") from None
    with os.fdopen(fd, "rb") as handle:
        opened = os.fstat(handle.fileno())
        # Replaced between the look and the open: whatever is there now was not examined.
        if not stat.S_ISREG(opened.st_mode) or (opened.st_dev, opened.st_ino) != (
                info.st_dev, info.st_ino):
            raise BadEntry("changed while it was opened")
        data = handle.read(limit + 1)
    if len(data) > limit:
        raise BadEntry(f"is larger than {limit} bytes")
    return data


def _kind(mode: int) -> str:
    for test, name in ((stat.S_ISLNK, "a symbolic link"), (stat.S_ISFIFO, "a FIFO"),
                       (stat.S_ISCHR, "a character device"), (stat.S_ISBLK, "a block device"),
                       (stat.S_ISSOCK, "a socket"), (stat.S_ISDIR, "a folder")):
        if test(mode):
            return name
    return "of another kind"


def write_atomic(path: Path, data: bytes) -> None:
    """Write `data` to `path` through a temporary file beside it (a reader sees the old entry
    or the new one, never half of one); `OSError` if it cannot."""
    fd, temp = tempfile.mkstemp(dir=path.parent, prefix=".entry-", suffix=".tmp")
    try:
        with os.fdopen(fd, "wb") as handle:
            handle.write(data)
        os.replace(temp, path)
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(temp)
        raise


def say_once(cache: str, why: str) -> None:
    """Say once per process that `cache` is not used: its key is not one it made (it is left
    alone)."""
    line = f"fusionspec: {cache} is not used: {clean_text(why, 300)}"
    if line not in _SAID:
        _SAID.add(line)
        print(line, file=sys.stderr)


def load_signed(path: Path, read: Callable[[Path, bytes], T], *, cache: str, entry: str,
                again: str) -> T | None:
    """What `read(path, secret)` makes of the entry at `path` under its folder's key, or None:
    not stored, a folder whose key `cache` did not make (said once, left alone), or an entry
    `read` refuses with `BadEntry` (deleted, with a one-line warning naming it as `entry` and
    saying what happens `again` instead)."""
    try:
        secret = folder_key(path.parent) if path.parent.is_dir() else b""
    except UnusableKey as exc:
        say_once(cache, str(exc))
        return None
    except OSError:  # a folder it cannot write a key in: nothing was stored there by it
        return None
    try:
        return read(path, secret)
    except FileNotFoundError:
        return None
    except BadEntry as exc:
        print(f"fusionspec: {entry} {path.name} is refused: {exc}; {again}",
              file=sys.stderr)
        if not path.is_dir():
            with contextlib.suppress(OSError):
                path.unlink()
        return None
