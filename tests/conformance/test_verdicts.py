"""`judge` gives each status for the right reason: hand-written broken backends (in
testkit.toy_backends) provoke every outcome, in process."""

from __future__ import annotations

import json

import pytest
from testkit import toy_backends as toy

from fusionspec.backend import Limitation
from fusionspec.conformance.cases import FAILING, Case, CaseKind, Status
from fusionspec.conformance.grade.verdict import Verdict
from fusionspec.conformance.grade.verdicts import apply_limitation, judge, rule_statement
from fusionspec.reference.backend import NUMPY_DEVICE, ReferenceBackend

VALID = toy.valid_case("fp.matmul_post_ops", 3)
NEAR_MISS = toy.near_miss_case()
ILL_FORMED = toy.ill_formed_case()


def verdict_of(backend: object, case: Case) -> Verdict:
    return judge(case, backend, NUMPY_DEVICE, seed=7)  # type: ignore[arg-type]


def assert_status(verdict: Verdict, status: Status) -> None:
    assert verdict.status is status, \
        f"{verdict.case_id}: expected {status}, got {verdict.status}: {verdict.reason}"


def test_details_are_json_ready() -> None:
    for backend in (ReferenceBackend(), toy.WrongMath(), toy.NeverFuses(), toy.RaisesKeyError()):
        for case in (VALID, NEAR_MISS, ILL_FORMED):
            verdict = verdict_of(backend, case)
            try:
                json.dumps(verdict.details.to_json(), allow_nan=False)
            except (TypeError, ValueError) as exc:
                pytest.fail(f"{backend.name} on {case.id}: details are not strict JSON: {exc}")


def test_valid_case_passes_on_the_reference() -> None:
    verdict = verdict_of(ReferenceBackend(), VALID)
    assert_status(verdict, Status.passed)
    assert verdict.details.expected_partitions == verdict.details.actual_partitions, \
        "a pass means the backend partitioned exactly like the reference"


def test_never_fusing_is_a_fusion_mismatch() -> None:
    verdict = verdict_of(toy.NeverFuses(), VALID)
    assert_status(verdict, Status.fusion_mismatch)
    assert "MatMul" in verdict.reason, f"the reason names the expected partition: {verdict.reason}"
    actual = verdict.details.actual_partitions
    assert isinstance(actual, list) and len(actual) > 1, "details show the backend's partitions"
    assert isinstance(verdict.details.numerics, list), \
        "numerics are still reported alongside a fusion mismatch"


def test_wrong_math_is_a_numeric_mismatch() -> None:
    verdict = verdict_of(toy.WrongMath(), VALID)
    assert_status(verdict, Status.numeric_mismatch)
    for key in ("tensor", "dtype", "shape", "bound", "max_abs_error", "max_excess", "worst"):
        assert getattr(verdict.details, key) is not None, \
            f"numeric-mismatch details carry {key}: {verdict.details}"
    assert verdict.details.max_abs_error == pytest.approx(1.0), \
        f"every element is 1 off: {verdict.details.max_abs_error}"


def test_wrong_output_dtype_is_a_numeric_mismatch_with_the_reason() -> None:
    verdict = verdict_of(toy.WrongDtype(), VALID)
    assert_status(verdict, Status.numeric_mismatch)
    assert "dst dtype f16, spec requires f32 [MatMul->" in verdict.reason, \
        f"the reason names both types and the chain: {verdict.reason}"


def test_rejecting_a_valid_graph_is_rejected_valid() -> None:
    verdict = verdict_of(toy.RejectsEverything(), VALID)
    assert_status(verdict, Status.rejected_valid)
    assert verdict.details.error_rule == "toy.reject", f"details: {verdict.details}"
    assert_status(verdict_of(toy.RejectsEverything(), NEAR_MISS), Status.rejected_valid)


def test_ill_formed_rejected_with_the_rule_passes() -> None:
    verdict = verdict_of(ReferenceBackend(), ILL_FORMED)
    assert_status(verdict, Status.passed)
    assert verdict.details.rule_matches is True, \
        f"the reference names {ILL_FORMED.rule}: {verdict.details}"


