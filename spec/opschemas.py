"""Op schemas for the 47 ops the spec pages name, as data.

Attribute names, kinds, defaults and allowed strings are oneDNN's exact spellings (``auto_pad``
"None"/"SAME_UPPER"/"SAME_LOWER"/"VALID", ``data_format`` "NXC" by default). Dtype symbols and
`dtype_rows` follow the "Supported data types" tables of each op's page
(``doc/graph_api/operations/<Op>.md``). Ops oneDNN defines but the pages do not name are listed
in `OPAQUE_KINDS`: they load and validate structurally, are never fused and never executed.
"""

from __future__ import annotations

from collections.abc import Mapping

from .attrs import install_schemas
from .categories import BINARY, REDUCTION, UNARY
from .dtypes import FLOAT_TYPES, DataType
from .ir import Op
from .schema import AttrKind, AttrSpec, Constraint, OpSchema, PortSpec
from .shapes import (
    filled_default,
    infer_bias_add,
    infer_bias_add_backward,
    infer_conv,
    infer_conv_transpose,
    infer_elementwise,
    infer_identity,
    infer_interpolate,
    infer_matmul,
    infer_pool,
    infer_softmax,
)
from .shapes_operands import (
    infer_batchnorm,
    infer_batchnorm_backward,
    infer_conv_backward_weights,
    infer_quantize,
    infer_reduce,
    infer_relu_backward,
)

__all__ = ["SCHEMAS", "OPAQUE_KINDS", "COMMUTATIVE_KINDS", "schema_for", "carries_shape"]

D = DataType
F = FLOAT_TYPES
F32 = frozenset({D.f32})
S32 = frozenset({D.s32})
INT8 = frozenset({D.s8, D.u8})
QUANT = frozenset({D.s8, D.u8, D.f8_e4m3, D.f8_e5m2})

# Attribute vocabularies shared by several ops.
AUTO_PAD = AttrSpec("auto_pad", AttrKind.string, default="None",
                    allowed=("None", "SAME_UPPER", "SAME_LOWER", "VALID"))
DATA_FORMAT = AttrSpec("data_format", AttrKind.string, default="NXC", allowed=("NXC", "NCX"))
AUTO_BROADCAST = AttrSpec("auto_broadcast", AttrKind.string, default="numpy",
                          allowed=("none", "numpy"))


def _req(name: str, kind: AttrKind, *, minimum: float | None = None,
         maximum: float | None = None) -> AttrSpec:
    return AttrSpec(name, kind, required=True, minimum=minimum, maximum=maximum)


#: The largest stride, pad, dilation or kernel extent: oneDNN's dims are 64-bit, but a window
#: value past this bound only overflows index arithmetic (the reference's and a backend's).
WINDOW_MAX = 2**31 - 1


def _ports(*names: str, symbol: str = "T", optional: tuple[str, ...] = ()) -> tuple[PortSpec, ...]:
    return tuple(PortSpec(n, symbol, optional=n in optional) for n in names)


def _non_negative_pads(op: Op) -> str | None:
    for name in ("pads_begin", "pads_end"):
        values = op.attrs[name]
        if isinstance(values, tuple) and any(v < 0 for v in values):
            return f"{name} must not be negative, got {list(values)}"
    return None


PADS_RULE = Constraint("schema.attr.pads_non_negative", "pads_begin and pads_end are "
                       "non-negative", _non_negative_pads)


def _row(**ports: frozenset[DataType]) -> Mapping[str, frozenset[DataType]]:
    return ports


# -- unary (the pages' Unary category, plus Reciprocal) ------------------------------------

#: The attributes of the Unary members that have any (the members are `categories.UNARY`).
_UNARY_ATTRS: dict[str, tuple[AttrSpec, ...]] = {
    "Clamp": (_req("min", AttrKind.f32), _req("max", AttrKind.f32)),
    "Elu": (_req("alpha", AttrKind.f32),),
    "GELU": (AttrSpec("mode", AttrKind.string, default="gelu_erf",
                      allowed=("gelu_erf", "gelu_tanh")),),
    "LeakyReLU": (_req("alpha", AttrKind.f32),),
    "SoftPlus": (AttrSpec("beta", AttrKind.f32, default=1.0),),
    "Pow": (_req("beta", AttrKind.f32),),
}


