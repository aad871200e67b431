"""The partitioner on every oneDNN benchdnn pattern graph (real graphs, not generated ones).

The graphs live in oneDNN's repository under tests/benchdnn/inputs/graph/pattern/; point the
environment variable FUSIONSPEC_ONEDNN_INPUTS at a checkout's tests/benchdnn/inputs/graph (the
`corpus` nox session does). Partitions may differ from oneDNN's where oneDNN departs from its
pages; what is checked here is that every graph partitions, and into partitions that cover it.
"""

from __future__ import annotations

import importlib.util
import os
import warnings
from pathlib import Path

import pytest
from testkit.material import missing

from fusionspec.reference.partitioner import partition
from fusionspec.spec.errors import FusionspecError
from fusionspec.spec.onednn_json import load

ROOT = os.environ.get("FUSIONSPEC_ONEDNN_INPUTS")
FILES = sorted((Path(ROOT) / "pattern").rglob("*.json")) if ROOT else []


def _expected_failures() -> dict[str, tuple[str, str, str]]:
    """The corpus test's table of files that are invalid as shipped (one table, one place)."""
    path = Path(__file__).parent.parent / "spec" / "test_onednn_corpus.py"
    spec = importlib.util.spec_from_file_location("_onednn_corpus", path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    table: dict[str, tuple[str, str, str]] = module.EXPECTED_FAILURES
    return table


@pytest.fixture(autouse=True)
def _corpus_present() -> None:
    if not ROOT:
        missing("benchdnn-graphs", "set FUSIONSPEC_ONEDNN_INPUTS to oneDNN's "
                "tests/benchdnn/inputs/graph folder to run the corpus tests (the files are not "
                "shipped with fusionspec)")


@pytest.mark.parametrize("path", FILES or [Path("(no corpus)")],
                         ids=lambda p: f"{p.parent.name}/{p.name}")
def test_benchdnn_pattern_graph_partitions(path: Path) -> None:
    assert ROOT is not None
    rel = path.relative_to(ROOT).as_posix()
    invalid = _expected_failures().get(rel)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # kinds outside the spec warn; they are expected here
        try:
            graph = load(path).finalize()
        except FusionspecError as exc:
            assert invalid is not None, f"{rel}: a real oneDNN graph failed to load: {exc}"
            return  # invalid as shipped: the corpus test checks the exact rule
        assert invalid is None, f"{rel}: loads although the corpus table says {invalid}"
        parts = partition(graph)
    covered = sorted(op.id for p in parts for op in p.ops)
    assert covered == sorted(op.id for op in graph.ops), \
        f"{path.name}: partitions cover ops {covered}, graph has {sorted(o.id for o in graph.ops)}"
