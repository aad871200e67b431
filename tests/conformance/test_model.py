"""The coverage model: items derived from the op schemas, read back off graphs.

The model is not written per op: these tests hold it to the schemas (every optional port and
every allowed string of every op kind a pattern can hold is an item), check how values fall
into classes, and that the list of items left undrawn names only items of the model, each with
a reason. Whether the ci profile draws every required item is held by
tests/conformance/test_mutation.py, which runs that profile once.
"""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from fusionspec.conformance.generate.items import required_items
from fusionspec.conformance.generate.model import (
    MAX_RANK,
    OMITTED,
    SPECIAL_VALUES,
    UNDRAWN,
    graph_features,
    list_classes,
    model_items,
    op_items,
    schema_ranks,
    tensor_items,
    value_classes,
)
from fusionspec.conformance.generate.near_miss import structure_items
from fusionspec.conformance.generate.values import value_items
from fusionspec.spec.catalog import CATALOG, entry
from fusionspec.spec.dtypes import DataType
from fusionspec.spec.graph import Graph, LogicalTensor, Op
from fusionspec.spec.opschemas import SCHEMAS
from fusionspec.spec.pattern_tree import op_kinds
from fusionspec.spec.schema import AttrKind, AttrSpec

PATTERN_KINDS = sorted({k for e in CATALOG for k in op_kinds(e.tree) if k in SCHEMAS})


@pytest.mark.parametrize("kind", PATTERN_KINDS)
def test_every_optional_port_and_allowed_string_is_an_item(kind: str) -> None:
    items = set(op_items(kind))
    schema = SCHEMAS[kind]
    for direction, ports in (("input", schema.inputs), ("output", schema.outputs)):
        for port in ports:
            key = f"{kind}.{direction} {port.name}"
            want = {(key, "present"), (key, "absent")} if port.optional else set()
            assert want <= items, f"{key}: optional port items missing from the model"
            assert port.optional or not {i for i in items if i[0] == key}, \
                f"{key}: a required port is never absent, yet the model has items for it"
    for spec in schema.attrs:
        key = f"{kind}.{spec.name}"
        if spec.allowed:
            assert {(key, v) for v in spec.allowed} <= items, f"{key}: allowed values missing"
        assert ((key, OMITTED) in items) is (not spec.required), \
            f"{key}: 'omitted' must be an item exactly when the attribute is optional"


def test_numbers_get_sign_classes_within_the_schema_bounds() -> None:
    epsilon = AttrSpec("epsilon", AttrKind.f32, required=True, minimum=0.0)
    beta = AttrSpec("beta", AttrKind.f32, default=1.0)
    assert value_classes(epsilon, 0.0) == ("zero", "at minimum"), \
        "a value on a bound is in the bound's class and in its sign class"
    assert value_classes(beta, -0.5) == ("negative",), "-0.5 is negative"
    assert value_classes(beta, None) == (OMITTED,), "an optional attribute left out: omitted"
    assert value_classes(epsilon, None) == (), "a required attribute has no 'omitted' class"
    eps_items = {v for k, v in op_items("BatchNormInference") if k == "BatchNormInference.epsilon"}
    assert "negative" not in eps_items and {"zero", "at minimum"} <= eps_items, \
        f"epsilon >= 0: no negative class, zero and the bound are items; got {eps_items}"


@given(st.floats(-4, 4, allow_nan=False))
def test_a_number_falls_in_exactly_one_sign_class(value: float) -> None:
    classes = value_classes(AttrSpec("alpha", AttrKind.f32, required=True), value)
    signs = {"negative", "zero", "one", "positive"} & set(classes)
    assert len(signs) == 1, f"{value} falls in sign classes {classes}"


def test_graph_features_read_attributes_and_ports_off_ops() -> None:
    src = LogicalTensor(0, DataType.f32, (2, 3))
    dst, stats = LogicalTensor(1, DataType.f32, (2, 3)), LogicalTensor(2, DataType.f32, (2, 1))
    out = LogicalTensor(3, DataType.f32, (2, 3))
    graph = Graph([Op(0, "SoftMax", (src,), (dst, stats), {"axis": -1}),
                   Op(1, "SoftPlus", (dst,), (out,), {"beta": -1.0})])
    features = graph_features(graph)
    assert features["SoftMax.output stats"] == "present", f"stats requested: {features}"
    assert features["SoftMax.axis"] == "negative", f"axis -1: {features}"
    assert features["SoftMax.mode"] == OMITTED, f"mode left to its default: {features}"
    assert features["SoftPlus.beta"] == "negative", f"beta -1: {features}"


def test_undrawn_items_belong_to_the_model_and_say_why() -> None:
    every = {item for e in CATALOG for kind in op_kinds(e.tree) if kind in SCHEMAS
             for item in op_items(kind)}
    stale = sorted(set(UNDRAWN) - every)
    assert not stale, f"UNDRAWN lists items the model does not have: {stale}"
    short = [item for item, reason in UNDRAWN.items() if len(reason.split()) < 6]
    assert not short, f"UNDRAWN items without a reason worth the name: {short}"
    assert not set(UNDRAWN) & required_items(), "an undrawn item is still required"


