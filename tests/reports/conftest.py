"""Real results documents for the report's tests, produced once per session by running the
conformance suite in this process on the reference, on planted mutants
(testkit.mutants) and on the report's own test backends (testkit.report_backends)."""

from __future__ import annotations

from pathlib import Path

import pytest
from testkit.report import PATTERNS

from fusionspec.conformance.suite import run_suite

TESTS = Path(__file__).resolve().parents[1]  # holds the testkit package


def produce(backend: str, out: Path, patterns: tuple[str, ...] = PATTERNS) -> Path:
    """Run the suite on `backend` (in process) and write ``out/results.json``."""
    collector = run_suite(backend, patterns=list(patterns), isolate=False, out_dir=out,
                          sys_path=[str(TESTS)])
    return collector.write(out / "results.json")


@pytest.fixture(scope="session")
def reference_results(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return produce("reference", tmp_path_factory.mktemp("reference"))


@pytest.fixture(scope="session")
def never_fuses_results(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return produce("testkit.mutants:NeverFuses", tmp_path_factory.mktemp("never-fuses"))


@pytest.fixture(scope="session")
def gelu_results(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return produce("testkit.mutants:GeluTanhForErf", tmp_path_factory.mktemp("gelu-tanh"),
                   ("softmax.post_ops",))


@pytest.fixture(scope="session")
def limited_results(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return produce("testkit.report_backends:LimitedNeverFuses", tmp_path_factory.mktemp("limited"))


@pytest.fixture(scope="session")
def hostile_results(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return produce("testkit.report_backends:HostileErrors", tmp_path_factory.mktemp("hostile"),
                   ("softmax.post_ops",))


@pytest.fixture(scope="session")
def fuses_everything_results(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A backend that merges near misses into one partition and computes them right: its
    near-miss cases are extensions."""
    return produce("testkit.toy_backends:FusesEverything", tmp_path_factory.mktemp("fuses-all"),
                   ("fp.reciprocal_multiply",))
