"""Everything that comes from a graph or a backend is shown as text, never run as markup: op
names and kinds, reasons, error messages and tracebacks, kernel source, case descriptions,
device and package strings, limitation reasons."""

from __future__ import annotations

import json
from pathlib import Path

from testkit.html import Node, parse
from testkit.report import copy_results, load, render, save
from testkit.report_backends import HOSTILE

from fusionspec.reports.svg import (
    CoverageCell,
    CoverageRow,
    DiagramOp,
    TensorRef,
    chain_diagram,
    coverage_chart,
)

#: Elements the report's SVG drawings are made of.
# "style": a drawing's one fixed style sheet (its label font); no data reaches it, which the
# check below holds.
SVG_TAGS = {"svg", "g", "title", "rect", "text", "path", "polygon", "line", "style"}


def _assert_inert(root: Node, where: str) -> None:
    """No script but the report's own, and no event-handler or javascript: attribute."""
    scripts = root.find_all("script")
    assert [s.attrs.get("id") for s in scripts] in ([], ["report-script"]), \
        f"{where}: a script element came from the data: {[s.attrs for s in scripts]}"
    assert all("alert(1)" not in s.text() for s in scripts), f"{where}: data inside the script"
    for node in root.walk():
        for name, value in node.attrs.items():
            assert not name.startswith("on"), f"{where}: event attribute {name} on <{node.tag}>"
            assert "javascript:" not in value.lower(), f"{where}: javascript: URL in {name}"


def test_svg_drawings_escape_their_text() -> None:
    op = DiagramOp(0, HOSTILE, name=HOSTILE, inputs=(TensorRef(HOSTILE, HOSTILE, HOSTILE),),
                   outputs=(TensorRef('"><script>x</script>', "f32"),), note=HOSTILE)
    for svg in (chain_diagram([op], title=HOSTILE),
                coverage_chart([CoverageRow(HOSTILE, (CoverageCell(HOSTILE, 1),))],
                               title=HOSTILE)):
        assert "<script" not in svg, "markup in the data is escaped in the SVG"
        root = parse(svg)
        tags = {n.tag for n in root.walk()} - {"#document"}
        assert tags <= SVG_TAGS, f"only the drawing's own elements: {tags - SVG_TAGS}"
        assert all(HOSTILE not in sheet.text() for sheet in root.find_all("style")), \
            "no data reaches a drawing's style sheet"
        assert any(HOSTILE in t.text() for t in root.find_all("title")), \
            "the hostile string reads back as text in a tooltip"
        _assert_inert(root, "svg")


def test_report_shows_hostile_strings_as_text(tmp_path: Path,
                                              never_fuses_results: Path) -> None:
    path = copy_results(never_fuses_results, tmp_path / "hostile")
    doc = load(path)
    doc["backend"] = f"never-fuses {HOSTILE}"
    doc["device"]["name"] = HOSTILE
    doc["device"]["extras"]["driver note"] = HOSTILE
    doc["environment"]["numpy"] = HOSTILE
    failure = doc["failures"][0]
    failure["reason"] = f"reason {HOSTILE}"
    failure["description"] = f"description {HOSTILE}"
    failure["features"]["alternative"] = HOSTILE
    failure["details"].update(kernel_source=f"__kernel void k() {{ /* {HOSTILE} */ }}",
                              message=f"message {HOSTILE}", traceback=f"Traceback {HOSTILE}",
                              error_type="RuntimeError", stage="compile",
                              custom=f"extra {HOSTILE}")
    doc["verdicts"][0]["reason"] = HOSTILE
    doc["limitations"].append({"case_id": "x", "pattern": failure["pattern"], "dtype": "f32",
                               "reason": f"limitation {HOSTILE}", "limitation_passed": False,
                               "observed_status": "pass"})
    doc["patterns"][failure["pattern"]]["coverage"][HOSTILE] = {HOSTILE: 1}
    save(path, doc)
    graph_path = path.parent / "failures" / Path(failure["replay"]["dir"]).name / "graph.json"
    graph = json.loads(graph_path.read_text(encoding="utf-8"))
    for op in graph["graph"]:
        op["name"] = HOSTILE
        op["kind"] = f"{op['kind']}{HOSTILE}"
    graph_path.write_text(json.dumps(graph), encoding="utf-8")

    html, root = render(tmp_path / "index.html", [path])
    _assert_inert(root, "report")
    assert "&lt;script&gt;alert(1)&lt;/script&gt;" in html, "the markup is escaped"
    view = next(v for v in root.find_all("details", class_="failure")
                if failure["case_id"] in v.find_all("summary")[0].text())
    text = view.text()
    for shown in (f"reason {HOSTILE}", f"description {HOSTILE}", f"message {HOSTILE}",
                  f"Traceback {HOSTILE}", f"/* {HOSTILE} */", f"extra {HOSTILE}"):
        assert shown in text, f"{shown!r} reads back as text in the drill-down"
    kernel = view.find_all("pre", class_="kernel")
    assert kernel and HOSTILE in kernel[0].text(), "the kernel source is shown as text"
    boxes = view.find_all("svg", class_="diagram")[0].find_all("text", class_="dg-kind")
    assert boxes and all(HOSTILE in b.text() for b in boxes), \
        "op kinds from graph.json are drawn as text"
    page = root.text()
    for shown in (f"never-fuses {HOSTILE}", f"limitation {HOSTILE}"):
        assert shown in page, f"{shown!r} reads back as text"


def test_backend_error_message_is_shown_as_text(tmp_path: Path,
                                                hostile_results: Path) -> None:
    doc = load(hostile_results)
    assert doc["totals"].get("error"), f"the hostile backend's errors are graded: {doc['totals']}"
    _, root = render(tmp_path / "index.html", [hostile_results])
    _assert_inert(root, "report")
    views = root.find_all("details", class_="failure")
    assert views and all(HOSTILE in v.text() for v in views), \
        "each drill-down shows the backend's message, markup and all, as text"
