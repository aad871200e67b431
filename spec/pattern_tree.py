"""The pattern tree: what a pattern written in the pages' notation means, as frozen data.

`fusionspec.spec.notation.parse` turns a string into these nodes and `to_notation` prints them
back. The node types, one per construct of the notation:

============================  ===================================  ============================
notation                      node                                 children (path index)
============================  ===================================  ============================
``Convolution``               `OpRef` (one op of that kind)        none
``Unary``                     `CategoryRef` (one op of the set)    none
``[A | B + C]``               `Alternation` (one of the options)   ``options[i]`` -> ``i``
``[A + B]``                   `Group` (a bracket without ``|``)    ``body`` -> ``0``
``A + B``                     `Chain` (each feeds the next)        ``items[i]`` -> ``i``
``X^?`` ``X^{3}`` ``X^{0-3}``  `Repeat` (low..high copies of X)     ``body`` -> ``0``
``A, B + C``                  `Subgraphs` (joined by marks)        ``parts[i]`` -> ``i``
============================  ===================================  ============================

Tensor marks (subscripts) are `Marks`: ``_{>t1}`` names an output, ``_{<t1}`` an input; ``out``
as an output name is a partition output and ``in1``/``in2``... as an input name a partition
input. A mark written before a superscript belongs to the repeated body
(``Dequantize_{>t2}^{0-3}``: every copy outputs a t2); one written after it belongs to the
`Repeat` (``[Unary | Binary]^{0-3}_{>out}``: the last copy's output, or the output of the op
before when there are no copies). `Chain` and `Subgraphs` cannot carry marks in the notation;
their `marks` property is always empty so that every node can be asked for marks.

A *path* is the tuple of child indices from the root to a node (see the table); `walk`, `leaves`
and `node_at` use it, and a match records for each op the path of the leaf it matched.

All nodes validate their shape on construction and raise `PatternTreeError` when it cannot be
printed as notation (a `Chain` of one item, a `Repeat` of a `Chain`, bounds 2..1 ...).
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from dataclasses import dataclass
from typing import TypeAlias

from .categories import CATEGORIES
from .errors import FusionspecError
from .opschemas import SCHEMAS

__all__ = [
    "PatternTreeError",
    "Marks",
    "NO_MARKS",
    "OpRef",
    "CategoryRef",
    "Alternation",
    "Group",
    "Chain",
    "Repeat",
    "Subgraphs",
    "Node",
    "Leaf",
    "Path",
    "is_partition_input",
    "walk",
    "leaves",
    "node_at",
    "children",
    "op_kinds",
    "first_kinds",
    "min_ops",
    "max_ops",
    "MarkSite",
    "mark_sites",
]

#: Child indices from a root node to a node below it.
Path: TypeAlias = tuple[int, ...]

_NAME = re.compile(r"[A-Za-z][A-Za-z0-9_]*\Z")
_INPUT_NAME = re.compile(r"in[0-9]*\Z")


class PatternTreeError(FusionspecError):
    """A pattern tree built in code that the notation cannot express."""


def is_partition_input(name: str) -> bool:
    """Whether an input mark name denotes a partition input (``in``, ``in1``, ``in2``...)."""
    return _INPUT_NAME.match(name) is not None


@dataclass(frozen=True)
class Marks:
    """Tensor names marked on a node: `outputs` after ``>``, `inputs` after ``<``."""

    outputs: tuple[str, ...] = ()
    inputs: tuple[str, ...] = ()

    def __post_init__(self) -> None:
        object.__setattr__(self, "outputs", tuple(self.outputs))
        object.__setattr__(self, "inputs", tuple(self.inputs))
        for direction, names in ((">", self.outputs), ("<", self.inputs)):
            for name in names:
                if not isinstance(name, str) or _NAME.match(name) is None:
                    raise PatternTreeError(f"mark {direction}{name!r} is not a tensor name "
                                           "(a letter, then letters, digits or _)")
            if len(set(names)) != len(names):
                raise PatternTreeError(f"duplicate {direction} mark in {names}")
        if "out" in self.inputs:
            raise PatternTreeError("'out' names a partition output; it cannot be an input mark")
        for name in self.outputs:
            if is_partition_input(name):
                raise PatternTreeError(f"{name!r} names a partition input; it cannot be an "
                                       "output mark")

    def __bool__(self) -> bool:
        return bool(self.outputs or self.inputs)

    @property
    def is_partition_output(self) -> bool:
        """Whether the node's output is marked ``>out``."""
        return "out" in self.outputs


NO_MARKS = Marks()