def _clamp_order(op: Op) -> str | None:
    lo, hi = op.attrs.get("min"), op.attrs.get("max")
    if isinstance(lo, float) and isinstance(hi, float) and lo > hi:
        return f"min {lo} is greater than max {hi}"
    return None


def _softplus_beta(op: Op) -> str | None:
    return "beta is 0, and SoftPlus divides by it" if op.attrs.get("beta") == 0 else None


def _unary(kind: str, attrs: tuple[AttrSpec, ...], summary: str) -> OpSchema:
    constraints: tuple[Constraint, ...] = ()
    if kind == "Clamp":
        constraints = (Constraint("schema.attr.clamp_order", "Clamp needs min <= max",
                                  _clamp_order),)
    if kind == "SoftPlus":
        constraints = (Constraint("schema.attr.softplus_beta", "SoftPlus divides by beta, so "
                                  "beta is not 0", _softplus_beta),)
    return OpSchema(
        kind=kind,
        inputs=_ports("src"),
        outputs=_ports("dst"),
        types={"T": F},
        attrs=attrs,
        infer=infer_identity,
        constraints=constraints,
        summary=summary,
    )


_UNARY_SUMMARY = {
    "Abs": "|x|", "Clamp": "min(max(x, min), max)", "Elu": "x if x > 0 else alpha*(e^x - 1)",
    "Exp": "e^x", "GELU": "x*Phi(x), erf or tanh approximation",
    "HardSwish": "x*min(max(x + 3, 0), 6)/6", "LeakyReLU": "x if x > 0 else alpha*x",
    "Log": "ln x", "Sigmoid": "1/(1 + e^-x)", "SoftPlus": "ln(1 + e^(beta*x))/beta",
    "Pow": "x^beta", "ReLU": "max(x, 0)", "Round": "round half to even", "Sqrt": "sqrt(x)",
    "Square": "x*x", "Tanh": "tanh x",
}

# -- binary (the pages' Binary category) ---------------------------------------------------

_MIXED_ROWS = (
    _row(src_0=F32, src_1=F32, dst=F32),
    _row(src_0=frozenset({D.bf16}), src_1=frozenset({D.bf16}), dst=frozenset({D.bf16})),
    _row(src_0=frozenset({D.f16}), src_1=frozenset({D.f16}), dst=frozenset({D.f16})),
    _row(src_0=F32, src_1=frozenset({D.bf16, D.f16}), dst=F32),
    _row(src_0=frozenset({D.bf16, D.f16}), src_1=F32, dst=F32),
)
_S32_ROW = (_row(src_0=S32, src_1=S32, dst=S32),)


def _binary(kind: str) -> OpSchema:
    commutative = kind in ("Add", "Multiply", "Maximum", "Minimum")
    if kind in ("Maximum", "Minimum"):
        # One symbol T: inputs and output share a type.
        return OpSchema(
            kind=kind,
            inputs=_ports("src_0", "src_1"),
            outputs=_ports("dst"),
            types={"T": F},
            attrs=(AUTO_BROADCAST,),
            infer=infer_elementwise,
            commutative_inputs=(0, 1),
            summary=f"elementwise {kind.lower()} with numpy broadcasting",
        )
    ints = kind in ("Add", "Subtract")
    types = F | S32 if ints else F
    rows = _MIXED_ROWS + (_S32_ROW if ints else ())
    return OpSchema(
        kind=kind,
        inputs=(PortSpec("src_0", "T1"), PortSpec("src_1", "T2")),
        outputs=(PortSpec("dst", "T3"),),
        types={"T1": types, "T2": types, "T3": types},
        attrs=(AUTO_BROADCAST,),
        infer=infer_elementwise,
        dtype_rows=rows,
        commutative_inputs=(0, 1) if commutative else (),
        summary=f"elementwise {kind.lower()} with numpy broadcasting",
    )


# -- reductions (the pages' Reduction category) --------------------------------------------


def _one_axes_source(op: Op) -> str | None:
    if len(op.inputs) > 1 and op.attrs.get("axes"):
        return "the axes come from both the attribute and the axes input; give exactly one"
    return None


