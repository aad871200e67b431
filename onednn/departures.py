"""oneDNN's known departures from the spec pages, declared as data for the suite.

Each `fusionspec.backend.Departure` below says what a verdict on this library shows when the
departure is the cause (the statuses, ops, dtypes, cut or error fields it matches) and where
the library documents it: its release notes, its op docs, its own tests, or what the adapter
verified on the library. The suite matches them when it grades a case; findings then name the
departure instead of counting the case unexplained. The first that matches explains a case,
so the more specific come first. The numeric ones name a substitute, an alternative semantics
the suite evaluates (`fusionspec.conformance.grade.triage.SUBSTITUTES`).
"""

from __future__ import annotations

from fusionspec.backend import Departure, OpMatch
from fusionspec.backend.status import Status

__all__ = ["DEPARTURES"]

_FUSION_SOURCE = "oneDNN's graph fusion patterns (its pattern matcher's sources and tests)"

#: oneDNN's known departures, the more specific first.
DEPARTURES: tuple[Departure, ...] = (
    Departure("nan-select-max", "Maximum and Minimum compare and select, so a NaN on src_0 is "
              "dropped (max(NaN, 1) = 1, max(1, NaN) = NaN)",
              "oneDNN's binary max/min kernels (verified on v3.2); benchdnn tolerates it",
              statuses=(Status.numeric_mismatch,), substitute="select-max"),
    Departure("gelu-erf-only", "GELU has no mode attribute before oneDNN 3.9: the tanh form "
              "asked for is computed as the erf form",
              "oneDNN's GELU op docs: the mode attribute arrives in v3.9",
              statuses=(Status.numeric_mismatch,), substitute="gelu-erf-only"),
    Departure("maxpool-nan", "MaxPool propagates a NaN of its window (the spec skips it, as "
              "the kernel's greater-than test does)", "oneDNN's pooling kernels",
              statuses=(Status.numeric_mismatch,), substitute="maxpool-nan"),
    Departure("flush-subnormals", "subnormal inputs and results are flushed to zero (the CPU "
              "runs with FTZ/DAZ)", "x86 MXCSR FTZ/DAZ modes, set by oneDNN's JIT kernels",
              statuses=(Status.numeric_mismatch,), substitute="flush-subnormals"),
    Departure("pow-not-fused", "Pow is in the pages' Unary category but oneDNN neither fuses "
              "nor implements it", "oneDNN's Pow op docs and its eltwise fusion patterns",
              statuses=(Status.fusion_mismatch, Status.rejected_valid, Status.error),
              ops=(OpMatch("Pow"),)),
    Departure("bias-add-backward", "ConvolutionBackwardWeights + BiasAddBackward is not fused, "
              "and BiasAddBackward alone is not implemented", _FUSION_SOURCE,
              statuses=(Status.fusion_mismatch, Status.rejected_valid, Status.error),
              ops=(OpMatch("BiasAddBackward"),)),
    Departure("unary-one-binary", "a Unary-headed chain takes one Binary at most; two or more "
              "binaries go to the Binary-headed pattern, leaving the Unary alone",
              _FUSION_SOURCE, statuses=(Status.fusion_mismatch,), cut=("Unary", "Binary")),
    Departure("post-op-count", "oneDNN allows more post-ops than the pages' bound",
              _FUSION_SOURCE, statuses=(Status.extension,), rules=("*post_op_count",)),
    Departure("fuses-more", "oneDNN fuses a chain the pages do not promise", _FUSION_SOURCE,
              label="Note", statuses=(Status.extension,)),
    Departure("bias-add-after-bias", "BiasAdd fuses only when the base op has no bias input of "
              "its own", _FUSION_SOURCE, statuses=(Status.fusion_mismatch,), cut=("*", "BiasAdd"),
              ops=(OpMatch("Convolution", inputs=3), OpMatch("MatMul", inputs=3),
                   OpMatch("ConvTranspose", inputs=3))),
    Departure("subtract-first-input", "Subtract fuses only when the chain enters on its first "
              "input", _FUSION_SOURCE, statuses=(Status.fusion_mismatch,), cut=("*", "Subtract")),
    Departure("divide-first-input", "Divide fuses only when the chain enters on its first "
              "input", _FUSION_SOURCE, statuses=(Status.fusion_mismatch,), cut=("*", "Divide")),
    Departure("reorder-add-broadcast", "Reorder + Add fuses only with auto_broadcast=none on "
              "the Add", _FUSION_SOURCE, statuses=(Status.fusion_mismatch,),
              cut=("Reorder", "Add")),
    Departure("reciprocal-with-multiply", "Reciprocal is implemented only fused with a "
              "Multiply (Reciprocal + Multiply)", "oneDNN's Reciprocal op docs",
              statuses=(Status.rejected_valid,), unsupported=("Reciprocal",)),
    Departure("interpolate-half-pixel", "Interpolate supports only half_pixel coordinates; "
              "align_corners is unsupported", "oneDNN's Interpolate op docs",
              statuses=(Status.rejected_valid,), unsupported=("Interpolate",),
              ops=(OpMatch("Interpolate", (("coordinate_transformation_mode",
                                            "align_corners"),)),)),
    Departure("avgpool-ceil", "AvgPool with ceil rounding is unsupported where padding counts "
              "(exclude_pad=false)", "oneDNN's AvgPool op docs",
              statuses=(Status.rejected_valid,), unsupported=("AvgPool",),
              ops=(OpMatch("AvgPool", (("rounding_type", "ceil"),)),)),
    Departure("batchnorm-no-bf16", "batch normalization has no bf16 implementation",
              "oneDNN's BatchNormInference op docs", statuses=(Status.rejected_valid,),
              unsupported=("BatchNormInference",), dtypes=("bf16",)),
    Departure("not-in-version", "this library version's C API has no way to say what the case "
              "asks (an op kind, attribute or data type the pages give, such as MatMul's "
              "accumulation_mode before v3.10), so the graph cannot be handed to it",
              "the installed headers' enumerations (dnnl_graph_types.h), read by the adapter",
              label="Limitation", statuses=(Status.rejected_valid,),
              error_fields=(("status", "not expressible"),)),
    Departure("op-schema-refusal", "the library's op schema check refuses the op as the case "
              "writes it (a dtype or attribute combination the pages allow)",
              "oneDNN's op schemas (dnnl_graph_add_op returns an error status)",
              label="Limitation", error_fields=(("function", "dnnl_graph_add_op"),)),
    Departure("no-kernel", "the library forms the partition but has no kernel for it",
              "oneDNN's partition compilation (dnnl_graph_partition_compile returns an error "
              "status)", label="Limitation",
              error_fields=(("function", "dnnl_graph_partition_compile"),)),
    Departure("c-api-abort", "a C++ exception escaped the C API, which promises a status code, "
              "and aborted the process", "oneDNN's C API contract (dnnl_graph.h)", label="Bug",
              error_kinds=("crash",)),
)
