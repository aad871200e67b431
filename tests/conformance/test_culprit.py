"""Culprit isolation and who-is-right triage on planted bugs: the smallest failing piece is
the op the bug is in, the float64 evaluation sides with the reference, a known departure is
recognised as such, and the findings group one bug into one finding that names it."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import numpy as np
from testkit.cli import env

from fusionspec.conformance.cases import CaseKind
from fusionspec.conformance.grade.results import ResultsCollector
from fusionspec.conformance.grade.triage import who_is_right
from fusionspec.conformance.suite import run_suite
from fusionspec.reports.findings import group_findings
from fusionspec.spec.dtypes import DataType
from fusionspec.spec.graph import Graph, LogicalTensor, Op
from fusionspec.spec.onednn_json import loads

TESTS = str(Path(__file__).resolve().parents[1])  # holds the testkit package


def _run(mutant: str, patterns: list[str], out: Path | None = None) -> ResultsCollector:
    return run_suite(f"testkit.mutants:{mutant}", patterns=patterns, kinds=[CaseKind.valid],
                     isolate=False, sys_path=[TESTS], out_dir=out)


def test_gelu_tanh_mutant_is_isolated_to_gelu_with_a_benchdnn_case(tmp_path: Path) -> None:
    results = _run("GeluTanhForErf", ["fp.unary_binary", "fp.conv_post_ops"], tmp_path)
    numeric = [f for f in results.failures if f.status == "numeric-mismatch"]
    assert numeric, f"the GELU mutant must fail numerically: {dict(results.totals)}"
    for failure in numeric:
        culprit = failure.details.culprit
        assert culprit is not None, \
            f"{failure.case_id}: no culprit isolated ({failure.details.culprit_error})"
        assert culprit.kinds == "GELU", \
            f"{failure.case_id}: the culprit is the GELU op alone, not {culprit.kinds}"
        graph = loads(json.dumps(culprit.graph))
        assert [op.kind for op in graph.ops] == ["GELU"], \
            "the culprit's graph JSON holds the one failing op and reads back"
        triage = failure.details.triage
        assert triage is not None and triage.closer == "reference" \
            and triage.reference_off == 0, \
            f"the float64 evaluation sides with the reference against tanh GELU: {triage}"
    folder = tmp_path / "failures"
    saved = sorted(folder.glob("*/culprit.json"))
    assert saved, "each isolated culprit is saved in its failure folder as culprit.json"
    replay = (saved[0].parent / "replay.txt").read_text(encoding="utf-8")
    assert "benchdnn --graph --case=culprit.json" in replay, \
        f"the failure folder's replay names the benchdnn command for the culprit:\n{replay}"
    assert "fusionspec run culprit.json --inputs culprit_inputs.npz" in replay, \
        f"the failure folder's replay runs the culprit with fusionspec alone:\n{replay}"
    _replays_the_culprit(saved[0].parent)


def _replays_the_culprit(folder: Path) -> None:
    """The culprit, with the inputs saved beside it, fails on the mutant and agrees on the
    reference, replayed by ``fusionspec run --compare`` alone."""
    assert (folder / "culprit_inputs.npz").is_file(), \
        f"the culprit's inputs are saved beside it: {sorted(p.name for p in folder.iterdir())}"
    def compare(backend: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run(
            [sys.executable, "-m", "fusionspec.cli", "run", "culprit.json", "--inputs",
             "culprit_inputs.npz", "--backend", backend, "--compare"], cwd=folder,
            capture_output=True, text=True, env=env(), timeout=300, check=False)
    broken = compare("testkit.mutants:GeluTanhForErf")
    assert broken.returncode == 1 and "DIFFERS from the reference" in broken.stdout, \
        f"the culprit replayed on the mutant differs from the reference (exit " \
        f"{broken.returncode}): {broken.stdout[-600:]} {broken.stderr[-600:]}"
    right = compare("reference")
    assert right.returncode == 0 and "AGREES with the reference" in right.stdout, \
        f"the culprit replayed on the reference agrees with itself (exit {right.returncode}): " \
        f"{right.stdout[-600:]} {right.stderr[-600:]}"


def test_gelu_tanh_mutant_is_one_finding_naming_gelu() -> None:
    results = _run("GeluTanhForErf", ["fp.unary_binary", "fp.binary_post_ops",
                                      "fp.conv_post_ops"])
    findings = group_findings(results.document())
    assert len(findings) == 1, \
        f"one bug, one finding; got {[f.signature for f in findings]}"
    assert "GELU" in findings[0].signature and findings[0].known is not None, \
        f"the finding names GELU and explains itself: {findings[0].signature}, " \
        f"{findings[0].known}"


def test_maximum_dropping_nan_is_a_known_departure_where_the_backend_declares_it() -> None:
    results = _run("MaximumDropsFirstNaNDeclared", ["fp.binary_post_ops", "fp.pool_binary"])
    numeric = [f for f in results.failures if f.status == "numeric-mismatch"]
    assert numeric, f"the NaN-dropping Maximum must fail numerically: {dict(results.totals)}"
    named = [f for f in numeric
             if any(d.id == "nan-select-max" for d in f.details.departures or ())]
    assert named, "the compare-and-select Maximum is explained by the nan-select-max " \
                  f"departure: {[f.details.departures for f in numeric[:3]]}"
    assert all(d.source for f in named for d in f.details.departures or ()), \
        "a known departure carries where it is documented"
    declared = results.to_dict()["departures"]
    assert [d["id"] for d in declared] == ["nan-select-max"], \
        f"the results document records the backend's declarations: {declared}"


def test_an_undeclared_departure_stays_unexplained() -> None:
    results = _run("MaximumDropsFirstNaN", ["fp.binary_post_ops"])
    numeric = [f for f in results.failures if f.status == "numeric-mismatch"]
    assert numeric, f"the NaN-dropping Maximum must fail numerically: {dict(results.totals)}"
    assert not any(f.details.departures for f in numeric), \
        "a backend that declares no departure is explained by none (not by another library's)"


def _exp_graph() -> Graph:
    src = LogicalTensor(0, DataType.f32, (4,))
    dst = LogicalTensor(1, DataType.f32, (4,))
    return Graph([Op(0, "Exp", (src,), (dst,), {})]).finalize()


def test_triage_flags_a_reference_that_is_the_one_off() -> None:
    x = np.array([0.0, 1.0, 2.0, 3.0], dtype=np.float32)
    truth = np.exp(x.astype(np.float64)).astype(np.float32)
    wrong_reference = truth * np.float32(1.01)  # what a buggy reference would say
    radius = np.full(4, 1e-6, dtype=np.float64) * np.abs(truth)
    verdict, _ = who_is_right(_exp_graph(), {0: x}, 1, wrong_reference, truth, radius)
    assert verdict.closer == "backend" and verdict.reference_off > 0, \
        f"a reference further from float64 than its bound is flagged as the one off: {verdict}"
    right, _ = who_is_right(_exp_graph(), {0: x}, 1, truth, wrong_reference, radius)
    assert right.closer == "reference" and right.reference_off == 0, \
        "a backend that is off leaves the reference unflagged"
