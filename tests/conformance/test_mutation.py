"""Mutation score: the suite (ci profile) catches each planted bug with the right status, and
passes the reference with zero failures.

Each mutant (testkit.mutants) is the reference with one realistic bug; it is run on the
patterns where that bug can show, in-process for speed (the isolation of the runner has tests
of its own). With ``FUSIONSPEC_MUTATION_OUT=path`` the outcomes are also written there as a
small JSON document (the mutation score; `nox -s mutation` writes results/mutation.json, which
BENCHMARKS.md quotes).
"""

from __future__ import annotations

import json
import os
from collections import Counter
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from testkit.mutation_runs import run_backend

from fusionspec.conformance.cases import STRUCTURAL_RULES, CaseKind, Status
from fusionspec.conformance.generate.ill_formed import ILL_FORMED_RULES
from fusionspec.conformance.generate.items import required_items
from fusionspec.conformance.grade.results import ResultsCollector
from fusionspec.conformance.suite import run_suite
from fusionspec.reference.filling import DOMAINS
from fusionspec.reports.findings import group_findings
from fusionspec.spec.catalog import pattern_ids
from fusionspec.spec.rules import RULES

V, N, ILL = [CaseKind.valid], [CaseKind.near_miss], [CaseKind.ill_formed]
#: The modules of the mutants that only the corners of the spec space and the coverage model's
#: value classes catch.
CORNERS, CLASSES = "testkit.mutants_corners:", "testkit.mutants_classes:"
MODEL = "testkit.mutants_model:"
METHODS = "testkit.mutants_methods:"
BOUNDARIES = "testkit.mutants_boundaries:"
FORMAT = "testkit.mutants_format:"
INT8_WEIGHTED = ["int8.conv_post_ops", "int8.matmul_post_ops"]
UNARY_PATTERNS = ["fp.unary_binary", "fp.binary_post_ops", "fp.conv_post_ops"]
ALL = None

