"""The real-bug corpus: bugs that shipping implementations of the oneDNN Graph API (and other
graph compilers fusing the same ops) released and later fixed, each re-created as a broken
backend of these patterns.

Unlike the planted kit (tests/testkit/mutants*.py), nobody chose these bugs to suit the suite:
they are what implementers actually got wrong. `REAL_BUGS` lists the ones a backend of these
patterns could have, with the patterns where each can show and the status the suite must give
it; `NOT_APPLICABLE` lists the ones found that cannot show here, and why.
tests/conformance/test_real_bugs.py runs the corpus through the ci profile.
"""

from __future__ import annotations

from dataclasses import dataclass

from fusionspec.conformance.cases import CaseKind, Status

__all__ = ["NOT_APPLICABLE", "REAL_BUGS", "RealBug"]

ONEDNN = "https://github.com/uxlfoundation/oneDNN/commit/"
V, N, ILL = (CaseKind.valid,), (CaseKind.near_miss,), (CaseKind.ill_formed,)
NUM, FUSION, ACCEPTED = Status.numeric_mismatch, Status.fusion_mismatch, Status.accepted_invalid
POST_OPS = ("fp.conv_post_ops", "fp.matmul_post_ops", "fp.binary_post_ops")
UNARY_PATTERNS = ("fp.unary_binary", "fp.binary_post_ops", "fp.conv_post_ops")
INT8_WEIGHTED = ("int8.conv_post_ops", "int8.matmul_post_ops")


@dataclass(frozen=True)
class RealBug:
    """One bug of the corpus: `backend` is ``module:Class`` under tests/ (the runner loads
    it with that folder on its path)."""

    id: str
    backend: str
    bug_class: str
    source: str
    fixed_in: str
    patterns: tuple[str, ...]
    kinds: tuple[CaseKind, ...]
    status: Status


def _bug(id_: str, cls: str, module: str, bug_class: str, source: str, fixed_in: str,
         patterns: tuple[str, ...], kinds: tuple[CaseKind, ...], status: Status) -> RealBug:
    return RealBug(id_, f"testkit.{module}:{cls}", bug_class, source, fixed_in, patterns,
                   kinds, status)


_D, _M, _O = "real_bugs_onednn", "real_bugs_onednn_more", "real_bugs_others"

