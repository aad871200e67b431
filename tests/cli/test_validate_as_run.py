"""``fusionspec validate`` makes every check ``fusionspec run`` makes before executing a graph
(memory budget, partitioning, filling every input): a graph run refuses before it executes
anything is refused by validate with the same message, and a graph validate accepts gets past
every one of run's checks."""

from __future__ import annotations

import copy
import json
from pathlib import Path
from typing import Any
from unittest import mock

import pytest
from hypothesis import given
from hypothesis import strategies as st
from testkit.fuzz import FUZZ, mutated, run_cli, sandbox
from testkit.toy_backends import valid_case

from fusionspec.cli.main import main
from fusionspec.spec.catalog import CATALOG
from fusionspec.spec.dtypes import DataType as D
from fusionspec.spec.graph import Graph, LogicalTensor, Op
from fusionspec.spec.onednn_json import dump, to_dict

#: Shapes and dtypes aimed at what only running needs: unknown or huge shapes, types with no
#: filling.
SHAPES = ([-1], [-1, 3], [], [0], [1, -1, 6, 6], [10**5, 10**5], [2**20, 2**20, 4])
DTYPES = ("f32", "s8", "bf16", "boolean", "s64", "undef", "f8_e4m3", "s4")
SEEDS = {e.id: to_dict(valid_case(e.id, 0).graph) for e in CATALOG}


@st.composite
def _edited(draw: st.DrawFn) -> tuple[str, str]:
    """A catalog graph with the shape or dtype of a tensor or two changed."""
    pattern = draw(st.sampled_from(sorted(SEEDS)))
    doc = copy.deepcopy(SEEDS[pattern])
    for _ in range(draw(st.integers(1, 2))):
        op = draw(st.sampled_from(doc["graph"]))
        port = draw(st.sampled_from([*op["inputs"], *op["outputs"]]))
        if draw(st.booleans()):
            port["shape"] = draw(st.sampled_from(SHAPES))
        else:
            port["dtype"] = draw(st.sampled_from(DTYPES))
    return pattern, json.dumps(doc)


@st.composite
def _mutated(draw: st.DrawFn) -> tuple[str, str]:
    """A catalog graph with hostile values anywhere."""
    pattern = draw(st.sampled_from(sorted(SEEDS)))
    return pattern, draw(mutated(SEEDS[pattern], (*SHAPES, *DTYPES)))


def _relu(shape: tuple[int, ...] | None) -> Graph:
    t = [LogicalTensor(0, D.f32, shape), LogicalTensor(1, D.f32, shape)]
    return Graph([Op(0, "ReLU", (t[0],), (t[1],))])


def _said(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str]:
    code = main(list(argv))
    captured = capsys.readouterr()
    return code, captured.out + captured.err


@pytest.mark.parametrize(("graph", "budget", "message"), [
    (_relu((-1, 3)), [], "cannot fill an input whose shape is not known"),
    (_relu(None), [], "cannot fill an input whose shape is not known"),
    (_relu((1024, 1024)), ["--max-memory", "0.001"], "needs about"),
], ids=["unknown-dim", "no-shape", "past-the-budget"])
def test_validate_refuses_what_run_refuses(graph: Graph, budget: list[str], message: str,
                                           tmp_path: Path,
                                           capsys: pytest.CaptureFixture[str]) -> None:
    path = tmp_path / "graph.json"
    dump(graph, path)
    ran, run_said = _said(capsys, "run", str(path), *budget)
    checked, validate_said = _said(capsys, "validate", str(path), *budget)
    assert ran == 1 and message in run_said, f"run refuses it: {ran} {run_said}"
    assert checked == 1 and message in validate_said, \
        f"validate refuses it with run's message: {checked} {validate_said}"


def _outcome(box: Path, argv: list[str | Path]) -> tuple[int, str]:
    outcome = run_cli(box, argv)
    return outcome.code, outcome.out + outcome.err


def _stub_execute(graph: Any, inputs: Any, **_: Any) -> dict[int, Any]:
    return {}


@FUZZ
@given(data=st.data())
def test_run_refuses_before_executing_only_what_validate_refuses(data: st.DataObject) -> None:
    pattern, text = data.draw(_edited() | _mutated())
    with sandbox() as box:
        graph = box / "in" / "graph.json"
        graph.write_text(text)
        checked, said = _outcome(box, ["validate", graph, "--json", "--max-memory", "0.25"])
        # Execution itself is stubbed: what is left of run is its checks before executing.
        with mock.patch("fusionspec.cli.run.execute", _stub_execute):
            ran, run_said = _outcome(box, ["run", graph, "--max-memory", "0.25"])
    result = json.loads(said) if said.lstrip().startswith("{") else {}
    if checked == 0:
        assert ran == 0, f"{pattern}: validate accepts a graph run refuses before executing: " \
                         f"{run_said[-600:]}"
    elif result.get("ops") is not None:  # it loaded: the refusal is one of run's checks
        message = str((result.get("error") or {}).get("message"))
        assert ran != 0 and message.split(": ")[-1] in run_said, \
            f"{pattern}: validate refuses ({message}) but run says: {ran} {run_said[-600:]}"
