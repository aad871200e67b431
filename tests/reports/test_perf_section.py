"""The report's performance section: `fusionspec report` given performance documents (alone or
next to results documents) shows fused against op by op per workload, with the ratio's
interval and the verdict, and a well-formed roofline chart per backend and device."""

from __future__ import annotations

import math
import xml.etree.ElementTree as ET
from pathlib import Path

import pytest
from testkit.html import Node
from testkit.perf_docs import failed, mixed_document, perf_document, workload
from testkit.report import render, save

from fusionspec.backend.timing import TimingPolicy
from fusionspec.cli.main import main
from fusionspec.conformance.perf.bench import run_bench
from fusionspec.conformance.perf.document import PerfFormatError, read_perf
from fusionspec.conformance.perf.records import PerfDocument
from fusionspec.conformance.perf.workloads import WORKLOADS
from fusionspec.reports.perf import ratio_interval, side_figure
from fusionspec.reports.roofline_svg import RooflinePoint, roofline_chart


def _section(html: str) -> str:
    start = html.index('<section class="block" id="performance">')
    return html[start:html.index("</section>", start) + len("</section>")]


def _rows(dom: Node) -> list[Node]:
    return dom.find_all("tr", class_="perf-row")


def test_perf_documents_alone_make_a_report(tmp_path: Path) -> None:
    doc = save(tmp_path / "a" / "perf.json", mixed_document())
    html, dom = render(tmp_path / "index.html", [doc])
    ET.fromstring(_section(html))  # raises on a tag left open or a stray '<'
    rows = {r.attrs["data-workload"]: r for r in _rows(dom)}
    assert set(rows) == {"fp.matmul_post_ops/bert", "fp.bn_relu/stem",
                         "fp.binary_post_ops/res", "fp.pool_binary/stem"}, \
        f"one row per workload of the document: {sorted(rows)}"
    pays = rows["fp.matmul_post_ops/bert"].text()
    assert "fusion pays" in pays and "2.00×" in pays, f"the ratio and verdict are shown: {pays}"
    assert "[1.92, 2.08]" in pays, f"the ratio's interval from both sides' intervals: {pays}"
    assert "Add | ReLU" in rows["fp.binary_post_ops/res"].text(), \
        "a split pattern shows the partitions the backend formed"
    broken = rows["fp.pool_binary/stem"].text()
    assert "ValueError" in broken and "--workload fp.pool_binary/stem" in broken, \
        f"a workload that failed shows why and how to rerun it: {broken}"
    charts = dom.find_all("svg", class_="roofline")
    assert len(charts) == 1, f"one roofline chart per document, got {len(charts)}"
    assert "copy 10 GB/s" in charts[0].text() and "GEMM 100 GFLOP/s" in charts[0].text(), \
        "the recorded copy bandwidth and GEMM yardstick are the roofs"
    assert dom.find_all("a", href="#performance"), "the table of contents links the section"


def test_two_versions_of_one_backend_are_told_apart(tmp_path: Path) -> None:
    paths = [save(tmp_path / v / "perf.json", mixed_document(backend="onednn", driver=v))
             for v in ("3.2", "3.13")]
    _, dom = render(tmp_path / "index.html", paths)
    titles = [h.text() for h in dom.find_all("div", class_="perf-run")[0].find_all("h3")] + \
        [h.text() for h in dom.find_all("div", class_="perf-run")[1].find_all("h3")]
    assert titles == ["onednn on cpu0 (3.2)", "onednn on cpu0 (3.13)"], \
        f"each document its own block, labelled by driver: {titles}"
    assert len(dom.find_all("svg", class_="roofline")) == 2, "a roofline per backend version"


def test_a_report_with_results_and_perf_documents(tmp_path: Path,
                                                 reference_results: Path) -> None:
    perf = save(tmp_path / "p" / "perf.json", mixed_document())
    html, dom = render(tmp_path / "index.html", [reference_results, perf])
    assert dom.find_all("table", id="matrix-table"), "the conformance matrix is still there"
    assert len(_rows(dom)) == 4, "and the performance section beside it"
    ET.fromstring(_section(html))


