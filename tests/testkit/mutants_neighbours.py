"""A planted matcher bug only the neighbouring-kinds method catches: the side subgraphs of a
pattern matched by comparing kind names by order (``<=``) rather than by equality, so a
producer whose kind sorts before the one the pattern names there (a Clamp where a Dequantize
belongs) is fused as that side op. tests/conformance/test_generator_corners.py runs it as
``testkit.mutants_neighbours:KindsComparedByOrder``.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

from fusionspec.reference.backend import ReferenceBackend
from fusionspec.reference.matcher import Matcher
from fusionspec.spec.graph import Graph, Op, Partition
from fusionspec.spec.pattern_tree import Node, OpRef


@contextmanager
def kinds_compared_by_order() -> Iterator[None]:
    """The reference's matcher with the side-subgraph kind check ``<=`` while it lasts."""
    saved = Matcher._leaf_ok

    def leaf_ok(self: Matcher, node: Node, op: Op, st: Any) -> bool:
        if isinstance(node, OpRef) and op.id not in st.used and op.id not in self.claimed:
            return op.kind <= node.kind  # the bug: an order, not an equality
        return saved(self, node, op, st)

    Matcher._leaf_ok = leaf_ok  # type: ignore[method-assign]
    try:
        yield
    finally:
        Matcher._leaf_ok = saved  # type: ignore[method-assign]


class KindsComparedByOrder(ReferenceBackend):
    """Matches a side subgraph's op by comparing kind names with ``<=``: a producer of a kind
    sorting before the named one is fused in its place."""

    name = "kinds-compared-by-order"

    def partition(self, graph: Graph) -> list[Partition]:
        with kinds_compared_by_order():
            return super().partition(graph)
