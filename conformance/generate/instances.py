"""The catalog instances: the deterministic floor of coverage the suite judges before drawing
random cases.

`instance_cases(entry)` is every instance plan of a pattern (`instance_plans`: every
alternative, repetition count, optional branch and category member) built as a graph
(`instance_build`) with clean values, then the instances that show the corners specific to an
op, then the other floors (`floors`: attribute variants, ranks, narrow products and fills).
"""

from __future__ import annotations

from fusionspec.spec.catalog import PatternEntry

from ..cases import Case
from .ambiguous_axes import ambiguous_cases
from .boundaries import boundary_cases
from .floors import (
    narrow_fill_cases,
    narrow_product_cases,
    operand_rank_cases,
    rank_floor_cases,
    source_floor_cases,
    variant_cases,
)
from .graph_format import format_cases
from .instance_build import build_instance, instance_case
from .instance_plans import instance_plans
from .neighbours import neighbour_cases
from .rule_settings import inside_cases
from .side_types import side_type_cases
from .values import clean_plan, targeted_corners, with_values

__all__ = ["instance_cases"]


def instance_cases(entry: PatternEntry, engine_kind: str = "cpu") -> list[Case]:
    """Every plan of `entry` as a valid f32/int8 `Case`, each with clean values; then the
    attribute variants the plans did not reach in turn (`floors.variant_cases`); then, for each
    op kind reading a graph input and each corner specific to it
    (`fusionspec.conformance.generate.values.TARGETED`), the shortest instance showing that
    pair once more with that corner (the fewer ops after it, the less can hide it: a Minimum
    after an Exp clips its overflow away); then the rank floor, the narrow ReduceProd
    products and the narrow fills (`floors`); last, the valid cases of the coverage methods:
    just inside each validation rule (`rule_settings`),
    each type a side Dequantize may read (`side_types`), the graph format (`graph_format`),
    the value boundaries (`boundaries`), the axes a wrong default could pick
    (`ambiguous_axes`) and side inputs fed by ops of neighbouring kinds (`neighbours`)."""
    cases: list[Case] = []
    corners: dict[tuple[str, int, str], tuple[int, int, Case]] = {}
    turns: dict[str, int] = {}
    plans = instance_plans(entry)
    for plan in plans:
        graph = build_instance(entry, plan, engine_kind, turns)
        case = instance_case(entry, graph, f"catalog instance: {plan.describe()}")
        cases.append(with_values(case, clean_plan(graph)))
        for key, corner in targeted_corners(graph):
            rank = (len(graph.ops), len(cases))
            if key not in corners or rank < corners[key][:2]:
                corners[key] = (*rank, with_values(case, corner))
    cases += variant_cases(entry, plans, turns, engine_kind)
    cases += [c for _, _, c in sorted(corners.values(), key=lambda v: v[:2])]
    return (cases + rank_floor_cases(entry, plans) + narrow_product_cases(entry)
            + narrow_fill_cases(entry, plans) + source_floor_cases(entry)
            + operand_rank_cases(entry) + inside_cases(entry)
            + side_type_cases(entry) + format_cases(entry, plans)
            + boundary_cases(entry, plans) + ambiguous_cases(entry)
            + neighbour_cases(entry))
