"""``fusionspec bench`` and a backend's declared limitations: a covered workload is reported
unsupported with the reason, never timed and never a failure of the run."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from fusionspec.backend import Device, Limitation
from fusionspec.cli.main import main
from fusionspec.conformance.perf.bench import declared_limitation
from fusionspec.conformance.perf.workloads import workload

#: Declares the MatMul pattern unsupported, and computes everything right.
LIMITED = "testkit.toy_backends:LimitedFaithful"
MATMUL = "fp.matmul_post_ops/dlrm-top-mlp"
ADD_RELU = "fp.binary_post_ops/resnet50-residual-add-relu"


def test_bench_reports_a_covered_workload_unsupported(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    code = main(["bench", "--backend", LIMITED, "--workload", f"{MATMUL},{ADD_RELU}",
                 "--budget", "0.02", "--out", str(tmp_path)])
    out = capsys.readouterr().out
    assert code == 0, f"a declared limitation is no failure of the run: {out}"
    assert f"{MATMUL:<58}  unsupported: matmul is not implemented" in out, \
        f"the summary lists the workload as unsupported, with the reason: {out}"
    assert "1 declared unsupported" in out, f"the count says so: {out}"
    records = {r["id"]: r for r in json.loads((tmp_path / "perf.json").read_text())["workloads"]}
    assert records[MATMUL].get("unsupported") == "matmul is not implemented" \
        and "timings" not in records[MATMUL] and "error" not in records[MATMUL], \
        f"the covered workload is recorded unsupported, untimed: {records[MATMUL]}"
    assert "verdict" in records[ADD_RELU], f"the other one is measured: {records[ADD_RELU]}"


def test_a_limitation_matches_a_workload_as_conform_matches_a_case() -> None:
    bf16 = workload("softmax.post_ops/bert-attention-softmax-bf16")
    int8 = workload("softmax.post_ops/bert-int8-attention-softmax")
    cpu, gpu = Device("cpu0", "cpu"), Device("gpu0", "gpu")
    by_type = (Limitation("no bf16 storage", tensor_dtypes=("bf16",)),)
    assert declared_limitation(by_type, bf16, "small", cpu) == by_type[0], \
        "a tensor data type of the workload's graph is covered"
    assert declared_limitation(by_type, int8, "small", cpu) is None, \
        "a workload without such a tensor is not"
    on_gpu = (Limitation("no SoftMax on GPUs", pattern="softmax.*", device_kind="gpu"),)
    assert declared_limitation(on_gpu, int8, "small", gpu) == on_gpu[0] and \
        declared_limitation(on_gpu, int8, "small", cpu) is None, \
        "the device kind must match too"
    quantized = (Limitation("no int8", dtype="int8"),)
    assert declared_limitation(quantized, int8, "full", cpu) == quantized[0] and \
        declared_limitation(quantized, bf16, "full", cpu) is None, \
        "the headline dtype is the workload's"
