"""Plans of catalog instances: the op kinds a pattern tree's main chain can take, in order.

`instance_plans(entry)` expands a pattern tree into plans: which leaf each op takes, how many
copies each repetition has, which option of an alternation, which member of a category, and
whether a binary post-op reads its operand through a Dequantize. Together the plans reach every
alternative, every repetition count inside the bounds, every optional branch and every category
member. `fusionspec.conformance.generate.instance_build` wires a plan into a graph.
"""

from __future__ import annotations

import itertools
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field

from fusionspec.spec.catalog import PatternEntry
from fusionspec.spec.categories import BINARY, CATEGORIES
from fusionspec.spec.pattern_tree import (
    Alternation,
    CategoryRef,
    Chain,
    Group,
    Node,
    OpRef,
    Repeat,
    Subgraphs,
)

__all__ = ["Plan", "instance_plans"]


@dataclass(frozen=True)
class Plan:
    """The main chain's op kinds in order; `dequantized` marks the binary post-ops (by position
    in `kinds`) whose other operand comes through a Dequantize; `weights_quantize` adds the
    optional Quantize on the weights path."""

    kinds: tuple[str, ...]
    dequantized: frozenset[int] = field(default_factory=frozenset)
    weights_quantize: bool = False

    def describe(self) -> str:
        parts = [f"{k}(dq)" if i in self.dequantized else k for i, k in enumerate(self.kinds)]
        return " + ".join(parts) + ("  [Quantize on weights]" if self.weights_quantize else "")


def _expand(node: Node) -> list[list[str]]:
    """Every sequence of leaf tokens a node can match: op kinds, or '@Category' placeholders."""
    if isinstance(node, OpRef):
        return [[node.kind]]
    if isinstance(node, CategoryRef):
        return [[f"@{node.name}"]]
    if isinstance(node, Alternation):
        return [seq for option in node.options for seq in _expand(option)]
    if isinstance(node, Group):
        return _expand(node.body)
    if isinstance(node, Repeat):
        body = _expand(node.body)
        found: list[list[str]] = []
        for count in range(node.low, node.high + 1):
            # Cycle the body's options across copies instead of taking their full product.
            found.append([tok for i in range(count) for tok in body[i % len(body)]])
            if len(body) > 1 and count > 0:
                found.append([tok for i in range(count) for tok in body[(i + 1) % len(body)]])
        return found
    if isinstance(node, Chain):
        seqs: list[list[str]] = [[]]
        for item in node.items:
            seqs = [a + b for a in seqs for b in _expand(item)]
        return seqs
    raise ValueError("Subgraphs are expanded by instance_plans")


def instance_plans(entry: PatternEntry) -> list[Plan]:
    """Plans reaching every alternative, count, optional branch and category member."""
    tree = entry.tree
    main = tree.parts[-1] if isinstance(tree, Subgraphs) else tree
    sides = tree.parts[:-1] if isinstance(tree, Subgraphs) else ()
    has_t2 = any(isinstance(p, Repeat) for p in sides)
    weights_q = any(_has_optional_quantize(p) for p in sides)
    members = _member_cycles()
    unseen = {name: set(kinds) for name, kinds in CATEGORIES.items()}
    plans: dict[Plan, None] = {}
    sequences = _expand(main)
    needed = {tok[1:] for seq in sequences for tok in seq if tok.startswith("@")}
    n = 0
    # Go round again until every member of every category the pattern uses has appeared.
    while n == 0 or any(unseen[name] for name in needed):
        for seq in sequences:
            kinds = tuple(next(members[tok[1:]]) if tok.startswith("@") else tok for tok in seq)
            for tok, kind in zip(seq, kinds):
                if tok.startswith("@"):
                    unseen[tok[1:]].discard(kind)
            if _impossible(kinds):
                continue
            binaries = [i for i, k in enumerate(kinds) if k in BINARY and i > 0]
            dq = frozenset(binaries[: n % (len(binaries) + 1)]) if has_t2 else frozenset()
            plans[Plan(kinds, dq, weights_q and n % 2 == 1)] = None
            n += 1
    return list(plans)


def _impossible(kinds: Sequence[str]) -> bool:
    """Kind sequences the notation allows but no well-formed graph has: a Quantize right after
    a TypeCast would read bf16/f16, and Quantize takes f32 only (decision dec.sm_f2f_and_f2q)."""
    return any(a == "TypeCast" and b == "Quantize" for a, b in itertools.pairwise(kinds))


def _member_cycles() -> dict[str, Iterator[str]]:
    return {name: itertools.cycle(kinds) for name, kinds in CATEGORIES.items()}


def _has_optional_quantize(node: Node) -> bool:
    return isinstance(node, Chain) and any(
        isinstance(i, Repeat) and isinstance(i.body, OpRef) and i.body.kind == "Quantize"
        for i in node.items)
