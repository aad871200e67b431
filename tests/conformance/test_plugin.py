"""The pytest plugin: it leaves other projects' test runs alone, makes one test per case
(node ids are case ids), marks expected failures xfail, puts the replay commands in the
failure text, and writes one results document, the same under pytest-xdist as without it."""

from __future__ import annotations

import json
import textwrap
import xml.etree.ElementTree as ET
from pathlib import Path

import pytest
from testkit.cli import comparable, pytest_run

CONFTEST = '''
def pytest_addoption(parser):
    # Generic names another project may well use; fusionspec must not take them.
    parser.addoption("--device", default="cpu")
    parser.addoption("--profile", action="store_true")
    parser.addoption("--backend", default="mine")
    parser.addoption("--patterns", default="")
    parser.addoption("--seed", default="1")
'''

SUITE = ["--pyargs", "fusionspec.conformance"]


def test_another_project_with_generic_options_still_collects(tmp_path: Path) -> None:
    (tmp_path / "conftest.py").write_text(CONFTEST)
    (tmp_path / "test_mine.py").write_text(
        "def test_mine(pytestconfig):\n    assert pytestconfig.getoption('device') == 'cpu'\n")
    done = pytest_run(["-q"], tmp_path)
    assert done.returncode == 0 and "1 passed" in done.stdout, \
        f"the project's own options work beside fusionspec's:\n{done.stdout}{done.stderr}"
    explicit = pytest_run(["-q", "-p", "fusionspec.conformance.plugin"], tmp_path)
    assert explicit.returncode == 0, f"loading the plugin by name too does not clash:\n" \
                                     f"{explicit.stdout}{explicit.stderr}"
    helped = pytest_run(["--help"], tmp_path)
    assert "--fs-backend" in helped.stdout and "--fs-expectations" in helped.stdout, \
        "fusionspec's options are there, prefixed"


def test_without_a_backend_the_suite_is_skipped(tmp_path: Path) -> None:
    done = pytest_run(["-q", *SUITE], tmp_path)
    assert done.returncode == 0 and "1 skipped" in done.stdout, done.stdout[-800:]


def test_one_test_per_case_named_by_its_id(tmp_path: Path) -> None:
    done = pytest_run(["-q", "--collect-only", *SUITE, "--fs-backend", "reference",
                       "--fs-patterns", "fp.bn_relu", "--fs-kinds", "valid"], tmp_path)
    ids = [line for line in done.stdout.splitlines() if "::test_conformance[" in line]
    assert ids and all("[fp.bn_relu/valid/" in line for line in ids), \
        f"node ids carry the case ids: {ids[:3]}"
    chosen = ids[0].split("[", 1)[1].rstrip("]")
    by_k = pytest_run(["-q", *SUITE, "--fs-backend", "reference", "--fs-patterns",
                       "fp.bn_relu", "--fs-kinds", "valid", "-k", chosen.split("/")[-1]],
                      tmp_path)
    assert by_k.returncode == 0 and "1 passed" in by_k.stdout, \
        f"-k picks one case:\n{by_k.stdout[-800:]}"


@pytest.mark.parametrize("flag", ["--fs-patterns=int9.*", "--fs-kinds=sideways",
                                  "--fs-dtype=f64", "--fs-shard=5/4"])
def test_a_bad_option_is_a_usage_error(tmp_path: Path, flag: str) -> None:
    done = pytest_run(["-q", *SUITE, "--fs-backend", "reference", flag], tmp_path)
    assert done.returncode == 2, f"{flag}: conform's usage error, got {done.returncode}: " \
                                 f"{done.stderr[-600:]}"
    assert "Traceback" not in done.stderr, done.stderr[-1200:]


BROKEN = ["--fs-backend", "testkit.toy_backends:WrongConv", "--fs-patterns",
          "fp.conv_post_ops,fp.matmul_post_ops", "--fs-kinds", "valid,ill-formed"]


def test_xdist_writes_the_same_document_as_one_process(tmp_path: Path) -> None:
    serial = pytest_run(["-q", "-n", "0", *SUITE, *BROKEN, "--fs-out", "serial"], tmp_path)
    parallel = pytest_run(["-q", "-n", "2", *SUITE, *BROKEN, "--fs-out", "parallel"], tmp_path)
    assert serial.returncode == 1 and parallel.returncode == 1, \
        f"both runs fail on the planted cases:\n{serial.stdout[-600:]}\n{parallel.stdout[-600:]}"
    one = comparable(tmp_path / "serial" / "results.json")
    two = comparable(tmp_path / "parallel" / "results.json")
    for key in one:
        assert two.get(key) == one[key], f"-n 2 and -n 0 differ in {key!r}"
    assert one["totals"].get("numeric-mismatch"), f"failures are recorded: {one['totals']}"
    logs = sorted(p.name for p in (tmp_path / "parallel").glob("worker*.log"))
    assert len(logs) == 2, f"each xdist worker keeps its own backend log: {logs}"


