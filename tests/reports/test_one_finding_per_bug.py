"""One bug, one finding: a backend whose only bug is that it truncates bf16/f16 outputs
instead of rounding them to nearest even fails cases over many op kinds and patterns, and
`fusionspec findings` reports it once, naming the truncation."""

from __future__ import annotations

from pathlib import Path

from fusionspec.conformance.cases import CaseKind
from fusionspec.conformance.suite import run_suite
from fusionspec.reports.findings import findings_markdown, group_findings

TESTS = str(Path(__file__).resolve().parents[1])  # holds the testkit package
PATTERNS = ["fp.matmul_post_ops", "fp.unary_binary", "fp.conv_post_ops", "softmax.post_ops"]


def test_a_truncating_backend_gives_one_finding_naming_the_truncation() -> None:
    results = run_suite("testkit.mutants:TruncatesNarrowOutputs", patterns=PATTERNS,
                        kinds=[CaseKind.valid], isolate=False, sys_path=[TESTS])
    document = results.to_dict()
    found = group_findings(results.document())
    failing = [r for r in document["failures"] if r["status"] == "numeric-mismatch"]
    assert failing, f"the truncation must fail some cases: {dict(results.totals)}"
    patterns = {r["pattern"] for r in failing}
    assert len(patterns) > 1, f"the bug shows in several patterns, not only {patterns}"
    assert len(found) == 1, \
        f"one bug must be one finding, got {len(found)}: {[f.signature for f in found]}"
    (finding,) = found
    assert "truncated" in finding.signature and len(finding.records) == len(failing), \
        f"the finding names the truncation and holds all {len(failing)} failing cases: " \
        f"{finding.signature} ({len(finding.records)})"
    text = findings_markdown([results.document()])
    assert "onednn" not in text.lower(), "findings of another backend never name oneDNN"


#: Patterns where the truncation used to pass for another bug: a value on a bf16 step that a
#: backend computes a hair below it (Interpolate), sums of truncated terms of both signs
#: (ConvolutionBackwardWeights -> Reorder -> BiasAddBackward), a TypeCast inside a fused
#: partition that the backend rounds correctly while it truncates the partition's output (Log).
ISOLATED = ["fp.interpolate_post_ops", "train.conv_bwd_weights_bias_bwd", "softmax.post_ops"]


def test_an_isolated_op_with_the_truncation_footprint_joins_the_truncation_finding() -> None:
    results = run_suite("testkit.mutants:TruncatesNarrowOutputs", patterns=ISOLATED,
                        isolate=False, sys_path=[TESTS])
    document = results.to_dict()
    found = [f for f in group_findings(results.document()) if f.status != "extension"]
    failing = [r for r in document["failures"] if not r.get("minimal_of")]
    assert {r["kind"] for r in failing} >= {"valid", "near-miss"}, \
        f"valid and near-miss cases fail: {sorted({r['kind'] for r in failing})}"
    assert [f.signature for f in found] == \
        ["numeric-mismatch: bf16/f16 values truncated, not rounded to nearest even"], \
        f"one bug, one finding; got {[(f.signature, len(f.records)) for f in found]}"
