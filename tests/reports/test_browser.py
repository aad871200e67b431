"""The report in a real browser: headless Chromium loads it from disk, the matrix and a failure
drill-down are in the rendered DOM (with and without JavaScript), so is the performance section
with its roofline chart, and a screenshot is saved.

Skipped, with the reason, where no Chromium is installed (Debian: ``apt-get install chromium``;
.ci/run installs it and requires it, see `testkit.material`).
"""

from __future__ import annotations

import shutil
import struct
import subprocess
from pathlib import Path

import pytest
from testkit.html import Node, parse
from testkit.material import missing
from testkit.perf_docs import mixed_document
from testkit.report import PATTERNS, render, save

CHROMIUM = shutil.which("chromium") or shutil.which("chromium-browser")



@pytest.fixture(autouse=True)
def _chromium_installed() -> None:
    if CHROMIUM is None:
        missing("chromium", "headless Chromium is not installed (Debian: apt-get install "
                "chromium)")

#: Offline, no first-run work, no sandbox (tests may run as root in a container).
FLAGS = ("--headless", "--no-sandbox", "--disable-gpu", "--disable-background-networking",
         "--disable-component-update", "--disable-sync", "--no-first-run")


def _chromium(profile: Path, *args: str) -> subprocess.CompletedProcess[str]:
    assert CHROMIUM is not None
    proc = subprocess.run([CHROMIUM, *FLAGS, f"--user-data-dir={profile}", *args],
                          capture_output=True, text=True, timeout=180, check=False)
    assert proc.returncode == 0, f"chromium {' '.join(args)} failed: {proc.stderr[-2000:]}"
    return proc


def _png_size(path: Path) -> tuple[int, int]:
    data = path.read_bytes()
    assert data[:8] == b"\x89PNG\r\n\x1a\n", f"{path} is a PNG image"
    width, height = struct.unpack(">II", data[16:24])
    return width, height


def _check_content(dom: Node, where: str) -> list[Node]:
    """The matrix with a row per pattern and a cell per run, and the drill-downs."""
    tables = dom.find_all("table", id="matrix-table")
    assert len(tables) == 1, f"{where}: the matrix is in the rendered DOM"
    rows = tables[0].find_all("tr", class_="prow")
    assert len(rows) == len(PATTERNS), f"{where}: one matrix row per pattern, got {len(rows)}"
    assert all(len(r.find_all("td", class_="cell")) == 2 for r in rows), \
        f"{where}: two runs, two cells per row"
    views = dom.find_all("details", class_="failure")
    assert views, f"{where}: the failure drill-downs are in the rendered DOM"
    perf = dom.find_all("tr", class_="perf-row")
    assert len(perf) == 4, f"{where}: a performance row per workload, got {len(perf)}"
    charts = dom.find_all("svg", class_="roofline")
    assert len(charts) == 1 and len(charts[0].find_all("circle")) >= 4, \
        f"{where}: the roofline chart with its points is in the rendered DOM"
    return views


def test_report_renders_in_headless_chromium(tmp_path: Path, reference_results: Path,
                                             never_fuses_results: Path) -> None:
    out = tmp_path / "index.html"
    perf = save(tmp_path / "perf" / "perf.json", mixed_document())
    _, static = render(out, [reference_results, never_fuses_results, perf])
    anchor = static.find_all("details", class_="failure")[0].attrs["id"]
    url = f"{out.as_uri()}#{anchor}"

    dom = parse(_chromium(tmp_path / "profile", "--dump-dom", url).stdout)
    views = _check_content(dom, "with JavaScript")
    opened = [v for v in views if v.attrs["id"] == anchor]
    assert opened and "open" in opened[0].attrs, \
        "following a link to a failure opens its drill-down"
    assert opened[0].find_all("svg", class_="diagram"), "the drill-down draws the graph"
    assert "js" in dom.find_all("html")[0].attrs.get("class", ""), "the page's script ran"

    # Without its script (Chromium's --dump-dom needs scripting on, so the script is cut out
    # of a copy instead) the page holds the same content.
    html = out.read_text(encoding="utf-8")
    start, end = html.index('<script id="report-script">'), html.index("</script>")
    bare = tmp_path / "no-script.html"
    bare.write_text(html[:start] + html[end + len("</script>"):], encoding="utf-8")
    plain = parse(_chromium(tmp_path / "profile", "--dump-dom", bare.as_uri()).stdout)
    _check_content(plain, "without JavaScript")
    assert not plain.find_all("script"), "the copy has no script"

    shot = tmp_path / "report.png"
    _chromium(tmp_path / "profile", "--hide-scrollbars", "--window-size=1280,1800",
              f"--screenshot={shot}", out.as_uri())
    assert shot.is_file(), "the screenshot is saved"
    assert _png_size(shot) == (1280, 1800), f"screenshot {shot} has the window's size"
    assert shot.stat().st_size > 20_000, f"screenshot {shot} shows a rendered page"
