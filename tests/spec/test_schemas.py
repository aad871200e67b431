"""The op schemas, rule by rule: every kind accepts a valid op and rejects each kind of broken op.

Broken ops are derived from the valid op of each kind (`testkit.spec_builders.VALID`) by one edit,
so each rule is checked against every kind it applies to. Every rejection must raise the rule's
error class with its rule id, and the message must name the op, the port or attribute, and the rule.
"""

from __future__ import annotations

import warnings
from collections.abc import Iterator
from dataclasses import dataclass

import pytest
from testkit.spec_builders import VALID, D, OpCase, edit, op, single, tensor

from fusionspec.spec import (
    SCHEMAS,
    ArityError,
    AttributeRuleError,
    AttrKind,
    AttrValue,
    DTypeRuleError,
    Graph,
    GraphError,
    Op,
    OutsideSpecWarning,
    ShapeRuleError,
    TopologyError,
    UnknownOpError,
)


@dataclass(frozen=True)
class Broken:
    """An op expected to fail finalize() with `error` and `rule`; `where` must be in the
    message when given."""

    label: str
    op: Op
    error: type[GraphError]
    rule: str
    where: str | None = None


def check_rejected(case: Broken) -> None:
    with pytest.raises(GraphError) as info:
        single(case.op).finalize()
    err = info.value
    assert type(err) is case.error, (
        f"{case.label}: raised {type(err).__name__} ({err}), expected {case.error.__name__}")
    assert err.rule == case.rule, f"{case.label}: rule {err.rule!r}, expected {case.rule!r}"
    text = str(err)
    assert f"op {case.op.id} ({case.op.kind})" in text, f"{case.label}: op not named in {text!r}"
    assert f"[{case.rule}]" in text, f"{case.label}: rule not named in {text!r}"
    if case.where is not None:
        assert case.where in text, f"{case.label}: {case.where!r} not named in {text!r}"


# -- valid ops -----------------------------------------------------------------------------------

def test_every_schema_has_a_valid_case() -> None:
    missing = sorted(set(SCHEMAS) - set(VALID))
    assert len(SCHEMAS) == 47, f"{len(SCHEMAS)} schemas, the pages name 47 ops"
    assert not missing, f"kinds without a valid test case: {missing}"


@pytest.mark.parametrize("kind", sorted(VALID))
def test_valid_op_finalizes_with_defaults(kind: str) -> None:
    case = VALID[kind]
    done = single(case.build()).finalize().ops[0]
    schema = SCHEMAS[kind]
    for spec in schema.attrs:
        if spec.name in case.attrs:
            want = spec.kind.normalize(case.attrs[spec.name])
            assert done.attrs[spec.name] == want, (
                f"{kind}: attribute {spec.name} became {done.attrs[spec.name]!r}, given {want!r}")
        elif spec.default is not None:
            assert done.attrs.get(spec.name) == spec.default, (
                f"{kind}: default of {spec.name} not filled in: {dict(done.attrs)}")
        else:
            assert spec.name not in done.attrs, (
                f"{kind}: attribute {spec.name} has no default but was added")
    got = [t.shape for t in done.outputs]
    want_shapes = [shape for _, shape in case.outputs]
    assert got == want_shapes, f"{kind}: finalized output shapes {got}, declared {want_shapes}"


@pytest.mark.parametrize("kind", sorted(VALID))
def test_valid_op_output_shapes_are_inferred(kind: str) -> None:
    case = VALID[kind]
    unknown = edit(case, output_shape={i: None for i in range(len(case.outputs))})
    done = single(unknown).finalize().ops[0]
    got = [t.shape for t in done.outputs]
    want = [shape for _, shape in case.outputs]
    assert got == want, f"{kind}: inferred output shapes {got}, hand-computed {want}"


def test_f32_attributes_given_as_ints_become_floats() -> None:
    done = single(edit(VALID["Clamp"], set_attrs={"min": 0, "max": 6})).finalize().ops[0]
    assert done.attrs["min"] == 0.0 and isinstance(done.attrs["min"], float), (
        f"Clamp min {done.attrs['min']!r} should be the float 0.0")


# -- broken ops derived from the valid ones ------------------------------------------------------

def _wrong_value(kind: AttrKind) -> AttrValue:
    """A value of another kind: ints are not bools, floats are not s64, strings not lists."""
    wrong: dict[AttrKind, AttrValue] = {
        AttrKind.s64: "one", AttrKind.s64_list: (1.5,), AttrKind.f32: "one",
        AttrKind.f32_list: 1.0, AttrKind.string: 3, AttrKind.boolean: 1}
    return wrong[kind]


