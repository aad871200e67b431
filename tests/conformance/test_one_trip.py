"""A partition's compile and execute travel to the worker in one round trip, and each step is
still graded as its own call: a rejection at compile is a rejected valid case, a failure in
execute an error of the execute stage, in a worker exactly as in the runner's process."""

from __future__ import annotations

from collections import Counter
from pathlib import Path
from typing import Any

import pytest
from testkit import toy_backends as toy

from fusionspec.conformance.cases import Status
from fusionspec.conformance.workers import Runner
from fusionspec.conformance.workers import runner as runner_module

TESTS = str(Path(__file__).resolve().parents[1])  # holds the testkit package
CASE = toy.valid_case("fp.matmul_post_ops", 3)


def _verdict(spec: str, isolate: bool) -> Any:
    with Runner(spec, None, 30.0, isolate=isolate, sys_path=[TESTS]) as run:
        return run.run(CASE)


def test_one_round_trip_per_partition(monkeypatch: pytest.MonkeyPatch) -> None:
    verbs: Counter[str] = Counter()
    call = runner_module.Runner.call

    def counted(self: Runner, request: tuple[Any, ...]) -> Any:
        verbs[request[0]] += 1
        return call(self, request)

    monkeypatch.setattr(runner_module.Runner, "call", counted)
    verdict = _verdict("testkit.toy_backends:Faithful", isolate=True)
    assert verdict.status is Status.passed, f"{verdict.status}: {verdict.reason}"
    parts = len(verdict.details.actual_partitions)
    assert verbs["compile_execute"] == parts and not verbs["compile"] \
        and not verbs["execute"], f"each of the {parts} partition(s) is compiled and " \
        f"executed in one request, never in two: {dict(verbs)}"


@pytest.mark.parametrize("isolate", [True, False], ids=["worker", "in-process"])
def test_a_rejection_at_compile_is_a_rejected_valid_case(isolate: bool) -> None:
    verdict = _verdict("testkit.toy_backends:RejectsAtCompile", isolate)
    assert verdict.status is Status.rejected_valid, \
        f"a declared rejection at compile rejects a valid case: {verdict.status}: " \
        f"{verdict.reason}"
    assert verdict.details.stage == "compile", \
        f"the stage named is compile: {verdict.details.stage!r}"


@pytest.mark.parametrize("isolate", [True, False], ids=["worker", "in-process"])
def test_a_failure_in_execute_is_an_error_of_execute(isolate: bool) -> None:
    verdict = _verdict("testkit.toy_backends:FailsInExecute", isolate)
    assert verdict.status is Status.error, \
        f"execute may not reject: its failure is an error: {verdict.status}: {verdict.reason}"
    assert verdict.details.stage == "execute", \
        f"the stage named is execute: {verdict.details.stage!r}"
    assert "ran out of something" in verdict.reason, \
        f"the backend's message is in the reason: {verdict.reason}"
