"""Copying the failure folders of merged results documents next to the merged document.

A results document names each failure folder by a path relative to the document's own folder
(``replay.path``). The documents merged are untrusted (shard artifacts that a pull request's
code produced), so `gather_artifacts` plans every copy before it makes one, and refuses the
whole merge (`ResultsFormatError`) when a record's path

- is absolute, empty, or steps up with ``..``;
- resolves, symbolic links followed, outside the part's folder or outside the target folder;
- is, or lies under, a link (a failure folder linked to a folder elsewhere).

Copies never replace or delete anything: a destination that already exists (and is not the
source itself) is refused, each folder is copied under a temporary name in the target and
renamed into place, and only regular files and folders are copied (links inside a failure
folder are left out, never followed). What one run created is removed again when it fails.
"""

from __future__ import annotations

import contextlib
import os
import shutil
import tempfile
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass, replace
from pathlib import Path, PurePosixPath

from fusionspec.spec.files import inside
from fusionspec.spec.text import clip

from .document import FailureRecord, ResultsDocument, ResultsFormatError

__all__ = ["gather_artifacts", "gathering", "checked_relative"]


@dataclass(frozen=True)
class _Copy:
    source: Path
    destination: Path


def checked_relative(relative: object, where: str) -> PurePosixPath:
    """`relative` (a record's ``replay.path``) as a clean relative path, or
    `ResultsFormatError` naming it: no absolute path, no ``..``, no empty name."""
    if not isinstance(relative, str) or not relative.strip():
        raise ResultsFormatError(f"{where}: replay.path must be a non-empty relative path, "
                                 f"got {relative!r}")
    path = PurePosixPath(relative.replace("\\", "/"))
    if path.is_absolute() or any(part in ("..", "") for part in path.parts) \
            or path == PurePosixPath("."):
        raise ResultsFormatError(f"{where}: replay.path {clip(relative, 200)!r} leaves its "
                                 "folder; a failure folder lies inside the results document's "
                                 "folder")
    return path


def _no_link_on_the_way(root: Path, relative: PurePosixPath) -> bool:
    """True when no component of `root / relative` below `root` is a symbolic link."""
    current = root
    for part in relative.parts:
        current = current / part
        if current.is_symlink():
            return False
    return True


def _source(folders: Sequence[Path], relative: PurePosixPath, where: str) -> Path | None:
    """The part's folder holding `relative`, checked; None when no part kept it."""
    for folder in folders:
        candidate = folder / relative
        if not (candidate.is_dir() or candidate.is_symlink()):
            continue
        if not _no_link_on_the_way(folder, relative) or inside(str(relative), folder) is None:
            raise ResultsFormatError(f"{where}: failure folder {candidate} is a link or leads "
                                     "out of its results document's folder; it is not copied")
        return candidate
    return None


def _plan(document: ResultsDocument, sources: Sequence[Path], target: Path,
          ) -> tuple[list[_Copy], dict[int, Path]]:
    folders = [source.parent for source in sources]
    base = target.resolve()
    copies: dict[Path, _Copy] = {}
    dirs: dict[int, Path] = {}
    inputs = {source.resolve() for source in sources}
    for n, record in enumerate([*document.failures, *document.extensions]):
        replay = record.replay
        if not replay.path:
            continue
        where = f"case {clip(record.case_id, 200)!r}"
        relative = checked_relative(replay.path, where)
        found = _source(folders, relative, where)
        if found is None:
            continue  # the part had no output folder, or it was not kept
        destination = base / relative
        if inside(str(relative), base) is None or not _no_link_on_the_way(base, relative):
            raise ResultsFormatError(f"{where}: {destination} leads out of the output folder")
        dirs[n] = destination
        if found.resolve() == destination.resolve() or destination in copies:
            continue
        if destination.exists() or destination.is_symlink():
            raise ResultsFormatError(f"{where}: {destination} already exists; merge into a "
                                     "folder without the parts' failure folders (nothing there "
                                     "is replaced)")
        if any(inside(path, destination) is not None for path in inputs):
            raise ResultsFormatError(f"{where}: {destination} holds one of the inputs")
        copies[destination] = _Copy(found, destination)
    return list(copies.values()), dirs


def _copy_files(source: Path, destination: Path) -> None:
    """Regular files and folders of `source` into the new folder `destination`; links are
    left out (never followed)."""
    destination.mkdir()
    for entry in os.scandir(source):
        if entry.is_symlink():
            continue
        if entry.is_dir(follow_symlinks=False):
            _copy_files(Path(entry.path), destination / entry.name)
        elif entry.is_file(follow_symlinks=False):
            shutil.copyfile(entry.path, destination / entry.name, follow_symlinks=False)


def _copy(job: _Copy, created: list[Path]) -> None:
    """Copy under a temporary name beside the destination, then rename it into place; what
    it makes (the destination, any missing folder above it) is added to `created`."""
    missing = [p for p in [job.destination.parent, *job.destination.parent.parents]
               if not p.exists()]
    job.destination.parent.mkdir(parents=True, exist_ok=True)
    created += reversed(missing)
    scratch = Path(tempfile.mkdtemp(dir=job.destination.parent,
                                    prefix=f".{job.destination.name}.", suffix=".tmp"))
    try:
        _copy_files(job.source, scratch / "copy")
        os.rename(scratch / "copy", job.destination)
        created.append(job.destination)
    finally:
        shutil.rmtree(scratch, ignore_errors=True)  # created by this run


@contextlib.contextmanager
def gathering(document: ResultsDocument, sources: Sequence[Path], target: Path,
              ) -> Iterator[tuple[int, ResultsDocument]]:
    """`gather_artifacts` whose copies are removed again when the block fails (the merged
    document could not be written, say): yields how many folders were copied and the document
    with its records' ``dir`` pointing at the copies."""
    copies, dirs = _plan(document, sources, target)
    created: list[Path] = []
    try:
        for job in copies:
            _copy(job, created)
        yield len(copies), _pointed(document, dirs)
    except BaseException:
        for path in reversed(created):  # only what this run created goes again
            shutil.rmtree(path, ignore_errors=True)
        raise


def _pointed(document: ResultsDocument, dirs: Mapping[int, Path]) -> ResultsDocument:
    """`document` with the ``dir`` of record `n` (failures, then extensions) set to `dirs[n]`."""
    def moved(records: Sequence[FailureRecord], first: int) -> list[FailureRecord]:
        return [replace(r, replay=replace(r.replay, dir=str(dirs[first + n])))
                if first + n in dirs else r for n, r in enumerate(records)]

    return replace(document, failures=moved(document.failures, 0),
                   extensions=moved(document.extensions, len(document.failures)))


def gather_artifacts(document: ResultsDocument, sources: Sequence[Path], target: Path,
                     ) -> tuple[int, ResultsDocument]:
    """Copy the failure and extension folders of the parts read from `sources` (the results
    files) under `target` (the merged document's folder); returns how many folders were copied
    and the document with its records' ``dir`` pointing there. Every path is checked before
    anything is copied (see the module docstring); a folder already in place (the part's own)
    is left alone."""
    with gathering(document, sources, target) as done:
        return done