def _attribute_cases() -> Iterator[Broken]:
    for kind, case in sorted(VALID.items()):
        schema = SCHEMAS[kind]
        yield Broken(f"{kind}: unknown attribute",
                     edit(case, set_attrs={"not_an_attribute": 1}), AttributeRuleError,
                     "schema.attr.unknown", "attribute not_an_attribute")
        for spec in schema.attrs:
            where = f"attribute {spec.name}"
            if spec.required:
                yield Broken(f"{kind}: required {spec.name} missing",
                             edit(case, drop=[spec.name]), AttributeRuleError,
                             "schema.attr.required", where)
            yield Broken(f"{kind}: {spec.name} of the wrong type",
                         edit(case, set_attrs={spec.name: _wrong_value(spec.kind)}),
                         AttributeRuleError, "schema.attr.type", where)
            if spec.allowed is not None:
                yield Broken(f"{kind}: {spec.name} not an allowed string",
                             edit(case, set_attrs={spec.name: spec.allowed[0].upper() + "_x"}),
                             AttributeRuleError, "schema.attr.value", where)


def _arity_cases() -> Iterator[Broken]:
    for kind, case in sorted(VALID.items()):
        schema = SCHEMAS[kind]
        extra_in = [(D.f32, (2, 3))] * (max(schema.input_counts) + 1)
        yield Broken(f"{kind}: too many inputs", edit(case, inputs=extra_in), ArityError,
                     "schema.arity.inputs")
        fewest = min(schema.input_counts)
        yield Broken(f"{kind}: too few inputs", edit(case, inputs=case.inputs[:fewest - 1]),
                     ArityError, "schema.arity.inputs")
        extra_out = [(D.f32, (2, 3))] * (max(schema.allowed_output_counts) + 1)
        yield Broken(f"{kind}: too many outputs", edit(case, outputs=extra_out), ArityError,
                     "schema.arity.outputs")
        yield Broken(f"{kind}: no output", edit(case, outputs=[]), ArityError,
                     "schema.arity.outputs")


def _with_dtype(case: OpCase, side: str, index: int, dtype: D) -> Op:
    if side == "input":
        return edit(case, input_dtype={index: dtype})
    return edit(case, output_dtype={index: dtype})


def _dtype_cases() -> Iterator[Broken]:
    for kind, case in sorted(VALID.items()):
        schema = SCHEMAS[kind]
        ports = [("input", i, p) for i, p in enumerate(schema.inputs[:len(case.inputs)])]
        ports += [("output", i, p) for i, p in enumerate(schema.outputs[:len(case.outputs)])]
        for side, index, port in ports:
            # boolean is allowed on no port of the 47 schemas
            yield Broken(f"{kind}: boolean on {side} {index}",
                         _with_dtype(case, side, index, D.boolean),
                         DTypeRuleError, "schema.dtype.port", f"{side} {index} ({port.name})")
        for symbol, allowed in schema.types.items():
            sharing = [(side, i, p) for side, i, p in ports if p.symbol == symbol]
            if len(sharing) < 2 or len(allowed) < 2:
                continue
            side, index, port = sharing[-1]
            current = (case.inputs if side == "input" else case.outputs)[index][0]
            other = sorted(allowed - {current})[0]
            yield Broken(f"{kind}: {port.name} differs from the other {symbol} ports",
                         _with_dtype(case, side, index, other), DTypeRuleError,
                         "schema.dtype.unify", f"{side} {index} ({port.name})")


def _row_cases() -> Iterator[Broken]:
    rows = [(D.bf16, D.f16, D.f32), (D.f32, D.f32, D.bf16), (D.bf16, D.bf16, D.f32),
            (D.f16, D.f32, D.f16)]
    for kind in ("Add", "Subtract", "Multiply", "Divide"):
        for a, b, dst in rows:
            broken = edit(VALID[kind], input_dtype={0: a, 1: b}, output_dtype={0: dst})
            yield Broken(f"{kind}: {a}+{b}->{dst} is not a row", broken, DTypeRuleError,
                         "schema.dtype.row")
    for kind in ("Add", "Subtract"):
        broken = edit(VALID[kind], input_dtype={0: D.s32, 1: D.f32}, output_dtype={0: D.s32})
        yield Broken(f"{kind}: s32 with f32 is not a row", broken, DTypeRuleError,
                     "schema.dtype.row")