REAL_BUGS: tuple[RealBug, ...] = (
    _bug("onednn-sub-div-second-operand", "SubDivFusedOnSecondOperand", _D, "fusion decision",
         ONEDNN + "8f143dc0a76e6dde80b0577d096fce951583f32b", "oneDNN v3.10", POST_OPS, N,
         NUM),
    _bug("onednn-softplus-integer-beta", "SoftPlusIntegerBeta", _D, "attribute type",
         ONEDNN + "30ed3a2af53c17785f8d5819d77db22bedc468e1", "oneDNN v3.1", UNARY_PATTERNS, V,
         NUM),
    _bug("onednn-reciprocal-multiply-as-divide", "ReciprocalMultiplyAsDivide", _D,
         "post-op numerics", ONEDNN + "3cb934aea8d089709a603507eb2419d03f8d5fda", "oneDNN v3.6",
         ("fp.reciprocal_multiply",), V, NUM),
    _bug("onednn-u8-weights-shift-sign", "U8WeightsShiftedTheWrongWay", _D, "quantization",
         ONEDNN + "f7a56ef2c3da29cc0d5229428787e6ed2b6d2de4", "oneDNN v3.1",
         ("int8.matmul_post_ops",), V, NUM),
    _bug("onednn-grouped-conv-scales-mask", "GroupedConvWeightScalesMask", _D,
         "per-channel axis", ONEDNN + "4235c0a1ce0ff87abdf946acd6b96933557f159b", "oneDNN v3.1",
         ("int8.conv_post_ops", "int8.convtranspose_post_ops"), V, NUM),
    _bug("onednn-reduction-output-shape", "ReductionOutputShapeUnchecked", _D,
         "accepted invalid", ONEDNN + "d638c5d0c49a3a5c12fc0cbefab0490e114b4326",
         "oneDNN v3.3", ("fp.reduction_post_ops",), ILL, ACCEPTED),
    _bug("onednn-given-output-shape", "GivenOutputShapeUnchecked", _D, "accepted invalid",
         ONEDNN + "7506c4d9d7bea255eafa2aaafc78cfb40684bee3", "oneDNN v3.4",
         ("fp.convtranspose_post_ops", "fp.interpolate_post_ops"), ILL, ACCEPTED),
    _bug("onednn-gc-maxpool-zero-padding", "MaxPoolZeroPadding", _D, "padding value",
         ONEDNN + "77e6f99dabc10f96394bda6ba4c9c312bf1cb7b8", "oneDNN v3.4",
         ("fp.pool_binary", "int8.pool"), V, NUM),
    _bug("onednn-gc-log-nan", "LogOfNaNIsFinite", _D, "special values",
         ONEDNN + "c4256398748fc2bd7e179a89222f0ab579ed5027", "oneDNN v3.2", UNARY_PATTERNS, V,
         NUM),
    _bug("onednn-gc-saturate-cast", "SaturateCastThroughInt32", _D, "saturation",
         ONEDNN + "905af9cb0ff55eed36cf1be3651d573e03cd7cfd", "oneDNN v3.4",
         ("int8.conv_post_ops", "int8.matmul_post_ops", "softmax.post_ops"), V, NUM),
    _bug("onednn-zero-groups", "ZeroGroupsAccepted", _D, "accepted invalid",
         ONEDNN + "48f6d31bc02758067433c60a8e0698eacd64233d", "oneDNN v3.4",
         ("fp.conv_post_ops", "fp.convtranspose_post_ops"), ILL, ACCEPTED),
    _bug("onednn-gc-reduce-prod-zero-seed", "ReduceProdStartsAtZero", _M, "reduction numerics",
         ONEDNN + "a9bbd3bd14fcb4b09ca1605d32cf4f9c2be654a6", "oneDNN v3.4",
         ("fp.reduction_post_ops",), V, NUM),
    _bug("onednn-gc-exp-overflow-bound", "ExpOverflowBoundLow", _M, "overflow",
         ONEDNN + "a9bbd3bd14fcb4b09ca1605d32cf4f9c2be654a6", "oneDNN v3.4",
         ("fp.unary_binary", "fp.binary_post_ops"), V, NUM),
    _bug("onednn-gc-softmax-exp-underflow", "SoftMaxExpWrapsBelowUnderflow", _M,
         "softmax numerics", ONEDNN + "d1e20da984748c3a676cf9eae7e3e565eda92668", "oneDNN v3.3",
         ("softmax.post_ops",), V, NUM),
    _bug("onednn-gc-broadcast-axis-by-size", "BroadcastAxisMatchedBySize", _M, "broadcasting",
         ONEDNN + "13d4939376a42f8a3d1bf5cfa59e81096b16c8b9", "oneDNN v3.2",
         ("fp.binary_post_ops", "fp.unary_binary", "fp.conv_post_ops"), V, NUM),
    _bug("onednn-gc-channel-axis-default", "ChannelAxisDefaultDropped", _M, "per-channel axis",
         ONEDNN + "f623d0f305f5c3a735b8dcf0c34f5123070a9648", "oneDNN v3.3",
         ("int8.conv_post_ops", "int8.matmul_post_ops", "int8.pool"), V, NUM),
    _bug("onednn-gc-bf16-softmax", "Bf16SoftMaxInBf16", _M, "narrow accumulation",
         ONEDNN + "6ad295da69233e52dacf36a96333195d27fc80f6", "oneDNN v3.4",
         ("softmax.post_ops",), V, NUM),
    _bug("onednn-gc-bf16-tanh-sign", "Bf16TanhLosesSign", _M, "dtype handling",
         ONEDNN + "e77b160a290b2251e8279763dff57f43919b42bf", "oneDNN v3.2",
         ("fp.unary_binary", "fp.binary_post_ops", "fp.conv_post_ops"), V, NUM),
    _bug("onednn-gc-reduce-norm-axes-input", "ReduceNormIgnoresAxesInput", _M,
         "optional input", ONEDNN + "4e2c08aced063388490d068b4222a3591b9e6f8c", "oneDNN v3.4",
         ("fp.reduction_post_ops",), V, NUM),
    _bug("onednn-matmul-weight-scale-axis", "MatMulWeightScalesOnLastAxis", _M,
         "per-channel axis", ONEDNN + "b2d9f924aa03d48904c87391625eac713f39efc5", "oneDNN v3.5",
         ("int8.matmul_post_ops",), V, NUM),
    _bug("onednn-repetition-through-fan-out", "RepetitionThroughFanOut", _M, "fusion decision",
         ONEDNN + "12f8e572fdd8762cf3d926b26335b09a8c32f016", "oneDNN v3.1",
         ("fp.conv_post_ops", "fp.matmul_post_ops"), N, FUSION),
    _bug("onednn-softmax-post-ops-narrow-output", "SoftMaxPostOpsOnNarrowOutput", _M,
         "fusion decision", ONEDNN + "1999f88fdf0587635e45b8f3f8041c09d1932b95",
         "oneDNN v3.11", ("softmax.post_ops",), N, NUM),
    _bug("onednn-convtranspose-quantize-unmatched", "ConvTransposeOutputQuantizeUnmatched",
         _M, "fusion decision", ONEDNN + "5a0b2347b4758f7b3d13a44bdfde88041a503981",
         "oneDNN v3.4", ("int8.convtranspose_post_ops", "convtranspose.int8"), V, FUSION),
    _bug("onednn-negative-pads", "NegativePadsAccepted", _M, "accepted invalid",
         ONEDNN + "8e874fe6f8d7590eaabdd301334f6da79dc92958", "oneDNN v3.4",
         ("fp.conv_post_ops", "fp.pool_binary"), ILL, ACCEPTED),
    _bug("onednn-maxpool-dilations-length", "MaxPoolDilationsLengthUnchecked", _M,
         "accepted invalid", ONEDNN + "561d996658ea151cbbf38385a837615e75662939",
         "oneDNN v3.5", ("fp.pool_binary", "int8.pool"), ILL, ACCEPTED),
    _bug("openvino-matmul-channel-axis-one", "MatMulPostOpChannelAtAxisOne", _O,
         "broadcasting", "https://github.com/openvinotoolkit/openvino/pull/13502",
         "OpenVINO 2022.3", ("fp.matmul_post_ops",), V, NUM),
    _bug("coreai-negative-quant-axis", "NegativeQuantAxisOneEarly", _O, "per-channel axis",
         "https://github.com/apple/coreai-torch/pull/24", "coreai-torch main, June 2026",
         INT8_WEIGHTED, V, NUM),
    _bug("burn-avgpool-asymmetric-pads", "AvgPoolAsymmetricPadsCounted", _O, "padding value",
         "https://github.com/tracel-ai/burn/issues/5450", "Burn main, August 2026",
         ("fp.pool_binary", "int8.pool"), V, NUM),
    _bug("tinygrad-avgpool-counts-padding", "AvgPoolAlwaysCountsPadding", _O,
         "padding value", "https://github.com/tinygrad/tinygrad/pull/605",
         "tinygrad 0.5.0 (February 2023)", ("fp.pool_binary", "int8.pool"), V, NUM),
    _bug("tvm-rank1-dequantize-rejected", "Rank1DequantizeRejected", _O, "rejected valid",
         "https://github.com/apache/tvm/pull/10880", "TVM v0.9",
         ("int8.conv_post_ops", "int8.matmul_post_ops", "int8.pool"), V,
         Status.rejected_valid),
)

