"""The repository stands on its own: no tracked file refers to material that only exists outside
a clone (design notes or a sibling folder of inputs). A user's clone has neither, so such a
reference would send a reader nowhere."""

from __future__ import annotations

import re
import subprocess
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent

#: Names of documents that live beside the repository, never in it.
_OUTSIDE = re.compile(r"DESIGN\.md|onednn-internals\.md|anchors\.md|notes/onednn|\.\./shared")
#: The CI entry point is the one place that may name the sibling folder: CI lays the spec
#: pages there and points the tests at them.
_ALLOWED = {".ci/run"}
#: This test names the patterns it looks for.
_SELF = Path(__file__).resolve().relative_to(ROOT).as_posix()


def _tracked() -> list[str]:
    try:
        out = subprocess.run(["git", "ls-files", "-z"], cwd=ROOT, capture_output=True,
                             check=True).stdout
    except (OSError, subprocess.CalledProcessError) as exc:
        pytest.skip(f"not a git checkout ({exc}): the tracked files cannot be listed")
    return [name for name in out.decode().split("\0") if name]


def test_no_file_refers_to_material_outside_the_repository() -> None:
    offenders: list[str] = []
    for name in _tracked():
        if name in _ALLOWED or name == _SELF:
            continue
        path = ROOT / name
        try:
            text = path.read_text(encoding="utf-8")
        except (UnicodeDecodeError, OSError):
            continue
        for number, line in enumerate(text.splitlines(), 1):
            if _OUTSIDE.search(line):
                offenders.append(f"{name}:{number}: {line.strip()[:100]}")
    assert not offenders, ("files refer to documents that a clone does not contain; say what "
                           "they say in the repository's own docs instead:\n"
                           + "\n".join(offenders))