def _output_shape_cases() -> Iterator[Broken]:
    for kind, case in sorted(VALID.items()):
        shape = case.outputs[0][1]
        assert shape is not None
        wrong = (shape[0] + 1, *shape[1:])
        yield Broken(f"{kind}: output {list(wrong)} instead of {list(shape)}",
                     edit(case, output_shape={0: wrong}), ShapeRuleError,
                     "schema.shape.output", "output 0")


def _constraint_cases() -> Iterator[Broken]:
    v = VALID
    A, T = AttributeRuleError, DTypeRuleError
    yield Broken("Clamp min > max", edit(v["Clamp"], set_attrs={"min": 2.0, "max": 1.0}), A,
                 "schema.attr.clamp_order")
    for kind in ("Convolution", "ConvTranspose", "AvgPool", "MaxPool",
                 "ConvolutionBackwardWeights"):
        yield Broken(f"{kind}: negative pads", edit(v[kind], set_attrs={"pads_end": (0, -1)}),
                     A, "schema.attr.pads_non_negative")
    yield Broken("MaxPool: 3 dilations for a 2-D kernel",
                 edit(v["MaxPool"], set_attrs={"dilations": (1, 1, 1)}), A,
                 "schema.attr.maxpool_dilations")
    yield Broken("Interpolate: sizes and scales",
                 edit(v["Interpolate"], set_attrs={"scales": (2.0, 2.0)}), A,
                 "schema.attr.interpolate_sizes_scales")
    yield Broken("Interpolate: neither sizes nor scales", edit(v["Interpolate"], drop=["sizes"]),
                 A, "schema.attr.interpolate_sizes_scales")
    for kind in ("Quantize", "Dequantize"):
        yield Broken(f"{kind}: per_tensor with 2 scales",
                     edit(v[kind], set_attrs={"scales": (0.5, 0.25), "zps": (0, 0)}), A,
                     "schema.attr.quant_scales_zps")
        yield Broken(f"{kind}: 2 zero points for 1 scale",
                     edit(v[kind], set_attrs={"zps": (0, 0)}), A, "schema.attr.quant_scales_zps")
        yield Broken(f"{kind}: empty scales", edit(v[kind], set_attrs={"scales": ()}), A,
                     "schema.attr.quant_scales_zps")
    yield Broken("Dequantize: f8 with zero points",
                 edit(v["Dequantize"], input_dtype={0: D.f8_e4m3}), A,
                 "schema.attr.quant_scales_zps")
    yield Broken("ReduceSum: axes from the attribute and the input",
                 edit(v["ReduceSum"], inputs=[(D.f32, (2, 3, 4)), (D.s32, (1,))]), A,
                 "schema.attr.reduce_axes_source")
    yield Broken("SoftPlus: beta 0", edit(v["SoftPlus"], set_attrs={"beta": 0.0}), A,
                 "schema.attr.softplus_beta")
    yield Broken("TypeCast: f32 to f32", edit(v["TypeCast"], output_dtype={0: D.f32}), T,
                 "schema.dtype.typecast")
    yield Broken("TypeCast: bf16 to f16",
                 edit(v["TypeCast"], input_dtype={0: D.bf16}, output_dtype={0: D.f16}), T,
                 "schema.dtype.typecast")
    yield Broken("SoftMax: bf16 to f16",
                 edit(v["SoftMax"], input_dtype={0: D.bf16}, output_dtype={0: D.f16}), T,
                 "schema.dtype.softmax")
    yield Broken("MatMul: bf16 inputs, f16 dst",
                 edit(v["MatMul"], input_dtype={0: D.bf16, 1: D.bf16, 2: D.bf16},
                      output_dtype={0: D.f16}), T, "schema.dtype.matmul_dst")
    yield Broken("BatchNormInference: bf16 statistics with f32 src",
                 edit(v["BatchNormInference"], input_dtype={i: D.bf16 for i in range(1, 5)}), T,
                 "schema.dtype.bn_aux")
    yield Broken("BatchNormTrainingBackward: 2 outputs",
                 edit(v["BatchNormTrainingBackward"],
                      outputs=v["BatchNormTrainingBackward"].outputs[:2]),
                 ArityError, "schema.arity.outputs")