def test_failures_xfail_and_junit_per_case(tmp_path: Path) -> None:
    (tmp_path / "exp.toml").write_text(textwrap.dedent('''
        schema = "fusionspec-expectations/1"
        [[expect]]
        status = "fail"
        pattern = "fp.conv_post_ops"
        kind = "valid"
        reason = "conv epilogues are off by one"
        link = "https://example.org/issues/7"
        '''))
    done = pytest_run(["-q", "-rxX", *SUITE, *BROKEN, "--fs-expectations", "exp.toml",
                       "--junitxml", "junit.xml", "--fs-out", "out"], tmp_path)
    out = done.stdout
    assert done.returncode == 0, f"every failure is expected:\n{out[-1500:]}"
    assert "xfailed" in out and "conv epilogues are off by one" in out, out[-1500:]
    cases = ET.parse(tmp_path / "junit.xml").getroot().iter("testcase")
    names = [c.get("name", "") for c in cases]
    assert any("fp.matmul_post_ops/valid/" in n for n in names), \
        f"JUnit has one entry per case: {names[:3]}"
    document = json.loads((tmp_path / "out" / "results.json").read_text())
    assert document["expectations"]["expected_failures"] > 0, document["expectations"]

    strict = pytest_run(["-q", *SUITE, "--fs-backend", "reference", "--fs-patterns",
                         "fp.conv_post_ops", "--fs-kinds", "valid", "--fs-expectations",
                         "exp.toml", "--fs-strict-expectations"], tmp_path)
    assert strict.returncode == 1 and "XPASS(strict)" in strict.stdout, \
        f"an expected failure that passes fails in strict mode:\n{strict.stdout[-800:]}"


def test_a_failure_says_how_to_replay_it(tmp_path: Path) -> None:
    done = pytest_run(["-q", "-x", *SUITE, *BROKEN, "--fs-out", "out"], tmp_path)
    out = done.stdout
    assert done.returncode == 1 and "numeric-mismatch: fp.conv_post_ops/valid/" in out, \
        out[-1500:]
    assert "replay: fusionspec conform --backend testkit.toy_backends:WrongConv" in out and \
        "rerun:  fusionspec conform" in out, f"the failure text has the commands:\n{out[-1500:]}"
    assert "INCOMPLETE" in out, f"a run stopped by -x is not a PASS:\n{out[-600:]}"


def test_the_ci_recipe_under_xdist_with_a_shard_writes_one_document(tmp_path: Path) -> None:
    # docs/ci.md's pytest recipe: every xdist worker judges part of the same shard.
    done = pytest_run(["-q", *SUITE, "--fs-backend", "reference", "--fs-patterns", "fp.bn_relu",
                       "--fs-shard", "1/2", "-n", "2", "--fs-out", "out"], tmp_path)
    assert done.returncode == 0 and "Traceback" not in done.stdout + done.stderr, \
        f"the sharded xdist run ends cleanly:\n{done.stdout[-1500:]}{done.stderr[-800:]}"
    document = json.loads((tmp_path / "out" / "results.json").read_text())
    assert document["shard"] == "1/2", f"the document is the shard's: {document['shard']}"
    alone = pytest_run(["-q", *SUITE, "--fs-backend", "reference", "--fs-patterns", "fp.bn_relu",
                        "--fs-shard", "1/2", "-n", "0", "--fs-out", "alone"], tmp_path)
    assert alone.returncode == 0, alone.stdout[-800:]
    one = comparable(tmp_path / "alone" / "results.json")
    two = comparable(tmp_path / "out" / "results.json")
    for key in one:
        assert two.get(key) == one[key], f"-n 2 and -n 0 differ in {key!r} for a shard"


def test_the_plugin_writes_an_expectations_file_the_next_run_accepts(tmp_path: Path) -> None:
    broken = ["--fs-backend", "testkit.toy_backends:WrongConv", "--fs-patterns",
              "fp.conv_post_ops", "--fs-kinds", "valid"]
    first = pytest_run(["-q", *SUITE, *broken, "--fs-out", "one",
                        "--fs-write-expectations", "ci/exp.toml"], tmp_path)
    assert first.returncode == 1 and (tmp_path / "ci" / "exp.toml").is_file(), \
        f"the failing run writes the file:\n{first.stdout[-800:]}"
    assert "expectations: ci/exp.toml" in first.stdout, first.stdout[-800:]
    second = pytest_run(["-q", *SUITE, *broken, "--fs-out", "two",
                         "--fs-expectations", "ci/exp.toml"], tmp_path)
    assert second.returncode == 0 and "xfailed" in second.stdout, \
        f"the written file expects every failure:\n{second.stdout[-800:]}"


def test_a_backend_that_cannot_run_exits_3(tmp_path: Path) -> None:
    for backend in ("nosuchmod:X", "testkit.toy_backends:NoDevices"):
        done = pytest_run(["-q", *SUITE, "--fs-backend", backend], tmp_path)
        assert done.returncode == 3, f"{backend}: exit 3 as conform's, got {done.returncode}:" \
                                     f"\n{done.stdout[-800:]}"
        assert "the backend cannot run" in done.stdout, done.stdout[-800:]
