"""Matched instances of a pattern: which op took which place, and what role that place plays.

A `Match` is what the rules of the catalog are checked against: the ops of one instance of a
pattern *in pattern order* (the order their leaves appear in the notation; the subgraphs of a
``,``-pattern one after the other, copies of a repetition in chain order), each as a
`MatchedOp` carrying

- `role`: the part of the pattern the op belongs to (`Role`), derived from the tree by
  `leaf_roles` so that rules can say "the src Dequantize" or "the post-ops" without knowing the
  pattern's shape;
- `path` and `node`: the leaf of the tree it matched (None for an op placed by hand in a
  near-miss instance that the notation itself would not accept).

The partitioner builds matches from a graph; `bind` builds one from a list of ops by their kinds
alone (no tensor wiring is checked), which is what tests and examples need.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from enum import StrEnum
from types import MappingProxyType

from .errors import FusionspecError
from .ir import Op
from .pattern_tree import (
    Alternation,
    CategoryRef,
    Chain,
    Group,
    Leaf,
    Node,
    OpRef,
    Path,
    Repeat,
    Subgraphs,
    leaves,
    mark_sites,
    node_at,
    op_kinds,
)

__all__ = ["Role", "MatchError", "MatchedOp", "Match", "leaf_roles", "match_kinds", "bind"]


class Role(StrEnum):
    """The part of a pattern an op belongs to (the pages' vocabulary where they have one)."""

    #: Dequantize (Q2F) ops before the base op on the main chain: the src path.
    src_q2f = "src_q2f"
    #: A side subgraph whose output the base op consumes: the weights path.
    weights_q2f = "weights_q2f"
    #: A side subgraph whose output a later op (a binary post-op) consumes.
    binary_q2f = "binary_q2f"
    #: The op the pattern is about (Convolution, SoftMax, the head of a post-op chain ...).
    base = "base"
    #: BiasAdd after the base op.
    bias = "bias"
    #: BatchNormInference after the base op.
    batchnorm = "batchnorm"
    #: Any other op after the base op: the epilogue's unary/binary ops.
    post_op = "post_op"
    #: TypeCast after the base op (F2F conversion).
    f2f = "f2f"
    #: Quantize after the base op (F2Q conversion).
    f2q = "f2q"


class MatchError(FusionspecError):
    """A match that cannot be built as asked (an unknown role, ops that fit no instance)."""


_CONVERSIONS = frozenset({"Quantize", "Dequantize"})
_AFTER_BASE = {frozenset({"BiasAdd"}): Role.bias,
               frozenset({"BatchNormInference"}): Role.batchnorm,
               frozenset({"TypeCast"}): Role.f2f,
               frozenset({"Quantize"}): Role.f2q}


def leaf_roles(tree: Node) -> Mapping[Path, Role]:
    """The role of every leaf of `tree`, by path.

    The main chain is the last subgraph. Its base item is the first one that is not made only of
    Quantize/Dequantize; items before it are the src path. After it, an item made only of
    BiasAdd, BatchNormInference, TypeCast or Quantize gets that role; anything else is a
    post-op. A side subgraph is the weights path when the base item consumes one of its marked
    tensors, else a binary operand path.
    """
    parts = tree.parts if isinstance(tree, Subgraphs) else (tree,)
    main_prefix: Path = (len(parts) - 1,) if isinstance(tree, Subgraphs) else ()
    main = parts[-1]
    items = main.items if isinstance(main, Chain) else (main,)
    item_paths = [(*main_prefix, i) if isinstance(main, Chain) else main_prefix
                  for i in range(len(items))]
    base = next((i for i, item in enumerate(items) if not op_kinds(item) <= _CONVERSIONS), 0)
    roles: dict[Path, Role] = {}

    def assign(root: Node, prefix: Path, role: Role) -> None:
        for path, _ in leaves(root):
            roles[(*prefix, *path)] = role

    for index, (item, prefix) in enumerate(zip(items, item_paths)):
        if index < base:
            role = Role.src_q2f
        elif index == base:
            role = Role.base
        else:
            role = _AFTER_BASE.get(op_kinds(item), Role.post_op)
        assign(item, prefix, role)
    base_inputs = {site.name for site in mark_sites(items[base]) if not site.output}
    for index, part in enumerate(parts[:-1]):
        outputs = {site.name for site in mark_sites(part) if site.output}
        assign(part, (index,), Role.weights_q2f if outputs & base_inputs else Role.binary_q2f)
    return MappingProxyType(roles)


# -- matching a sequence of op kinds -------------------------------------------------------

_Result = tuple[int, tuple[Path, ...]]


def _match(node: Node, kinds: Sequence[str], pos: int, path: Path) -> Iterator[_Result]:
    """Every way `node` matches kinds[pos:...], longest repetitions first."""
    if isinstance(node, OpRef | CategoryRef):
        allowed = (node.kind,) if isinstance(node, OpRef) else node.kinds
        if pos < len(kinds) and kinds[pos] in allowed:
            yield pos + 1, (path,)
    elif isinstance(node, Alternation):
        for index, option in enumerate(node.options):
            yield from _match(option, kinds, pos, (*path, index))
    elif isinstance(node, Group):
        yield from _match(node.body, kinds, pos, (*path, 0))
    elif isinstance(node, Repeat):
        yield from _repeat(node, kinds, pos, path, 0)
    else:
        items = node.items if isinstance(node, Chain) else node.parts
        yield from _sequence(items, kinds, pos, path, 0)


def _sequence(items: Sequence[Node], kinds: Sequence[str], pos: int, path: Path,
              index: int) -> Iterator[_Result]:
    if index == len(items):
        yield pos, ()
        return
    for middle, first in _match(items[index], kinds, pos, (*path, index)):
        for end, rest in _sequence(items, kinds, middle, path, index + 1):
            yield end, first + rest


def _repeat(node: Repeat, kinds: Sequence[str], pos: int, path: Path,
            count: int) -> Iterator[_Result]:
    if count < node.high:
        for middle, first in _match(node.body, kinds, pos, (*path, 0)):
            # An empty copy makes no progress; it only helps to reach the low bound.
            if middle == pos and count >= node.low:
                continue
            for end, rest in _repeat(node, kinds, middle, path, count + 1):
                yield end, first + rest
    if count >= node.low:
        yield pos, ()


def match_kinds(tree: Node, kinds: Sequence[str]) -> tuple[Path, ...] | None:
    """The leaf path for each of `kinds` when the sequence is an instance of `tree` read in
    notation order, else None. Repetitions take as many copies as they can."""
    kinds = tuple(kinds)
    for end, paths in _match(tree, kinds, 0, ()):
        if end == len(kinds):
            return paths
    return None


# -- matches -------------------------------------------------------------------------------

@dataclass(frozen=True)
class MatchedOp:
    """One op of a match, with its role and (when known) the leaf it matched."""

    op: Op
    role: Role
    path: Path | None = None
    node: Leaf | None = None


@dataclass(frozen=True)
class Match:
    """One instance of the pattern `pattern_id`: its ops in pattern order, on `engine_kind`
    (``"cpu"`` or ``"gpu"``, as the graph's engine kind; device rules look at it)."""

    pattern_id: str
    ops: tuple[MatchedOp, ...]
    engine_kind: str = "cpu"

    def __post_init__(self) -> None:
        object.__setattr__(self, "ops", tuple(self.ops))

    @classmethod
    def placed(cls, pattern_id: str, pairs: Iterable[tuple[Op, Role | str]],
               engine_kind: str = "cpu") -> Match:
        """A match from (op, role) pairs given by hand: for near-miss instances that break the
        notation itself (a TypeCast before a post-op, two BiasAdds ...)."""
        placed: list[MatchedOp] = []
        for op, role in pairs:
            try:
                placed.append(MatchedOp(op, Role(role)))
            except ValueError:
                known = ", ".join(r.value for r in Role)
                raise MatchError(f"unknown role {role!r} for op {op.id} ({op.kind}); known: "
                                 f"{known}") from None
        return cls(pattern_id, tuple(placed), engine_kind)

    @property
    def all_ops(self) -> tuple[Op, ...]:
        return tuple(matched.op for matched in self.ops)

    @property
    def kinds(self) -> tuple[str, ...]:
        return tuple(matched.op.kind for matched in self.ops)

    def with_role(self, *roles: Role) -> tuple[Op, ...]:
        """The ops in any of `roles`, in pattern order."""
        return tuple(matched.op for matched in self.ops if matched.role in roles)

    def first(self, role: Role) -> Op | None:
        """The first op in `role`, or None."""
        found = self.with_role(role)
        return found[0] if found else None

    @property
    def base(self) -> Op | None:
        """The base op (Convolution, SoftMax ...), or None in a match without one."""
        return self.first(Role.base)


def bind(pattern_id: str, tree: Node, ops: Sequence[Op], engine_kind: str = "cpu") -> Match:
    """A match of `ops` (in pattern order) against `tree` by op kinds alone; raises MatchError
    naming the kinds when they are no instance of the pattern."""
    paths = match_kinds(tree, [op.kind for op in ops])
    if paths is None:
        kinds = " ".join(op.kind for op in ops) or "(no ops)"
        raise MatchError(f"ops {kinds} are not an instance of {pattern_id} in pattern order")
    roles = leaf_roles(tree)
    matched = []
    for op, path in zip(ops, paths):
        leaf = node_at(tree, path)
        assert isinstance(leaf, OpRef | CategoryRef)  # match_kinds returns leaf paths only
        matched.append(MatchedOp(op, roles[path], path, leaf))
    return Match(pattern_id, tuple(matched), engine_kind)