def test_a_real_bench_run_renders(tmp_path: Path) -> None:
    cheap = [w for w in WORKLOADS if w.pattern in ("fp.unary_binary", "fp.bn_relu")]
    policy = TimingPolicy(warmup=1, min_repeats=3, max_repeats=5, budget_s=0.05,
                          target_spread=0.5)
    doc = run_bench("reference", cheap, policy=policy, settle_s=0.0)
    path = save(tmp_path / "ref" / "perf.json", doc.to_json())
    html, dom = render(tmp_path / "index.html", [path])
    assert len(_rows(dom)) == len(cheap), "a row per measured workload"
    circles = dom.find_all("svg", class_="roofline")[0].find_all("circle")
    assert len(circles) == 2 * len(cheap) + 4, \
        f"a fused and an op-by-op point per workload plus the legend's four: {len(circles)}"
    ET.fromstring(_section(html))


def test_document_text_is_escaped(tmp_path: Path) -> None:
    evil = "fp.bn_relu/<script>alert(1)</script>"
    doc = perf_document([workload(evil, "fp.bn_relu", "fusion pays", 1.0, 2.0),
                         failed("x/<b>", "fp.bn_relu", "<img src=x onerror=alert(1)>")])
    html, dom = render(tmp_path / "index.html", [save(tmp_path / "perf.json", doc)])
    assert "<script>alert" not in html and "<img src=x" not in html, \
        "document text is escaped in the table and the chart"
    assert evil in dom.find_all("svg", class_="roofline")[0].text(), \
        "the escaped id reads back as the characters in the point's title"


def test_a_wrongly_typed_figure_is_a_typed_error_naming_it() -> None:
    doc = mixed_document()
    doc["workloads"][0]["roofline"]["gflop_s"] = "fast"
    with pytest.raises(PerfFormatError,
                       match=r"x\.json: \$\.workloads\[0\]\.roofline\.gflop_s: 'fast' is not"):
        PerfDocument.from_json(doc, "x.json")
    with pytest.raises(PerfFormatError, match=r"x\.json: \$\.workloads\[0\]\.roofline\.gflop_s"):
        read_perf(doc, "x.json")


def test_the_command_refuses_a_bad_perf_document(tmp_path: Path,
                                                 capsys: pytest.CaptureFixture[str]) -> None:
    doc = mixed_document()
    doc["workloads"][0]["timings"] = "none"
    path = save(tmp_path / "perf.json", doc)
    code = main(["report", str(path), "-o", str(tmp_path / "index.html")])
    err = capsys.readouterr().err
    assert code == 1, f"a perf document off its schema is a typed error, got exit {code}"
    assert "perf.json: $.workloads[0].timings" in err and "Traceback" not in err, \
        f"one line naming the file and the field: {err}"


def test_ratio_interval_takes_both_sides_intervals() -> None:
    timings = read_perf(mixed_document()).workloads[0].timings
    fused, opbyop = side_figure(timings, "fused"), side_figure(timings, "opbyop")
    assert fused is not None and opbyop is not None, "both sides are read"
    low, high = ratio_interval(fused, opbyop)
    assert math.isclose(low, 1.96 / 1.02) and math.isclose(high, 2.04 / 0.98), \
        f"lowest op by op over highest fused, and the reverse: {low}, {high}"


def test_roofline_without_yardsticks_draws_no_roof() -> None:
    svg = roofline_chart([RooflinePoint("w", 0.5, 2.0, "pays")])
    root = ET.fromstring(svg)
    assert "GB/s" not in svg and "GEMM" not in svg, "no roof where none was measured"
    circles = root.findall("{http://www.w3.org/2000/svg}circle")
    assert len(circles) == 5, f"the point and the legend's four: {len(circles)}"


def test_roofline_of_nothing_says_so() -> None:
    svg = roofline_chart([], copy_gb_s=5.0, gemm_gflop_s=50.0)
    ET.fromstring(svg)
    assert "no measured workload" in svg, "an empty chart says why it is empty"