def _shape_rule_cases() -> Iterator[Broken]:
    v = VALID
    S = ShapeRuleError
    yield Broken("Convolution: 5 src channels for 3 weight inputs",
                 edit(v["Convolution"],
                      inputs=[(D.f32, (1, 5, 8, 8)), *v["Convolution"].inputs[1:]]),
                 S, "schema.shape.infer", "input 1 (weights)")
    yield Broken("Convolution: 4 output channels in 3 groups",
                 edit(v["Convolution"], inputs=[(D.f32, (1, 3, 8, 8)), (D.f32, (4, 1, 3, 3))],
                      set_attrs={"groups": 3}), S, "schema.shape.infer", "attribute groups")
    yield Broken("Convolution: 1 stride for 2 spatial dims",
                 edit(v["Convolution"], set_attrs={"strides": (1,)}), S, "schema.shape.infer",
                 "attribute strides")
    yield Broken("Convolution: bias of 5 for 4 output channels",
                 edit(v["Convolution"], inputs=[*v["Convolution"].inputs[:2], (D.f32, (5,))]),
                 S, "schema.shape.infer", "input 2 (bias)")
    yield Broken("MatMul: inner dims 4 and 3",
                 edit(v["MatMul"], inputs=[(D.f32, (2, 3, 4)), (D.f32, (3, 5))]), S,
                 "schema.shape.infer")
    yield Broken("MatMul: batch 2 and 3 do not broadcast",
                 edit(v["MatMul"], inputs=[(D.f32, (2, 3, 4)), (D.f32, (3, 4, 5))]), S,
                 "schema.shape.infer")
    yield Broken("Add: [2, 3, 4] + [2, 1, 3]",
                 edit(v["Add"], inputs=[(D.f32, (2, 3, 4)), (D.f32, (2, 1, 3))]), S,
                 "schema.shape.infer")
    yield Broken("Add: auto_broadcast none with unequal shapes",
                 edit(v["Add"], set_attrs={"auto_broadcast": "none"}), S, "schema.shape.infer")
    yield Broken("BiasAdd: bias of 4 for 3 channels",
                 edit(v["BiasAdd"], inputs=[(D.f32, (2, 4, 4, 3)), (D.f32, (4,))]), S,
                 "schema.shape.infer", "input 1")
    yield Broken("ReduceSum: axis 3 of a rank-3 src",
                 edit(v["ReduceSum"], set_attrs={"axes": (3,)}), S, "schema.shape.infer",
                 "attribute axes")
    yield Broken("SoftMax: axis -3 of a rank-2 src",
                 edit(v["SoftMax"], set_attrs={"axis": -3}), S, "schema.shape.infer",
                 "attribute axis")
    yield Broken("AvgPool: kernel 9 on an 8-wide input",
                 edit(v["AvgPool"], set_attrs={"kernel": (9, 9)}), S, "schema.shape.infer")
    yield from _operand_shape_cases()


def _operand_shape_cases() -> Iterator[Broken]:
    """The inputs that must agree with the one whose shape the output copies."""
    v = VALID
    S = ShapeRuleError
    bn = v["BatchNormInference"]
    yield Broken("BatchNormInference: gamma of 4 for 3 channels",
                 edit(bn, inputs=[bn.inputs[0], (D.f32, (4,)), *bn.inputs[2:]]), S,
                 "schema.shape.infer", "input 1 (gamma)")
    bwd = v["BatchNormTrainingBackward"]
    yield Broken("BatchNormTrainingBackward: diff_dst of another shape",
                 edit(bwd, inputs=[bwd.inputs[0], (D.f32, (2, 3, 4, 5)), *bwd.inputs[2:]]), S,
                 "schema.shape.infer", "input 1 (diff_dst)")
    yield Broken("BatchNormTrainingBackward: variance of 2 for 3 channels",
                 edit(bwd, inputs=[*bwd.inputs[:3], (D.f32, (2,)), bwd.inputs[4]]), S,
                 "schema.shape.infer", "input 3 (variance)")
    yield Broken("ReLUBackward: diff_dst of another shape",
                 edit(v["ReLUBackward"], inputs=[(D.f32, (2, 3)), (D.f32, (3, 2))]), S,
                 "schema.shape.infer", "input 1 (diff_dst)")
    yield Broken("Quantize: 2 per-channel scales for 3 channels",
                 edit(v["Quantize"], set_attrs={"qtype": "per_channel", "axis": 1,
                                                "scales": (0.5, 0.25), "zps": (0, 0)}), S,
                 "schema.shape.infer", "attribute scales")
    yield Broken("ConvolutionBackwardWeights: diff_dst not what the convolution gives",
                 edit(v["ConvolutionBackwardWeights"],
                      inputs=[(D.f32, (1, 3, 8, 8)), (D.f32, (1, 4, 5, 5))]), S,
                 "schema.shape.infer", "input 1 (diff_dst)")
    yield Broken("ConvolutionBackwardWeights: 3 dilations for 2 spatial dims",
                 edit(v["ConvolutionBackwardWeights"], set_attrs={"dilations": (1, 1, 1)}), S,
                 "schema.shape.infer", "attribute dilations")


