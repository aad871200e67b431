"""A graph object finalized again gives its finalized graph at once, without validating it
again; everything else about finalizing stays: another object is validated on its own, a graph
that breaks a rule raises each time, an op outside the spec warns each time, and nothing is
kept once the graph is gone."""

from __future__ import annotations

import gc
import warnings
from collections.abc import Sequence

import pytest

from fusionspec.spec import DataType, Graph, GraphError, LogicalTensor, Op, OutsideSpecWarning
from fusionspec.spec import graph as graph_module
from fusionspec.spec.ir import Op as IrOp


def _relu(attrs: dict[str, object] | None = None, kind: str = "ReLU") -> Graph:
    x = LogicalTensor(0, DataType.f32, (2, 8))
    y = LogicalTensor(1, DataType.f32, (2, 8))
    return Graph([Op(0, kind, inputs=(x,), outputs=(y,), attrs=attrs or {})])


@pytest.fixture
def validations(monkeypatch: pytest.MonkeyPatch) -> list[int]:
    """One entry per graph the validator checks."""
    calls: list[int] = []
    real = graph_module.finalize_ops

    def counted(ops: Sequence[IrOp], *, engine_kind: str, fpmath_mode: str) -> list[IrOp]:
        calls.append(len(ops))
        return real(ops, engine_kind=engine_kind, fpmath_mode=fpmath_mode)

    monkeypatch.setattr(graph_module, "finalize_ops", counted)
    return calls


def test_a_graph_finalized_again_is_not_validated_again(validations: list[int]) -> None:
    graph = _relu()
    first = graph.finalize()
    assert graph.finalize() is first, "the same graph object gives the same finalized graph"
    assert len(validations) == 1, f"validated {len(validations)} times, not once"


def test_an_equal_graph_object_is_validated_on_its_own(validations: list[int]) -> None:
    one, other = _relu(), _relu()
    assert one == other, "two equal graphs"
    assert one.finalize() is not other.finalize(), "each object has its own finalized graph"
    assert len(validations) == 2, "each graph object is validated"


def test_a_graph_that_breaks_a_rule_raises_each_time(validations: list[int]) -> None:
    graph = _relu({"stray": 1})
    for attempt in range(2):
        with pytest.raises(GraphError, match="no attribute"):
            graph.finalize()
        assert len(validations) == attempt + 1, "a refused graph is validated each time"


def test_an_op_outside_the_spec_warns_each_time() -> None:
    graph = _relu(kind="StaticReshape")
    for attempt in range(2):
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            graph.finalize()
        assert any(issubclass(w.category, OutsideSpecWarning) for w in caught), \
            f"finalize number {attempt + 1} warns about the op outside the spec"


def test_nothing_is_kept_once_the_graph_is_gone() -> None:
    graph = _relu()
    graph.finalize()
    key = id(graph)
    assert key in graph_module._FINALIZED, "the finalized graph is kept while the graph lives"
    del graph
    gc.collect()
    assert key not in graph_module._FINALIZED, "the entry goes with its graph"
