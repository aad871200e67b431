"""Every op of the schemas has all the facts grading needs, each in one place: an accuracy rule
(`tolerances.ACCURACY`, read by `bounds.op_bounds`, which never guesses one), and the ports that
carry shapes marked in the schema, which value filling and the value domains read."""

from __future__ import annotations

import numpy as np
import pytest

from fusionspec.conformance.generate.values import _data_inputs
from fusionspec.conformance.grade.bounds import op_bounds
from fusionspec.conformance.grade.tolerances import ToleranceError, accuracy_of
from fusionspec.reference.filling import Need, _need
from fusionspec.spec.dtypes import DataType
from fusionspec.spec.graph import Graph
from fusionspec.spec.ir import LogicalTensor, Op
from fusionspec.spec.opschemas import SCHEMAS, carries_shape

INTEGER_SYMBOLS = frozenset({DataType.s32, DataType.s64})


@pytest.mark.parametrize("kind", sorted(SCHEMAS))
def test_every_op_of_the_schemas_has_an_accuracy_rule(kind: str) -> None:
    try:
        row = accuracy_of(kind)
    except ToleranceError as exc:
        pytest.fail(f"{kind}: no accuracy rule ({exc}); add its row to ACCURACY")
    assert row.rule and row.source, f"{kind}: its accuracy rule states the rule and its source"


def test_op_bounds_refuses_an_op_without_an_accuracy_rule() -> None:
    x = LogicalTensor(0, DataType.f32, (2,))
    y = LogicalTensor(1, DataType.f32, (2,))
    op = Op(0, "Frobnicate", [x], [y])
    with pytest.raises(ToleranceError, match="Frobnicate") as info:
        op_bounds(op, [np.ones(2, np.float32)], [np.zeros(2)])
    assert "ACCURACY" in str(info.value), \
        f"the error says where the rule belongs: {info.value}"


@pytest.mark.parametrize("kind", sorted(SCHEMAS))
def test_a_port_that_carries_a_shape_is_integer_and_optional(kind: str) -> None:
    schema = SCHEMAS[kind]
    for port, spec in enumerate(schema.inputs):
        assert carries_shape(kind, port) is spec.carries_shape, \
            f"{kind} port {port}: carries_shape reads the schema"
        if spec.carries_shape:
            assert set(schema.types[spec.symbol]) <= INTEGER_SYMBOLS, \
                f"{kind}.{spec.name} carries a shape, so it is integer: {schema.types[spec.symbol]}"
            assert spec.optional, f"{kind}.{spec.name}: a shape port may be left out (attribute)"


def test_shape_ports_of_the_schemas_are_the_known_ones() -> None:
    found = {(kind, spec.name) for kind, schema in SCHEMAS.items() for spec in schema.inputs
             if spec.carries_shape}
    assert ("Interpolate", "sizes") in found and \
        ("ConvolutionBackwardWeights", "weights_shape") in found and \
        ("ReduceSum", "axes") in found, f"the schemas mark the shape ports: {sorted(found)}"
    assert not any(name in ("src", "weights", "diff_dst") for _, name in found), \
        f"no data port is marked as carrying a shape: {sorted(found)}"


def test_filling_and_value_domains_leave_shape_ports_alone() -> None:
    src = LogicalTensor(0, DataType.f32, (2, 3))
    axes = LogicalTensor(1, DataType.s32, (1,))
    dst = LogicalTensor(2, DataType.f32, (2,))
    op = Op(0, "ReduceSum", [src, axes], [dst], {})  # the axes come from the input
    assert _need(op, 1) is Need.SHAPE_VALUES, "filling gives the axes port shape values"
    assert _need(op, 0) is not Need.SHAPE_VALUES, "filling gives the src port data"
    graph = Graph([op]).finalize()
    data = [t.id for t, _ in _data_inputs(graph)]
    assert data == [0], f"only src gets a value domain, not the axes port: {data}"
