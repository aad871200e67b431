"""The results document (counts, coverage, failures, versions) and the failure artifacts that
replay a case."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest
from testkit import toy_backends as toy

from fusionspec.backend import Backend
from fusionspec.conformance.cases import Case, CaseKind, Status
from fusionspec.conformance.grade.details import Details
from fusionspec.conformance.grade.results import (
    SCHEMA_VERSION,
    SPEC_VERSION,
    ResultsCollector,
    ResultsFormatError,
    artifact_name,
    load_document,
    load_failure,
    write_failure,
)
from fusionspec.conformance.grade.verdict import Verdict
from fusionspec.conformance.grade.verdicts import judge
from fusionspec.conformance.selection import RunSettings
from fusionspec.reference import fill_inputs
from fusionspec.reference.arrays import read_npz
from fusionspec.reference.backend import NUMPY_DEVICE, ReferenceBackend
from fusionspec.spec.dtypes import DataType
from fusionspec.spec.graph import Graph, LogicalTensor, Op
from fusionspec.spec.release import VERSION, source_commit

VALID = toy.valid_case("fp.matmul_post_ops", 3)
NEAR_MISS = toy.near_miss_case()
ILL_FORMED = toy.ill_formed_case()


def collect(backend: Backend, out_dir: Path | None = None) -> ResultsCollector:
    collector = ResultsCollector(backend.name, NUMPY_DEVICE, run_settings=RunSettings(seed=5),
                                 out_dir=out_dir)
    for case in (VALID, NEAR_MISS, ILL_FORMED):
        collector.add(case, judge(case, backend, NUMPY_DEVICE, seed=5))
    return collector


def test_document_header() -> None:
    doc = collect(ReferenceBackend()).to_dict()
    assert doc["schema"] == SCHEMA_VERSION, f"schema version: {doc['schema']}"
    assert doc["spec_version"] == SPEC_VERSION and SPEC_VERSION.count("+") == 2, \
        f"the spec version names the three pages: {SPEC_VERSION}"
    assert all(len(p["sha256"]) == 64 for p in doc["spec_pages"]), \
        f"each page is recorded with its digest: {doc['spec_pages']}"
    assert doc["suite_version"] == VERSION, \
        f"suite version is the one written in fusionspec.spec.release: {doc['suite_version']}"
    assert doc["suite_commit"] == source_commit(), \
        f"the document records the commit the suite runs from: {doc['suite_commit']}"
    assert doc["device"]["id"] == "numpy" and "driver" in doc["device"], f"device: {doc['device']}"
    for key in ("python", "numpy", "ml_dtypes", "platform", "hypothesis", "pytest"):
        assert key in doc["environment"], f"environment records {key}: {doc['environment']}"
    assert doc["started"] <= doc["finished"], "start and end times are recorded in order"


def test_counts_rules_and_coverage() -> None:
    doc = collect(ReferenceBackend()).to_dict()
    assert doc["totals"] == {"pass": 3}, f"the reference passes all three: {doc['totals']}"
    matmul = doc["patterns"]["fp.matmul_post_ops"]
    assert matmul["by_kind"] == {"valid": {"pass": 1}, "near-miss": {"pass": 1},
                                 "ill-formed": {"pass": 1}}, f"by kind: {matmul['by_kind']}"
    assert matmul["coverage"]["post_ops"] == {"2": 1, "4": 1}, \
        f"coverage counts feature values: {matmul['coverage']}"
    assert doc["rules"]["structure.bound"]["counts"] == {"pass": 1}, f"rules: {doc['rules']}"
    assert doc["rules"]["structure.bound"]["statement"].startswith("one more post-op"), \
        "rules carry their statement"
    assert len(doc["verdicts"]) == 3 and not doc["failures"], "three verdicts, no failures"


def test_failures_are_listed_and_saved(tmp_path: Path) -> None:
    collector = collect(toy.WrongMath(), tmp_path)
    doc = collector.to_dict()
    assert collector.failed, "numeric mismatches fail the run"
    assert [f["case_id"] for f in doc["failures"]] == [VALID.id, NEAR_MISS.id], \
        f"both computed cases fail: {[f['case_id'] for f in doc['failures']]}"
    failure = doc["failures"][0]
    assert failure["status"] == "numeric-mismatch" and failure["description"], f"{failure}"
    folder = Path(failure["replay"]["dir"])
    assert folder.parent == tmp_path / "failures", f"artifacts under failures/: {folder}"
    assert folder.name == artifact_name(VALID.id), f"folder named after the case: {folder}"
    assert failure["replay"]["path"] == f"failures/{folder.name}", \
        f"the document names the folder relative to itself: {failure['replay']}"
    for name in ("graph.json", "inputs.npz", "case.json", "replay.txt"):
        assert (folder / name).is_file(), f"{name} is written for a failure"
    replay = (folder / "replay.txt").read_text().splitlines()
    assert replay[0].startswith("#"), f"the file says where to run it from: {replay[0]}"
    assert replay[1] == "fusionspec conform --backend wrong-math --device numpy --replay .", \
        f"the suite replays the folder it is run from: {replay[1]}"
    assert replay[2] == "fusionspec run graph.json --inputs inputs.npz", \
        f"the reference runs on the saved inputs, paths relative to the folder: {replay[2]}"
    where = failure["replay"]["path"]
    assert failure["replay"]["commands"] == [
        f"fusionspec conform --backend wrong-math --device numpy --replay {where}",
        f"fusionspec run {where}/graph.json --inputs {where}/inputs.npz",
        f"fusionspec run {where}/graph.json --inputs {where}/inputs.npz --backend wrong-math "
        f"--device numpy --out {where}/actual.npz"], \
        f"the document's commands run from its folder: {failure['replay']['commands']}"
    assert failure["replay"]["rerun"].endswith(f"--seed 5 --case {VALID.id}"), \
        f"a rerun draws the case afresh by its id: {failure['replay']['rerun']}"


def test_failure_folder_round_trips(tmp_path: Path) -> None:
    verdict = judge(VALID, toy.WrongMath(), NUMPY_DEVICE, seed=9)
    folder = write_failure(tmp_path / "f", VALID, verdict, backend="wrong-math",
                           device_id="numpy", seed=9)
    case, seed = load_failure(folder)
    assert seed == 9 and case.id == VALID.id and case.kind is CaseKind.valid, \
        f"case and seed come back: {case.id} {seed}"
    assert case.graph == VALID.graph, "the graph comes back from graph.json unchanged"
    graph = VALID.graph.finalize()
    saved = read_npz(folder / "inputs.npz", graph.input_tensors)
    for tid, array in fill_inputs(graph, 9).items():
        assert np.array_equal(saved[tid], array), f"input {tid} is saved exactly"
    again = judge(case, toy.WrongMath(), NUMPY_DEVICE, seed=seed)
    assert again.status is verdict.status, "the replayed case gives the same verdict"


def test_bf16_inputs_travel_as_bit_patterns(tmp_path: Path) -> None:
    x = LogicalTensor(0, DataType.bf16, (2, 3))
    graph = Graph([Op(0, "ReLU", [x], [LogicalTensor(1, DataType.bf16, (2, 3))])])
    case = Case("bf16-relu", CaseKind.valid, "fp.unary_binary", graph, dtype="bf16")
    verdict = Verdict(case.id, case.pattern, case.kind, Status.numeric_mismatch, "made up")
    folder = write_failure(tmp_path / "b", case, verdict, backend="x", device_id="d", seed=1)
    with np.load(folder / "inputs.npz") as npz:
        assert npz["0"].dtype == np.uint16, f"bf16 stored as uint16 bits: {npz['0'].dtype}"
    loaded = read_npz(folder / "inputs.npz", graph.finalize().input_tensors)
    assert np.array_equal(loaded[0], fill_inputs(graph.finalize(), 1)[0]), "bits round-trip"


def test_ill_formed_failure_is_saved_without_inputs(tmp_path: Path) -> None:
    verdict = judge(ILL_FORMED, toy.AcceptsEverything(), NUMPY_DEVICE)
    folder = write_failure(tmp_path / "i", ILL_FORMED, verdict, backend="a", device_id="numpy",
                           seed=0)
    record = json.loads((folder / "case.json").read_text())
    assert (folder / "graph.json").is_file(), "the ill-formed graph is still dumped"
    assert not (folder / "inputs.npz").exists() and record["notes"], \
        f"no inputs for a graph that does not finalize, and a note says why: {record['notes']}"
    lines = (folder / "replay.txt").read_text().splitlines()
    assert [line for line in lines if not line.startswith("#")] == [
        "fusionspec conform --backend a --device numpy --replay ."], \
        f"without inputs only the conform replay line is written: {lines}"


def test_write_and_load(tmp_path: Path) -> None:
    path = collect(toy.NeverFuses(), tmp_path).write(tmp_path / "results.json")
    doc = load_document(path)
    assert doc.totals.get("fusion-mismatch") == 2, f"totals survive: {doc.totals}"
    assert "NaN" not in path.read_text(), "the file is strict JSON"


def test_a_checkout_records_its_commit() -> None:
    """This repository, as a git checkout, is known by the full hash of its HEAD. The commit is
    asked of the checkout's folder itself: the package under test may be an installed copy
    (a nox virtualenv), which records no commit (tests/test_version.py)."""
    root = Path(__file__).resolve().parents[2]
    if not (root / ".git").exists():
        pytest.skip("not run from a git checkout")
    commit = source_commit(root)
    assert commit is not None and len(commit.removesuffix("+dirty")) == 40, \
        f"a checkout records the full hash of HEAD: {commit}"


def test_a_document_without_the_commit_still_loads(tmp_path: Path) -> None:
    """Documents written before the commit was recorded lack it, and stay readable."""
    doc = collect(ReferenceBackend()).to_dict()
    del doc["suite_commit"]
    path = tmp_path / "results.json"
    path.write_text(json.dumps(doc))
    loaded = load_document(path)
    assert loaded.suite_commit is None and loaded.suite_version == VERSION, \
        "an older document loads, the commit it never recorded read as unknown (null)"
    doc["suite_commit"] = None
    path.write_text(json.dumps(doc))
    assert load_document(path).suite_commit is None, "an installed copy records null"


def test_load_rejects_other_schemas(tmp_path: Path) -> None:
    path = tmp_path / "old.json"
    path.write_text(json.dumps({"schema": "fusionspec-results/0"}))
    with pytest.raises(ResultsFormatError, match="fusionspec-results/0"):
        load_document(path)
    path.write_text("[1, 2]")
    with pytest.raises(ResultsFormatError, match="JSON object"):
        load_document(path)
    path.write_text("{not json")
    with pytest.raises(ResultsFormatError, match="cannot read"):
        load_document(path)
    path.write_text(json.dumps({"schema": SCHEMA_VERSION}))
    with pytest.raises(ResultsFormatError, match="lacks"):
        load_document(path)


def test_non_finite_details_become_strings(tmp_path: Path) -> None:
    collector = ResultsCollector("x", NUMPY_DEVICE)
    verdict = Verdict("c", "p", CaseKind.valid, Status.numeric_mismatch, "r",
                      details=Details(max_rel_error=float("inf")))
    collector.add(Case("c", CaseKind.valid, "p", VALID.graph), verdict)
    path = collector.write(tmp_path / "r.json")
    details = load_document(path).failures[0].details
    assert details.max_rel_error == "inf", f"inf is written as a string: {details}"


def test_limitations_are_listed() -> None:
    collector = collect(toy.LimitedFaithful())
    doc = collector.to_dict()
    assert not collector.failed, "unsupported cases do not fail the run"
    assert doc["totals"] == {"unsupported": 3}, f"totals: {doc['totals']}"
    assert all(item["limitation_passed"] for item in doc["limitations"]), \
        f"the report can list limitations that pass: {doc['limitations']}"


def test_artifact_names_are_safe_and_unique(tmp_path: Path) -> None:
    assert artifact_name("fp.conv/valid #3 (x)") == "fp.conv_valid_3_x", \
        f"unsafe characters are replaced: {artifact_name('fp.conv/valid #3 (x)')}"
    collector = ResultsCollector("wrong-math", NUMPY_DEVICE, out_dir=tmp_path)
    verdict = judge(VALID, toy.WrongMath(), NUMPY_DEVICE)
    for case_id in ("a/b", "a?b"):
        collector.add(Case(case_id, VALID.kind, VALID.pattern, VALID.graph), verdict)
    names = sorted(p.name for p in (tmp_path / "failures").iterdir())
    assert names == ["a_b", "a_b-2"], f"clashing names get a suffix: {names}"