def _reduction(kind: str) -> OpSchema:
    return OpSchema(
        kind=kind,
        inputs=(PortSpec("src", "T1"), PortSpec("axes", "T2", optional=True, carries_shape=True)),
        outputs=(PortSpec("dst", "T1"),),
        types={"T1": F, "T2": S32},
        attrs=(AttrSpec("axes", AttrKind.s64_list, default=()),
            AttrSpec("keep_dims", AttrKind.boolean, default=False)),
        infer=infer_reduce,
        constraints=(Constraint("schema.attr.reduce_axes_source", "the axes come from the "
                                "attribute or the input, not both", _one_axes_source),),
        summary=f"{kind[6:]} over `axes`",
    )


# -- convolutions, matmul, pooling ---------------------------------------------------------

def _conv_attrs(weights_formats: tuple[str, str]) -> tuple[AttrSpec, ...]:
    return (
        _req("strides", AttrKind.s64_list, maximum=WINDOW_MAX),
        _req("pads_begin", AttrKind.s64_list, maximum=WINDOW_MAX),
        _req("pads_end", AttrKind.s64_list, maximum=WINDOW_MAX),
        _req("dilations", AttrKind.s64_list, maximum=WINDOW_MAX), AUTO_PAD,
        AttrSpec("groups", AttrKind.s64, default=1, maximum=WINDOW_MAX), DATA_FORMAT,
        AttrSpec("weights_format", AttrKind.string, default=weights_formats[0],
                 allowed=weights_formats),
    )


def _matmul_dst(op: Op) -> str | None:
    src, dst = op.inputs[0].dtype, op.outputs[0].dtype
    if src != dst and dst != D.f32:
        return f"{src} src with {dst} dst is not allowed (dst is the src type or f32)"
    return None


def _pool_common() -> tuple[AttrSpec, ...]:
    return (_req("strides", AttrKind.s64_list, maximum=WINDOW_MAX),
            _req("pads_begin", AttrKind.s64_list, maximum=WINDOW_MAX),
            _req("pads_end", AttrKind.s64_list, maximum=WINDOW_MAX),
            _req("kernel", AttrKind.s64_list, maximum=WINDOW_MAX), DATA_FORMAT,
            AttrSpec("rounding_type", AttrKind.string, default="floor",
                     allowed=("floor", "ceil")), AUTO_PAD)


def _maxpool_dilations(op: Op) -> str | None:
    dil, kernel = op.attrs.get("dilations"), op.attrs.get("kernel")
    if isinstance(dil, tuple) and isinstance(kernel, tuple):
        # oneDNN's own default is 12 ones whatever the kernel size; its dumps carry that form.
        dil = filled_default(tuple(int(v) for v in dil), 1, len(kernel))
        if dil and len(dil) != len(kernel):
            return f"dilations has {len(dil)} values but kernel has {len(kernel)}"
    return None


def _interp_sizes_scales(op: Op) -> str | None:
    has_sizes = bool(op.attrs.get("sizes")) or len(op.inputs) > 1
    has_scales = bool(op.attrs.get("scales"))
    if has_sizes == has_scales:
        return "exactly one of `sizes` and `scales` must be given"
    return None


# -- data movement, quantization, softmax, normalization, training -------------------------

def _quant_scales_zps(op: Op) -> str | None:
    scales = op.attrs["scales"]
    assert isinstance(scales, tuple)
    if not scales:
        return "scales must not be empty"
    if op.attrs.get("qtype") == "per_tensor" and len(scales) != 1:
        return f"per_tensor needs exactly 1 scale, got {len(scales)}"
    if any(scale == 0 for scale in scales):
        return f"scales must not be 0, got {list(scales)}"
    shape = op.inputs[0].shape if op.inputs else None
    axis = op.attrs["axis"]
    if op.attrs.get("qtype") == "per_channel" and shape is not None and \
            isinstance(axis, int) and not -len(shape) <= axis < len(shape):
        return f"axis {axis} is out of range for src of rank {len(shape)}"
    zps = op.attrs.get("zps")
    if zps is not None:
        assert isinstance(zps, tuple)
        q = op.outputs[0].dtype if op.kind == "Quantize" else op.inputs[0].dtype
        if q.value.startswith("f8") and zps:
            return "f8 quantization takes no zero points"
        if zps and len(zps) != len(scales):
            return f"{len(scales)} scales but {len(zps)} zero points"
    return None


def _typecast_types(op: Op) -> str | None:
    src, dst = op.inputs[0].dtype, op.outputs[0].dtype
    if src == dst:
        return f"src and dst are both {src}"
    if {src, dst} == {D.bf16, D.f16}:
        return "bf16 <-> f16 is not a TypeCast (go through f32)"
    return None


