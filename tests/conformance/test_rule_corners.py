"""The rule x setting method's corners (`rule_corners`): a wrong declared output shape on each
op kind wherever it sits in a pattern (the base op's, a Reduction's, as much as the last
post-op's), and each integer attribute just below its lower bound (groups 0, a stride 0, a pad
-1, an axis -(rank + 1)), each an item the ci profile's ill-formed cases draw and that the
reference rejects at the op changed."""

from __future__ import annotations

from functools import cache

import pytest

from fusionspec.conformance.cases import Case, CaseKind
from fusionspec.conformance.generate.instance_build import build_instance
from fusionspec.conformance.generate.instance_plans import instance_plans
from fusionspec.conformance.generate.model import Item
from fusionspec.conformance.generate.rule_corners import (
    BELOW_BOUND,
    OUTPUT_SHAPE,
    bound_candidates,
)
from fusionspec.conformance.generate.rule_settings import rule_setting_items
from fusionspec.conformance.suite import PROFILES, draw_cases
from fusionspec.spec.catalog import CATALOG, entry
from fusionspec.spec.categories import REDUCTION
from fusionspec.spec.errors import GraphError, GraphRule
from fusionspec.spec.graph import Op
from fusionspec.spec.opschemas import SCHEMAS
from fusionspec.spec.schema import AttrKind, AttrSpec


@cache
def _ci_ill_formed(pattern: str) -> tuple[Case, ...]:
    return tuple(draw_cases(entry(pattern), CaseKind.ill_formed, PROFILES["ci"]))


@cache
def _items() -> frozenset[Item]:
    return frozenset(item for e in CATALOG for item in rule_setting_items(e))


def _drawn(pattern: str, key: str, value: str) -> Case:
    found = [c for c in _ci_ill_formed(pattern) if c.features.get(key) == value]
    assert found, f"the ci profile draws no ill-formed case of {pattern} with {key} = {value}"
    return found[0]


def _rejected_at(case: Case) -> tuple[GraphError, Op]:
    with pytest.raises(GraphError) as caught:
        case.graph.finalize()
    op = next(o for o in case.graph.ops if o.id == caught.value.op_id)
    assert caught.value.rule == case.rule, \
        f"{case.id} ({case.description}) breaks {caught.value.rule}, not {case.rule}"
    return caught.value, op


def test_every_op_kind_of_the_instances_gets_a_wrong_declared_output_shape() -> None:
    kinds = {op.kind for e in CATALOG for plan in instance_plans(e)
             for op in build_instance(e, plan).ops if op.kind in SCHEMAS}
    missing = sorted(k for k in kinds if (OUTPUT_SHAPE, k) not in _items())
    assert not missing, f"op kinds whose declared output shape no item gets wrong: {missing}"


@pytest.mark.parametrize("kind", sorted(REDUCTION))
def test_the_ci_profile_declares_a_wrong_output_shape_on_the_reduction_itself(
        kind: str) -> None:
    case = _drawn("fp.reduction_post_ops", OUTPUT_SHAPE, kind)
    error, op = _rejected_at(case)
    assert error.rule == GraphRule.shape_output and op.kind == kind, \
        f"{case.id}: rejected by {error.rule} at {op.kind}, not by schema.shape.output at {kind}"


def test_the_wrong_output_shape_lands_inside_the_chain_where_the_pattern_allows() -> None:
    case = _drawn("fp.reduction_post_ops", OUTPUT_SHAPE, "ReduceSum")
    _, op = _rejected_at(case)
    readers = [o for o in case.graph.ops if any(t.id == op.outputs[0].id for t in o.inputs)]
    assert readers, f"{case.id}: the ReduceSum's output is read by no post-op: the probes " \
                    f"already reach the last op ({case.description})"


@pytest.mark.parametrize(("pattern", "kind"), [("fp.conv_post_ops", "Convolution"),
                                               ("fp.convtranspose_post_ops", "ConvTranspose")])
def test_the_ci_profile_sets_a_convolution_s_groups_to_zero(pattern: str, kind: str) -> None:
    case = _drawn(pattern, BELOW_BOUND, f"{kind}.groups")
    _, op = _rejected_at(case)
    assert op.kind == kind and op.attrs.get("groups") == 0, \
        f"{case.id}: rejected at {op.kind} with groups {op.attrs.get('groups')}, not 0"


#: (item value, the value just below the bound: an int, or "axis" for -(rank + 1)).
_BOUNDS = [("Convolution.strides", 0), ("Convolution.dilations", 0),
           ("Convolution.pads_begin", -1), ("ConvTranspose.pads_end", -1),
           ("AvgPool.kernel", 0), ("MaxPool.strides", 0), ("Interpolate.sizes", 0),
           ("ConvolutionBackwardWeights.groups", 0), ("SoftMax.axis", "axis"),
           ("ReduceMean.axes", "axis")]


@pytest.mark.parametrize(("attribute", "below"), _BOUNDS)
def test_each_integer_attribute_is_drawn_just_below_its_lower_bound(
        attribute: str, below: int | str) -> None:
    owner = next((e.id for e in CATALOG if (BELOW_BOUND, attribute) in rule_setting_items(e)),
                 None)
    assert owner is not None, f"no pattern draws {attribute} below its lower bound"
    case = _drawn(owner, BELOW_BOUND, attribute)
    _, op = _rejected_at(case)
    kind, name = attribute.split(".")
    value = op.attrs[name]
    first = value[0] if isinstance(value, tuple) else value
    want = -(len(op.inputs[0].shape or ()) + 1) if below == "axis" else below
    assert op.kind == kind and first == want, \
        f"{case.id}: {kind}.{name} is {value} (want {want} first), rejected at {op.kind}"


def test_a_declared_minimum_gives_the_value_just_below_it() -> None:
    spec = AttrSpec("sizes", AttrKind.s64_list, minimum=1)
    assert bound_candidates(spec, 4) == (0,), \
        f"a minimum of 1 should give 0 only, got {bound_candidates(spec, 4)}"
    free = AttrSpec("axis", AttrKind.s64)
    assert bound_candidates(free, 3) == (0, -1, -4), \
        f"without a minimum: 0, -1 and -(rank + 1), got {bound_candidates(free, 3)}"
