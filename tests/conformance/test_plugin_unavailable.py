"""A backend that cannot run, under the pytest plugin, with and without pytest-xdist: exit 3
(as `fusionspec conform`), and a results document that says why, so that neither a CI log nor a
dashboard can take the run for a pass or for a run that judged nothing."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from testkit.cli import pytest_run

SUITE = ["--pyargs", "fusionspec.conformance", "--fs-patterns", "fp.bn_relu", "--fs-kinds",
         "valid"]


@pytest.mark.parametrize("xdist", [[], ["-n", "2"]], ids=["one-process", "xdist"])
@pytest.mark.parametrize("backend", ["nosuchmod:X", "testkit.hostile_backends:NameNotText"])
def test_an_unusable_backend_exits_3_and_leaves_a_document(tmp_path: Path, xdist: list[str],
                                                           backend: str) -> None:
    done = pytest_run(["-q", *SUITE, *xdist, "--fs-backend", backend, "--fs-out", "out"],
                      tmp_path)
    assert done.returncode == 3, \
        f"{backend} {xdist}: exit 3 for a backend that cannot run, got {done.returncode}:\n" \
        f"{done.stdout[-800:]}"
    results = tmp_path / "out" / "results.json"
    assert results.is_file(), f"{backend} {xdist}: no results document says why it did not run"
    document = json.loads(results.read_text())
    assert document.get("unavailable"), \
        f"{backend} {xdist}: the document must say the backend was unavailable: {document}"
    assert not document.get("verdicts"), "an unavailable backend judged nothing"
