"""The conformance suite as pytest tests; collected by
``pytest --pyargs fusionspec.conformance --backend NAME`` (see `fusionspec.conformance.plugin`).

Imports are absolute on purpose: pytest may import this file under its folder's name
(``conformance``), and the plugin's state must be the one of ``fusionspec.conformance``.
"""

from __future__ import annotations

import pytest

from fusionspec.conformance.cases import CaseKind
from fusionspec.conformance.plugin import conformance_case_run
from fusionspec.conformance.runner import Runner
from fusionspec.conformance.suite import Profile


def test_conformance(conformance_target: tuple[str, CaseKind], conformance_runner: Runner,
                     pytestconfig: pytest.Config, conformance_profile: Profile) -> None:
    conformance_case_run(conformance_target, conformance_runner, pytestconfig,
                         conformance_profile)
