"""Drawing the shape of a pattern instance from its tree: which ops, in which order.

`draw_skeleton(draw, entry)` walks the catalog entry's pattern tree and draws every choice the
notation leaves open:

- a `Repeat` (``X^{0-3}``, ``X^?``) draws its number of copies;
- an `Alternation` (``[A | B]``) draws an option per copy;
- a `CategoryRef` (``Unary``) draws a member kind per copy;
- a ``,``-joined side subgraph (``Dequantize_{>t2}^{0-3}``) is attached to main-chain ops that
  read its mark (``Binary_{<t2}``), as many copies as there are readers at most.

The result is a `Skeleton`: the main chain's op kinds in order (`Step`), the side subgraphs and
the grammar `features` that were exercised. Feature keys are the notation of the tree node
(``"[Unary | Binary]^{0-3}_{>out}"``, ``"Unary"``); a key that appears twice in one tree gets
``" #2"`` appended. Values are the count drawn (an int, for a `Repeat`) or the options and
members taken, comma-joined and sorted (``"Add,ReLU"``);
`fusionspec.conformance.generate.coverage` compares them with what the grammar allows.

Within one instance, a repeated alternation draws its options from a subset it draws first
(swarm testing), so that chains of a single option are as likely as mixed ones. `bounds`
overrides a `Repeat`'s bounds by tree path: the dtype rows use it to require an optional item
(an F2Q Quantize for a ``dst=u8`` row), near misses to draw one copy more than the notation
allows.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from functools import cache

from hypothesis import strategies as st

from fusionspec.spec.catalog import PatternEntry
from fusionspec.spec.catalog import entry as catalog_entry
from fusionspec.spec.match import Role
from fusionspec.spec.notation import to_notation
from fusionspec.spec.pattern_tree import (
    Alternation,
    CategoryRef,
    Chain,
    Group,
    Node,
    OpRef,
    Path,
    Repeat,
    Subgraphs,
    mark_sites,
    walk,
)

__all__ = ["Step", "Side", "Skeleton", "Bounds", "draw_skeleton", "feature_keys",
           "post_op_repeats", "optional_path", "main_part"]

#: Overridden (low, high) bounds of `Repeat` nodes, by tree path.
Bounds = Mapping[Path, tuple[int, int]]
FeatureValue = str | int


@dataclass(frozen=True)
class Step:
    """One op of the main chain. `path` is the tree leaf it instantiates (None for an op a near
    miss placed where the notation has none); `reads` names the side-subgraph mark feeding its
    other input; `chain_port` forces the input port the chain enters a binary through (None:
    drawn where the op is commutative)."""

    kind: str
    path: Path | None
    reads: str | None = None
    chain_port: int | None = None


@dataclass(frozen=True)
class Side:
    """A side subgraph instance: `steps` in chain order, the last one outputs the tensor marked
    `mark`, which main-chain step `reader` reads on its non-chain input."""

    reader: int
    mark: str
    steps: tuple[Step, ...]


@dataclass(frozen=True)
class Skeleton:
    pattern: str
    steps: tuple[Step, ...]
    sides: tuple[Side, ...] = ()
    features: Mapping[str, FeatureValue] = field(default_factory=dict)

    def side_of(self, index: int) -> Side | None:
        """The side subgraph read by main-chain step `index`, if any."""
        return next((s for s in self.sides if s.reader == index), None)

    def kinds(self) -> tuple[str, ...]:
        return tuple(step.kind for step in self.steps)


def main_part(entry: PatternEntry) -> tuple[Node, Path]:
    """The main chain of `entry` (the last ``,``-joined part) and its path."""
    tree = entry.tree
    if isinstance(tree, Subgraphs):
        return tree.parts[-1], (len(tree.parts) - 1,)
    return tree, ()


@cache
def feature_keys(pattern_id: str) -> Mapping[Path, str]:
    """The feature key of every Repeat, Alternation and CategoryRef of a pattern's tree."""
    keys: dict[Path, str] = {}
    seen: dict[str, int] = {}
    for path, node in walk(catalog_entry(pattern_id).tree):
        if isinstance(node, Repeat | Alternation | CategoryRef):
            text = to_notation(node)
            seen[text] = seen.get(text, 0) + 1
            keys[path] = text if seen[text] == 1 else f"{text} #{seen[text]}"
    return keys


@cache
def post_op_repeats(pattern_id: str) -> tuple[Path, ...]:
    """Paths of the Repeats whose copies are post-ops (the unary/binary epilogue)."""
    entry = catalog_entry(pattern_id)
    found = []
    for path, node in walk(entry.tree):
        if isinstance(node, Repeat) and node.high > 1:
            roles = {entry.roles[p] for p in entry.roles if p[:len(path)] == path}
            if roles == {Role.post_op}:
                found.append(path)
    return tuple(found)


@cache
def _optional_paths(pattern_id: str) -> dict[tuple[str, Role], Path]:
    entry = catalog_entry(pattern_id)
    found: dict[tuple[str, Role], Path] = {}
    for path, node in walk(entry.tree):
        if isinstance(node, Repeat) and node.high == 1 and isinstance(node.body, OpRef):
            found.setdefault((node.body.kind, entry.roles[(*path, 0)]), path)
    return found


