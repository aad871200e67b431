"""The conformance suite on the OpenCL backend, one kernel family at a time (slow tests).

Each runs ``fusionspec conform --backend accel`` (ci profile, isolated worker) on the patterns
one family compiles and requires no failure; cases the backend declares unsupported (f8) are
allowed. The first run builds every kernel (about 0.3 s each on PoCL); the disk cache serves
them afterwards. `nox -s tests-slow` runs them; `nox -s conformance` grades every pattern too.
"""

from __future__ import annotations

import json
import subprocess
import sys
import time
from pathlib import Path

import pytest
from testkit.accel import requires_device

from fusionspec.spec.catalog import pattern_ids

#: Catalog patterns by the kernel family that compiles them.
FAMILY_PATTERNS: dict[str, list[str]] = {
    "elementwise": ["fp.unary_binary", "fp.binary_post_ops", "fp.reciprocal_multiply",
                    "fp.bn_relu", "fp.reorder_add", "int8.reorder", "int8.reorder_add"],
    "gemm": ["fp.matmul_post_ops", "fp.conv_post_ops", "int8.matmul_post_ops",
             "int8.conv_post_ops", "fp.convtranspose_post_ops", "int8.convtranspose_post_ops",
             "convtranspose.int8", "train.conv_bwd_weights_bias_bwd"],
    "pool": ["fp.pool_binary", "int8.pool", "int8.pool_add"],
    "reduction": ["fp.reduction_post_ops"],
    "interpolate": ["fp.interpolate_post_ops"],
    "softmax": ["softmax.post_ops"],
    "training": ["train.relu_bwd_bn_bwd"],
}


def test_families_cover_the_catalog_once() -> None:
    listed = [p for patterns in FAMILY_PATTERNS.values() for p in patterns]
    assert sorted(listed) == sorted(pattern_ids()), \
        f"patterns missing or listed twice: {sorted(set(pattern_ids()) ^ set(listed))}"


@pytest.mark.slow
@requires_device
@pytest.mark.parametrize("family", sorted(FAMILY_PATTERNS))
def test_conformance_suite_on_family(family: str, tmp_path: Path) -> None:
    start = time.monotonic()
    done = subprocess.run(
        [sys.executable, "-m", "fusionspec.cli", "conform", "--backend", "accel",
         "--patterns", ",".join(FAMILY_PATTERNS[family]), "--out", str(tmp_path), "--json"],
        capture_output=True, text=True, timeout=7200)
    elapsed = time.monotonic() - start
    summary = json.loads(done.stdout) if done.stdout.strip().startswith("{") else {}
    assert done.returncode == 0 and summary.get("ok"), \
        f"{family}: conformance failures after {elapsed:.0f} s: {done.stdout[-3000:]}" \
        f"{done.stderr[-3000:]}"
    totals = summary.get("totals", {})
    assert totals.get("pass", 0) > 0, f"{family}: cases were graded: {totals}"
