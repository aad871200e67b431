"""Pairwise coverage: dtype rows x the base op's attribute values, and the floor that draws them.

The pairs come from the schemas (the enumerated attributes every kind of the base op has) and
the pattern's dtype rows; the design that forces them into the first valid cases must hold
every pair within its length, and each forced choice must reach the generator under the label
it draws the attribute with. Whether the ci profile draws every required pair is held by
tests/conformance/test_mutation.py, which runs that profile once.
"""

from __future__ import annotations

import pytest

from fusionspec.conformance.generate.dtypes import required_rows
from fusionspec.conformance.generate.items import required_items, thorough_only
from fusionspec.conformance.generate.pairs import (
    CI_VALID,
    base_kinds,
    ci_pairs,
    pair_attributes,
    pair_design,
    pair_items,
    value_text,
)
from fusionspec.conformance.generate.strategies import design_cases
from fusionspec.spec.catalog import CATALOG, entry
from fusionspec.spec.opschemas import SCHEMAS


@pytest.mark.parametrize("pattern", [e.id for e in CATALOG])
def test_the_design_holds_every_pair_of_its_pattern(pattern: str) -> None:
    found = entry(pattern)
    design = pair_design(pattern)
    held = {(attr, f"{choice['dtype row']} x {value_text(choice[attr])}")
            for choice in design for attr, _ in pair_attributes(pattern)}
    wanted = {(key.rsplit(".", 1)[1], value) for key, value in pair_items(found)}
    assert wanted == held, f"{pattern}: pairs the design misses: {sorted(wanted - held)[:5]}"
    rows = required_rows(found)
    longest = max((len(v) for _, v in pair_attributes(pattern)), default=0)
    assert len(design) == len(rows) * longest, \
        f"{pattern}: {len(design)} choices, rows x the most values is {len(rows) * longest}"


def test_pair_attributes_are_enumerated_and_shared_by_every_base_kind() -> None:
    attrs = dict(pair_attributes("fp.pool_binary"))
    assert set(attrs) == {"auto_pad", "data_format", "rounding_type"}, \
        f"AvgPool and MaxPool share auto_pad, data_format and rounding_type only: {attrs}"
    assert "exclude_pad" not in attrs, "exclude_pad is AvgPool's alone"
    assert pair_attributes("fp.unary_binary") == (), \
        "no enumerated attribute is shared by every unary and binary kind"
    for pattern in (e.id for e in CATALOG):
        for attr, values in pair_attributes(pattern):
            for kind in base_kinds(pattern):
                spec = SCHEMAS[kind].attr_spec(attr)
                assert spec is not None and (spec.allowed is None
                                             or set(map(str, values)) <= set(spec.allowed)), \
                    f"{pattern}: {kind}.{attr} does not allow {values}"


def test_pairs_the_ci_cannot_hold_are_listed_and_not_required() -> None:
    left_out = thorough_only()
    for found in CATALOG:
        items = set(pair_items(found))
        if len(pair_design(found.id)) <= CI_VALID:
            assert set(ci_pairs(found)) == items, \
                f"{found.id}: its design fits the ci profile, so every pair is held there"
            assert not items & set(left_out), f"{found.id}: a held pair is left out"
        else:
            assert items - set(ci_pairs(found)) <= set(left_out), \
                f"{found.id}: pairs beyond the ci's valid cases must be listed"
    assert not set(left_out) & required_items(), "a thorough-only pair is still required"
    assert all(len(reason.split()) > 6 for reason in left_out.values()), \
        "each left-out pair says why"


def test_design_cases_hold_the_pairs_they_force() -> None:
    cases = design_cases("fp.reduction_post_ops", 14)
    assert len(cases) == 14, f"one case per choice: {len(cases)}"
    key = "dtype_row x " + "|".join(base_kinds("fp.reduction_post_ops")) + ".keep_dims"
    held = {v for case in cases for v in str(case.features.get(key, "")).split(",") if v}
    wanted = {v for k, v in pair_items(entry("fp.reduction_post_ops")) if k == key}
    assert held == wanted, f"pairs the design cases miss: {sorted(wanted - held)}"
    again = design_cases("fp.reduction_post_ops", 14)
    assert [c.id for c in cases] == [c.id for c in again], \
        "the design cases are the same every time they are drawn"
