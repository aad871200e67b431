"""A backend's declared limitations: their fields are globs as in an expectations file, and a
limitation that can match nothing stops the backend from loading, with a message naming it."""

from __future__ import annotations

from pathlib import Path

import pytest

from fusionspec.backend import BackendError, Limitation
from fusionspec.conformance.cases import Status
from fusionspec.conformance.limitations import check_limitations
from fusionspec.conformance.selection import RunSettings, Selection
from fusionspec.conformance.suite import PROFILES, plan_cases
from fusionspec.conformance.workers import Runner

TESTS = str(Path(__file__).resolve().parents[1])  # holds the testkit package


def test_limitation_fields_are_globs() -> None:
    limitation = Limitation("no convolutions", pattern="fp.conv_*", tensor_dtypes=("f8_*",))
    assert limitation.covers(pattern="fp.conv_post_ops", dtype="f32", device_kind="cpu",
                             case_kind="valid", tensor_dtypes=frozenset({"f8_e4m3"})), \
        "a glob over pattern ids and tensor dtypes covers a matching case"
    assert not limitation.covers(pattern="fp.matmul_post_ops", dtype="f32", device_kind="cpu",
                                 case_kind="valid", tensor_dtypes=frozenset({"f8_e4m3"})), \
        "the glob does not cover another pattern"
    assert not limitation.covers(pattern="fp.conv_post_ops", dtype="f32", device_kind="cpu",
                                 case_kind="valid", tensor_dtypes=frozenset({"f32"})), \
        "the tensor dtype glob must match some tensor"


def test_a_glob_limitation_makes_its_cases_unsupported() -> None:
    plan = plan_cases(RunSettings(Selection(patterns=("fp.conv_post_ops",)).validate(),
                                  PROFILES["ci"]))
    case = next(p.case for p in plan.cases if p.case.kind.value == "valid")
    with Runner("testkit.toy_backends:LimitedByGlob", None, 60.0, isolate=False,
                sys_path=[TESTS]) as run:
        verdict = run.run(case)
    assert verdict.status is Status.unsupported, \
        f"pattern='fp.conv_*' covers {case.id}: {verdict.status} {verdict.reason}"


@pytest.mark.parametrize("isolate", [False, True])
def test_a_limitation_that_matches_nothing_is_named_when_the_backend_loads(
        isolate: bool) -> None:
    with pytest.raises(BackendError) as caught:
        Runner("testkit.toy_backends:LimitedByNothing", None, 60.0, isolate=isolate,
               sys_path=[TESTS]).close()
    message = str(caught.value)
    assert "'fp.matmull_*'" in message and "'f4_*'" in message and "limitation 2" in message, \
        f"every limitation that covers nothing is named: {message}"


def test_declared_limitations_of_the_shipped_backends_match_something() -> None:
    from fusionspec.accel.backend import AccelBackend

    assert check_limitations(AccelBackend.limitations), "accel's f8 limitation is valid"
    with pytest.raises(BackendError, match=r"not a fusionspec\.backend\.Limitation"):
        check_limitations(["matmul"])
