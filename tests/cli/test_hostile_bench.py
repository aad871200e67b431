"""``fusionspec bench`` against backends that attack it from their worker process
(`testkit.hostile_bench_backends`): whatever the backend does, the command judges its outputs
against fusionspec's reference and its timings itself, a workload it fails ends in a ``backend
error`` and a non-zero exit with the document written, and nothing it prints or raises reaches
the terminal raw."""

from __future__ import annotations

import json
import time
from pathlib import Path
from typing import Any

import pytest
from testkit.cli import fusionspec

from fusionspec.backend import BackendError
from fusionspec.backend.timing import TimingPolicy
from fusionspec.conformance.perf.bench import run_bench
from fusionspec.conformance.perf.workloads import WORKLOADS

KIT = "testkit.hostile_bench_backends"
#: One cheap workload of two ops (a fused side that could pay).
ONE = [w for w in WORKLOADS if w.pattern == "fp.bn_relu"][:1]
POLICY = TimingPolicy(warmup=1, min_repeats=3, max_repeats=5, budget_s=0.05,
                      target_spread=0.5)


def _bench(backend: str, **kwargs: Any) -> dict[str, Any]:
    """The document of a run of `backend`, as JSON: as it is written."""
    return run_bench(f"{KIT}:{backend}", ONE, policy=POLICY, measure_yardsticks=False,
                     settle_s=0.0, **kwargs).to_json()


@pytest.mark.parametrize("isolate", [True, False])
def test_outputs_that_agree_only_with_each_other_do_not_count(isolate: bool) -> None:
    (record,) = _bench("ConstantOutputs", isolate=isolate)["workloads"]
    assert "verdict" not in record and "timings" not in record, \
        f"outputs of 12345 on both sides get no timing and no verdict: {record}"
    assert "reference" in record["error"] and record["check"]["agree"] is False, \
        f"the command checked them against its own reference: {record}"


@pytest.mark.parametrize(("backend", "said"), [
    ("ExitsInPartition", "exit code 0"),
    ("ForgesRecord", "not an answer"),
    ("ForgesFailure", "not an answer"),
    ("RaisesEscapes", "RuntimeError"),
    ("NanTimer", "nan"),
    ("NegativeTimer", "-1"),
    ("TextTimer", "str"),
    ("ZeroTimer", "read 0 s"),
    ("PatchesItsWorker", "timer gave nan"),
])
def test_a_backend_that_misbehaves_gets_a_backend_error(backend: str, said: str) -> None:
    (record,) = _bench(backend)["workloads"]
    assert record.get("error", "").startswith("backend error: ") and said in record["error"], \
        f"{backend}: one backend error that says what went wrong: {record}"
    assert "verdict" not in record, f"{backend}: no verdict from a failed measurement: {record}"
    assert "\x1b" not in record["error"] and "\x07" not in record["error"], \
        f"{backend}: the reason carries no escape sequence: {record['error']!r}"


def test_a_worker_that_dies_is_replaced_and_the_run_goes_on() -> None:
    two = ONE + [w for w in WORKLOADS if w.pattern == "fp.unary_binary"][:1]
    doc = run_bench(f"{KIT}:ExitsInPartition", two, policy=POLICY,
                    measure_yardsticks=False).to_json()
    assert [r["id"] for r in doc["workloads"]] == [w.id for w in two], \
        "every workload has a record, in order"
    assert all("exit code 0" in r["error"] for r in doc["workloads"]), \
        f"each workload's own worker died, each is blamed: {doc['workloads']}"


def test_a_backend_that_exits_while_loading_is_unavailable(tmp_path: Path) -> None:
    with pytest.raises(BackendError, match=r"crashed \(exit code [-0-9]+.*\) while loading"):
        _bench("ExitsAtLoad")
    done = fusionspec(["bench", "--backend", f"{KIT}:ExitsAtLoad", "--workload", ONE[0].id,
                       "--json"], tmp_path)
    said = json.loads(done.stdout)
    assert done.returncode == 3 and said["verdict"] == "UNAVAILABLE", \
        f"exit 3 and a verdict, never exit 0 with nothing written: {done.returncode} {said}"
    assert "Traceback" not in done.stderr, done.stderr[-800:]


def test_a_backend_that_hangs_is_stopped_at_the_time_limit(tmp_path: Path) -> None:
    started = time.monotonic()
    done = fusionspec(["bench", "--backend", f"{KIT}:Hangs", "--workload", ONE[0].id,
                       "--timeout", "2", "--budget", "0.02", "--out", "out", "--json"],
                      tmp_path, timeout=300)
    said = json.loads(done.stdout)
    assert done.returncode == 1 and "no answer within 2 s" in said["errors"][ONE[0].id], \
        f"the workload ends in a backend error at the time limit: {done.returncode} {said}"
    assert time.monotonic() - started < 120, "the run did not wait for the hang"
    doc = json.loads((tmp_path / "out" / "perf.json").read_text())
    assert doc["workloads"][0]["error"].startswith("backend error"), \
        f"the document is written and says why: {doc['workloads']}"


def test_what_a_backend_prints_stays_out_of_the_output(tmp_path: Path) -> None:
    done = fusionspec(["bench", "--backend", f"{KIT}:Prints", "--workload", ONE[0].id,
                       "--budget", "0.02", "--out", "out", "--json"], tmp_path)
    said = json.loads(done.stdout)  # one JSON document, nothing printed around it
    assert done.returncode == 0 and said["verdict"] == "PASS", \
        f"a backend that prints is still measured: {done.returncode} {said}"
    assert "garbage" not in done.stdout + done.stderr, "the backend's text went to its log"


def test_escapes_in_a_backend_error_do_not_reach_the_terminal(tmp_path: Path) -> None:
    done = fusionspec(["bench", "--backend", f"{KIT}:RaisesEscapes", "--workload", ONE[0].id,
                       "--budget", "0.02", "--out", "out"], tmp_path)
    assert done.returncode == 1, f"a workload that failed exits 1: {done.stdout}"
    printed = done.stdout + done.stderr
    assert "\x1b" not in printed and "\x07" not in printed and "\r" not in printed, \
        f"no escape sequence printed: {printed[-600:]!r}"
    assert "backend error: RuntimeError" in done.stdout, f"the error is named: {done.stdout}"
