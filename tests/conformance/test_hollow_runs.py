"""A backend cannot PASS by declaring what it gets wrong unsupported: limitations that cover a
whole case kind of the catalog stop it from loading (exit 3), and a run that judged too little
of what it ran (a case kind with no judged case, under a quarter of its cases judged) is
INCOMPLETE, exit 1, under ``fusionspec conform`` and the pytest plugin alike. A backend that
declares a few patterns unsupported still passes."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from testkit.cli import fusionspec, pytest_run

from fusionspec.backend import BackendError, Limitation
from fusionspec.conformance.grade.emptiness import MIN_JUDGED_FRACTION, shows_nothing
from fusionspec.conformance.limitations import check_limitations

L = Limitation
SUITE = ["--pyargs", "fusionspec.conformance"]


@pytest.mark.parametrize("limitations", [
    (L("x", pattern="*", case_kind="valid"),),
    (L("x", pattern="*", case_kind="near-miss"),),
    (L("x", case_kind="[vn]*"),),
    (L("x", tensor_dtypes=("*",)),),
    (L("x", case_kind="valid", tensor_dtypes=("f*", "s*", "u*", "b*")),),
    (L("x", dtype="f*", case_kind="valid"), L("y", dtype="[bi]*", case_kind="valid")),
    (L("x", pattern="fp.*", case_kind="valid"), L("y", pattern="[!f]*", case_kind="valid")),
], ids=["valid", "near-miss", "kind-glob", "any-tensor", "every-tensor-type",
        "dtypes-together", "patterns-together"])
def test_limitations_covering_a_whole_case_kind_do_not_load(
        limitations: tuple[Limitation, ...]) -> None:
    with pytest.raises(BackendError) as raised:
        check_limitations(limitations)
    message = str(raised.value)
    assert "of the catalog" in message and "limitation 1" in message, \
        f"the error says a whole case kind is covered and names the limitation: {message}"


@pytest.mark.parametrize("limitations", [
    (L("no convolutions", pattern="fp.conv_*"),),
    (L("no f8", tensor_dtypes=("f8_e4m3", "f8_e5m2")),),
    (L("no int8", dtype="int8"), L("no bf16 storage", tensor_dtypes=("bf16",))),
    (L("no valid int8", dtype="int8", case_kind="valid"),),
], ids=["patterns", "tensor-types", "dtypes", "one-dtype-one-kind"])
def test_narrow_limitations_still_load(limitations: tuple[Limitation, ...]) -> None:
    assert check_limitations(limitations) == limitations, \
        "limitations that leave cases of every kind to judge are accepted as declared"


def test_a_device_kind_limitation_covers_everything_only_on_that_device() -> None:
    on_gpu = (L("no GPU kernels for valid cases", device_kind="gpu", case_kind="valid"),)
    assert check_limitations(on_gpu) == on_gpu and \
        check_limitations(on_gpu, device_kind="cpu") == on_gpu, \
        "on an unknown or another device it covers nothing for sure"
    with pytest.raises(BackendError, match="every valid case"):
        check_limitations(on_gpu, device_kind="gpu")


def _lines(**by_kind: tuple[int, int]) -> list[dict[str, str]]:
    """Verdict lines: per kind (underscores for dashes), (judged, unsupported) counts."""
    lines = []
    for kind, (judged, unsupported) in by_kind.items():
        name = kind.replace("_", "-")
        lines += [{"kind": name, "status": "pass"}] * judged
        lines += [{"kind": name, "status": "unsupported"}] * unsupported
    return lines


def test_the_floor_of_what_a_run_must_judge() -> None:
    assert shows_nothing(_lines(valid=(30, 6), near_miss=(20, 4), ill_formed=(10, 2)), []) \
        is None, "a few unsupported patterns leave the run above the floor"
    why = shows_nothing(_lines(valid=(0, 60), near_miss=(20, 0), ill_formed=(10, 0)), [])
    assert why is not None and "every valid case (60)" in why, \
        f"a case kind with no judged case is below the floor: {why}"
    why = shows_nothing(_lines(valid=(2, 58), near_miss=(2, 28), ill_formed=(2, 8)), [])
    assert why is not None and "only 6 of the 100 cases" in why and "--patterns" in why, \
        f"under {MIN_JUDGED_FRACTION:.0%} judged is below the floor, with the remedy: {why}"
    assert shows_nothing(_lines(valid=(25, 75)), []) is None, \
        "exactly a quarter judged is enough"


@pytest.mark.parametrize("backend", ["EveryValidAndNearMiss", "KindGlob"])
def test_conform_refuses_a_backend_whose_limitations_cover_a_case_kind(
        backend: str, tmp_path: Path) -> None:
    done = fusionspec(["conform", "--backend", f"testkit.hollow_backends:{backend}",
                       "--patterns", "fp.bn_relu", "--kinds", "valid", "--json", "--out",
                       "out"], tmp_path)
    said = json.loads(done.stdout)
    assert done.returncode == 3 and said["verdict"] == "UNAVAILABLE", \
        f"the backend does not load (exit 3), never a PASS: {done.returncode} {said}"
    assert "every valid and every near-miss case of the catalog" in said["unavailable"], \
        f"the reason names what is covered: {said['unavailable']}"


def test_a_device_glob_covering_every_valid_case_is_refused_when_the_device_is_known(
        tmp_path: Path) -> None:
    done = fusionspec(["conform", "--backend", "testkit.hollow_backends:ValidOnEveryDevice",
                       "--patterns", "fp.bn_relu", "--kinds", "valid,ill-formed", "--json",
                       "--out", "out"], tmp_path)
    said = json.loads(done.stdout)
    assert done.returncode == 3 and said["verdict"] == "UNAVAILABLE", \
        f"device_kind='*' matches the loaded device: the backend does not load, never a " \
        f"PASS: {done.returncode} {said}"
    assert "every valid case of the catalog" in said["unavailable"], \
        f"the reason names what is covered: {said['unavailable']}"


def test_conform_calls_a_run_without_a_judged_valid_case_incomplete(tmp_path: Path) -> None:
    done = fusionspec(["conform", "--backend", "testkit.hollow_backends:NoValidBnRelu",
                       "--patterns", "fp.bn_relu", "--kinds", "valid,ill-formed", "--json",
                       "--out", "out"], tmp_path)
    said = json.loads(done.stdout)
    assert done.returncode == 1 and said["verdict"] == "INCOMPLETE", \
        f"the ill-formed cases it refuses are no PASS: {done.returncode} {said}"
    document = json.loads((tmp_path / "out" / "results.json").read_text())
    assert "no valid case was judged" in (document.get("incomplete") or ""), \
        f"the results document says why: {document.get('incomplete')}"


@pytest.mark.parametrize("workers", ["0", "2"])
def test_the_plugin_calls_a_run_without_a_judged_valid_case_incomplete(
        workers: str, tmp_path: Path) -> None:
    done = pytest_run(["-q", "-n", workers, *SUITE, "--fs-backend",
                       "testkit.hollow_backends:NoValidBnRelu", "--fs-patterns",
                       "fp.bn_relu", "--fs-kinds", "valid,ill-formed", "--fs-out", "out"],
                      tmp_path)
    assert done.returncode == 1, f"-n {workers}: an incomplete run exits 1, got " \
                                 f"{done.returncode}:\n{done.stdout[-1200:]}"
    assert "INCOMPLETE" in done.stdout and "no valid case was judged" in done.stdout, \
        f"the summary says why:\n{done.stdout[-1200:]}"
    document = json.loads((tmp_path / "out" / "results.json").read_text())
    assert "no valid case was judged" in (document.get("incomplete") or ""), \
        f"the results document says why: {document.get('incomplete')}"


def test_the_plugin_refuses_a_backend_whose_limitations_cover_a_case_kind(
        tmp_path: Path) -> None:
    done = pytest_run(["-q", *SUITE, "--fs-backend", "testkit.hollow_backends:KindGlob",
                       "--fs-patterns", "fp.bn_relu", "--fs-kinds", "valid"], tmp_path)
    assert done.returncode == 3 and "of the catalog" in done.stdout, \
        f"exit 3 with the reason:\n{done.stdout[-1200:]}"
