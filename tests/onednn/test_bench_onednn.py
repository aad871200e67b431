"""`bench/bench_onednn.py`, a caller of `fusionspec bench`: one performance document per
backend and device, and their fused sides side by side (no timing is asserted)."""

from __future__ import annotations

import importlib.util
import json
import sys
from pathlib import Path
from types import ModuleType

from fusionspec.conformance.perf.document import load_perf
from fusionspec.onednn import OnednnBackend


def _script() -> ModuleType:
    path = Path(__file__).resolve().parents[2] / "bench" / "bench_onednn.py"
    spec = importlib.util.spec_from_file_location("bench_onednn", path)
    assert spec is not None and spec.loader is not None, f"cannot load {path}"
    module = importlib.util.module_from_spec(spec)
    sys.modules.setdefault("bench_onednn", module)
    spec.loader.exec_module(module)
    return module


def test_script_compares_backends_through_perf_documents(onednn: OnednnBackend,
                                                         tmp_path: Path) -> None:
    code = _script().main(["--out", str(tmp_path), "--size", "small", "--workload",
                           "fp.binary_post_ops/*", "--budget", "0.02", "--no-accel"])
    assert code == 0, f"the benchmark exited with {code}"
    doc = load_perf(tmp_path / "onednn-cpu" / "perf.json").to_json()
    (record,) = doc["workloads"]
    assert "verdict" in record or "error" in record, f"oneDNN's record: {record}"
    comparison = json.loads((tmp_path / "comparison.json").read_text())
    assert comparison["backends"][0].startswith("onednn cpu"), \
        f"oneDNN is the first column: {comparison['backends']}"
    (row,) = comparison["rows"]
    assert row["workload"] == record["id"] and row["over_first"] == {}, \
        f"one backend, no ratio to it: {row}"
