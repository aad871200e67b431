"""The conformance suite as pytest tests, one per case; collected by
``pytest --pyargs fusionspec.conformance --fs-backend NAME`` (see `fusionspec.conformance.plugin`).

Imports are absolute on purpose: pytest may import this file under its folder's name
(``conformance``), and the plugin's state must be the one of ``fusionspec.conformance``.
"""

from __future__ import annotations

import pytest

from fusionspec.conformance.plugin import judge_case
from fusionspec.conformance.suite import PlannedCase


def test_conformance(fs_case: PlannedCase | None, pytestconfig: pytest.Config) -> None:
    judge_case(fs_case, pytestconfig)
