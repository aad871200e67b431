"""The one rule for every file fusionspec writes or follows from data it did not write.

Results documents, failure folders and findings come from other machines (CI artifacts, a
backend team's runs), so names and paths inside them are untrusted:

- a name derived from data becomes a single safe path component (`safe_component`): no
  separators, never ``.`` or ``..``, a bounded length;
- a folder named inside a results document is followed only when it resolves inside that
  document's own folder (`inside`);
- every file is written atomically (`atomic_write_text`, `atomic_write_bytes`): to a temporary
  file beside the target, then renamed over it, so a failed write never leaves a torn file.

>>> safe_component("../../etc")
'etc'
>>> safe_component("..")
'_'
>>> safe_component("onednn 3.2/cpu")
'onednn_3.2_cpu'
"""

from __future__ import annotations

import contextlib
import os
import re
import tempfile
from collections.abc import Iterator
from pathlib import Path
from typing import BinaryIO

__all__ = ["MAX_COMPONENT", "safe_component", "inside", "atomic_open", "atomic_write_text",
           "atomic_write_bytes"]

#: Longest name fusionspec derives from data (file systems allow 255 bytes).
MAX_COMPONENT = 80

_UNSAFE = re.compile(r"[^A-Za-z0-9._-]+")


def safe_component(name: object, *, fallback: str = "_", limit: int = MAX_COMPONENT) -> str:
    """`name` as one path component: runs of anything but letters, digits, ``.``, ``_``, ``-``
    become ``_``; dots and underscores at either end go (so no hidden name, no ``.`` or
    ``..``); at most `limit` characters; `fallback` when nothing is left."""
    text = _UNSAFE.sub("_", str(name)).strip("._")[:limit].rstrip("._")
    return text or fallback


def inside(path: str | Path, root: str | Path) -> Path | None:
    """`path` resolved (symbolic links followed), when it lies inside `root` (or is it);
    else None. A relative `path` is taken relative to `root`."""
    base = Path(root).resolve()
    target = (base / path).resolve()
    return target if target == base or base in target.parents else None


@contextlib.contextmanager
def atomic_open(path: str | Path) -> Iterator[BinaryIO]:
    """A binary file to write that replaces `path` when the block ends without an error; on an
    error (or Ctrl-C) `path` is left as it was and the temporary file is removed. The folder
    of `path` is created when missing."""
    target = Path(path)
    try:
        # The user named this path: its folder is made as `conform --out` makes its own.
        target.parent.mkdir(parents=True, exist_ok=True)
        handle, tmp = tempfile.mkstemp(dir=target.parent, prefix=f".{target.name}.",
                                       suffix=".tmp")
    except OSError as exc:
        # Name the file asked for, not the temporary one.
        raise OSError(exc.errno, exc.strerror, str(target)) from None
    try:
        # mkstemp makes the file 0600; the finished file gets the mode any new file gets
        # (0644 under umask 022), as a plain open() would give it.
        os.chmod(tmp, 0o666 & ~_umask())
        with os.fdopen(handle, "wb") as out:
            yield out
        os.replace(tmp, target)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise


def _umask() -> int:
    """The process's file mode creation mask (read by setting it, then setting it back)."""
    mask = os.umask(0o022)
    os.umask(mask)
    return mask


def atomic_write_bytes(path: str | Path, data: bytes) -> None:
    """Write `data` to `path` atomically (see `atomic_open`)."""
    with atomic_open(path) as out:
        out.write(data)


def atomic_write_text(path: str | Path, text: str) -> None:
    """Write `text` (UTF-8) to `path` atomically, as `atomic_write_bytes`."""
    atomic_write_bytes(path, text.encode("utf-8"))
