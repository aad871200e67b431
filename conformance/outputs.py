"""The files a run writes must not be the files it reads, nor each other.

``fusionspec conform`` writes its results document, and with options a JUnit file
(``--junit``) and an expectations file (``--write-expectations``); it reads an expectations
file (``--expectations``). Two of them naming one file would have one replace the other (a
JUnit file written over the expectations in use, or over the results document), so
`check_outputs` refuses that before anything is written, naming both options. Paths are
compared resolved (``./a/../x.xml`` is ``x.xml``, a symbolic link is its target) and, for
files that exist, as files (`os.path.samefile`: a hard link is the same file under another
name).
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from pathlib import Path

from fusionspec.spec.errors import FusionspecError

__all__ = ["OutputClashError", "same_file", "check_outputs", "conform_outputs"]


class OutputClashError(FusionspecError):
    """Two of a command's files, an output and an input or two outputs, are one file (a usage
    error: exit 2)."""


def same_file(a: str | Path, b: str | Path) -> bool:
    """Whether `a` and `b` name one file: equal once resolved, or (both existing) the same
    file under two names."""
    if os.path.realpath(os.fspath(a)) == os.path.realpath(os.fspath(b)):
        return True
    try:
        return os.path.samefile(a, b)
    except (OSError, ValueError):  # one does not exist (yet), or a name the OS refuses
        return False


def check_outputs(outputs: Mapping[str, str | Path | None],
                  inputs: Mapping[str, str | Path | None] | None = None) -> None:
    """Refuse, with an `OutputClashError` naming both, an output (name -> path; None: not
    written) that is also an input or another output."""
    named = [(name, path) for name, path in (inputs or {}).items() if path is not None]
    for name, path in outputs.items():
        if path is None:
            continue
        for other, other_path in named:
            if same_file(path, other_path):
                what = "an input" if inputs is not None and other in inputs else \
                    "another output"
                raise OutputClashError(f"{name} {path} is also {what} ({other} "
                                       f"{other_path}); give it another path")
        named.append((name, path))


def conform_outputs(*, out_dir: str | Path | None, junit: str | Path | None,
                    write_expectations: str | Path | None,
                    expectations: str | Path | None) -> None:
    """`check_outputs` for a conformance run: its results document (and worker log) in
    `out_dir` (None: not known yet), ``--junit``, ``--write-expectations``, and the
    ``--expectations`` file it reads."""
    folder = Path(out_dir) if out_dir is not None else None
    check_outputs(
        {"the results document": folder / "results.json" if folder is not None else None,
         "the worker log": folder / "worker.log" if folder is not None else None,
         "--junit": junit, "--write-expectations": write_expectations},
        {"--expectations": expectations})