MUTANTS: list[tuple[str, str, list[str] | None, list[CaseKind], Status]] = [
    # (mutant, bug class, patterns, case kinds, the status the suite must give)
    ("DropsLastPostOp", "fusion", ["fp.conv_post_ops", "fp.matmul_post_ops"], V,
     Status.numeric_mismatch),
    ("NeverFuses", "fusion", ["fp.conv_post_ops", "int8.matmul_post_ops"], V,
     Status.fusion_mismatch),
    ("FusesOneTooMany", "fusion", ["fp.conv_post_ops", "fp.binary_post_ops"], N,
     Status.extension),
    ("DropsFanOutOutput", "fan-out", ["fp.conv_post_ops", "fp.matmul_post_ops"], N,
     Status.fusion_mismatch),
    ("RoundsQuantizeHalfAway", "rounding mode", ["int8.conv_post_ops", "int8.pool",
                                                 "softmax.post_ops"], V,
     Status.numeric_mismatch),
    ("TruncatesNarrowOutputs", "rounding mode", ["fp.conv_post_ops", "fp.matmul_post_ops"], V,
     Status.numeric_mismatch),
    ("TypeCastTruncates", "rounding mode", ["softmax.post_ops"], V, Status.numeric_mismatch),
    ("IgnoresBiasAddDataFormat", "axis convention", ["fp.conv_post_ops",
                                                     "fp.matmul_post_ops"], V,
     Status.numeric_mismatch),
    ("NegativeQuantAxisOffByOne", "axis convention", ["int8.conv_post_ops",
                                                      "int8.matmul_post_ops"], V,
     Status.numeric_mismatch),
    ("SoftMaxNegativeAxisAsDefault", "axis convention", ["softmax.post_ops"], V,
     Status.numeric_mismatch),
    ("GeluTanhForErf", "approximation", ["fp.unary_binary", "fp.binary_post_ops",
                                         "fp.conv_post_ops"], V, Status.numeric_mismatch),
    ("GeluTanhCoefficient", "approximation", ["fp.unary_binary", "fp.binary_post_ops",
                                              "fp.conv_post_ops"], V,
     Status.numeric_mismatch),
    ("EluWithoutExpm1", "approximation", ["fp.unary_binary", "fp.binary_post_ops",
                                          "fp.conv_post_ops"], V, Status.numeric_mismatch),
    ("SoftMaxWithoutMaxShift", "overflow", ["softmax.post_ops"], V, Status.numeric_mismatch),
    ("SoftPlusOverflows", "overflow", ["fp.unary_binary", "fp.binary_post_ops"], V,
     Status.numeric_mismatch),
    ("SigmoidUnstable", "overflow", ["fp.unary_binary", "fp.binary_post_ops"], V,
     Status.numeric_mismatch),
    ("QuantizeWraps", "overflow", ["int8.conv_post_ops", "int8.matmul_post_ops",
                                   "softmax.post_ops"], V, Status.numeric_mismatch),
    ("ReLUDropsNaN", "special values", ["fp.bn_relu", "fp.unary_binary"], V,
     Status.numeric_mismatch),
    ("DivideGuardsZero", "special values", ["fp.binary_post_ops", "fp.conv_post_ops"], V,
     Status.numeric_mismatch),
    ("ClampKeepsNaN", "special values", ["fp.unary_binary", "fp.conv_post_ops"], V,
     Status.numeric_mismatch),
    ("MaximumDropsFirstNaN", "special values", ["fp.binary_post_ops", "fp.pool_binary"], V,
     Status.numeric_mismatch),
    ("IgnoresInfAsZero", "special values", ["softmax.post_ops"], V, Status.numeric_mismatch),
    ("FlushesSubnormals", "subnormals", ["fp.unary_binary", "fp.binary_post_ops",
                                         "fp.conv_post_ops"], V, Status.numeric_mismatch),
    ("LeakyReLUAsMaximum", "attribute corner", ["fp.unary_binary", "fp.conv_post_ops"], V,
     Status.numeric_mismatch),
    ("IgnoresAlignCorners", "attribute corner", ["fp.interpolate_post_ops"], V,
     Status.numeric_mismatch),
    ("AvgPoolIgnoresExcludePad", "attribute corner", ["fp.pool_binary", "int8.pool"], V,
     Status.numeric_mismatch),
    ("MaxPoolPadsWithZero", "formula", ["fp.pool_binary"], V, Status.numeric_mismatch),
    ("WrongOutputDtype", "dtype", ["fp.matmul_post_ops", "int8.matmul_post_ops"], V,
     Status.numeric_mismatch),
    ("AcceptsIllFormed", "validation", ["fp.conv_post_ops", "softmax.post_ops"], ILL,
     Status.accepted_invalid),
    ("AcceptsS8Binary", "dtype acceptance", ALL, ILL, Status.accepted_invalid),
    # Caught only by the corners of the spec space (testkit.mutants_corners).
    (f"{CORNERS}IgnoresConvexity", "convexity", ["softmax.post_ops"], N,
     Status.fusion_mismatch),
    (f"{CORNERS}SoftMaxStatsWithoutMax", "optional output", ["softmax.post_ops"], V,
     Status.numeric_mismatch),
    (f"{CORNERS}MatMulVectorIgnoresBatch", "rank corner", ["fp.matmul_post_ops",
                                                          "int8.matmul_post_ops"], V,
     Status.numeric_mismatch),
    (f"{CORNERS}PerChannelZeroPointOnce", "per-channel values", ["int8.conv_post_ops",
                                                                "int8.matmul_post_ops"], V,
     Status.numeric_mismatch),
    (f"{CORNERS}SoftPlusGuardFlipsForNegativeBeta", "attribute sign", ["fp.unary_binary",
                                                                      "fp.binary_post_ops"], V,
     Status.numeric_mismatch),
    (f"{CORNERS}ReduceProdNarrowAccumulator", "inexact narrow fill",
     ["fp.reduction_post_ops"], V, Status.numeric_mismatch),
    # Caught only by the coverage model's value classes (testkit.mutants_classes).
    (f"{CLASSES}PerChannelZeroPointAdded", "per-channel values", INT8_WEIGHTED, V,
     Status.numeric_mismatch),
    (f"{CLASSES}PerChannelZeroPointIgnored", "per-channel values", INT8_WEIGHTED, V,
     Status.numeric_mismatch),
    (f"{CLASSES}SoftPlusAbsBeta", "attribute sign", UNARY_PATTERNS, V,
     Status.numeric_mismatch),
    (f"{CLASSES}LeakyReLUAbsAlpha", "attribute sign", UNARY_PATTERNS, V,
     Status.numeric_mismatch),
    (f"{CLASSES}LeakyReLUZeroAlphaAsDefault", "attribute zero", UNARY_PATTERNS, V,
     Status.numeric_mismatch),
    (f"{CLASSES}EluAlphaClamped", "attribute sign", UNARY_PATTERNS, V, Status.numeric_mismatch),
    (f"{CLASSES}PowIntegerLoop", "attribute sign", UNARY_PATTERNS, V, Status.numeric_mismatch),
    (f"{CLASSES}PowZeroExponentAsIdentity", "attribute zero", UNARY_PATTERNS, V,
     Status.numeric_mismatch),
    (f"{CLASSES}ClampAsBoundedReLU", "attribute sign", UNARY_PATTERNS, V,
     Status.numeric_mismatch),
    (f"{CLASSES}BatchNormZeroEpsilonAsDefault", "attribute zero", ["fp.bn_relu",
                                                                   "fp.conv_post_ops"], V,
     Status.numeric_mismatch),
    (f"{CLASSES}SoftMaxStatsInBase2", "optional output", ["softmax.post_ops"], V,
     Status.numeric_mismatch),
    (f"{CLASSES}StatsOutputBlocksFusion", "optional output", ["softmax.post_ops"], V,
     Status.fusion_mismatch),
    (f"{CLASSES}ReduceMeanAxesInputCountsAll", "optional input", ["fp.reduction_post_ops"],
     V, Status.numeric_mismatch),
    (f"{CLASSES}MatMulVectorDropsBias", "rank corner", ["fp.matmul_post_ops",
                                                       "int8.matmul_post_ops"], V,
     Status.numeric_mismatch),
    # Caught only by the model's ranks and narrow fills (testkit.mutants_model).
    (f"{MODEL}ReduceVectorTakenAsReduced", "rank", ["fp.reduction_post_ops"], V,
     Status.numeric_mismatch),
    (f"{MODEL}ReduceL2NarrowSumOfSquares", "narrow fill", ["fp.reduction_post_ops"], V,
     Status.numeric_mismatch),
    (f"{MODEL}NarrowPoolSameLowerAsUpper", "dtype x attribute pair",
     ["fp.pool_binary"], V, Status.numeric_mismatch),
    (f"{MODEL}TransposedWeightsUnchecked", "rule x setting", ["fp.matmul_post_ops"], ILL,
     Status.accepted_invalid),
    # Caught only by the coverage methods (testkit.mutants_methods); none may end in error.
    (f"{METHODS}Int8KernelS8WeightsOnly", "side input type", INT8_WEIGHTED, V,
     Status.fusion_mismatch),
    (f"{METHODS}RejectsReductionWithoutAxes", "attribute source", ["fp.reduction_post_ops"], V,
     Status.rejected_valid),
    (f"{METHODS}BroadcastsUnderNone", "rule x setting", ALL, ILL, Status.accepted_invalid),
    (f"{METHODS}TypeCastChecksF32Only", "rule x setting", ["softmax.post_ops"], ILL,
     Status.accepted_invalid),
    (f"{METHODS}PerChannelScalesUncounted", "rule x setting", ALL, ILL,
     Status.accepted_invalid),
    (f"{METHODS}BatchNormStatisticsUnchecked", "rule x setting", ALL, ILL,
     Status.accepted_invalid),
    (f"{METHODS}AlignsLowerRankAtChannel", "operand rank", ["fp.binary_post_ops"], V,
     Status.numeric_mismatch),
    (f"{METHODS}ReduceAxesNotRenumbered", "axis convention", ["fp.reduction_post_ops"], V,
     Status.numeric_mismatch),
    # Caught only by the value boundaries (testkit.mutants_boundaries).
    (f"{BOUNDARIES}ExpOverflowsAt88", "value boundary", ["fp.unary_binary"], V,
     Status.numeric_mismatch),
    (f"{BOUNDARIES}ExpF16OverflowsAt11", "value boundary", ["fp.unary_binary"], V,
     Status.numeric_mismatch),
    (f"{BOUNDARIES}RoundByAddingTwoPow23", "value boundary", ["fp.unary_binary"], V,
     Status.numeric_mismatch),
    (f"{BOUNDARIES}EpilogueMaxDropsUpstreamNaN", "value boundary",
     ["fp.binary_post_ops", "fp.matmul_post_ops", "fp.interpolate_post_ops",
      "fp.reduction_post_ops"], V, Status.numeric_mismatch),
    (f"{BOUNDARIES}TypeCastTiesAwayFromZero", "value boundary", ["softmax.post_ops"], V,
     Status.numeric_mismatch),
    (f"{BOUNDARIES}TypeCastOverflowsBeforeRounding", "value boundary", ["softmax.post_ops"],
     V, Status.numeric_mismatch),
    (f"{BOUNDARIES}MatMulNarrowPartials", "value boundary", ["fp.matmul_post_ops"], V,
     Status.numeric_mismatch),
    # Caught only by the graph-format method's cases (testkit.mutants_format).
    (f"{FORMAT}ExpectsTopologicalOrder", "graph format", ["fp.conv_post_ops",
                                                         "softmax.post_ops"], V,
     Status.fusion_mismatch),
    (f"{FORMAT}TensorIdsAsInt32", "graph format", ["fp.conv_post_ops",
                                                  "int8.matmul_post_ops"], V,
     Status.numeric_mismatch),
    (f"{FORMAT}OpsByName", "graph format", ["fp.conv_post_ops", "fp.unary_binary"], V,
     Status.fusion_mismatch),
    (f"{FORMAT}ConstantCacheByShape", "graph format", ["fp.conv_post_ops",
                                                      "fp.matmul_post_ops"], V,
     Status.numeric_mismatch),
    (f"{FORMAT}ReadsInputsThroughStrides", "graph format", ["fp.matmul_post_ops",
                                                           "fp.reorder_add"], V,
     Status.numeric_mismatch),
    (f"{FORMAT}FusesInstancesSharingAnInput", "graph format", ["fp.conv_post_ops",
                                                              "fp.binary_post_ops"], V,
     Status.fusion_mismatch),
    (f"{FORMAT}SharedTensorBoundOnce", "graph format", ["fp.binary_post_ops", "fp.bn_relu"],
     V, Status.numeric_mismatch),
    (f"{FORMAT}MergesAlikeReaders", "graph format", ["fp.conv_post_ops",
                                                    "fp.matmul_post_ops"], V,
     Status.fusion_mismatch),
    (f"{FORMAT}AcceptsTensorWithTwoDtypes", "graph format", ["fp.conv_post_ops",
                                                            "fp.interpolate_post_ops"], ILL,
     Status.accepted_invalid),
    (f"{FORMAT}AcceptsDuplicateOpIds", "graph format", ["fp.conv_post_ops",
                                                       "fp.interpolate_post_ops"], ILL,
     Status.accepted_invalid),
]

