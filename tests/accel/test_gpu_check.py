"""The GPU check script (tools/gpu_check.py) where no GPU is: it says so and exits 3 without a
traceback; with --allow-cpu --quick it runs its bench on a CPU device end to end (PyTorch on
the CPU behind --torch cpu, where installed) and writes its JSON and Markdown table."""

from __future__ import annotations

import importlib.util
import json
import subprocess
import sys
from pathlib import Path
from types import ModuleType

import pytest
from testkit.accel import first_info, requires_device

REPO = Path(__file__).resolve().parents[2]
SCRIPT = REPO / "tools" / "gpu_check.py"


def _script() -> ModuleType:
    spec = importlib.util.spec_from_file_location("gpu_check", SCRIPT)
    assert spec is not None and spec.loader is not None, f"cannot load {SCRIPT}"
    module = importlib.util.module_from_spec(spec)
    sys.modules.setdefault("gpu_check", module)
    spec.loader.exec_module(module)
    return module


def test_no_gpu_is_a_clear_message_and_exit_code(tmp_path: Path) -> None:
    from fusionspec.accel.devices import discover

    if any(d.kind == "gpu" for d in discover()):
        pytest.skip("this machine has a GPU OpenCL device")
    done = subprocess.run([sys.executable, str(SCRIPT), "--out", str(tmp_path / "out")],
                          capture_output=True, text=True, timeout=300, cwd=REPO,
                          stdin=subprocess.DEVNULL, check=False)
    assert done.returncode == 3, f"exit 3 (unavailable), got {done.returncode}: {done.stderr}"
    assert "Traceback" not in done.stdout + done.stderr, f"no traceback: {done.stderr[-800:]}"
    assert "no GPU OpenCL device" in done.stderr, f"the message says why: {done.stderr!r}"
    assert not (tmp_path / "out").exists(), "nothing is written when nothing can run"


def test_an_unknown_device_is_named(tmp_path: Path, capsys: pytest.CaptureFixture[str]
                                    ) -> None:
    code = _script().main(["--out", str(tmp_path), "--device", "no-such-gpu"])
    said = capsys.readouterr().err
    assert code == 3 and "no-such-gpu" in said, f"exit 3 naming the device: {code}, {said!r}"


@requires_device
def test_the_bench_runs_on_a_cpu_device_when_allowed(tmp_path: Path) -> None:
    """The whole bench path, tiny shapes, on the first (CPU) device; PyTorch on the CPU next
    to it when it is installed."""
    try:
        import torch  # noqa: F401
        torch_choice = "cpu"
    except ImportError:
        torch_choice = "off"
    module = _script()
    code = module.main(["--out", str(tmp_path), "--device", first_info().id, "--allow-cpu",
                        "--quick", "--skip-tests", "--skip-conformance", "--torch",
                        torch_choice, "--budget", "0.05"])
    assert code == 0, f"the quick check exits 0, got {code}"
    doc = json.loads((tmp_path / "gpu_check.json").read_text())
    names = [row["name"] for row in doc["rows"]]
    assert names == [row.name for row in module.rows(True, True)], f"every row ran: {names}"
    assert all(row["accel"]["method"] == "events" and row["accel_ms"] > 0
               for row in doc["rows"]), "the kernels are timed by events"
    assert doc["copy"]["accel_gb_s"] > 0, f"the copy yardstick: {doc['copy']}"
    if torch_choice == "cpu":
        assert all(row["torch_ms"] > 0 for row in doc["rows"]), "PyTorch's side ran"
        worst = max(row["max_rel_diff_vs_torch"] for row in doc["rows"])
        assert worst < 1e-3, f"accel and PyTorch compute the same thing (worst {worst:.2e})"
    table = (tmp_path / "gpu_check.md").read_text()
    assert "| partition | accel ms | PyTorch ms |" in table and names[0] in table, \
        f"the Markdown table: {table[:400]}"


def test_the_full_table_has_the_issue_shapes() -> None:
    names = [row.name for row in _script().rows(False, True)]
    for wanted in ("MatMul 1024x1024x1024", "MatMul 4096x4096x4096", "MatMul 384x1024x4096",
                   "MatMul 8192x8192x8192", "Conv 3x3 32x64x56x56", "Conv 3x3 32x512x7x7",
                   "SoftMax 73728x384", "SoftMax 65536x128", "Add -> ReLU"):
        assert any(name.startswith(wanted) for name in names), f"{wanted} is benched: {names}"
    assert not any("8192x8192x8192" in row.name for row in _script().rows(False, False)), \
        "--no-large leaves out 8192^3"


def test_a_step_records_its_exit_code_and_log(tmp_path: Path) -> None:
    step = _script().run_step("demo", [sys.executable, "-c", "print('12 passed'); exit(2)"],
                              {}, tmp_path / "demo.log", 60)
    assert (step["exit_code"], step["last_line"]) == (2, "12 passed"), f"the step: {step}"
    assert "12 passed" in (tmp_path / "demo.log").read_text(), "the output is kept in its log"