def test_ill_formed_rejected_with_another_rule_still_passes() -> None:
    verdict = verdict_of(toy.RejectsEverything(), ILL_FORMED)
    assert_status(verdict, Status.passed)
    assert verdict.details.rule_matches is False, "a different rule is recorded as such"
    assert ILL_FORMED.rule is not None and ILL_FORMED.rule in verdict.reason, \
        f"the reason names the case's rule: {verdict.reason}"


def test_declared_rejection_type_counts() -> None:
    verdict = verdict_of(toy.DeclaredRejection(), ILL_FORMED)
    assert_status(verdict, Status.passed)
    assert verdict.details.rule_matches is None, "no rule to compare for a foreign exception"


def test_accepting_an_ill_formed_graph_is_accepted_invalid() -> None:
    verdict = verdict_of(toy.AcceptsEverything(), ILL_FORMED)
    assert_status(verdict, Status.accepted_invalid)
    assert "schema.attr.type" in verdict.reason, f"reason names the rule: {verdict.reason}"


def test_unexpected_exception_on_ill_formed_is_an_error() -> None:
    verdict = verdict_of(toy.RaisesKeyError(), ILL_FORMED)
    assert_status(verdict, Status.error)
    assert "KeyError" in verdict.reason, f"the reason names the exception: {verdict.reason}"


def test_key_error_is_an_error_with_a_traceback() -> None:
    verdict = verdict_of(toy.RaisesKeyError(), VALID)
    assert_status(verdict, Status.error)
    assert "partition() raised KeyError" in verdict.reason, f"reason: {verdict.reason}"
    trace = str(verdict.details.traceback)
    assert "KeyError" in trace and trace.count('  File "') <= 8, f"a short traceback: {trace}"
    assert "toy_backends.py" in trace and "conformance/grade" not in trace, \
        f"the traceback keeps the backend's frame, not the suite's: {trace}"


def test_an_error_keeps_the_backends_frames_however_deep_it_is_raised() -> None:
    verdict = verdict_of(toy.FailsDeepInNumPy(), VALID)
    assert_status(verdict, Status.error)
    trace = str(verdict.details.traceback)
    assert "_plan_weights" in trace and "np.apply_along_axis" in trace, \
        f"the backend's own frame and line, under NumPy's frames, are kept: {trace}"
    assert trace.rstrip().endswith("Singular matrix"), \
        f"the traceback ends with the exception itself: {trace}"


def test_near_miss_partitioned_like_the_reference_passes() -> None:
    assert_status(verdict_of(ReferenceBackend(), NEAR_MISS), Status.passed)


def test_fusing_a_near_miss_right_is_an_extension() -> None:
    verdict = verdict_of(toy.FusesEverything(), NEAR_MISS)
    assert_status(verdict, Status.extension)
    assert "structure.bound" in verdict.reason, f"the reason names the rule: {verdict.reason}"
    assert Status.extension not in FAILING, "an extension does not fail the run"


def test_fusing_a_near_miss_wrongly_is_a_numeric_mismatch() -> None:
    assert_status(verdict_of(toy.FusesEverythingWrongly(), NEAR_MISS), Status.numeric_mismatch)


def test_fusing_a_valid_case_beyond_the_instance_is_a_fusion_mismatch() -> None:
    # On a valid case the reference's partitioning is required exactly: no extension.
    verdict = verdict_of(toy.FusesEverything(), NEAR_MISS.__class__(
        "valid-bound", CaseKind.valid, NEAR_MISS.pattern, NEAR_MISS.graph))
    assert_status(verdict, Status.fusion_mismatch)


def test_splitting_a_near_miss_is_a_fusion_mismatch() -> None:
    assert_status(verdict_of(toy.NeverFuses(), NEAR_MISS), Status.fusion_mismatch)


def test_declared_limitation_is_unsupported_and_says_it_passed() -> None:
    verdict = verdict_of(toy.LimitedFaithful(), VALID)
    assert_status(verdict, Status.unsupported)
    assert verdict.details.limitation_passed is True, \
        f"a declared limitation that passes is flagged: {verdict.details}"
    assert "matmul is not implemented" in verdict.reason, f"reason: {verdict.reason}"


def test_declared_limitation_that_fails_is_unsupported() -> None:
    verdict = verdict_of(toy.LimitedWrong(), VALID)
    assert_status(verdict, Status.unsupported)
    assert verdict.details.limitation_passed is False, "it would have failed"
    assert verdict.details.observed_status == "numeric-mismatch", f"{verdict.details}"