def _softmax_types(op: Op) -> str | None:
    src, dst = op.inputs[0].dtype, op.outputs[0].dtype
    if src != dst and D.f32 not in (src, dst):
        return f"{src} src with {dst} dst is not allowed"
    return None


def _bn_aux(first_aux: int) -> Constraint:
    def check(op: Op) -> str | None:
        src = op.inputs[0].dtype
        aux = [t.dtype for t in op.inputs[first_aux:]]
        if src != D.bf16 and D.bf16 in aux:
            return f"bf16 statistics/scale need bf16 src, src is {src}"
        return None
    return Constraint("schema.dtype.bn_aux", "bf16 gamma/beta/mean/variance only with bf16 "
                      "src", check)


def _bn_bwd_outputs(op: Op) -> str | None:
    if len(op.outputs) == 2:
        return "diff_gamma and diff_beta come together: 1 or 3 outputs"
    return None


def _build() -> dict[str, OpSchema]:
    schemas = [_unary(k, _UNARY_ATTRS.get(k, ()), _UNARY_SUMMARY[k]) for k in UNARY]
    schemas += [_binary(k) for k in BINARY]
    schemas += [_reduction(k) for k in REDUCTION]
    schemas += [
        OpSchema(
            kind="Convolution",
            inputs=_ports("src", "weights", "bias", optional=("bias",)),
            outputs=_ports("dst"),
            types={"T": F},
            attrs=_conv_attrs(("XIO", "OIX")),
            infer=infer_conv,
            constraints=(PADS_RULE,),
            summary="N-d cross-correlation with groups and dilations",
        ),
        OpSchema(
            kind="ConvTranspose",
            inputs=_ports("src", "weights", "bias", optional=("bias",)),
            outputs=_ports("dst"),
            types={"T": F},
            attrs=(*_conv_attrs(("XOI", "IOX")),
                AttrSpec("output_padding", AttrKind.s64_list, default=())),
            infer=infer_conv_transpose,
            constraints=(PADS_RULE,),
            summary="transposed convolution (gradient of Convolution w.r.t. src)",
        ),
        OpSchema(
            kind="MatMul",
            inputs=(PortSpec("src", "T"), PortSpec("weights", "T"),
                PortSpec("bias", "T", optional=True)),
            outputs=(PortSpec("dst", "T1"),),
            types={"T": F, "T1": F},
            attrs=(AttrSpec("transpose_a", AttrKind.boolean, default=False),
                AttrSpec("transpose_b", AttrKind.boolean, default=False),
                AttrSpec("accumulation_mode", AttrKind.string, default="strict",
                allowed=("strict", "relaxed", "any", "f32", "s32", "f16"))),
            infer=infer_matmul,
            constraints=(Constraint("schema.dtype.matmul_dst", "MatMul dst is the src type or f32",
                _matmul_dst),),
            summary="batched matrix product with numpy batch broadcasting",
        ),
        OpSchema(
            kind="Interpolate",
            inputs=(PortSpec("src", "T1"),
                PortSpec("sizes", "T2", optional=True, carries_shape=True)),
            outputs=(PortSpec("dst", "T1"),),
            types={"T1": F, "T2": S32},
            attrs=(AttrSpec("mode", AttrKind.string, required=True,
                allowed=("nearest", "linear", "bilinear", "trilinear")),
                AttrSpec("sizes", AttrKind.s64_list, minimum=1, maximum=WINDOW_MAX),
                AttrSpec("scales", AttrKind.f32_list),
                AttrSpec("coordinate_transformation_mode", AttrKind.string,
                default="half_pixel", allowed=("half_pixel", "align_corners")),
                DATA_FORMAT),
            infer=infer_interpolate,
            constraints=(Constraint("schema.attr.interpolate_sizes_scales", "exactly one of sizes "
                "and scales", _interp_sizes_scales),),
            summary="resize the spatial dims (nearest or linear)",
        ),
        OpSchema(
            kind="BiasAdd",
            inputs=_ports("src", "bias"),
            outputs=_ports("dst"),
            types={"T": F},
            attrs=(DATA_FORMAT,),
            infer=infer_bias_add,
            summary="add a 1-D bias along the channel axis",
        ),
        OpSchema(
            kind="BatchNormInference",
            inputs=(PortSpec("src", "T1"), *_ports("gamma", "beta", "mean", "variance",
                symbol="T2")),
            outputs=(PortSpec("dst", "T1"),),
            types={"T1": F, "T2": frozenset({D.f32, D.bf16})},
            attrs=(_req("epsilon", AttrKind.f32, minimum=0.0), DATA_FORMAT),
            infer=infer_batchnorm,
            constraints=(_bn_aux(1),),
            summary="gamma*(x - mean)/sqrt(variance + epsilon) + beta per channel",
        ),
        OpSchema(
            kind="AvgPool",
            inputs=_ports("src"),
            outputs=_ports("dst"),
            types={"T": F},
            attrs=(*_pool_common(), _req("exclude_pad", AttrKind.boolean)),
            infer=infer_pool,
            constraints=(PADS_RULE,),
            summary="average over a sliding window",
        ),
        OpSchema(
            kind="MaxPool",
            inputs=_ports("src"),
            outputs=_ports("dst"),
            types={"T": F},
            attrs=(*_pool_common(), AttrSpec("dilations", AttrKind.s64_list, default=(),
                                             minimum=1, maximum=WINDOW_MAX)),
            infer=infer_pool,
            constraints=(PADS_RULE, Constraint("schema.attr.maxpool_dilations", "MaxPool dilations "
                "has one value per kernel dim", _maxpool_dilations)),
            summary="maximum over a sliding window; padding never wins",
        ),
        OpSchema(
            kind="Reciprocal",
            inputs=_ports("src"),
            outputs=_ports("dst"),
            types={"T": F},
            attrs=(),
            infer=infer_identity,
            summary="1/x",
        ),
        OpSchema(
            kind="Reorder",
            inputs=_ports("src"),
            outputs=_ports("dst"),
            types={"T": F},
            attrs=(),
            infer=infer_identity,
            summary="copy into another memory layout (strides); values unchanged",
        ),
        OpSchema(
            kind="Quantize",
            inputs=(PortSpec("src", "T1"),),
            outputs=(PortSpec("dst", "T2"),),
            types={"T1": F32, "T2": QUANT},
            attrs=_quant_attrs(),
            infer=infer_quantize,
            constraints=(Constraint("schema.attr.quant_scales_zps", "scales/zps lengths fit qtype",
                _quant_scales_zps),),
            summary="saturate(round_half_even(x/scale + zp))",
        ),
        OpSchema(
            kind="Dequantize",
            inputs=(PortSpec("src", "T1"),),
            outputs=(PortSpec("dst", "T2"),),
            types={"T1": QUANT, "T2": F32},
            attrs=_quant_attrs(),
            infer=infer_quantize,
            constraints=(Constraint("schema.attr.quant_scales_zps", "scales/zps lengths fit qtype",
                _quant_scales_zps),),
            summary="(x - zp)*scale in f32, no rounding",
        ),
        OpSchema(
            kind="TypeCast",
            inputs=(PortSpec("src", "T1"),),
            outputs=(PortSpec("dst", "T2"),),
            types={"T1": F, "T2": F},
            attrs=(),
            infer=infer_identity,
            constraints=(Constraint("schema.dtype.typecast", "TypeCast changes the type, never "
                "bf16<->f16", _typecast_types),),
            summary="convert between f32 and bf16/f16, round to nearest even",
        ),
        OpSchema(
            kind="SoftMax",
            inputs=(PortSpec("src", "T1"),),
            outputs=(PortSpec("dst", "T2"), PortSpec("stats", "T3", optional=True)),
            types={"T1": F, "T2": F, "T3": F32},
            attrs=(AttrSpec("axis", AttrKind.s64, default=1),
                AttrSpec("mode", AttrKind.string, default="none",
                allowed=("none", "inf_as_zero"))),
            infer=infer_softmax,
            constraints=(Constraint("schema.dtype.softmax", "SoftMax src/dst differ only via f32",
                _softmax_types),),
            summary="exp(x - max)/sum(exp(x - max)) along axis",
        ),
        OpSchema(
            kind="ConvolutionBackwardWeights",
            inputs=(PortSpec("src", "T1"), PortSpec("diff_dst", "T1"),
                PortSpec("weights_shape", "T2", optional=True, carries_shape=True)),
            outputs=(PortSpec("diff_weights", "T1"),),
            types={"T1": F, "T2": S32},
            attrs=(*_conv_attrs(("XIO", "OIX")),
                AttrSpec("weights_shape", AttrKind.s64_list, default=())),
            infer=infer_conv_backward_weights,
            constraints=(PADS_RULE,),
            summary="gradient of Convolution w.r.t. weights",
        ),
        OpSchema(
            kind="BiasAddBackward",
            inputs=(PortSpec("diff_dst", "T"),),
            outputs=(PortSpec("diff_bias", "T"),),
            types={"T": F},
            attrs=(DATA_FORMAT,),
            infer=infer_bias_add_backward,
            summary="sum diff_dst over all axes but the channel axis",
        ),
        OpSchema(
            kind="ReLUBackward",
            inputs=(PortSpec("src", "T"), PortSpec("diff_dst", "T")),
            outputs=(PortSpec("diff_src", "T"),),
            types={"T": F},
            attrs=(AttrSpec("use_dst", AttrKind.boolean, default=True),),
            infer=infer_relu_backward,
            summary="diff_dst where (dst or src) > 0, else 0",
        ),
        OpSchema(
            kind="BatchNormTrainingBackward",
            inputs=(PortSpec("src", "T1"), PortSpec("diff_dst", "T1"), PortSpec("mean", "T2"),
                PortSpec("variance", "T2"), PortSpec("gamma", "T2", optional=True)),
            outputs=(PortSpec("diff_src", "T1"), PortSpec("diff_gamma", "T2", optional=True),
                PortSpec("diff_beta", "T2", optional=True)),
            types={"T1": F, "T2": frozenset({D.f32, D.bf16})},
            attrs=(_req("epsilon", AttrKind.f32, minimum=0.0), DATA_FORMAT),
            infer=infer_batchnorm_backward,
            constraints=(_bn_aux(2),),
            output_counts=frozenset({1, 3}),
            summary="gradient of batch normalization (1 or 3 outputs)",
        ),
    ]
    return {s.kind: s for s in schemas}


