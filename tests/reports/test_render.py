"""The report rendered from real results: one run, several side by side, drill-downs, moved and
missing failure folders, limitations, and documents from a newer suite."""

from __future__ import annotations

import json
import re
import shutil
from pathlib import Path

from testkit.html import Node
from testkit.report import PATTERNS, copy_results, failing_count, load, render, save
from testkit.report_backends import LIMITATION_REASON

from fusionspec.conformance.cases import FAILING, Status
from fusionspec.reports.patterns import MAX_LINES
from fusionspec.spec.catalog import CATALOG, entry


def _matrix_rows(root: Node) -> dict[str, list[Node]]:
    """pattern id -> its matrix cells (one per run)."""
    table = root.find_all("table", id="matrix-table")
    assert len(table) == 1, "the report has one matrix"
    rows = {}
    for row in table[0].find_all("tr", class_="prow"):
        pattern = row.find_all("th")[0].find_all("a")[0].text()
        rows[pattern] = row.find_all("td", class_="cell")
    return rows


def _chips(cell: Node) -> dict[str, int]:
    """status -> count, read from a cell's chips (their title is 'N status')."""
    found = {}
    for chip in cell.find_all("span", class_="chip"):
        count, status = chip.attrs["title"].split(" ", 1)
        found[status] = int(count)
    return found


def test_single_reference_run(tmp_path: Path, reference_results: Path) -> None:
    html, root = render(tmp_path / "index.html", [reference_results])
    doc = load(reference_results)
    rows = _matrix_rows(root)
    assert list(rows) == list(PATTERNS), f"matrix rows are the patterns run: {list(rows)}"
    for pattern, cells in rows.items():
        assert len(cells) == 1, f"{pattern}: one column for one run"
        assert "state-pass" in cells[0].attrs["class"], f"{pattern}: the reference passes"
        assert _chips(cells[0]) == doc["patterns"][pattern]["counts"], \
            f"{pattern}: cell counts {_chips(cells[0])} are the document's"
    groups = [th.text() for th in root.find_all("tr", class_="family")[0:2]]
    assert groups == ["Float inference", "Softmax"], f"rows grouped by catalog family: {groups}"
    assert not root.find_all("details", class_="failure"), "no failure, no drill-down"
    verdict = root.find_all("ul", id="verdicts")[0].text()
    assert "PASS" in verdict and f"all {sum(doc['totals'].values())} cases pass" in verdict, \
        f"the header's one-line verdict: {verdict!r}"
    not_run = [e.id for e in CATALOG if e.id not in PATTERNS]
    assert all(f"<code>{p}</code>" in html for p in not_run), \
        "catalog patterns that no run covered are named"
    assert len(root.find_all("svg", class_="coverage")) == len(PATTERNS), \
        "one grammar coverage chart per pattern"


def test_report_is_self_contained(tmp_path: Path, reference_results: Path,
                                  never_fuses_results: Path) -> None:
    html, root = render(tmp_path / "index.html", [reference_results, never_fuses_results])
    for needle in ("http://", "https://", "<link", "@import", "url("):
        assert needle not in html, f"the report loads nothing from outside ({needle!r} found)"
    assert not [n for n in root.walk() if "src" in n.attrs], "no element has a src attribute"
    drawn = sum(len(svg.find_all("style")) for svg in root.find_all("svg"))
    assert len(root.find_all("style")) == 1 + drawn, \
        "the CSS is inline: one style sheet for the page, and each drawing's own font rule"


def test_legend_defines_every_status_and_metric(tmp_path: Path,
                                                reference_results: Path) -> None:
    _, root = render(tmp_path / "index.html", [reference_results])
    legend = root.find_all("section", id="legend")[0]
    text = legend.text()
    for status in Status:
        assert status.value in text, f"the legend defines {status.value}"
        fails = f"{status.value}" in text and status in FAILING
        assert not fails or "Fails the run." in text, f"{status.value} is marked as failing"
    for metric in ("cases", "conforming", "grammar coverage", "error bound"):
        assert metric in text, f"the legend defines the metric {metric!r}"


def test_side_by_side_with_mutants(tmp_path: Path, reference_results: Path,
                                   never_fuses_results: Path, gelu_results: Path) -> None:
    files = [reference_results, never_fuses_results, gelu_results]
    html, root = render(tmp_path / "index.html", files)
    heads = [th.text() for th in root.find_all("table", id="matrix-table")[0]
             .find_all("thead")[0].find_all("th")[2:]]
    for head, name in zip(heads, ("reference", "never-fuses", "gelu-tanh-for-erf")):
        assert name in head, f"run columns keep the order given: {heads}"
    rows = _matrix_rows(root)
    never = load(never_fuses_results)
    cell = rows["softmax.post_ops"][1]
    assert "state-fail" in cell.attrs["class"], "never-fuses fails softmax.post_ops"
    assert _chips(cell) == never["patterns"]["softmax.post_ops"]["counts"], \
        f"cell counts {_chips(cell)} are the document's"
    target = cell.find_all("a")[0].attrs["href"].lstrip("#")
    ids = root.by_id()
    assert target in ids and ids[target].tag == "details", \
        f"a failing cell leads to a failure's drill-down, got #{target}"
    assert "not run" in rows["fp.reciprocal_multiply"][2].text(), \
        "gelu-tanh-for-erf ran softmax only"
    for run in ("never-fuses on numpy", "gelu-tanh-for-erf on numpy"):
        assert f"Failures of {run}" in html, f"failures of {run} are listed"
    assert "Failures of reference" not in html, "the reference has no failure to list"