_OUTCOMES: list[dict[str, Any]] = []


@pytest.fixture(scope="module", autouse=True)
def _score_document() -> Iterator[None]:
    """Write the mutation score when asked (FUSIONSPEC_MUTATION_OUT)."""
    yield
    target = os.environ.get("FUSIONSPEC_MUTATION_OUT")
    if target and _OUTCOMES:
        caught = sum(1 for o in _OUTCOMES if o["caught"])
        Path(target).parent.mkdir(parents=True, exist_ok=True)
        Path(target).write_text(json.dumps({
            "profile": "ci", "mutants": len(_OUTCOMES), "caught": caught,
            "score": caught / len(_OUTCOMES), "outcomes": _OUTCOMES}, indent=1) + "\n",
            encoding="utf-8")


def _run(backend: str, patterns: list[str] | None, kinds: list[CaseKind]) -> ResultsCollector:
    return run_backend(backend, patterns, kinds)


@pytest.mark.slow
@pytest.mark.parametrize(("mutant", "bug_class", "patterns", "kinds", "status"), MUTANTS,
                         ids=[m[0].rsplit(":", 1)[-1] for m in MUTANTS])
def test_suite_catches_planted_bug(mutant: str, bug_class: str, patterns: list[str] | None,
                                   kinds: list[CaseKind], status: Status) -> None:
    results = _run(mutant if ":" in mutant else f"testkit.mutants:{mutant}", patterns, kinds)
    seen = Counter(results.totals)
    if status is Status.extension:
        wrong = [f for f in results.failures]
    else:
        # The method mutants must get their status everywhere: a crash is not a verdict.
        tolerated = (status.value,) if mutant.startswith(METHODS) else (status.value, "error")
        wrong = [f for f in results.failures if f.status not in tolerated]
    caught = seen[status.value] > 0 and not wrong and (
        status is Status.extension or results.failed)
    # One bug should make one finding: the score document lists what the findings were.
    found = [f"{f.signature} ({len(f.records)})" for f in group_findings(results.document())]
    _OUTCOMES.append({"mutant": mutant.rsplit(":", 1)[-1], "class": bug_class,
                      "expected": status.value, "caught": caught, "statuses": dict(seen),
                      "findings": found})
    assert seen[status.value] > 0, \
        f"{mutant}: the suite never reported {status.value}; statuses seen: {dict(seen)}"
    if status is Status.extension:
        assert not results.failed, \
            f"{mutant} computes right, so fusing more is an extension, not a failure: " \
            f"{[f['reason'] for f in results.failures[:3]]}"
    else:
        assert results.failed, f"{mutant}: a broken backend passed the run: {dict(seen)}"
        assert not wrong, f"{mutant}: unexpected failure kinds {[f['status'] for f in wrong]}: " \
                          f"{[f['reason'] for f in wrong[:3]]}"