@dataclass(frozen=True)
class OpRef:
    """Exactly one op of kind `kind` (an op kind of the pages, e.g. ``"Convolution"``)."""

    kind: str
    marks: Marks = NO_MARKS

    def __post_init__(self) -> None:
        if self.kind in CATEGORIES:
            raise PatternTreeError(f"{self.kind!r} is a category: use CategoryRef")
        if self.kind not in SCHEMAS:
            raise PatternTreeError(f"{self.kind!r} is not an op kind of the pages")


@dataclass(frozen=True)
class CategoryRef:
    """Exactly one op whose kind is a member of the category `name` (Unary, Binary, Reduction)."""

    name: str
    marks: Marks = NO_MARKS

    def __post_init__(self) -> None:
        if self.name not in CATEGORIES:
            known = ", ".join(CATEGORIES)
            raise PatternTreeError(f"{self.name!r} is not a category (known: {known})")

    @property
    def kinds(self) -> tuple[str, ...]:
        """The member op kinds, in the page's order."""
        return CATEGORIES[self.name]


@dataclass(frozen=True)
class Alternation:
    """One of `options` (a bracket with ``|``); at least two options."""

    options: tuple[Node, ...]
    marks: Marks = NO_MARKS

    def __post_init__(self) -> None:
        object.__setattr__(self, "options", tuple(self.options))
        if len(self.options) < 2:
            raise PatternTreeError("an Alternation needs at least two options")
        for option in self.options:
            _require_node(option, "an Alternation option")
            if isinstance(option, Subgraphs):
                raise PatternTreeError("',' subgraphs cannot be an Alternation option")


@dataclass(frozen=True)
class Group:
    """A bracket without ``|``: `body` as one item (so that a Chain can be repeated or marked)."""

    body: Node
    marks: Marks = NO_MARKS

    def __post_init__(self) -> None:
        _require_node(self.body, "a Group body")
        if isinstance(self.body, Subgraphs):
            raise PatternTreeError("',' subgraphs cannot be put in a bracket")


@dataclass(frozen=True)
class Chain:
    """``A + B + ...``: each item's output is the next item's first operand; two items or more."""

    items: tuple[Node, ...]

    def __post_init__(self) -> None:
        object.__setattr__(self, "items", tuple(self.items))
        if len(self.items) < 2:
            raise PatternTreeError("a Chain needs at least two items")
        for item in self.items:
            _require_node(item, "a Chain item")
            if isinstance(item, Chain | Subgraphs):
                raise PatternTreeError(f"a Chain item cannot be a {type(item).__name__} "
                                       "(bracket it in a Group)")

    @property
    def marks(self) -> Marks:
        return NO_MARKS


@dataclass(frozen=True)
class Repeat:
    """`low` to `high` copies of `body`, chained like ``+`` (``^?`` is 0..1, ``^{3}`` 3..3)."""

    body: Node
    low: int
    high: int
    marks: Marks = NO_MARKS

    def __post_init__(self) -> None:
        _require_node(self.body, "a Repeat body")
        if isinstance(self.body, Chain | Subgraphs | Repeat):
            raise PatternTreeError(f"a Repeat body cannot be a {type(self.body).__name__} "
                                   "(bracket it in a Group)")
        for name in ("low", "high"):
            value = getattr(self, name)
            if not isinstance(value, int) or isinstance(value, bool) or value < 0:
                raise PatternTreeError(f"Repeat {name} must be an int >= 0, got {value!r}")
        if self.high < 1:
            raise PatternTreeError("Repeat high must be at least 1")
        if self.low > self.high:
            raise PatternTreeError(f"Repeat bounds {self.low}-{self.high}: low exceeds high")

    @property
    def optional(self) -> bool:
        """Whether this is ``^?`` (0 or 1 copy)."""
        return (self.low, self.high) == (0, 1)


@dataclass(frozen=True)
class Subgraphs:
    """``P1, P2, ...``: subgraphs joined by their marked tensors; the last one is the main chain
    (it holds the op the pattern is about) in every pattern of the pages."""

    parts: tuple[Node, ...]

    def __post_init__(self) -> None:
        object.__setattr__(self, "parts", tuple(self.parts))
        if len(self.parts) < 2:
            raise PatternTreeError("Subgraphs needs at least two parts")
        for part in self.parts:
            _require_node(part, "a Subgraphs part")
            if isinstance(part, Subgraphs):
                raise PatternTreeError("Subgraphs cannot nest")

    @property
    def marks(self) -> Marks:
        return NO_MARKS


