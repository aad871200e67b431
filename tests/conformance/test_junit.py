"""JUnit XML: ``fusionspec conform --junit`` and the plugin's per-case reports follow the
common JUnit schema, and show unsupported cases, expected failures and skips as skipped with
their reasons, failures with the verdict, the worst elements and the replay line."""

from __future__ import annotations

import textwrap
import xml.etree.ElementTree as ET
from pathlib import Path

from testkit.cli import fusionspec, pytest_run

#: Per the common JUnit XML schema (the Jenkins/Ant one CI dashboards read).
SUITE_ATTRIBUTES = {"name", "tests", "failures", "errors", "skipped", "time", "timestamp",
                    "hostname", "id", "package"}
CASE_ATTRIBUTES = {"name", "classname", "time", "file", "line"}
CASE_CHILDREN = {"failure", "error", "skipped", "system-out", "system-err", "properties"}
OUTCOMES = ("failure", "error", "skipped")

EXPECTATIONS = textwrap.dedent('''
    schema = "fusionspec-expectations/1"
    [[expect]]
    status = "fail"
    pattern = "fp.conv_post_ops"
    reason = "conv epilogues are off by one"
    [[expect]]
    status = "skip"
    pattern = "fp.bn_relu"
    reason = "hangs the driver"
    ''')
# LimitedWrong: matmul declared unsupported, and every floating-point output off by one.
RUN = ["--backend", "testkit.toy_backends:LimitedWrong", "--patterns",
       "fp.conv_post_ops,fp.matmul_post_ops,fp.bn_relu,fp.binary_post_ops", "--kinds", "valid"]


def _check_schema(root: ET.Element) -> list[ET.Element]:
    """Structure and counts per the common JUnit schema; the test cases."""
    assert root.tag in ("testsuites", "testsuite"), f"the root is testsuites: {root.tag}"
    suites = [root] if root.tag == "testsuite" else list(root)
    assert suites and all(s.tag == "testsuite" for s in suites), \
        f"testsuites holds testsuite elements only: {[s.tag for s in suites]}"
    cases: list[ET.Element] = []
    for suite in suites:
        assert set(suite.attrib) <= SUITE_ATTRIBUTES | {"skips"}, suite.attrib
        assert {"name", "tests", "failures", "errors"} <= set(suite.attrib), \
            f"a testsuite has its name and counts: {suite.attrib}"
        mine = [c for c in suite if c.tag == "testcase"]
        for case in mine:
            assert set(case.attrib) <= CASE_ATTRIBUTES and {"name", "classname"} <= \
                set(case.attrib), f"testcase attributes: {case.attrib}"
            tags = [child.tag for child in case]
            assert set(tags) <= CASE_CHILDREN, f"testcase children: {tags}"
            assert sum(tags.count(t) for t in OUTCOMES) <= 1, f"one outcome at most: {tags}"
            for child in case:
                if child.tag in OUTCOMES:
                    assert set(child.attrib) <= {"message", "type"}, child.attrib
        for outcome, counter in (("failure", "failures"), ("error", "errors"),
                                 ("skipped", "skipped")):
            found = sum(1 for c in mine if c.find(outcome) is not None)
            assert int(suite.get(counter, "0")) == found, \
                f"{counter}={suite.get(counter)} but {found} test case(s) have <{outcome}>"
        assert int(suite.get("tests", "-1")) == len(mine), "tests counts the test cases"
        cases += mine
    return cases


def _skips(cases: list[ET.Element]) -> dict[str, str]:
    return {c.get("name", ""): c.find("skipped").get("message", "")  # type: ignore[union-attr]
            for c in cases if c.find("skipped") is not None}


def test_conform_writes_junit_with_skips_and_failures(tmp_path: Path) -> None:
    (tmp_path / "exp.toml").write_text(EXPECTATIONS)
    done = fusionspec(["conform", *RUN, "--expectations", "exp.toml", "--out", "out",
                       "--junit", "junit.xml"], tmp_path)
    assert done.returncode == 1, f"binary cases fail unexpectedly:\n{done.stdout[-800:]}"
    cases = _check_schema(ET.parse(tmp_path / "junit.xml").getroot())
    classes = {c.get("classname") for c in cases}
    assert {"fp.conv_post_ops", "fp.matmul_post_ops", "fp.bn_relu"} <= classes, \
        f"classname is the pattern: {classes}"
    skips = _skips(cases)
    assert any("fp.matmul_post_ops/" in n and "matmul is not implemented" in m
               for n, m in skips.items()), f"unsupported cases are skipped with the reason: {skips}"
    assert any("fp.conv_post_ops/" in n and "conv epilogues are off by one" in m
               for n, m in skips.items()), f"expected failures are skipped (xfail): {skips}"
    assert any("fp.bn_relu/" in n and "hangs the driver" in m for n, m in skips.items()), \
        f"the expectations file's skips are skipped: {skips}"
    failed = [c for c in cases if c.find("failure") is not None]
    assert failed and all(c.get("classname") == "fp.binary_post_ops" for c in failed), \
        f"the unexpected failures are the binary cases: {[c.get('name') for c in failed]}"
    text = failed[0].find("failure")
    assert text is not None and text.get("type") == "numeric-mismatch", text
    assert "worst elements" in (text.text or "") and "--replay" in (text.text or ""), \
        f"a failure carries the worst elements and the replay line:\n{text.text}"


def test_an_unavailable_backend_is_one_error(tmp_path: Path) -> None:
    done = fusionspec(["conform", "--backend", "testkit.toy_backends:NoDevices", "--out", "o",
                       "--junit", "junit.xml"], tmp_path)
    assert done.returncode == 3, done.stdout[-600:]
    cases = _check_schema(ET.parse(tmp_path / "junit.xml").getroot())
    assert len(cases) == 1 and cases[0].find("error") is not None, \
        "a dashboard shows the run that could not start"


def test_the_plugin_reports_unsupported_and_xfail_as_skipped(tmp_path: Path) -> None:
    (tmp_path / "exp.toml").write_text(EXPECTATIONS)
    plugin_run = [arg.replace("--", "--fs-", 1) if arg.startswith("--") else arg for arg in RUN]
    done = pytest_run(["-q", "--pyargs", "fusionspec.conformance", *plugin_run,
                       "--fs-expectations", "exp.toml", "--fs-out", "out",
                       "--junitxml", "junit.xml"], tmp_path)
    assert done.returncode == 1, done.stdout[-800:]
    cases = _check_schema(ET.parse(tmp_path / "junit.xml").getroot())
    skips = _skips(cases)
    assert any("fp.matmul_post_ops/" in n and "matmul is not implemented" in m
               for n, m in skips.items()), f"unsupported cases are skipped: {skips}"
    assert any("fp.conv_post_ops/" in n and "conv epilogues are off by one" in m
               for n, m in skips.items()), f"expected failures are skipped: {skips}"
    failure = next(c.find("failure") for c in cases if c.find("failure") is not None)
    assert failure is not None and "worst elements" in (failure.text or failure.get(
        "message", "")), f"the failure text has the worst elements: {failure.text}"
