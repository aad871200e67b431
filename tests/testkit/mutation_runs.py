"""Running a broken backend through the suite the way the mutation tests do: the ci profile,
restricted to some patterns and case kinds, in-process for speed (the runner's isolation has
tests of its own), with tests/ on the path so ``testkit.<module>:<Class>`` loads."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

from fusionspec.conformance.cases import CaseKind
from fusionspec.conformance.grade.results import ResultsCollector
from fusionspec.conformance.suite import run_suite

__all__ = ["TESTS", "run_backend"]

#: The tests/ folder, which holds the testkit package.
TESTS = str(Path(__file__).resolve().parents[1])


def run_backend(backend: str, patterns: Sequence[str] | None,
                kinds: Sequence[CaseKind]) -> ResultsCollector:
    """The ci profile's cases of `patterns` (all when None) and `kinds` on `backend`."""
    return run_suite(backend, patterns=None if patterns is None else list(patterns),
                     kinds=list(kinds), isolate=False, sys_path=[TESTS])