def optional_path(entry: PatternEntry, kind: str, role: Role) -> Path | None:
    """The path of the optional item ``kind^?`` whose op plays `role` (``Quantize^?`` on the
    weights path is `Role.weights_q2f`, ``Quantize^?_{>out}`` is `Role.f2q`), if any."""
    return _optional_paths(entry.id).get((kind, role))


class _Drawer:
    """Draws one instance of a tree node after another, collecting features."""

    def __init__(self, draw: st.DrawFn, pattern_id: str, bounds: Bounds) -> None:
        self.draw = draw
        self.keys = feature_keys(pattern_id)
        self.bounds = bounds
        self.counts: dict[str, int] = {}
        self.choices: dict[str, set[str]] = {}
        self.enabled: dict[Path, Sequence[int]] = {}

    def node(self, node: Node, path: Path, out: list[Step]) -> None:
        if isinstance(node, OpRef):
            out.append(Step(node.kind, path, _read_mark(node)))
        elif isinstance(node, CategoryRef):
            kind = self.draw(st.sampled_from(node.kinds), label=self.keys[path])
            self.choices.setdefault(self.keys[path], set()).add(kind)
            out.append(Step(kind, path, _read_mark(node)))
        elif isinstance(node, Alternation):
            options = self.enabled.get(path, range(len(node.options)))
            index = self.draw(st.sampled_from(options), label=self.keys[path])
            self.choices.setdefault(self.keys[path], set()).add(to_notation(node.options[index]))
            self.node(node.options[index], (*path, index), out)
        elif isinstance(node, Group):
            self.node(node.body, (*path, 0), out)
        elif isinstance(node, Repeat):
            low, high = self.bounds.get(path, (node.low, node.high))
            if isinstance(node.body, OpRef) and node.body.kind == "Quantize" and out and (
                    out[-1].kind == "TypeCast"):
                # Quantize reads f32 only: no well-formed graph has it after a TypeCast
                # (decision dec.softmax_f2f_and_f2q).
                low = high = 0
            count = self.draw(st.sampled_from(range(low, high + 1)), label=self.keys[path])
            self.counts[self.keys[path]] = count
            if isinstance(node.body, Alternation) and count > 1:
                # Swarm testing: each instance enables a subset of the options for all its
                # copies, so that chains of one option only (three dequantized binaries ...)
                # are as likely as mixed ones.
                self.enabled[(*path, 0)] = sorted(self.draw(st.sets(
                    st.sampled_from(range(len(node.body.options))), min_size=1),
                    label=f"options of {self.keys[path]}"))
            for _ in range(count):
                self.node(node.body, (*path, 0), out)
        elif isinstance(node, Chain):
            for index, item in enumerate(node.items):
                self.node(item, (*path, index), out)
        else:
            raise AssertionError("Subgraphs only at the root")  # the parser guarantees it

    def features(self) -> dict[str, FeatureValue]:
        found: dict[str, FeatureValue] = dict(self.counts)
        found.update({key: ",".join(sorted(values)) for key, values in self.choices.items()})
        return found


def _read_mark(node: OpRef | CategoryRef) -> str | None:
    return node.marks.inputs[0] if node.marks.inputs else None


def draw_skeleton(draw: st.DrawFn, entry: PatternEntry, bounds: Bounds | None = None,
                  ) -> Skeleton:
    """One instance shape of `entry` (see the module docstring)."""
    drawer = _Drawer(draw, entry.id, bounds or {})
    main, main_path = main_part(entry)
    steps: list[Step] = []
    drawer.node(main, main_path, steps)
    sides: list[Side] = []
    tree = entry.tree
    for index, part in enumerate(tree.parts[:-1] if isinstance(tree, Subgraphs) else ()):
        mark = next(site.name for site in mark_sites(part) if site.output)
        readers = [i for i, step in enumerate(steps) if step.reads == mark]
        if isinstance(part, Repeat):
            key = drawer.keys[(index,)]
            low, high = (bounds or {}).get((index,), (part.low, part.high))
            high = min(high, len(readers))
            count = draw(st.sampled_from(range(min(low, high), high + 1)), label=key)
            drawer.counts[key] = count
            chosen = draw(st.lists(st.sampled_from(readers), min_size=count, max_size=count,
                                   unique=True), label=f"readers of {mark}") if count else []
            for reader in sorted(chosen):
                body: list[Step] = []
                drawer.node(part.body, (index, 0), body)
                sides.append(Side(reader, mark, tuple(body)))
        else:
            assert readers, f"{entry.id}: side subgraph {mark} has no reader"
            body = []
            drawer.node(part, (index,), body)
            sides.append(Side(readers[0], mark, tuple(body)))
    # Readers left without a side subgraph take a plain input there.
    fed = {side.reader for side in sides}
    steps = [s if s.reads is None or i in fed else Step(s.kind, s.path, None, s.chain_port)
             for i, s in enumerate(steps)]
    return Skeleton(entry.id, tuple(steps), tuple(sides), drawer.features())
