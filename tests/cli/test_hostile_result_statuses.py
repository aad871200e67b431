"""A results document whose case has a status the suite does not know (``"PASS"``) would read
as neither passing nor failing, so a regression could hide behind it: every reader refuses it,
and ``fusionspec diff`` ends with a usage error (exit 2) naming the JSON path."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from testkit import toy_backends as toy

from fusionspec.cli.main import main
from fusionspec.conformance.grade.document import ResultsFormatError
from fusionspec.conformance.grade.results import ResultsCollector, load_document
from fusionspec.conformance.grade.verdicts import judge
from fusionspec.conformance.selection import RunSettings
from fusionspec.reference.backend import NUMPY_DEVICE


@pytest.fixture
def results(tmp_path: Path) -> Path:
    collector = ResultsCollector("toy", NUMPY_DEVICE, run_settings=RunSettings(seed=5))
    for case in (toy.valid_case("fp.matmul_post_ops", 3), toy.ill_formed_case()):
        collector.add(case, judge(case, toy.WrongMath(), NUMPY_DEVICE, seed=5))
    return collector.write(tmp_path / "old" / "results.json")


def _edited(source: Path, where: str, target: Path) -> Path:
    document = json.loads(source.read_text())
    if where == "totals":
        document["totals"] = {"PASS": 2}
    else:
        document[where][0]["status"] = "PASS"
    target.parent.mkdir(parents=True, exist_ok=True)
    target.write_text(json.dumps(document))
    return target


@pytest.mark.parametrize(("where", "path"), [
    ("verdicts", "$.verdicts[0].status"), ("failures", "$.failures[0].status"),
    ("totals", "$.totals"),
])
def test_an_unknown_status_is_refused_naming_its_path(
        where: str, path: str, results: Path, tmp_path: Path,
        capsys: pytest.CaptureFixture[str]) -> None:
    bad = _edited(results, where, tmp_path / "new" / "results.json")
    with pytest.raises(ResultsFormatError, match="PASS"):
        load_document(bad)
    code = main(["diff", str(results), str(bad)])
    err = capsys.readouterr().err
    assert code == 2 and path in err and "'PASS'" in err, \
        f"diff: a usage error naming {path}, never a pass: {code} {err}"
    assert "Traceback" not in err, err
