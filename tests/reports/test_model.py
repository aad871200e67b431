"""The report's building blocks: status vocabulary, cells and percentages, coverage counting,
typed reading of documents, and the SVG layouts (chain diagram and coverage chart)."""

from __future__ import annotations

import re

import pytest
from testkit.html import parse

from fusionspec.conformance.cases import FAILING, Status
from fusionspec.reports.coverage import coverage_views, percent, split_counts
from fusionspec.reports.document import Doc, ReportError
from fusionspec.reports.legend import STATUSES, status_info
from fusionspec.reports.runs import make_cell
from fusionspec.reports.svg import (
    CoverageCell,
    CoverageRow,
    DiagramOp,
    TensorRef,
    chain_diagram,
    coverage_chart,
)


def test_legend_matches_the_suites_statuses() -> None:
    names = [s.name for s in STATUSES]
    assert sorted(names) == sorted(s.value for s in Status), \
        f"the report's statuses {names} must be the suite's {[s.value for s in Status]}"
    for info in STATUSES:
        assert info.failing == (Status(info.name) in FAILING), \
            f"status {info.name}: report says failing={info.failing}, the suite disagrees"
        assert info.definition.endswith("."), f"{info.name} is defined in a sentence"


def test_unknown_status_counts_as_failing() -> None:
    info = status_info("flaky")
    assert info.failing and info.css == "st-unknown", \
        f"a status the report does not know is shown as failing, got {info}"


def test_percent_never_rounds_up_to_all() -> None:
    assert percent(2718, 2719) == "99.9 %", f"2718 of 2719 is not 100 %: {percent(2718, 2719)}"
    assert percent(5, 5) == "100 %", f"all of them: {percent(5, 5)}"
    assert percent(0, 0) == "—", "no cases: no percentage"


@pytest.mark.parametrize(("counts", "state", "conforming"), [
    ({"pass": 4}, "pass", "100 %"),
    ({"pass": 3, "numeric-mismatch": 1}, "fail", "75 %"),
    ({"pass": 2, "extension": 1, "unsupported": 1}, "soft", "100 %"),
    ({}, "none", "—"),
])
def test_cell_state_and_conforming_share(counts: dict[str, int], state: str,
                                         conforming: str) -> None:
    cell = make_cell(counts)
    assert (cell.state, cell.conforming) == (state, conforming), \
        f"{counts}: got state {cell.state}, conforming {cell.conforming}"
    assert [c.status.name for c in cell.counts] == sorted(
        counts, key=lambda s: [x.name for x in STATUSES].index(s)), \
        f"counts are listed in legend order: {cell.counts}"
    widths = sum(float(w) for _, w in cell.bar)
    assert not counts or abs(widths - 100) < 0.05, f"the stacked bar fills 100 %: {widths}"


def test_split_counts_separates_joined_values() -> None:
    got = split_counts({"Binary": {"Add,Divide": 2, "Add": 1}, "BiasAdd^?": {"0": 4}})
    assert got == {"Binary": {"Add": 3, "Divide": 2}, "BiasAdd^?": {"0": 4}}, \
        f"comma-joined values are counted once each: {got}"


def test_coverage_views_one_chart_when_runs_agree() -> None:
    cov = {"BiasAdd^?": {"0": 3, "1": 2}}
    required = [("BiasAdd^?", "0"), ("BiasAdd^?", "1"), ("dtype_row", "bf16")]
    same = coverage_views("p", [("a", cov), ("b", cov)], required)
    assert [v.label for v in same] == ["every run"], f"identical coverage, one chart: {same}"
    assert (same[0].exercised, same[0].required) == (2, 3), \
        f"2 of 3 required items exercised: {same[0].summary}"
    assert same[0].missing == ("dtype_row = bf16",), f"the gap is named: {same[0].missing}"
    differ = coverage_views("p", [("a", cov), ("b", {"BiasAdd^?": {"0": 5}})], required)
    assert [v.label for v in differ] == ["a", "b"], f"different coverage, a chart per run: {differ}"


