"""``fusionspec bench`` and ``fusionspec diff`` on performance documents, in process."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from fusionspec.cli.main import main


def test_bench_writes_a_document_and_diff_gates_it(tmp_path: Path,
                                                    capsys: pytest.CaptureFixture[str]) -> None:
    args = ["bench", "--backend", "reference", "--workload",
            "fp.binary_post_ops/*", "--budget", "0.05", "--reference"]
    assert main([*args, "--out", str(tmp_path / "a")]) == 0, "a measured run exits 0"
    out = capsys.readouterr().out
    assert "fp.binary_post_ops/resnet50-residual-add-relu" in out and "perf.json" in out, \
        f"the summary lists the workload and the document: {out}"
    doc = json.loads((tmp_path / "a" / "perf.json").read_text())
    (record,) = doc["workloads"]
    assert set(record["timings"]) == {"fused", "opbyop", "reference"}, \
        "--reference adds the reference side"
    assert "ref ms" in out, f"the table has a column for the reference: {out}"
    row = next(line for line in out.splitlines() if line.startswith(record["id"]))
    t = record["timings"]
    assert f"{t['opbyop']['median']:>10.3f}{t['reference']['median']:>10.3f}" in row, \
        f"the reference's median follows the op-by-op one in the workload's row: {row}"
    assert main(["diff", str(tmp_path / "a" / "perf.json"),
                 str(tmp_path / "a" / "perf.json"), "--json"]) == 0, \
        "a document compared with itself passes the gate"
    gate = json.loads(capsys.readouterr().out)
    assert gate["ok"] and gate["compared"] == 1, f"the gate's JSON: {gate}"
    reach = gate["detectable"]
    assert reach["workloads"][0]["workload"] == record["id"] and \
        (reach["median"] is None or reach["median"] > 1.0), \
        f"the JSON says what slowdown the comparison could have caught: {reach}"
    # Tight made-up intervals: this tests the command's wiring, not this machine's noise.
    for side, median in (("fused", 1.0), ("opbyop", 2.0)):
        record["timings"][side].update(min=median * 0.95, median=median,
                                       ci_low=median * 0.97, ci_high=median * 1.03)
    (tmp_path / "base.json").write_text(json.dumps(doc))
    for key in ("min", "median", "ci_low", "ci_high"):
        record["timings"]["fused"][key] *= 3
    (tmp_path / "slow.json").write_text(json.dumps(doc))
    assert main(["diff", str(tmp_path / "base.json"), str(tmp_path / "slow.json")]) == 1, \
        "a fused side three times slower fails the gate"
    out = capsys.readouterr().out
    assert "REGRESSION in fp.binary_post_ops" in out, "the gate names the pattern"
    # 1.1 times the four widened ends' distances from their medians, each about
    # (1.03/0.97)^1.5 for intervals reaching 3% either way.
    assert f"could detect: a fused side x{1.1 * (1.03 / 0.97) ** 6:.2f} slower" in out, \
        f"the summary says what slowdown these intervals let the gate see: {out}"


def test_bench_list_and_selection_errors(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["bench", "--list", "--patterns", "int8.pool"]) == 0, "--list exits 0"
    out = capsys.readouterr().out
    assert "int8.pool/resnet50-int8-stem-maxpool [int8]" in out and "ResNet-50" in out, \
        f"--list shows the workload and its source: {out}"
    with pytest.raises(SystemExit) as stopped:
        main(["bench", "--workload", "fp.nothing/*"])
    assert stopped.value.code == 2, "a workload glob that matches nothing is a usage error"
    assert "matches no workload" in capsys.readouterr().err, "the error names the problem"
    assert main(["bench", "--patterns", "fp.bn_relu", "--dtype", "int8"]) == 2, \
        "a selection without workloads is a usage error"
    assert "holds no workload" in capsys.readouterr().err, "the error says why"


def test_diff_refuses_a_perf_document_that_is_broken(tmp_path: Path,
                                                     capsys: pytest.CaptureFixture[str]) -> None:
    bad = tmp_path / "bad.json"
    bad.write_text(json.dumps({"format": "fusionspec-perf", "version": 1}))
    assert main(["diff", str(bad), str(bad)]) == 1, "a broken document is an error, exit 1"
    assert "bad.json" in capsys.readouterr().err, "the message names the file"