NOT_APPLICABLE: tuple[str, ...] = (
    "oneDNN d9f9f80dcd4b (v3.9): GenIndex axis hard-coded for 4-D in the SDPA causal-mask "
    "pass; GenIndex and SDPA are not in these spec pages.",
    "oneDNN d8d68816cf22 (v3.7): shape check of per-group dynamic quantization; dynamic "
    "quantization (scales as inputs) is not in these patterns.",
    "oneDNN 5a3613eb8370 (v3.10): binary + post-ops fusion disabled on CPU when broadcasting "
    "occurs, a performance choice with the same values.",
    "oneDNN 2fea234fd2a8 (v3.9): reductions over more than 65535 elements unsupported on "
    "NVIDIA GPUs, a device limit with no wrong values.",
    "oneDNN v3.12.3 patch release (1470adbd35a0): memory corruption for logical tensors of "
    "more than 12 dimensions; the suite draws ranks up to 6.",
    "oneDNN 12d3404461 / 25570e298665 (v3.1, v3.6): LayerNorm + TypeCast + Quantize fusion "
    "fixes; LayerNorm is not in these spec pages.",
    "oneDNN 787ac19c5d5d (v3.3): int8 batch normalization pattern data types; no int8 "
    "BatchNorm pattern in these pages.",
    "oneDNN v3.11.1 patch release (a6c3630674da): in-place reorder correctness in Graph API "
    "memory planning, a buffer aliasing effect of one library's executor.",
    "oneDNN issue 5510 (SDPA on Arc GPUs): closed as not a bug, and SDPA is outside these "
    "pages.",
    "AMD ZenDNN issue 30: post-op chain reordered when the fused op is not first; still open, "
    "so no fixed version to cite.",
)
