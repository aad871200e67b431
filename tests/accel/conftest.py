"""The kernel forms the family tests run in: `kernel_form` sets the backend's form
(``FUSIONSPEC_ACCEL_FORM``) for a test, once as "specialised" (every partition its own
program: what large problems and the benchmarks run) and once as "table" (the table form's
shared programs: what small problems, a conformance run, run). A module opts in with
``pytest.mark.usefixtures("kernel_form")``, or a test by taking the argument."""

from __future__ import annotations

import pytest

from fusionspec.accel.backend import FORM_ENV


@pytest.fixture(params=["specialised", "table"])
def kernel_form(request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch) -> str:
    form = str(request.param)
    monkeypatch.setenv(FORM_ENV, form)
    return form