def test_limitation_does_not_cover_other_patterns() -> None:
    other = toy.valid_case("fp.unary_binary", 0)
    assert_status(verdict_of(toy.LimitedWrong(), other), Status.numeric_mismatch)


def test_apply_limitation_keeps_the_observation() -> None:
    base = Verdict("c", "p", CaseKind.valid, Status.timeout, "too slow")
    moved = apply_limitation(base, Limitation("slow on purpose"))
    assert moved.status is Status.unsupported and moved.details.observed_status == "timeout", \
        f"a timeout under a limitation is unsupported, observed timeout: {moved}"


def test_rule_statements() -> None:
    assert rule_statement("structure.bound").startswith("structure.bound: one more post-op"), \
        "structural rules have statements"
    assert rule_statement("softmax.f32_dst").startswith("softmax.f32_dst: "), \
        "catalog rules have statements"
    assert rule_statement("schema.attr.type") == "schema.attr.type", "others are named only"


INT8 = toy.valid_case("int8.conv_post_ops", 1)  # ends in a Quantize to u8


def test_rounding_half_up_at_exact_ties_is_a_numeric_mismatch() -> None:
    # The case's Quantize scales are powers of two: x/scale is exact, a .5 tie is a true tie,
    # and the spec's round-half-to-even decides it (benchdnn's off-by-one covers only the
    # inexact 1/scale product of other scales).
    verdict = verdict_of(toy.RoundsHalfUp(), INT8)
    assert_status(verdict, Status.numeric_mismatch)
    assert verdict.details.max_abs_error == 1.0, \
        f"half-up differs from half-even by one at the ties: {verdict.details}"


def test_quantizing_one_high_is_a_numeric_mismatch() -> None:
    verdict = verdict_of(toy.QuantizesOneHigh(), INT8)
    assert_status(verdict, Status.numeric_mismatch)
    assert verdict.details.dtype == "u8", f"the failing output is the u8 one: {verdict.details}"


def test_wrong_partition_outputs_are_a_fusion_mismatch() -> None:
    verdict = verdict_of(toy.LeaksIntermediate(), VALID)
    assert_status(verdict, Status.fusion_mismatch)
    assert "the spec requires" in verdict.reason and "outputs" in verdict.reason, \
        f"the reason compares the external tensors: {verdict.reason}"


def test_unsupported_partition_of_a_valid_graph_is_rejected_valid() -> None:
    verdict = verdict_of(toy.MarksUnsupported(), VALID)
    assert_status(verdict, Status.rejected_valid)
    assert "unsupported" in verdict.reason, f"reason: {verdict.reason}"


def test_an_op_in_no_partition_is_a_fusion_mismatch() -> None:
    verdict = verdict_of(toy.DropsLastOp(), VALID)
    assert_status(verdict, Status.fusion_mismatch)
    assert "in no partition" in verdict.reason, f"reason: {verdict.reason}"


def test_limitation_on_a_tensor_dtype_covers_any_case_holding_one() -> None:
    from fusionspec.backend import Limitation

    limit = Limitation("no f8 here", tensor_dtypes=("f8_e4m3",))
    common = {"pattern": "p", "dtype": "int8", "device_kind": "cpu", "case_kind": "valid"}
    assert limit.covers(**common, tensor_dtypes=frozenset({"u8", "f8_e4m3"})), \
        "a case with an f8_e4m3 tensor is covered whatever its headline dtype"
    assert not limit.covers(**common, tensor_dtypes=frozenset({"u8", "f32"})), \
        "a case without f8 tensors is not covered"


def test_numeric_mismatch_carries_the_generated_kernel_source() -> None:
    class Sourced(toy.WrongMath):
        def compile(self, partition: object, device: object) -> object:
            compiled = super().compile(partition, device)  # type: ignore[arg-type]

            class WithSource:
                kernel_source = "__kernel void k() { /* generated */ }"

                def execute(self, inputs: object) -> object:
                    return compiled.execute(inputs)  # type: ignore[arg-type]
            return WithSource()

    verdict = verdict_of(Sourced(), VALID)
    assert_status(verdict, Status.numeric_mismatch)
    source = verdict.details.kernel_source
    assert isinstance(source, str) and "/* generated */" in source and "partition" in source, \
        f"a failing case keeps the backend's kernel source for the report: {source!r}"
