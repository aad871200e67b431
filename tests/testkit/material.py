"""Material the repository does not ship (the spec pages, oneDNN's library and its benchdnn
graphs, a Chromium browser): where a test finds it, and what it does when it is missing.

On a user's clone a missing piece makes its tests skip with a reason that says how to provide
it. CI provides everything it can and lists the names in ``FUSIONSPEC_REQUIRE`` (comma-separated:
``spec-docs``, ``onednn``, ``chromium``, ``benchdnn-graphs``), so there a missing piece fails the
tests instead of silently skipping them.
"""

from __future__ import annotations

import os
from pathlib import Path

import pytest

__all__ = ["REPO", "REQUIRE_ENV", "missing", "spec_docs"]

REPO = Path(__file__).resolve().parents[2]
REQUIRE_ENV = "FUSIONSPEC_REQUIRE"
SPEC_DOCS_ENV = "FUSIONSPEC_SPEC_DOCS"
#: A page every copy of the specification folder holds.
_MARKER_PAGE = "001_6971bc15df9bcdad.txt"


def required(name: str) -> bool:
    wanted = {n.strip() for n in os.environ.get(REQUIRE_ENV, "").split(",") if n.strip()}
    return name in wanted


def missing(name: str, why: str) -> None:
    """Skip the calling test because `name` is missing (`why` says how to provide it), or fail
    it when the environment requires `name`."""
    if required(name):
        pytest.fail(f"{REQUIRE_ENV} lists {name!r}, but {why}")
    pytest.skip(why)


def spec_docs() -> Path:
    """The folder of the specification pages: ``$FUSIONSPEC_SPEC_DOCS``, else ``spec-docs/``
    in the repository."""
    candidates = [Path(p) for p in [os.environ.get(SPEC_DOCS_ENV, "")] if p]
    candidates += [REPO / "spec-docs"]
    for folder in candidates:
        if (folder / _MARKER_PAGE).is_file():
            return folder
    missing("spec-docs", "the specification pages (oneDNN's 'Supported Fusion Patterns', "
            "'Quantized ConvTranspose Fusion Patterns' and 'Softmax Fusion Patterns' pages as "
            f"text) are not shipped with fusionspec; set {SPEC_DOCS_ENV} to their folder to run "
            f"this test (looked in {', '.join(map(str, candidates))})")
    raise AssertionError("unreachable")  # missing() skips or fails