#: Any node of a pattern tree.
Node: TypeAlias = OpRef | CategoryRef | Alternation | Group | Chain | Repeat | Subgraphs
#: A node that matches exactly one op.
Leaf: TypeAlias = OpRef | CategoryRef

_NODE_TYPES = (OpRef, CategoryRef, Alternation, Group, Chain, Repeat, Subgraphs)


def _require_node(value: object, what: str) -> None:
    if not isinstance(value, _NODE_TYPES):
        raise PatternTreeError(f"{what} must be a pattern node, got {type(value).__name__}")


# -- traversal -----------------------------------------------------------------------------

def children(node: Node) -> tuple[Node, ...]:
    """The direct children of `node`, in path-index order."""
    if isinstance(node, Alternation):
        return node.options
    if isinstance(node, Chain):
        return node.items
    if isinstance(node, Subgraphs):
        return node.parts
    if isinstance(node, Group | Repeat):
        return (node.body,)
    return ()


def walk(node: Node, path: Path = ()) -> Iterator[tuple[Path, Node]]:
    """Every node below and including `node`, pre-order, with its path from `node`."""
    yield path, node
    for index, child in enumerate(children(node)):
        yield from walk(child, (*path, index))


def leaves(node: Node) -> Iterator[tuple[Path, Leaf]]:
    """The `OpRef` and `CategoryRef` nodes below `node`, in notation order, with their paths."""
    for path, sub in walk(node):
        if isinstance(sub, OpRef | CategoryRef):
            yield path, sub


def node_at(root: Node, path: Path) -> Node:
    """The node at `path` below `root`; raises PatternTreeError for a path that leads nowhere."""
    node = root
    for depth, index in enumerate(path):
        below = children(node)
        if not 0 <= index < len(below):
            raise PatternTreeError(f"path {path} leads nowhere: {type(node).__name__} at "
                                   f"{path[:depth]} has no child {index}")
        node = below[index]
    return node


# -- what a node can match -----------------------------------------------------------------

def op_kinds(node: Node) -> frozenset[str]:
    """Every op kind some op matched by `node` can have."""
    found: set[str] = set()
    for _, leaf in leaves(node):
        found.update((leaf.kind,) if isinstance(leaf, OpRef) else leaf.kinds)
    return frozenset(found)


def first_kinds(node: Node) -> frozenset[str]:
    """The op kinds the first op of a match of `node` can have (within one subgraph: for
    `Subgraphs`, the union over its parts, since each part starts a chain of its own)."""
    if isinstance(node, OpRef):
        return frozenset({node.kind})
    if isinstance(node, CategoryRef):
        return frozenset(node.kinds)
    if isinstance(node, Alternation | Subgraphs):
        return frozenset().union(*(first_kinds(child) for child in children(node)))
    if isinstance(node, Group | Repeat):
        return first_kinds(node.body)
    found: set[str] = set()
    for item in node.items:
        found |= first_kinds(item)
        if min_ops(item) > 0:
            break
    return frozenset(found)


def min_ops(node: Node) -> int:
    """The fewest ops a match of `node` has."""
    if isinstance(node, OpRef | CategoryRef):
        return 1
    if isinstance(node, Alternation):
        return min(min_ops(option) for option in node.options)
    if isinstance(node, Group):
        return min_ops(node.body)
    if isinstance(node, Repeat):
        return node.low * min_ops(node.body)
    items = node.items if isinstance(node, Chain) else node.parts
    return sum(min_ops(item) for item in items)


def max_ops(node: Node) -> int:
    """The most ops a match of `node` has."""
    if isinstance(node, OpRef | CategoryRef):
        return 1
    if isinstance(node, Alternation):
        return max(max_ops(option) for option in node.options)
    if isinstance(node, Group):
        return max_ops(node.body)
    if isinstance(node, Repeat):
        return node.high * max_ops(node.body)
    items = node.items if isinstance(node, Chain) else node.parts
    return sum(max_ops(item) for item in items)


# -- tensor marks --------------------------------------------------------------------------

@dataclass(frozen=True)
class MarkSite:
    """One tensor mark in a tree: the node at `path` outputs (``>name``) or inputs (``<name``)
    the tensor `name`."""

    path: Path
    name: str
    output: bool


def mark_sites(node: Node) -> tuple[MarkSite, ...]:
    """Every tensor mark below `node`, in notation order (inputs before outputs per node)."""
    sites: list[MarkSite] = []
    for path, sub in walk(node):
        sites += [MarkSite(path, name, False) for name in sub.marks.inputs]
        sites += [MarkSite(path, name, True) for name in sub.marks.outputs]
    return tuple(sites)
