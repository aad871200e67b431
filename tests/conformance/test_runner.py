"""The runner: a worker process per backend, timeouts and crashes become statuses, and the
run goes on; backends are found by registered name or by "module:attr"."""

from __future__ import annotations

import time
from pathlib import Path

import pytest
from testkit import toy_backends as toy

from fusionspec.backend import (
    BackendError,
    BackendUnavailableError,
    load_backend,
    select_device,
)
from fusionspec.conformance.cases import CaseKind, Status
from fusionspec.conformance.suite import PROFILES, draw_cases
from fusionspec.conformance.workers import Runner, RunnerPool
from fusionspec.spec.catalog import entry

TESTS = str(Path(__file__).resolve().parents[1])  # holds the testkit package
VALID = toy.valid_case("fp.matmul_post_ops", 3)
OTHER = toy.valid_case("fp.unary_binary", 0)  # no MatMul: the crashing toy runs it fine


def runner(spec: str, *, timeout_s: float = 20.0, isolate: bool = True) -> Runner:
    """A runner for a backend of testkit.toy_backends, which the worker finds through sys_path."""
    return Runner(spec, None, timeout_s, isolate=isolate, sys_path=[TESTS])


def test_reference_by_name_in_a_worker() -> None:
    with Runner("reference", timeout_s=30) as run:
        assert run.device.id == "numpy" and run.backend_name == "reference", \
            f"the worker reports its backend and device: {run.backend_name} {run.device}"
        verdict = run.run(VALID)
        assert verdict.status is Status.passed, f"{verdict.status}: {verdict.reason}"


def test_factory_string_and_in_process_mode() -> None:
    with runner("testkit.toy_backends:WrongMath", isolate=False) as run:
        verdict = run.run(VALID)
        assert verdict.status is Status.numeric_mismatch, f"{verdict.status}: {verdict.reason}"


def test_key_error_in_the_worker_is_an_error() -> None:
    with runner("testkit.toy_backends:RaisesKeyError") as run:
        verdict = run.run(VALID)
        assert verdict.status is Status.error and "KeyError" in verdict.reason, \
            f"an exception in the backend is reported: {verdict.status}: {verdict.reason}"


def test_timeout_kills_and_restarts_the_worker() -> None:
    with runner("testkit.toy_backends:Sleeps", timeout_s=1.5) as run:
        start = time.monotonic()
        verdict = run.run(VALID)
        elapsed = time.monotonic() - start
        assert verdict.status is Status.timeout, f"{verdict.status}: {verdict.reason}"
        assert elapsed < 10, f"the timeout is enforced: the case took {elapsed:.1f} s"
        assert "1.5 s" in verdict.reason, f"the reason names the limit: {verdict.reason}"
        again = run.run(VALID)
        assert again.status is Status.timeout, "a fresh worker was started for the next case"
        assert run.restarts == 1, f"one restart so far, counted {run.restarts}"


def test_crash_is_an_error_and_the_run_goes_on() -> None:
    with runner("testkit.toy_backends:Crashes") as run:
        verdict = run.run(VALID)
        assert verdict.status is Status.error, f"{verdict.status}: {verdict.reason}"
        assert "crashed (exit code 3)" in verdict.reason, f"reason: {verdict.reason}"
        assert "could not execute a toy primitive" in verdict.reason, \
            f"the worker's last words on standard error belong in the reason: {verdict.reason}"
        after = run.run(OTHER)
        assert after.status is Status.passed, \
            f"the next case runs in a fresh worker: {after.status}: {after.reason}"


def test_timeout_under_a_declared_limitation_is_unsupported() -> None:
    with runner("testkit.toy_backends:LimitedSleeps", timeout_s=1.0) as run:
        verdict = run.run(VALID)
        assert verdict.status is Status.unsupported, f"{verdict.status}: {verdict.reason}"
        assert verdict.details.observed_status == "timeout", f"{verdict.details}"


def test_unknown_backend_and_device_are_typed_errors() -> None:
    with pytest.raises(BackendError, match="no backend 'nonesuch'"):
        Runner("nonesuch", timeout_s=5)
    with pytest.raises(BackendError, match="no device 'gpu9'"):
        Runner("reference", "gpu9", timeout_s=5)
    with pytest.raises(BackendError, match="no devices"):
        runner("testkit.toy_backends:NoDevices")
    with pytest.raises(BackendError, match="ModuleNotFoundError"):
        load_backend("no_such_module_anywhere:Backend")


def test_select_device_defaults_to_the_first() -> None:
    backend = load_backend("reference")
    assert select_device(backend, None).id == "numpy", "the first device is the default"


def test_worker_chatter_goes_to_the_log_not_the_terminal(tmp_path: Path,
                                                         capfd: pytest.CaptureFixture[str]
                                                         ) -> None:
    log = tmp_path / "worker.log"
    with Runner("testkit.toy_backends:Chatty", None, 20.0, sys_path=[TESTS], log_path=log) as run:
        verdict = run.run(VALID)
    assert verdict.status is Status.passed, f"{verdict.status}: {verdict.reason}"
    _, err = capfd.readouterr()
    assert "warning generated" not in err, f"chatter reached the terminal: {err[-300:]!r}"
    assert "1 warning generated." in log.read_text(), "the chatter is kept in the log"
    assert run.counters == {"compiled": 1}, f"the backend's counters are kept: {run.counters}"


def test_a_pool_of_two_jobs_judges_like_one() -> None:
    cases = draw_cases(entry("fp.binary_post_ops"), CaseKind.valid, PROFILES["ci"])[:12]
    with Runner("reference", timeout_s=30) as one:
        alone = [(v.case_id, v.status, v.reason) for v in one.run_many(cases)]
    with RunnerPool("reference", None, 30.0, jobs=2) as pool:
        assert len(pool.runners) == 2, "two worker processes"
        shared = [(v.case_id, v.status, v.reason) for v in pool.run_many(cases)]
    assert shared == alone, "the same verdicts, in the cases' order"


def test_pool_counters_add_up_over_its_workers() -> None:
    cases = [VALID, OTHER, VALID, OTHER]
    with RunnerPool("testkit.toy_backends:Chatty", None, 20.0, jobs=2, sys_path=[TESTS]) as pool:
        list(pool.run_many(cases))
    assert pool.counters.get("compiled", 0) >= len(cases), \
        f"every compile of both workers is counted: {pool.counters}"


def test_a_device_that_failed_its_probe_is_unavailable_with_the_reason() -> None:
    with runner("testkit.toy_backends:HalfBroken") as run:
        assert run.device_problems == {
            "gpu0": "the compiler crashed while building the probe kernels"}, \
            f"the worker reports the backend's device problems: {run.device_problems}"
    with pytest.raises(BackendUnavailableError, match="compiler crashed"):
        Runner("testkit.toy_backends:HalfBroken", "gpu0", 20.0, sys_path=[TESTS])