def _case_id(view: Node) -> str:
    """The case id a drill-down is about (the first code element of its summary)."""
    return view.find_all("summary")[0].find_all("code")[0].text()


def _view_of(root: Node, case_id: str) -> Node:
    views = [v for v in root.find_all("details", class_="failure") if _case_id(v) == case_id]
    assert len(views) == 1, f"one drill-down for {case_id}, found {len(views)}"
    return views[0]


def test_drill_down_shows_graph_json_and_replay(tmp_path: Path,
                                                never_fuses_results: Path) -> None:
    _, root = render(tmp_path / "index.html", [never_fuses_results])
    doc = load(never_fuses_results)
    views = root.find_all("details", class_="failure")
    assert views, "never-fuses has drilled-down failures"
    failure = next(f for f in doc["failures"] if f["case_id"] == _case_id(views[0]))
    folder = Path(failure["replay"]["dir"])
    graph = json.loads((folder / "graph.json").read_text(encoding="utf-8"))
    diagram = views[0].find_all("svg", class_="diagram")
    assert len(diagram) == 1, "the graph is drawn"
    assert len(diagram[0].find_all("g", class_="dg-op")) == len(graph["graph"]), \
        "one box per op of graph.json"
    flagged = diagram[0].find_all("g", class_="dg-flagged")
    assert flagged, "ops the backend partitioned differently are highlighted"
    pres = [p.text() for p in views[0].find_all("pre")]
    assert any(json.loads(p) == graph for p in pres if p.lstrip().startswith("{")), \
        "the oneDNN JSON shown is graph.json"
    replay = "\n".join(failure["replay"]["commands"])
    assert any(replay in p for p in pres), f"the replay commands are shown: {replay}"
    tables = views[0].find_all("table")
    assert any("unmatched" in t.find_all("tr")[-1].attrs.get("class", "") for t in tables), \
        "partitions without a counterpart on the other side are marked"


def test_numeric_drill_down_shows_error_against_its_bound(tmp_path: Path,
                                                         gelu_results: Path) -> None:
    _, root = render(tmp_path / "index.html", [gelu_results])
    doc = load(gelu_results)
    failure = doc["failures"][0]
    text = _view_of(root, failure["case_id"]).text()
    bound = failure["details"]["bound"]
    assert bound["chain"] in text, f"the bound's op chain is shown: {bound['chain']}"
    worst = failure["details"]["worst"][0]
    assert f"{worst['expected']:.7g}" in text and f"{worst['actual']:.7g}" in text, \
        f"the worst element's expected and actual values are shown: {worst}"
    assert re.search(r"([\d,.]+ × its bound|bound 0)", text), \
        "the worst error is set against its element's bound"
    assert f"{failure['details']['mismatches']} of {failure['details']['total']} elements" \
        in text, "how many elements are outside their bound"


def test_drill_down_limit_prefers_distinct_failures(tmp_path: Path,
                                                    never_fuses_results: Path) -> None:
    _, root = render(tmp_path / "index.html", [never_fuses_results], drilldowns=3)
    doc = load(never_fuses_results)
    for pattern in PATTERNS:
        section = root.by_id()[f"p-{pattern.replace('.', '-')}"]
        views = section.find_all("details", class_="failure")
        listed = section.find_all("table", class_="lines")
        want = failing_count(doc, pattern)
        shown = len(views) + (len(listed[0].find_all("tr")) - 1 if listed else 0)
        assert len(views) == min(3, want), f"{pattern}: 3 drill-downs at most, got {len(views)}"
        lines = min(want - len(views), MAX_LINES)  # the rest are counted, not listed
        assert shown == len(views) + lines, \
            f"{pattern}: every failure is drilled down or listed, up to {MAX_LINES} lines " \
            f"({shown}/{want})"
        by_id = {f["case_id"]: (f["status"], f["kind"], f["rule"]) for f in doc["failures"]}
        shown_kinds = {by_id[_case_id(v)] for v in views}
        distinct = {k for c, k in by_id.items() if c.startswith(pattern + "/")}
        assert len(shown_kinds) == min(3, len(distinct)), \
            f"{pattern}: drill-downs go to different kinds of failure first: {shown_kinds}"