def _quant_attrs() -> tuple[AttrSpec, ...]:
    return (AttrSpec("qtype", AttrKind.string, default="per_tensor",
                     allowed=("per_tensor", "per_channel")),
            AttrSpec("axis", AttrKind.s64, default=1), _req("scales", AttrKind.f32_list),
            AttrSpec("zps", AttrKind.s64_list))


#: The 47 op kinds of the pages, by kind.
SCHEMAS: Mapping[str, OpSchema] = _build()
install_schemas(SCHEMAS)

#: The binary ops whose two inputs may swap (a chain may enter them on either operand); the one
#: statement of it is each schema's `commutative_inputs`.
COMMUTATIVE_KINDS: frozenset[str] = frozenset(k for k, s in SCHEMAS.items() if s.commutative_inputs)

#: Op kinds oneDNN defines that the pages do not name: accepted, never fused, never executed.
OPAQUE_KINDS: frozenset[str] = frozenset({
    "AbsBackward", "AvgPoolBackward", "BatchNormForwardTraining", "ClampBackward", "Concat",
    "ConvolutionBackwardData", "ConvTransposeBackwardData", "ConvTransposeBackwardWeights",
    "Dropout", "DynamicDequantize", "DynamicQuantize", "EluBackward", "End", "GELUBackward",
    "GenIndex", "GreaterEqual", "GroupNorm", "HardSigmoid", "HardSigmoidBackward",
    "HardSwishBackward", "InterpolateBackward", "LayerNorm", "LayerNormBackward",
    "LogSoftmax", "LogSoftmaxBackward", "MaxPoolBackward", "Mish", "MishBackward", "PReLU",
    "PReLUBackward", "RMSNorm", "Select", "SigmoidBackward", "SoftMaxBackward",
    "SoftPlusBackward", "SqrtBackward", "SquaredDifference", "StaticReshape", "StaticTranspose",
    "TanhBackward", "Wildcard",
})


def schema_for(kind: str) -> OpSchema | None:
    """The schema of a kind the pages name, or None (opaque or unknown)."""
    return SCHEMAS.get(kind)


def carries_shape(kind: str, port: int) -> bool:
    """Whether input `port` of an op of `kind` carries a shape or axes rather than data (its
    schema says so; an unknown kind or port carries data)."""
    schema = SCHEMAS.get(kind)
    return schema is not None and port < len(schema.inputs) and \
        schema.inputs[port].carries_shape