def test_the_project_plants_at_least_50_bugs_across_the_classes() -> None:
    classes = {m[1] for m in MUTANTS}
    assert len(MUTANTS) >= 50, f"only {len(MUTANTS)} planted mutants"
    wanted = {"overflow", "special values", "rounding mode", "approximation",
              "axis convention", "dtype acceptance", "fan-out", "subnormals", "convexity",
              "optional output", "optional input", "rank corner", "per-channel values",
              "attribute sign", "attribute zero", "inexact narrow fill", "rank",
              "narrow fill", "dtype x attribute pair", "rule x setting", "side input type",
              "attribute source", "operand rank", "value boundary", "graph format"}
    assert wanted <= classes, f"bug classes without a mutant: {sorted(wanted - classes)}"
    names = [m[0] for m in MUTANTS]
    assert len(set(names)) == len(names), "a mutant is listed twice"


@pytest.fixture(scope="module")
def reference_results() -> ResultsCollector:
    """The reference on every case of the ci profile (one run shared by the tests below), run
    as the main job runs it: drawn in two processes, the reference's side prepared ahead."""
    return run_suite("reference", kinds=list(CaseKind), jobs=2)


def test_ci_profile_draws_every_required_item_of_the_coverage_model(
        reference_results: ResultsCollector) -> None:
    drawn = {(feature, value) for entry in reference_results.to_dict()["patterns"].values()
             for feature, values in entry["coverage"].items()
             for joined in values for value in joined.split(",")}
    missing = sorted(required_items() - drawn)
    assert not missing, ("items of the coverage model no ci case draws (draw them, or list "
                         "them in model.UNDRAWN with the reason they cannot be drawn): "
                         + "; ".join(f"{k} = {v}" for k, v in missing))