def test_doc_errors_name_the_field() -> None:
    doc = Doc({"patterns": {"fp.bn_relu": {"counts": [1, 2]}}}, "x.json")
    with pytest.raises(ReportError, match=r"x\.json: patterns\.fp\.bn_relu\.counts is a list, "
                                          r"not an object of counts"):
        doc.obj("patterns").obj("fp.bn_relu").counts("counts")
    with pytest.raises(ReportError, match=r"x\.json: failures is an object, not a list"):
        Doc({"failures": {}}, "x.json").objects("failures")
    with pytest.raises(ReportError, match=r"count that is not a whole number"):
        Doc({"totals": {"pass": -1}}, "x.json").counts("totals")


def _op(op_id: int, kind: str, ins: list[str], outs: list[str]) -> DiagramOp:
    return DiagramOp(op_id, kind, inputs=tuple(TensorRef(t, "f32") for t in ins),
                     outputs=tuple(TensorRef(t, "f32") for t in outs))


def _boxes(svg: str) -> dict[str, tuple[float, float]]:
    """op kind -> (x, y) of its box."""
    root = parse(svg)
    found = {}
    for group in root.find_all("g", class_="dg-op"):
        rect = group.find_all("rect")[0]
        kind = group.find_all("text", class_="dg-kind")[0].text()
        found[kind] = (float(rect.attrs["x"]), float(rect.attrs["y"]))
    return found


def test_chain_diagram_layers_follow_dependencies() -> None:
    # a -> b -> c, and a -> d (fan-out): d shares b's layer, below it.
    ops = [_op(0, "A", ["0"], ["1"]), _op(1, "B", ["1"], ["2"]), _op(2, "C", ["2"], ["3"]),
           _op(3, "D", ["1"], ["4"])]
    boxes = _boxes(chain_diagram(ops))
    assert boxes["A"][0] < boxes["B"][0] < boxes["C"][0], f"a chain runs left to right: {boxes}"
    assert boxes["D"][0] == boxes["B"][0] and boxes["D"][1] > boxes["B"][1], \
        f"two consumers of one tensor share a column: {boxes}"
    svg = chain_diagram(ops)
    assert svg.count('class="dg-edge"') == 3, "three producer->consumer edges (1->B, 1->D, 2->C)"
    assert len(re.findall(r'class="dg-edge dg-out"', svg)) == 2, "outputs 3 and 4 leave the graph"


def test_chain_diagram_wraps_long_chains_and_marks_cycles() -> None:
    chain = [_op(i, f"Op{i}", [str(i)], [str(i + 1)]) for i in range(14)]
    boxes = _boxes(chain_diagram(chain, per_row=6))
    rows = sorted({y for _, y in boxes.values()})
    assert len(rows) == 3, f"14 ops at 6 per row take 3 rows, got rows at {rows}"
    cycle = [_op(0, "P", ["2"], ["1"]), _op(1, "Q", ["1"], ["2"])]
    svg = chain_diagram(cycle)
    assert svg.count("dg-cycle") == 2, "both ops of a cycle are drawn, marked as such"


def test_coverage_chart_marks_required_values_not_reached() -> None:
    svg = coverage_chart([CoverageRow("BiasAdd^?", (CoverageCell("0", 3), CoverageCell("1", 0))),
                          CoverageRow("extra", (CoverageCell("x", 2, required=False),))])
    root = parse(svg)
    assert len(root.find_all("g", class_="cv-missing")) == 1, "the unreached value is marked"
    assert len(root.find_all("g", class_="cv-extra")) == 1, "a value outside the set is marked"
    titles = [t.text() for t in root.find_all("title")]
    assert "BiasAdd^? = 1: 0 case(s) (required, not exercised)" in titles, \
        f"each cell explains itself in a tooltip: {titles}"
