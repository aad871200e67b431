"""Fixtures for the oneDNN adapter's tests: the installed library, or a skip naming how to get
it. The tests session installs the ``onednn`` extra and sets FUSIONSPEC_REQUIRE_ONEDNN=1, so
there a missing library fails the tests instead of skipping them."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from fusionspec.onednn import OnednnBackend, OnednnError
from fusionspec.onednn.library import find_library


def _missing(why: str) -> None:
    if os.environ.get("FUSIONSPEC_REQUIRE_ONEDNN") == "1":
        pytest.fail(f"FUSIONSPEC_REQUIRE_ONEDNN=1 but {why}")
    pytest.skip(why)


@pytest.fixture(scope="session")
def onednn_include() -> Path:
    try:
        _, include = find_library()
    except OnednnError as exc:
        _missing(f"oneDNN is not installed: {exc}")
    return include


@pytest.fixture(scope="session")
def onednn() -> OnednnBackend:
    backend = OnednnBackend()
    if not backend.devices():
        _missing(f"oneDNN is not usable here: {backend.unavailable_reason()}")
    return backend