def test_a_pattern_model_covers_the_op_kinds_it_can_hold() -> None:
    items = model_items(entry("softmax.post_ops"))
    kinds = {key.split(".", 1)[0] for key, _ in items}
    assert {"SoftMax", "Quantize"} <= kinds, \
        f"softmax.post_ops holds SoftMax and Quantize: {sorted(kinds)}"
    assert ("SoftMax.output stats", "present") in items, "SoftMax's stats output is an item"


def test_structure_items_are_the_near_miss_rules_of_the_pattern() -> None:
    items = structure_items(entry("softmax.post_ops"))
    assert ("rule", "structure.convex") in items, \
        f"softmax.post_ops must have its convexity cut among its structural items: {items}"
    assert not structure_items(entry("fp.bn_relu")) or all(
        key == "rule" for key, _ in structure_items(entry("fp.bn_relu"))), \
        "structural items are keyed by the near-miss rule"


@pytest.mark.parametrize("kind", PATTERN_KINDS)
def test_ranks_come_from_the_schema_shape_inference(kind: str) -> None:
    ranks = schema_ranks(kind)
    items = {v for k, v in op_items(kind) if k == f"{kind}.rank"}
    assert ranks and set(ranks) <= set(range(1, MAX_RANK + 1)), \
        f"{kind}: ranks {ranks} must be some of 1..{MAX_RANK}"
    assert items == {str(r) for r in ranks}, f"{kind}: rank items {items} against {ranks}"


def test_spatial_ops_start_at_rank_3_and_elementwise_ops_at_rank_1() -> None:
    for kind in ("Convolution", "ConvTranspose", "AvgPool", "MaxPool", "Interpolate"):
        assert schema_ranks(kind) == (3, 4, 5), \
            f"{kind} needs N, C and a spatial dim: {schema_ranks(kind)}"
    for kind in ("ReLU", "Add", "MatMul", "ReduceSum"):
        assert schema_ranks(kind)[0] == 1, f"{kind} takes a vector: {schema_ranks(kind)}"
    assert schema_ranks("SoftMax")[0] == 2, \
        f"SoftMax's default axis is 1, so its src has rank 2 at least: {schema_ranks('SoftMax')}"


def test_quantization_lists_fall_into_per_channel_classes() -> None:
    zps = SCHEMAS["Dequantize"].attr_spec("zps")
    assert zps is not None, "Dequantize has zero points"
    assert list_classes(zps, (3, -1, 2)) == (
        "per-channel differing", "all non-zero", "per-channel differing non-zero"), \
        "zero points 3, -1, 2 differ per channel and none is 0"
    assert list_classes(zps, (0, 0)) == ("per-channel uniform", "all zero"), "zeros: uniform"
    assert list_classes(zps, (2, 0, 1)) == ("per-channel differing",), \
        "a 0 among differing zero points: neither all zero nor all non-zero"
    assert ("Dequantize.zps", "per-channel differing non-zero") in op_items("Dequantize"), \
        "differing non-zero zero points are an item of the model"


def test_graph_features_read_ranks_and_lists() -> None:
    src = LogicalTensor(0, DataType.u8, (2, 3))
    dst = LogicalTensor(1, DataType.f32, (2, 3))
    graph = Graph([Op(0, "Dequantize", (src,), (dst,), {
        "qtype": "per_channel", "axis": 1, "scales": (0.5, 0.25, 0.5), "zps": (1, 2, 3)})])
    features = graph_features(graph)
    assert features["Dequantize.rank"] == "2", f"a rank-2 src: {features}"
    assert "per-channel differing non-zero" in features["Dequantize.zps"].split(","), \
        f"zero points 1, 2, 3: {features}"


def test_tensor_items_ask_for_narrow_inexact_fills_and_special_values() -> None:
    items = set(tensor_items(entry("fp.reduction_post_ops")))
    assert ("ReduceProd.narrow fill", "f16 inexact") in items, \
        "an f16 ReduceProd with inexact values is required (the narrow accumulator miss)"
    assert ("Maximum.special values", SPECIAL_VALUES) in items, \
        f"Maximum's NaN handling is required where a pattern holds it: {sorted(items)[:5]}"
    assert not {i for i in tensor_items(entry("int8.pool")) if i[0].endswith("narrow fill")}, \
        "a quantized pattern has no bf16/f16 rows, so no narrow fill items"


def test_value_items_say_how_a_narrow_input_was_filled() -> None:
    src = LogicalTensor(0, DataType.f16, (2, 16))
    graph = Graph([Op(0, "ReduceProd", (src,), (LogicalTensor(1, DataType.f16, (2,)),),
                      {"axes": (-1,)})])
    assert value_items(graph, {0: "dense"}) == {"ReduceProd.narrow fill": "f16 inexact"}, \
        "dense values are not exact in f16"
    assert value_items(graph, {}) == {"ReduceProd.narrow fill": "f16 exact"}, \
        "the grid is exact in f16"
    assert value_items(graph, {0: "special"}) == {"ReduceProd.special values": SPECIAL_VALUES}, \
        "a special corner puts NaN and inf into the op reading it"
