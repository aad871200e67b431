"""`fusionspec findings` on performance documents: the fusions that do not pay and those the
backend does not form, with what forming them would buy and the command that reproduces each
figure; `fusionspec merge` on the performance documents of a sharded bench run."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest
from testkit.perf_docs import mixed_document, perf_document, workload
from testkit.report import save

from fusionspec.cli.main import main
from fusionspec.conformance.perf.document import read_perf
from fusionspec.reports.perf import perf_section
from fusionspec.reports.perf_findings import perf_findings


def _findings(tmp_path: Path, *docs: dict[str, object], extra: tuple[str, ...] = ()) -> str:
    paths = [str(save(tmp_path / f"d{i}" / "perf.json", d)) for i, d in enumerate(docs)]
    out = tmp_path / "findings.md"
    code = main(["findings", *paths, *extra, "-o", str(out)])
    assert code == 0, f"fusionspec findings exits 0, got {code}"
    return out.read_text(encoding="utf-8")


def test_lists_what_does_not_pay_and_what_is_not_fused(tmp_path: Path) -> None:
    md = _findings(tmp_path, mixed_document())
    not_paying = md.split("### Fusions that do not pay")[1].split("###")[0]
    not_fused = md.split("### Fusions the backend does not form")[1].split("###")[0]
    assert "fp.bn\\_relu/stem" in not_paying and "fp.matmul" not in not_paying, \
        f"only the fusion that does not pay is listed under it: {not_paying}"
    assert "--workload fp.bn_relu/stem" in not_paying, \
        "each finding carries the command that reproduces it"
    assert "fp.binary\\_post\\_ops/res" in not_fused and "`Add | ReLU`" in not_fused, \
        f"the split pattern is listed with the partitions formed: {not_fused}"
    assert "0.4 MB of intermediates: 0.04 ms at the measured copy bandwidth (10 GB/s)" \
        in not_fused, f"the traffic fusing saves, from the recorded bandwidth: {not_fused}"
    assert "the backend raised ValueError" in md.split("### Not measured")[1], \
        "a workload that was not measured is listed with its error"


def test_another_run_that_fuses_the_workload_measures_the_gain(tmp_path: Path) -> None:
    split = perf_document([workload("fp.binary_post_ops/res", "fp.binary_post_ops",
                                    "not fused", 1.0, 1.0, ops=("Add", "ReLU"), split=True)],
                          backend="onednn", driver="3.2", yardsticks={})
    fused = perf_document([workload("fp.binary_post_ops/res", "fp.binary_post_ops",
                                    "fusion pays", 1.0, 1.5, ops=("Add", "ReLU"))],
                          backend="onednn", driver="3.13", yardsticks={})
    found = perf_findings(perf_section([read_perf(split), read_perf(fused)],
                                       ["a.json", "b.json"]))
    gains = found["onednn on cpu0 (3.2)"][0].gains
    assert len(gains) == 1 and "onednn on cpu0 (3.13) forms it" in gains[0] \
        and "1.50x faster" in gains[0], f"the other version's measured ratio: {gains}"
    assert found["onednn on cpu0 (3.13)"] == [], "a fusion that pays is no finding"


def test_without_a_measure_the_gain_is_said_unmeasurable(tmp_path: Path) -> None:
    doc = perf_document([workload("fp.bn_relu/s", "fp.bn_relu", "not fused", 1.0, 1.0,
                                  split=True)], yardsticks={})
    md = _findings(tmp_path, doc)
    assert "not measurable from these documents" in md, md


def test_findings_text_is_escaped(tmp_path: Path) -> None:
    doc = perf_document([workload("x/<script>", "fp.bn_relu", "fusion does not pay", 1.0,
                                  1.0)])
    md = _findings(tmp_path, doc)
    prose = re.sub(r"`[^`]*`", "", md)  # code spans show their text as it is
    assert "\\<script>" in prose and not re.search(r"(?<!\\)<", prose), \
        f"document text cannot inject markup: {prose}"


def test_perf_and_results_documents_together(tmp_path: Path, reference_results: Path) -> None:
    md = _findings(tmp_path, mixed_document(), extra=(str(reference_results),))
    assert md.count("\n# ") == 0 and md.startswith("# "), "one document, one title"
    assert "## Performance: planted on cpu0" in md, "the performance section follows"


def _shards(tmp_path: Path) -> list[str]:
    a = mixed_document()
    b = mixed_document()
    a["workloads"], b["workloads"] = a["workloads"][:2], b["workloads"][2:3]
    return [str(save(tmp_path / f"shard-{i}" / "perf.json", d)) for i, d in enumerate((a, b))]


def test_merge_joins_perf_shards(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    out = tmp_path / "all" / "perf.json"
    code = main(["merge", *_shards(tmp_path), "-o", str(out), "--json"])
    summary = json.loads(capsys.readouterr().out)
    merged = json.loads(out.read_text(encoding="utf-8"))
    assert code == 0 and summary["workloads"] == 3, f"three workloads measured: {summary}"
    assert [w["id"] for w in merged["workloads"]] == [
        "fp.matmul_post_ops/bert", "fp.bn_relu/stem", "fp.binary_post_ops/res"], \
        "the shards' workloads in order"


def test_merge_refuses_a_workload_twice(tmp_path: Path,
                                        capsys: pytest.CaptureFixture[str]) -> None:
    shards = _shards(tmp_path)
    code = main(["merge", shards[0], shards[0], "-o", str(tmp_path / "m.json")])
    assert code == 1 and "is in both" in capsys.readouterr().err, \
        "the same workload in two shards is refused, naming it"


def test_merge_refuses_mixed_kinds(tmp_path: Path, reference_results: Path,
                                   capsys: pytest.CaptureFixture[str]) -> None:
    code = main(["merge", _shards(tmp_path)[0], str(reference_results),
                 "-o", str(tmp_path / "m.json")])
    assert code == 2 and "merge each kind on its own" in capsys.readouterr().err, \
        "results and performance documents do not merge together"
