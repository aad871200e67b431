"""Fixtures for the oneDNN adapter's tests: the installed library, or a skip naming how to get
it. The tests session installs the ``onednn`` extra and requires it (``FUSIONSPEC_REQUIRE``
lists ``onednn``, see `testkit.material`), so there a missing library fails the tests instead of
skipping them."""

from __future__ import annotations

from pathlib import Path

import pytest
from testkit.material import missing

from fusionspec.onednn import OnednnBackend, OnednnError
from fusionspec.onednn.library import find_library


def _missing(why: str) -> None:
    missing("onednn", f"{why} (pip install 'fusionspec[onednn]')")


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
