"""The suite's release: its version, written once, and the commit of a git checkout.

`VERSION` is the version of the fusionspec distribution: pyproject.toml reads it from this file
as its dynamic version, so a wheel, an sdist and a source checkout all agree without git tags.
It is the latest release in CHANGELOG.md (a test keeps the two equal); between releases it
stays at the last one, and `source_commit` tells the commits apart. Releasing means moving the
``[Unreleased]`` notes under a new heading and setting `VERSION` to it, in one commit.

This is the suite's version, not the spec's: `fusionspec.spec.pages.SPEC_VERSION` names the
oneDNN documentation pages the suite encodes.
"""

from __future__ import annotations

import functools
import subprocess
from pathlib import Path

__all__ = ["VERSION", "source_commit"]

#: The suite's version (semantic versioning); pyproject.toml's dynamic version reads it.
VERSION = "0.1.0"

#: Seconds git may take to answer before the commit is given up as unknown.
_GIT_TIMEOUT_S = 10.0


def _git(root: Path, *args: str) -> str | None:
    try:
        done = subprocess.run(["git", "-C", str(root), *args], capture_output=True, text=True,
                              timeout=_GIT_TIMEOUT_S, check=False)
    except (OSError, subprocess.SubprocessError):  # no git, or it hangs: the commit is unknown
        return None
    return done.stdout.strip() if done.returncode == 0 else None


@functools.cache
def source_commit(root: Path | None = None) -> str | None:
    """The commit the suite's code comes from, when it runs from a git checkout: the full hash
    of ``HEAD``, with ``+dirty`` when tracked files differ from it; None for an installed
    copy (a wheel or an sdist), or where git is missing or does not answer.

    `root` is the checkout's top folder, by default the one holding this package's folders.
    Only a ``.git`` right there counts: an installed copy inside some other repository (a
    virtual environment in a project's folder) must not report that repository's commit.
    """
    top = root if root is not None else Path(__file__).resolve().parents[1]
    if not (top / ".git").exists() or not (top / "pyproject.toml").is_file():
        return None
    commit = _git(top, "rev-parse", "--verify", "HEAD")
    if not commit:
        return None
    changed = _git(top, "status", "--porcelain", "--untracked-files=no")
    return f"{commit}+dirty" if changed else commit
