"""`bench/bench_perf_noise.py`'s comparison: every ordered pair of runs through the perf gate,
counted (the repeated bench runs themselves are measured by the script, not here)."""

from __future__ import annotations

import copy
import importlib.util
import sys
from pathlib import Path
from types import ModuleType

from testkit.perf_docs import perf_document, workload

from fusionspec.conformance.perf.document import read_perf
from fusionspec.conformance.perf.records import PerfDocument


def _script() -> ModuleType:
    path = Path(__file__).resolve().parents[2] / "bench" / "bench_perf_noise.py"
    spec = importlib.util.spec_from_file_location("bench_perf_noise", path)
    assert spec is not None and spec.loader is not None, f"cannot load {path}"
    module = importlib.util.module_from_spec(spec)
    sys.modules.setdefault("bench_perf_noise", module)
    spec.loader.exec_module(module)
    return module


def _run(fused_ms: float) -> PerfDocument:
    return read_perf(perf_document([workload("fp.a/one", "fp.a", "fusion pays", fused_ms, 2.0),
                                    workload("fp.b/two", "fp.b", "fusion pays", 1.0, 2.0)]))


def test_identical_runs_flag_nothing_and_every_pair_is_compared_both_ways() -> None:
    found = _script().compare_all([_run(1.0), copy.deepcopy(_run(1.0)), _run(1.0)], 0.1)
    assert (found["runs"], found["pairs"], found["comparisons"]) == (3, 3, 6), \
        f"three runs make three pairs, six comparisons: {found}"
    assert found["regressions"] == 0 and found["comparisons_flagged"] == 0, \
        f"runs of the same figures pass the gate: {found['comparisons_detail']}"


def test_a_slower_run_is_flagged_as_the_new_side_only() -> None:
    found = _script().compare_all([_run(1.0), _run(1.0), _run(1.5)], 0.1)
    flagged = [(c["baseline"], c["new"]) for c in found["comparisons_detail"]
               if c["regressions"]]
    assert flagged == [(1, 3), (2, 3)], \
        f"the run with fp.a 50% slower is flagged against each baseline, only as new: {flagged}"
    assert found["regressions"] == 2 and all(
        "fp.a/one" in line for c in found["comparisons_detail"] for line in c["regressions"]), \
        f"the regressions name the slowed workload: {found['comparisons_detail']}"