def _all_broken() -> list[Broken]:
    return [*_attribute_cases(), *_arity_cases(), *_dtype_cases(), *_row_cases(),
            *_output_shape_cases(), *_constraint_cases(), *_shape_rule_cases()]


BROKEN = _all_broken()


@pytest.mark.parametrize("case", BROKEN, ids=[c.label for c in BROKEN])
def test_broken_op_is_rejected(case: Broken) -> None:
    check_rejected(case)


def test_broken_cases_cover_every_rule_family() -> None:
    rules = {c.rule for c in BROKEN}
    want = {"schema.attr.required", "schema.attr.unknown", "schema.attr.type",
            "schema.attr.value", "schema.arity.inputs", "schema.arity.outputs",
            "schema.dtype.port", "schema.dtype.unify", "schema.dtype.row",
            "schema.shape.output", "schema.shape.infer"}
    constraint_rules = {c.rule for s in SCHEMAS.values() for c in s.constraints}
    missing = sorted((want | constraint_rules) - rules)
    assert not missing, f"rules no broken case exercises: {missing}"


# -- graph-level rules ---------------------------------------------------------------------------

def _relu(op_id: int, src: int, dst: int, dtype: D = D.f32) -> Op:
    return Op(op_id, "ReLU", (tensor(src, dtype, (2, 3)),), (tensor(dst, dtype, (2, 3)),))


GRAPH_CASES: list[tuple[str, Graph, type[GraphError], str, str]] = [
    ("duplicate op id", Graph((_relu(1, 0, 1), _relu(1, 1, 2))), TopologyError,
     "graph.op_id.unique", "op 1 (ReLU)"),
    ("tensor produced twice", Graph((_relu(1, 0, 5), _relu(2, 1, 5))), TopologyError,
     "graph.tensor.one_producer", "op 2 (ReLU), output 0"),
    ("cycle", Graph((_relu(1, 2, 1), _relu(2, 1, 2))), TopologyError, "graph.acyclic",
     "op 1 (ReLU)"),
    ("tensor with two dtypes", Graph((_relu(1, 0, 1), _relu(2, 1, 2, D.bf16))), TopologyError,
     "graph.tensor.consistent", "op 2 (ReLU)"),
    ("unknown kind", Graph((op("Frobnicate", [(D.f32, (2,))], [(D.f32, (2,))], op_id=4),)),
     UnknownOpError, "schema.kind", "op 4 (Frobnicate)"),
]


@pytest.mark.parametrize(("label", "graph", "error", "rule", "named"), GRAPH_CASES,
                         ids=[c[0] for c in GRAPH_CASES])
def test_graph_rule(label: str, graph: Graph, error: type[GraphError], rule: str,
                    named: str) -> None:
    with pytest.raises(GraphError) as info:
        graph.finalize()
    err = info.value
    assert type(err) is error, f"{label}: raised {type(err).__name__}, expected {error.__name__}"
    assert err.rule == rule, f"{label}: rule {err.rule!r}, expected {rule!r}"
    assert named in str(err) and f"[{rule}]" in str(err), (
        f"{label}: message {str(err)!r} should name {named!r} and the rule")


def test_opaque_kind_finalizes_with_warning() -> None:
    reshape = Op(3, "StaticReshape", (tensor(0, D.f32, (6,)),), (tensor(1, D.f32, (2, 3)),),
                 {"shape": (2, 3), "special_zero": False})
    graph = Graph((reshape, _relu(4, 1, 2)))
    with pytest.warns(OutsideSpecWarning, match=r"op 3 \(StaticReshape\)"):
        done = graph.finalize()
    assert done.finalized, "a graph with an opaque op should finalize"
    assert dict(done.ops[0].attrs) == {"shape": (2, 3), "special_zero": False}, (
        f"opaque op attributes changed: {dict(done.ops[0].attrs)}")


def test_spec_kinds_raise_no_warning() -> None:
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        single(VALID["ReLU"].build()).finalize()

