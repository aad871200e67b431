"""Matching one catalog pattern at one op of a graph.

The matcher walks a pattern tree (`fusionspec.spec.pattern_tree`) along the graph, following the
notation's meaning:

- ``A + B``: B consumes A's output as its first operand (port 0; for the commutative binaries Add,
  Multiply, Maximum and Minimum either port). A's output must have no other consumer: an
  intermediate tensor of a fused partition has exactly one consumer, unless the pattern marks it
  ``>out``, so a fan-out ends the chain.
- ``^{a-b}`` / ``^?``: a repetition; every count from the most the graph offers down to `a` is a
  candidate, longest first.
- ``[A | B]``: any option.
- ``X_{<t1}`` reads, on X's first input that is not the chain's, the tensor a ``,``-joined side
  subgraph marks ``>t1``; that subgraph is matched backwards from the tensor's producer. A side
  subgraph that can be empty (``Dequantize_{>t2}^{0-3}``) is optional; each copy of a repeated
  one feeds one reader.
- The last ``,``-joined subgraph is the main chain; its first op is the match's *head*.

Every candidate is checked for convexity (no path leaves it and re-enters) and against the
catalog rules of its pattern; `best_match` returns the longest candidate that passes, and the
longest one that failed a rule (for `explain`).
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass, field, replace
from functools import cache, cached_property

from fusionspec.spec.catalog import PatternEntry
from fusionspec.spec.catalog import entry as catalog_entry
from fusionspec.spec.graph import Graph, Op
from fusionspec.spec.match import Match, MatchedOp
from fusionspec.spec.opschemas import COMMUTATIVE_KINDS
from fusionspec.spec.pattern_tree import (
    Alternation,
    CategoryRef,
    Chain,
    Group,
    Marks,
    Node,
    OpRef,
    Path,
    Repeat,
    Subgraphs,
    first_kinds,
    leaves,
    mark_sites,
    min_ops,
)
from fusionspec.spec.rules import rules_for

__all__ = ["Candidate", "Matcher", "graph_depths", "chain_ports_ok"]

#: Binaries that take the chain on either operand; Subtract and Divide take it on src_0 only.
#: (op, input port the chain enters it through)
Next = tuple[tuple[Op, int], ...]


def chain_ports_ok(op: Op, port: int) -> bool:
    """Whether a chain may enter `op` through input `port`."""
    return port == 0 or (port == 1 and op.kind in COMMUTATIVE_KINDS)


def graph_depths(graph: Graph, order: Sequence[Op]) -> dict[int, int]:
    """Longest path (in ops) from the graph's inputs to each op, by op id."""
    depth: dict[int, int] = {}
    for op in order:
        preds = graph.predecessors(op)
        depth[op.id] = 1 + max((depth[p.id] for p in preds), default=-1)
    return depth


@dataclass(frozen=True)
class _Placed:
    op: Op
    path: Path
    port: int | None  # the chain's entry port; None for the first op of a subgraph
    seq: int  # placement order
    #: sorts ops into pattern order: (subgraph, placement) on the main chain, and
    #: (subgraph, reader, -placement) on side subgraphs, which are matched backwards
    rank: tuple[int, ...]


@dataclass(frozen=True)
class _State:
    placed: tuple[_Placed, ...] = ()
    used: frozenset[int] = frozenset()
    #: (op, input port, mark name): inputs a side subgraph must produce
    requests: tuple[tuple[Op, int, str], ...] = ()

    def place(self, op: Op, path: Path, port: int | None, reader: int | None = None,
              ) -> _State:
        seq = len(self.placed)
        part = path[0] if path else 0
        rank = (part, seq) if reader is None else (part, reader, -seq)
        item = _Placed(op, path, port, seq, rank)
        return _State((*self.placed, item), self.used | {op.id}, self.requests)

    def request(self, op: Op, port: int, name: str) -> _State:
        return _State(self.placed, self.used, (*self.requests, (op, port, name)))


