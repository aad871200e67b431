"""The runner: a worker process per backend, timeouts and crashes become statuses, and the
run goes on; backends are found by registered name or by "module:attr"."""

from __future__ import annotations

import time
from pathlib import Path

import _toy_backends as toy
import pytest

from fusionspec.conformance.backend import BackendError
from fusionspec.conformance.cases import Status
from fusionspec.conformance.runner import Runner, resolve_backend, select_device

HERE = str(Path(__file__).parent)
VALID = toy.valid_case("fp.matmul_post_ops", 3)
OTHER = toy.valid_case("fp.unary_binary", 0)  # no MatMul: the crashing toy runs it fine


def runner(spec: str, *, timeout_s: float = 20.0, isolate: bool = True) -> Runner:
    """A runner for a backend of _toy_backends, which the worker finds through sys_path."""
    return Runner(spec, None, timeout_s, isolate=isolate, sys_path=[HERE])


def test_reference_by_name_in_a_worker() -> None:
    with Runner("reference", timeout_s=30) as run:
        assert run.device.id == "numpy" and run.backend_name == "reference", \
            f"the worker reports its backend and device: {run.backend_name} {run.device}"
        verdict = run.run(VALID)
        assert verdict.status is Status.passed, f"{verdict.status}: {verdict.reason}"


def test_factory_string_and_in_process_mode() -> None:
    with runner("_toy_backends:WrongMath", isolate=False) as run:
        verdict = run.run(VALID)
        assert verdict.status is Status.numeric_mismatch, f"{verdict.status}: {verdict.reason}"


def test_key_error_in_the_worker_is_an_error() -> None:
    with runner("_toy_backends:RaisesKeyError") as run:
        verdict = run.run(VALID)
        assert verdict.status is Status.error and "KeyError" in verdict.reason, \
            f"an exception in the backend is reported: {verdict.status}: {verdict.reason}"


def test_timeout_kills_and_restarts_the_worker() -> None:
    with runner("_toy_backends:Sleeps", timeout_s=1.5) as run:
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
    with runner("_toy_backends:Crashes") as run:
        verdict = run.run(VALID)
        assert verdict.status is Status.error, f"{verdict.status}: {verdict.reason}"
        assert "crashed (exit code 3)" in verdict.reason, f"reason: {verdict.reason}"
        assert "could not execute a toy primitive" in verdict.reason, \
            f"the worker's last words on standard error belong in the reason: {verdict.reason}"
        after = run.run(OTHER)
        assert after.status is Status.passed, \
            f"the next case runs in a fresh worker: {after.status}: {after.reason}"


def test_timeout_under_a_declared_limitation_is_unsupported() -> None:
    with runner("_toy_backends:LimitedSleeps", timeout_s=1.0) as run:
        verdict = run.run(VALID)
        assert verdict.status is Status.unsupported, f"{verdict.status}: {verdict.reason}"
        assert verdict.details["observed_status"] == "timeout", f"{verdict.details}"


def test_unknown_backend_and_device_are_typed_errors() -> None:
    with pytest.raises(BackendError, match="no backend 'nonesuch'"):
        Runner("nonesuch", timeout_s=5)
    with pytest.raises(BackendError, match="no device 'gpu9'"):
        Runner("reference", "gpu9", timeout_s=5)
    with pytest.raises(BackendError, match="no devices"):
        runner("_toy_backends:NoDevices")
    with pytest.raises(BackendError, match="ModuleNotFoundError"):
        resolve_backend("no_such_module_anywhere:Backend")


def test_select_device_defaults_to_the_first() -> None:
    backend = resolve_backend("reference")
    assert select_device(backend, None).id == "numpy", "the first device is the default"
