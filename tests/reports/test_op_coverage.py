"""Spec coverage per op in the HTML report: the coverage model's items gathered per op kind
across patterns and runs (`fusionspec.reports.op_coverage`), and the report's section."""

from __future__ import annotations

from pathlib import Path

from fusionspec.cli.main import main
from fusionspec.reports.op_coverage import op_coverage


def test_items_count_as_drawn_in_any_pattern_and_run() -> None:
    required = {"a": [("Elu.alpha", "negative"), ("Elu.alpha", "zero")],
                "b": [("Elu.alpha", "zero"), ("Clamp.min", "one"), ("broadcast", "full")]}
    observed = [{"Elu.alpha": {"negative": 1}}, {"Elu.alpha": {"one,zero": 3}},
                {"Clamp.min": {"one": 0}}]
    rows = {row.kind: row for row in op_coverage(observed, required)}
    assert set(rows) == {"Elu", "Clamp"}, \
        f"only the model's Kind.facet features make op lines, got {sorted(rows)}"
    assert (rows["Elu"].exercised, rows["Elu"].required) == (2, 2), \
        "an item drawn in one pattern and required by another still counts as drawn"
    assert rows["Clamp"].missing == ("min = one",), \
        f"a count of 0 is not a draw: {rows['Clamp'].missing}"
    assert rows["Clamp"].share == "0 %", f"nothing drawn is 0 %, got {rows['Clamp'].share}"


def test_report_shows_spec_coverage_per_op(tmp_path: Path, reference_results: Path) -> None:
    out = tmp_path / "index.html"
    assert main(["report", str(reference_results), "-o", str(out)]) == 0, \
        "fusionspec report exited with an error"
    html = out.read_text(encoding="utf-8")
    assert 'id="op-coverage"' in html, "the report has a spec-coverage-per-op section"
    section = html.split('id="op-coverage"', 1)[1].split("</section>", 1)[0]
    assert "<code>SoftMax</code>" in section, "SoftMax, which a pattern holds, has a line"
    assert "never drawn" in section and " of " in section, \
        "the section states items drawn of items required, and what was never drawn"
