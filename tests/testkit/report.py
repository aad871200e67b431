"""Rendering reports the way users do (`fusionspec report`), and editing copies of results."""

from __future__ import annotations

import json
import shutil
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from fusionspec.cli.main import main
from fusionspec.conformance.cases import FAILING
from testkit.html import Node, parse

#: The patterns the tests' runs cover: a float inference pair and the Softmax chain (two
#: families, small graphs and long chains).
PATTERNS = ("fp.reciprocal_multiply", "softmax.post_ops")


def render(out: Path, results: Sequence[Path], *, baselines: Sequence[Path] = (),
           drilldowns: int | None = None) -> tuple[str, Node]:
    """Run ``fusionspec report`` into `out` and return the HTML and its parsed DOM."""
    argv = ["report", *map(str, results), "-o", str(out)]
    for base in baselines:
        argv += ["--baseline", str(base)]
    if drilldowns is not None:
        argv += ["--drilldowns", str(drilldowns)]
    code = main(argv)
    assert code == 0, f"fusionspec {' '.join(argv)} exited with {code}"
    html = out.read_text(encoding="utf-8")
    return html, parse(html)


def copy_results(results: Path, target: Path) -> Path:
    """A copy of a results folder (results.json and failures/) under `target`."""
    shutil.copytree(results.parent, target)
    return target / "results.json"


def load(path: Path) -> dict[str, Any]:
    data: dict[str, Any] = json.loads(path.read_text(encoding="utf-8"))
    return data


def save(path: Path, document: dict[str, Any]) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(document, indent=1), encoding="utf-8")
    return path


def failing_count(document: dict[str, Any], pattern: str | None = None) -> int:
    """Verdicts with a failing status (of one pattern, or all)."""
    failing = {s.value for s in FAILING}
    return sum(1 for v in document["verdicts"]
               if v["status"] in failing and (pattern is None or v["pattern"] == pattern))
