"""Reachability: the valid-case strategies reach everything the catalog allows.

For each pattern, valid cases are drawn in seeded batches (the same cases on every run) until
every item of `coverage_items` has appeared: each count of each repetition (optional items
included), each option of each alternation, each member of each category, each dtype row, and
the attribute variants of the pattern's op kinds. A failure lists what was never generated.

Page 000's quantized ConvTranspose table is checked against the rows: each of its combinations
is a row the strategies must reach, or one the catalog records as unreachable
(decision dec.ct_table_unreachable: bf16/f16 bias and bf16/f16 dst).
"""

from __future__ import annotations

import pytest
from hypothesis import given, seed, settings

from fusionspec.conformance.generate.coverage import Item, case_items, coverage_items
from fusionspec.conformance.generate.dtypes import has_table, int8_row, required_rows
from fusionspec.conformance.generate.strategies import valid_builds
from fusionspec.spec.catalog import CATALOG, PatternEntry
from fusionspec.spec.rules import CONVTRANSPOSE_INT8_DTYPES

#: Cases per seeded batch, and the most batches drawn before giving up.
BATCH, BATCHES = 50, 30


def _reached(entry: PatternEntry, wanted: set[Item]) -> tuple[set[Item], int]:
    seen: set[Item] = set()
    drawn = 0
    for number in range(BATCHES):
        @seed(number)
        @settings(max_examples=BATCH, database=None)
        @given(valid_builds(entry))
        def draw(built: object) -> None:
            seen.update(case_items(built.features))  # type: ignore[attr-defined]

        draw()
        drawn += BATCH
        if wanted <= seen:
            break
    return seen, drawn


@pytest.mark.parametrize("entry", CATALOG, ids=lambda e: e.id)
def test_valid_cases_reach_every_item_of_the_grammar(entry: PatternEntry) -> None:
    wanted = set(coverage_items(entry))
    seen, drawn = _reached(entry, wanted)
    missing = sorted(wanted - seen)
    assert not missing, (f"{entry.id}: never generated in {drawn} cases: "
                         + "; ".join(f"{key} = {value}" for key, value in missing))


@pytest.mark.parametrize("entry", [e for e in CATALOG if has_table(e)], ids=lambda e: e.id)
def test_convtranspose_table_rows_are_required_or_recorded_unreachable(
        entry: PatternEntry) -> None:
    rows = set(required_rows(entry))
    for combo in CONVTRANSPOSE_INT8_DTYPES.combinations():
        columns = {name: dtype.value for name, dtype in combo.items()}
        unreachable = columns["bias"] in ("bf16", "f16") or columns["dst"] in ("bf16", "f16")
        label = int8_row(entry, columns)
        assert unreachable or label in rows, \
            f"{entry.id}: table row {label} is reachable but the strategies never draw it"
        assert not (unreachable and label in rows), \
            f"{entry.id}: row {label} is recorded unreachable (dec.ct_table_unreachable)"
    weights_f32 = {r for r in rows if "weights=f32" in r}
    assert weights_f32, f"{entry.id}: no row quantizes f32 weights with the pattern's Quantize"