@dataclass(frozen=True)
class Candidate:
    """One instance of `entry` in the graph. `ports` lists the input port the main chain entered
    each of its ops through (0 for the head); `match` is what the rules are checked against."""

    entry: PatternEntry
    index: int  # catalog position
    head: Op
    ops: tuple[Op, ...]  # in pattern order
    ports: tuple[int, ...]
    paths: tuple[Path, ...]  # the leaf each op matched
    engine_kind: str
    op_ids: frozenset[int]
    failures: tuple[str, ...] = field(default=())

    @cached_property
    def match(self) -> Match:
        roles, leaves_by_path = self.entry.roles, _leaf_map(self.entry.id)
        return Match(self.entry.id, tuple(
            MatchedOp(op, roles[path], path, leaves_by_path[path])
            for op, path in zip(self.ops, self.paths)), self.engine_kind)


class Matcher:
    """Matches catalog entries in one finalized graph; `claimed` ops are unavailable."""

    def __init__(self, graph: Graph, order: Sequence[Op], depth: Mapping[int, int]) -> None:
        self.graph = graph
        self.depth = depth
        self.claimed: set[int] = set()
        self._preds: dict[int, tuple[Op, ...]] = {op.id: graph.predecessors(op) for op in order}

    # -- public ---------------------------------------------------------------------------

    @staticmethod
    def heads(entry: PatternEntry) -> frozenset[str]:
        """Op kinds that can be the head (first op of the main chain) of `entry`."""
        return first_kinds(_main(entry.tree)[0])

    def candidates(self, entry: PatternEntry, index: int, head: Op) -> list[Candidate]:
        """Every structurally valid, convex instance of `entry` headed by `head`, longest
        first (rules not yet checked)."""
        main, prefix, parts = _main(entry.tree)
        if head.id in self.claimed:
            return []
        found: dict[frozenset[int], Candidate] = {}
        start: Next = ((head, -1),)
        for state, _ in self._forward(main, prefix, start, _State()):
            if not state.placed:
                continue
            for full in self._resolve(state, parts):
                cand = self._candidate(entry, index, head, full)
                if cand is not None and cand.op_ids not in found:
                    found[cand.op_ids] = cand
        return sorted(found.values(), key=lambda c: (-len(c.ops), c.ports))

    def best_match(self, entry: PatternEntry, index: int, head: Op,
                   ) -> tuple[Candidate | None, Candidate | None]:
        """(longest candidate passing the rules, longest candidate failing one before it)."""
        rejected: Candidate | None = None
        checked = _has_rules(entry.id)
        for cand in self.candidates(entry, index, head):
            failures = entry.check(cand.match) if checked else ()
            if not failures:
                return cand, rejected
            if rejected is None:
                rejected = replace(cand, failures=failures)
        return None, rejected

    # -- forward matching along the main chain ---------------------------------------------

    def _forward(self, node: Node, path: Path, nxt: Next, st: _State,
                 ) -> Iterator[tuple[_State, Next]]:
        if isinstance(node, OpRef | CategoryRef):
            yield from self._leaf(node, path, nxt, st)
        elif isinstance(node, Alternation):
            for i, option in enumerate(node.options):
                yield from self._marked(node.marks, self._forward(option, (*path, i), nxt, st),
                                        len(st.placed))
        elif isinstance(node, Group):
            yield from self._marked(node.marks, self._forward(node.body, (*path, 0), nxt, st),
                                    len(st.placed))
        elif isinstance(node, Repeat):
            yield from self._marked(node.marks, self._repeat(node, path, nxt, st, 0),
                                    len(st.placed))
        elif isinstance(node, Chain):
            yield from self._items(node.items, path, 0, nxt, st)
        else:
            raise AssertionError("Subgraphs inside a main chain")  # the parser forbids it

    def _items(self, items: Sequence[Node], path: Path, i: int, nxt: Next, st: _State,
               ) -> Iterator[tuple[_State, Next]]:
        if i == len(items):
            yield st, nxt
            return
        for st2, nxt2 in self._forward(items[i], (*path, i), nxt, st):
            yield from self._items(items, path, i + 1, nxt2, st2)

    def _repeat(self, node: Repeat, path: Path, nxt: Next, st: _State, count: int,
                ) -> Iterator[tuple[_State, Next]]:
        if count < node.high:
            for st2, nxt2 in self._forward(node.body, (*path, 0), nxt, st):
                if len(st2.placed) > len(st.placed):
                    yield from self._repeat(node, path, nxt2, st2, count + 1)
        if count >= node.low:
            yield st, nxt

    def _marked(self, marks: Marks, results: Iterator[tuple[_State, Next]], before: int,
                ) -> Iterator[tuple[_State, Next]]:
        """Apply a composite node's marks: inputs to its first op, outputs to its last."""
        for st, nxt in results:
            if len(st.placed) > before:
                first = st.placed[before]
                for name in marks.inputs:
                    st = self._input_mark(first.op, first.port, name, st)
                last = st.placed[-1].op
                if marks.is_partition_output and last.outputs:
                    nxt = self._consumers(last, fan_out_ok=True)
            yield st, nxt

    def _leaf(self, leaf: OpRef | CategoryRef, path: Path, nxt: Next, st: _State,
              ) -> Iterator[tuple[_State, Next]]:
        kinds = (leaf.kind,) if isinstance(leaf, OpRef) else leaf.kinds
        for op, port in nxt:
            if op.kind not in kinds or op.id in st.used or op.id in self.claimed:
                continue
            if port >= 0 and not chain_ports_ok(op, port):
                continue
            st2 = st.place(op, path, None if port < 0 else port)
            for name in leaf.marks.inputs:
                st2 = self._input_mark(op, port, name, st2)
            if not op.outputs:
                yield st2, ()
                continue
            yield st2, self._consumers(op, fan_out_ok=leaf.marks.is_partition_output)

    def _consumers(self, op: Op, *, fan_out_ok: bool) -> Next:
        users = self.graph.consumers.get(op.outputs[0].id, ())
        if len(users) == 1 or fan_out_ok:
            return tuple(users)
        return ()  # a fan-out (or a graph output) ends the chain

    @staticmethod
    def _input_mark(op: Op, chain_port: int | None, name: str, st: _State) -> _State:
        # The marked tensor arrives on the op's first input that is not the chain's (for the
        # head of a chain, which has no chain input, on its first input).
        chain = -1 if chain_port is None else chain_port
        for port in range(len(op.inputs)):
            if port != chain:
                return st.request(op, port, name)
        return st

    # -- side subgraphs (",") ---------------------------------------------------------------

    def _resolve(self, st: _State, parts: Sequence[tuple[Node, Path]]) -> Iterator[_State]:
        """Complete `st` with side subgraphs for its requests; every way, longest first."""
        producers = {site.name: (node, path) for node, path in parts
                     for site in mark_sites(node) if site.output}
        yield from self._resolve_from(st, 0, producers, {})

    def _resolve_from(self, st: _State, i: int, producers: Mapping[str, tuple[Node, Path]],
                      counts: dict[str, int]) -> Iterator[_State]:
        if i == len(st.requests):
            if all(min_ops(node) == 0 or counts.get(name, 0) > 0
                   for name, (node, _) in producers.items()):
                yield st
            return
        op, port, name = st.requests[i]
        part = producers.get(name)
        if part is None:  # a mark no side subgraph produces (e.g. <in1): nothing to add
            yield from self._resolve_from(st, i + 1, producers, counts)
            return
        node, path = part
        tensor = op.inputs[port]
        producer = self.graph.producers.get(tensor.id)
        copies = node.high if isinstance(node, Repeat) else 1
        body, body_path = (node.body, (*path, 0)) if isinstance(node, Repeat) else (node, path)
        if (producer is not None and counts.get(name, 0) < copies
                and len(self.graph.consumers.get(tensor.id, ())) == 1):
            for st2 in self._backward(body, body_path, producer[0], st, i):
                counts2 = {**counts, name: counts.get(name, 0) + 1}
                yield from self._resolve_from(st2, i + 1, producers, counts2)
        # Without it: fine when the side subgraph may be absent (checked at the end).
        yield from self._resolve_from(st, i + 1, producers, counts)

    def _backward(self, node: Node, path: Path, op: Op, st: _State, reader: int,
                  ) -> Iterator[_State]:
        """Match `node` so that `op` is its last op; earlier items through producers."""
        items = node.items if isinstance(node, Chain) else (node,)
        paths = [(*path, i) for i in range(len(items))] if isinstance(node, Chain) else [path]
        yield from self._back_items(items, paths, len(items) - 1, ((op, 0),), st, reader)

    def _back_items(self, items: Sequence[Node], paths: Sequence[Path], i: int,
                    cands: tuple[tuple[Op, int], ...], st: _State, reader: int,
                    ) -> Iterator[_State]:
        if i < 0:
            yield st
            return
        node, path = items[i], paths[i]
        if isinstance(node, Repeat) and node.low == 0 and node.high == 1:
            for op, _ in cands:  # one copy ...
                if self._leaf_ok(node.body, op, st):
                    placed = st.place(op, (*path, 0), None, reader)
                    yield from self._back_items(items, paths, i - 1, self._producers(op),
                                                placed, reader)
            yield from self._back_items(items, paths, i - 1, cands, st, reader)  # ... or none
            return
        for op, _ in cands:
            if self._leaf_ok(node, op, st):
                placed = st.place(op, path, None, reader)
                yield from self._back_items(items, paths, i - 1, self._producers(op), placed,
                                            reader)

    def _leaf_ok(self, node: Node, op: Op, st: _State) -> bool:
        if op.id in st.used or op.id in self.claimed:
            return False
        if isinstance(node, OpRef):
            return op.kind == node.kind
        if isinstance(node, CategoryRef):
            return op.kind in node.kinds
        return False  # side subgraphs of the pages are chains of single ops

    def _producers(self, op: Op) -> tuple[tuple[Op, int], ...]:
        ports = (0, 1) if op.kind in COMMUTATIVE_KINDS else (0,)
        found: list[tuple[Op, int]] = []
        for port in ports:
            if port >= len(op.inputs):
                continue
            tensor = op.inputs[port]
            producer = self.graph.producers.get(tensor.id)
            if producer is not None and len(self.graph.consumers.get(tensor.id, ())) == 1:
                found.append((producer[0], port))
        return tuple(found)

    # -- assembling a candidate -------------------------------------------------------------

    def _candidate(self, entry: PatternEntry, index: int, head: Op, st: _State,
                   ) -> Candidate | None:
        ids = frozenset(st.used)
        if not self._convex(ids):
            return None
        placed = sorted(st.placed, key=lambda p: p.rank)
        ports = tuple(0 if p.port is None else p.port for p in st.placed)
        return Candidate(entry, index, head, tuple(p.op for p in placed), ports,
                         tuple(p.path for p in placed), self.graph.engine_kind, ids)

    def _convex(self, ids: frozenset[int]) -> bool:
        """No path leaves the ops `ids` and comes back: search backwards from the producers of
        their external inputs, pruning ops too shallow to descend from the match."""
        low = min(self.depth[i] for i in ids)
        stack: list[Op] = []
        for op_id in ids:
            for pred in self._preds[op_id]:
                if pred.id not in ids and self.depth[pred.id] > low:
                    stack.append(pred)
        seen: set[int] = set()
        while stack:
            op = stack.pop()
            if op.id in seen:
                continue
            seen.add(op.id)
            for pred in self._preds[op.id]:
                if pred.id in ids:
                    return False
                if self.depth[pred.id] >= low:
                    stack.append(pred)
        return True


def _main(tree: Node) -> tuple[Node, Path, tuple[tuple[Node, Path], ...]]:
    """(main chain, its path, side subgraphs with their paths)."""
    if isinstance(tree, Subgraphs):
        last = len(tree.parts) - 1
        side = tuple((part, (i,)) for i, part in enumerate(tree.parts[:-1]))
        return tree.parts[-1], (last,), side
    return tree, (), ()


@cache
def _leaf_map(pattern_id: str) -> dict[Path, OpRef | CategoryRef]:
    """Every leaf of a catalog pattern's tree, by path."""
    return dict(leaves(catalog_entry(pattern_id).tree))


@cache
def _has_rules(pattern_id: str) -> bool:
    return bool(rules_for(pattern_id))
