"""What a backend says about itself is checked when it loads: a bad name, device or limitation
is one clean error naming the backend and the field, never a traceback or a lost results file,
and text reaches terminals and documents without control sequences, clipped."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from testkit.cli import fusionspec

from fusionspec.backend import BackendError
from fusionspec.conformance.workers import Runner

TESTS = str(Path(__file__).resolve().parents[1])  # holds the testkit package


@pytest.mark.parametrize(("backend", "field"), [
    ("DeviceIdNotText", "device.id"),
    ("LimitationNotALimitation", "limitations[0]"),
    ("CatchAllLimitation", "covers every case"),
    ("DepartureNotADeparture", "departures[0] is a str"),
    ("CatchAllDeparture", "matches every case"),
    ("NameNotText", "name"),
])
@pytest.mark.parametrize("isolate", [True, False])
def test_bad_self_description_is_one_error(backend: str, field: str, isolate: bool) -> None:
    spec = f"testkit.hostile_backends:{backend}"
    with pytest.raises(BackendError) as raised:
        Runner(spec, None, 30.0, sys_path=[TESTS], isolate=isolate).close()
    assert spec in str(raised.value) and field in str(raised.value), \
        f"the error names the backend and the field: {raised.value}"


def test_control_sequences_and_megabytes_are_cleaned() -> None:
    with Runner("testkit.hostile_backends:AnsiName", None, 30.0, sys_path=[TESTS]) as run:
        said = (run.backend_name, run.device.id, run.device.name)
    assert not any("\x1b" in text or "\x07" in text for text in said), f"cleaned: {said!r}"
    assert len(said[2]) < 3000, f"clipped: {len(said[2])} characters"


def test_conform_on_a_bad_backend_is_one_line(tmp_path: Path) -> None:
    done = fusionspec(["conform", "--backend", "testkit.hostile_backends:DeviceIdNotText",
                       "--patterns", "fp.bn_relu", "--kinds", "valid", "--json", "--out",
                       "out"], tmp_path)
    said = json.loads(done.stdout)
    # A backend that describes itself wrongly cannot be used: exit 3, as for one that cannot load.
    assert done.returncode == 3 and "device.id" in str(said.get("unavailable")), \
        f"one error naming the field, exit 3: {done.returncode} {said}"
    assert "Traceback" not in done.stderr, done.stderr[-800:]


def test_a_run_where_every_case_is_unsupported_is_not_a_pass(tmp_path: Path) -> None:
    done = fusionspec(["conform", "--backend", "testkit.toy_backends:LimitedFaithful",
                       "--patterns", "fp.matmul_post_ops", "--kinds", "valid", "--json",
                       "--out", "out"], tmp_path)
    said = json.loads(done.stdout)
    assert done.returncode == 1 and said["verdict"] == "INCOMPLETE", \
        f"all unsupported shows nothing: {done.returncode} {said}"
    assert "unsupported" in said["incomplete"], said


@pytest.mark.parametrize("isolate", [True, False])
def test_a_backend_message_is_cleaned_and_clipped(isolate: bool) -> None:
    from testkit import toy_backends as toy

    with Runner("testkit.hostile_backends:RaisesAnsi", None, 30.0, sys_path=[TESTS],
                isolate=isolate) as run:
        verdict = run.run(toy.valid_case("fp.matmul_post_ops", 3))
    assert verdict.failed and "\x1b" not in verdict.reason and "\r" not in verdict.reason, \
        f"no escape sequence in the reason: {verdict.reason[:200]!r}"
    assert len(verdict.reason) < 3000, f"clipped: {len(verdict.reason)}"
    kept = json.dumps(verdict.details.to_json())
    assert "\\u001b" not in kept and len(kept) < 20_000, \
        f"the details carry neither escapes nor megabytes: {len(kept)}"
