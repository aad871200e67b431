"""Wrong values come before missed fusions, everywhere: a backend with one wrong-values bug
and many more fusion gaps sees that bug first in its findings and in the conform log, and the
log ends with the run's findings, one line each."""

from __future__ import annotations

import io
from contextlib import redirect_stdout
from pathlib import Path

import pytest

from fusionspec.cli.main import main
from fusionspec.conformance.grade.results import load_document
from fusionspec.reports.findings import group_findings

BACKEND = "testkit.report_backends:TruncatesAndSplitsConvTranspose"
TRUNCATION = "numeric-mismatch: bf16/f16 values truncated, not rounded to nearest even"


@pytest.fixture(scope="module")
def run(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, str]:
    out = tmp_path_factory.mktemp("wrong-values-first")
    said = io.StringIO()
    with redirect_stdout(said):
        code = main(["conform", "--backend", BACKEND, "--patterns",
                     "fp.convtranspose_post_ops", "--no-isolate", "--out", str(out)])
    assert code == 1, f"the broken backend fails its run (exit {code})"
    return out / "results.json", said.getvalue()


def test_findings_list_the_wrong_values_first(run: tuple[Path, str]) -> None:
    results, _ = run
    found = [f for f in group_findings(load_document(results))
             if f.status != "extension"]
    gaps = [f for f in found if f.status == "fusion-mismatch"]
    (bug,) = [f for f in found if f.status == "numeric-mismatch"]
    assert sum(len(f.records) for f in gaps) > len(bug.records), \
        "the run is shown to have more fusion-gap cases than wrong-value cases"
    assert found[0] is bug and bug.signature == TRUNCATION, \
        f"the wrong-values finding comes first, before {len(gaps)} fusion gap(s): " \
        f"{[f.signature for f in found][:3]}"


def test_the_conform_log_lists_wrong_values_first_and_ends_with_the_findings(
        run: tuple[Path, str]) -> None:
    _, log = run
    listed = [line.split(":")[0].strip() for line in log.splitlines()
              if line.startswith("  ") and line.strip().split(":")[0] in
              ("numeric-mismatch", "fusion-mismatch")]
    assert listed and listed[0] == "numeric-mismatch", \
        f"the first failure the log lists is a wrong value, not a fusion gap: {listed[:3]}"
    assert listed == sorted(listed, key=lambda s: s != "numeric-mismatch"), \
        "every wrong value is listed before any fusion gap"
    tail = log[log.index("finding(s), most serious first"):]
    first = next(line for line in tail.splitlines() if line.startswith("  1. "))
    assert TRUNCATION in first, f"the log's first finding is the truncation: {first}"
    assert "replay: fusionspec conform" in tail, "each finding in the log says how to replay it"