#: The ci profile's cases before the coverage methods (rule x setting, side input types,
#: attribute sources, operand ranks, graph format, value boundaries) were added: together they
#: may grow it by at most 30%.
CI_CASES_BEFORE_METHODS = 3183


def test_the_coverage_methods_grow_the_ci_profile_by_at_most_30_percent(
        reference_results: ResultsCollector) -> None:
    total = sum(reference_results.totals.values())
    assert total <= CI_CASES_BEFORE_METHODS * 1.3, \
        f"the ci profile holds {total} cases, {total / CI_CASES_BEFORE_METHODS - 1:.0%} more " \
        f"than the {CI_CASES_BEFORE_METHODS} before the coverage methods (at most 30%)"


def test_reference_passes_every_pattern_with_zero_failures(
        reference_results: ResultsCollector) -> None:
    results = reference_results
    bad = [(f.case_id, f.status, f.reason) for f in results.failures[:5]]
    assert not results.failed, f"the reference fails its own suite: {bad}"
    assert set(results.totals) == {Status.passed.value}, \
        f"the reference must pass every case: {dict(results.totals)}"
    document = results.to_dict()
    assert set(document["patterns"]) == set(pattern_ids()), \
        f"patterns never exercised: {set(pattern_ids()) - set(document['patterns'])}"
    want = {r.id for r in RULES if r.predicate is not None} | set(STRUCTURAL_RULES) | set(
        ILL_FORMED_RULES)
    missing = sorted(want - set(document["rules"]))
    assert not missing, f"rules the ci profile never exercised: {missing}"
    domains = {value for entry in document["patterns"].values()
               for value in entry["coverage"].get("values", {})}
    assert set(DOMAINS) <= domains, \
        f"value domains the ci profile never used: {sorted(set(DOMAINS) - domains)}"
