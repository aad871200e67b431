"""Performance documents written by hand for the report's and the findings' tests: figures
chosen so that each verdict, a failed workload and the roofs are in them, without a bench run.

`perf_document` returns a document that passes the schema check; `workload` one record.
"""

from __future__ import annotations

from typing import Any

from fusionspec.conformance.perf.document import PERF_FORMAT, PERF_VERSION, read_perf


def _timing(median: float, spread: float) -> dict[str, Any]:
    return {"method": "wall", "repeats": 12, "min": median * (1 - 2 * spread),
            "median": median, "ci_low": median * (1 - spread),
            "ci_high": median * (1 + spread), "confidence": 0.95, "stopped": "spread"}


def workload(wid: str, pattern: str, verdict: str, fused_ms: float, opbyop_ms: float, *,
             ops: tuple[str, ...] = ("MatMul", "ReLU"), split: bool = False,
             flops: int = 2_000_000, bytes_fused: int = 400_000,
             bytes_opbyop: int = 800_000, spread: float = 0.02) -> dict[str, Any]:
    """A measured workload; `split` records one partition per op (the backend's split)."""
    partitions = [[k] for k in ops] if split else [list(ops)]
    return {"id": wid, "pattern": pattern, "name": wid.split("/")[-1],
            "source": f"the {wid} layer", "dtype": "f32", "ops": list(ops),
            "partitions": partitions, "fused_whole": not split,
            "check": {"agree": True, "max_difference": 0.0}, "flops": flops,
            "bytes_fused": bytes_fused, "bytes_opbyop": bytes_opbyop,
            "timings": {"fused": _timing(fused_ms, spread),
                        "opbyop": _timing(opbyop_ms, spread)},
            "ratio": opbyop_ms / fused_ms, "verdict": verdict,
            "roofline": {"gflop_s": flops / (fused_ms * 1e-3) / 1e9,
                         "gb_s": bytes_fused / (fused_ms * 1e-3) / 1e9},
            "rerun": f"fusionspec bench --backend planted --device cpu0 --size small "
                     f"--workload {wid}"}


def failed(wid: str, pattern: str, error: str) -> dict[str, Any]:
    return {"id": wid, "pattern": pattern, "name": wid.split("/")[-1], "source": "a layer",
            "dtype": "f32", "ops": ["ReLU"], "error": error,
            "rerun": f"fusionspec bench --backend planted --workload {wid}"}


def perf_document(workloads: list[dict[str, Any]], *, backend: str = "planted",
                  device: str = "cpu0", driver: str = "1.0",
                  yardsticks: dict[str, Any] | None = None) -> dict[str, Any]:
    document = {
        "format": PERF_FORMAT, "version": PERF_VERSION, "backend": backend,
        "backend_spec": backend, "device": {"id": device, "kind": "cpu", "driver": driver},
        "size": "small", "seed": 0, "shard": None,
        "command": f"fusionspec bench --backend {backend}",
        "policy": {"warmup": 1, "min_repeats": 9, "max_repeats": 40, "budget_s": 0.3,
                   "target_spread": 0.03, "confidence": 0.95},
        "environment": {"python": "3.11"},
        "yardsticks": yardsticks if yardsticks is not None
        else {"copy_gb_s": 10.0, "gemm_gflop_s": 100.0, "gemm_shape": [512, 512, 512]},
        "workloads": workloads}
    read_perf(document, "planted perf document")  # a document every reader takes
    return document


def mixed_document(**kwargs: Any) -> dict[str, Any]:
    """One workload of each verdict and one that failed."""
    return perf_document([
        workload("fp.matmul_post_ops/bert", "fp.matmul_post_ops", "fusion pays", 1.0, 2.0),
        workload("fp.bn_relu/stem", "fp.bn_relu", "fusion does not pay", 1.0, 0.9,
                 ops=("BatchNormInference", "ReLU")),
        workload("fp.binary_post_ops/res", "fp.binary_post_ops", "not fused", 1.1, 1.2,
                 ops=("Add", "ReLU"), split=True, flops=100_000),
        failed("fp.pool_binary/stem", "fp.pool_binary", "the backend raised ValueError"),
    ], **kwargs)