def test_moved_results_folder_still_finds_its_artifacts(tmp_path: Path,
                                                        never_fuses_results: Path) -> None:
    moved = copy_results(never_fuses_results, tmp_path / "elsewhere")
    doc = load(moved)
    for failure in doc["failures"]:
        failure["replay"]["dir"] = "/nonexistent/" + Path(failure["replay"]["dir"]).name
    save(moved, doc)
    _, root = render(tmp_path / "moved.html", [moved])
    first = root.find_all("details", class_="failure")[0]
    assert first.find_all("svg", class_="diagram"), \
        "graph.json is found in failures/ next to the moved results.json"
    shutil.rmtree(moved.parent / "failures")
    _, root = render(tmp_path / "gone.html", [moved])
    first = root.find_all("details", class_="failure")[0]
    assert not first.find_all("svg", class_="diagram"), "no folder, no diagram"
    assert "the failure folder is not there" in first.text() and "nothing is regenerated" in \
        first.text(), "a missing failure folder is said, and nothing is made up"


def test_limitations_listed_apart(tmp_path: Path, limited_results: Path) -> None:
    _, root = render(tmp_path / "index.html", [limited_results])
    doc = load(limited_results)
    section = root.by_id()["limitations"]
    rows = section.find_all("tbody")[0].find_all("tr")
    unsupported = doc["totals"]["unsupported"]
    assert len(rows) == 1 and LIMITATION_REASON in rows[0].text(), \
        f"one declared limitation with its reason: {[r.text() for r in rows]}"
    cells = rows[0].find_all("td")
    assert int(cells[3].text()) == unsupported, \
        f"the limitation covers all {unsupported} unsupported cases, got {cells[3].text()}"
    assert int(cells[4].text()) == sum(1 for x in doc["limitations"] if x["limitation_passed"]), \
        "how many would have passed anyway"
    softmax = root.by_id()["p-softmax-post_ops"]
    assert not softmax.find_all("details", class_="failure"), \
        "unsupported cases are not failures"
    cell = _matrix_rows(root)["softmax.post_ops"][0]
    assert "state-soft" in cell.attrs["class"], "a cell with only unsupported cases is not red"


def test_document_from_a_newer_suite(tmp_path: Path, reference_results: Path) -> None:
    doc = load(reference_results)
    doc["patterns"]["x.future_pattern"] = {"counts": {"flaky": 2, "pass": 1},
                                           "coverage": {"novel": {"a": 1}}}
    # A case's own status must be one of this suite's (a document with another is refused);
    # the per-pattern counts may hold one, and the report shows it as failing.
    doc["verdicts"].append({"case_id": "x/1", "pattern": "x.future_pattern", "kind": "valid",
                            "rule": None, "dtype": "f32", "status": "numeric-mismatch",
                            "reason": "?"})
    path = save(tmp_path / "newer" / "results.json", doc)
    html, root = render(tmp_path / "index.html", [path])
    rows = _matrix_rows(root)
    assert "x.future_pattern" in rows, "a pattern outside the catalog still gets its row"
    assert "state-fail" in rows["x.future_pattern"][0].attrs["class"], \
        "an unknown status counts as failing"
    assert "Other patterns" in html, "such a pattern is grouped apart"
    assert entry("softmax.post_ops").notation in root.by_id()["p-softmax-post_ops"].text(), \
        "known patterns keep their notation"


def test_the_run_names_its_suite_commit(tmp_path: Path, reference_results: Path) -> None:
    doc = load(reference_results)
    doc["suite_version"], doc["suite_commit"] = "0.1.0", "0123abcd" * 5 + "+dirty"
    with_commit = save(tmp_path / "with" / "results.json", doc)
    html, _ = render(tmp_path / "with.html", [with_commit])
    assert "fusionspec 0.1.0 (commit <code>" + "0123abcd" * 5 + "+dirty</code>)" in html, \
        "the run's details name the version and the commit it ran from"
    del doc["suite_commit"]
    older = save(tmp_path / "older" / "results.json", doc)
    html, _ = render(tmp_path / "older.html", [older])
    assert "fusionspec 0.1.0</dd>" in html and "(commit" not in html, \
        "a document without the commit shows the version alone"


def test_a_drill_down_states_the_cause_in_words(tmp_path: Path, gelu_results: Path) -> None:
    _, root = render(tmp_path / "index.html", [gelu_results])
    drills = root.find_all("details", class_="failure")
    assert drills, "the GELU mutant's failures are drilled down"
    for drill in drills:
        terms = [dt.text() for dt in drill.find_all("dt")]
        assert "cause" in terms, \
            f"each drill-down states its cause in words, not only in raw JSON: {terms[:6]}"
    shown = drills[0].text()
    assert "Smallest failing piece: GELU fails alone" in shown, \
        f"the cause names the culprit the isolation found: {shown[:400]}"
    raw = [dt.text() for drill in drills for dt in drill.find_all("dt")
           if dt.text() in ("signature", "triage")]
    assert not raw, f"the diagnosis shown as the cause is not repeated as raw JSON: {raw}"


def test_a_coverage_drawing_names_its_label_font_once(tmp_path: Path,
                                                     gelu_results: Path) -> None:
    html, _ = render(tmp_path / "index.html", [gelu_results])
    drawings = re.findall(r'<svg class="coverage".*?</svg>', html, re.S)
    assert drawings, "the report has coverage drawings"
    for drawing in drawings:
        assert drawing.count("SFMono") <= 1, \
            "a coverage drawing states its monospace font once (a class), not per label " \
            f"({drawing.count('SFMono')} times): the report stays small"
