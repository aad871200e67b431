"""The pages' pattern notation: parse it into a pattern tree and print a tree back.

The notation of page 001 ("Supported Fusion Patterns"), in the plain-text form fusionspec uses
(the page's RST ``:math:`` markup removed, see `rst_to_plain`)::

    pattern   := chain (',' chain)*                 -> Subgraphs when more than one
    chain     := item ('+' item)*                   -> Chain when more than one
    item      := atom subscript? (superscript subscript?)?
    atom      := NAME | '[' chain ('|' chain)* ']'  -> OpRef / CategoryRef / Alternation / Group
    superscript := '^?' | '^{' N '}' | '^{' N '-' N '}'
    subscript := '_{' mark (',' mark)* '}'          mark := ('>' | '<') NAME

NAME is an op kind of the pages or a category (Unary, Binary, Reduction). Whitespace between
tokens is ignored; the canonical form printed by `to_notation` writes ``" + "``, ``" | "``,
``", "`` and nothing else, inputs before outputs in a subscript, and ``^?`` for 0..1:

>>> to_notation(parse("Convolution+BiasAdd^{0-1} + [Unary|Binary]^{0-3}_{>out}"))
'Convolution + BiasAdd^? + [Unary | Binary]^{0-3}_{>out}'

Besides syntax, `parse` checks the tensor marks: an input mark ``<t1`` needs exactly one output
mark ``>t1`` somewhere in the pattern and an output mark other than ``>out`` needs a consumer;
``in``, ``in1``, ``in2``... are partition inputs and need no producer. Every error is a
`NotationError` carrying the 0-based character position of the problem.
"""

from __future__ import annotations

import difflib
import re
from dataclasses import dataclass
from typing import TypeAlias

from .categories import CATEGORIES
from .errors import NotationError
from .opschemas import SCHEMAS
from .pattern_tree import (
    NO_MARKS,
    Alternation,
    CategoryRef,
    Chain,
    Group,
    Marks,
    Node,
    OpRef,
    PatternTreeError,
    Repeat,
    Subgraphs,
    is_partition_input,
)

__all__ = ["parse", "to_notation", "format_marks", "format_bounds", "rst_to_plain"]


@dataclass(frozen=True)
class _Site:
    """Where a mark was written: used for the link check after parsing."""

    name: str
    output: bool
    position: int


_Atom: TypeAlias = OpRef | CategoryRef | Alternation | Group


def _with_marks(atom: _Atom, marks: Marks) -> _Atom:
    if isinstance(atom, OpRef):
        return OpRef(atom.kind, marks)
    if isinstance(atom, CategoryRef):
        return CategoryRef(atom.name, marks)
    if isinstance(atom, Alternation):
        return Alternation(atom.options, marks)
    return Group(atom.body, marks)


class _Parser:
    def __init__(self, text: str) -> None:
        self.text = text
        self.pos = 0
        self.sites: list[_Site] = []

    # -- scanning --------------------------------------------------------------------------

    def error(self, message: str, position: int | None = None) -> NotationError:
        return NotationError(message, text=self.text,
                             position=self.pos if position is None else position)

    def skip_ws(self) -> None:
        while self.pos < len(self.text) and self.text[self.pos].isspace():
            self.pos += 1

    def peek(self) -> str:
        self.skip_ws()
        return self.text[self.pos] if self.pos < len(self.text) else ""

    def found(self) -> str:
        char = self.peek()
        return f"{char!r}" if char else "the end of the pattern"

    def expect(self, char: str, context: str) -> None:
        if self.peek() != char:
            raise self.error(f"expected {char!r} {context}, found {self.found()}")
        self.pos += 1

    def word(self, pattern: str) -> str:
        match = re.compile(pattern).match(self.text, self.pos)
        if match is None:
            return ""
        self.pos = match.end()
        return match.group()

    # -- grammar ---------------------------------------------------------------------------

    def pattern(self) -> Node:
        parts = [self.chain()]
        while self.peek() == ",":
            self.pos += 1
            parts.append(self.chain())
        if self.peek():
            raise self.error(f"unexpected {self.found()}; expected '+', ',' or the end")
        return parts[0] if len(parts) == 1 else Subgraphs(tuple(parts))

    def chain(self) -> Node:
        items = [self.item()]
        while self.peek() == "+":
            self.pos += 1
            items.append(self.item())
        return items[0] if len(items) == 1 else Chain(tuple(items))

    def item(self) -> Node:
        start = self.pos
        atom = self.atom()
        before: Marks | None = None
        after: Marks | None = None
        bounds: tuple[int, int] | None = None
        while self.peek() in ("_", "^"):
            mark_start = self.pos
            if self.text[self.pos] == "^":
                if bounds is not None:
                    raise self.error("a second superscript on the same item", mark_start)
                bounds = self.superscript()
            elif bounds is None:
                if before is not None:
                    raise self.error("a second subscript in a row; write the marks in one, "
                                     "as _{<a,>b}", mark_start)
                before = self.subscript()
            else:
                if after is not None:
                    raise self.error("a second subscript in a row; write the marks in one, "
                                     "as _{<a,>b}", mark_start)
                after = self.subscript()
        try:
            if before is not None:
                atom = _with_marks(atom, before)
            if bounds is not None:
                return Repeat(atom, bounds[0], bounds[1], after or NO_MARKS)
        except PatternTreeError as exc:  # the checks above should make this unreachable
            raise self.error(str(exc), start) from None
        return atom

    def atom(self) -> _Atom:
        char = self.peek()
        if char == "[":
            return self.bracket()
        if char.isalpha():
            start = self.pos
            name = self.word(r"[A-Za-z][A-Za-z0-9]*")
            if name in CATEGORIES:
                return CategoryRef(name)
            if name in SCHEMAS:
                return OpRef(name)
            close = difflib.get_close_matches(name, [*SCHEMAS, *CATEGORIES], n=1)
            hint = f" (did you mean {close[0]!r}?)" if close else ""
            raise self.error(f"unknown op kind or category {name!r}{hint}", start)
        raise self.error(f"expected an op kind, a category or '[', found {self.found()}")

    def bracket(self) -> Alternation | Group:
        opened = self.pos
        self.pos += 1
        options = [self.chain()]
        while self.peek() == "|":
            self.pos += 1
            options.append(self.chain())
        if self.peek() == ",":
            raise self.error("',' joins top-level subgraphs and cannot appear inside '[ ]'")
        if self.peek() != "]":
            raise self.error(f"expected '|' or ']' to close the '[' at character {opened}, "
                             f"found {self.found()}")
        self.pos += 1
        return Group(options[0]) if len(options) == 1 else Alternation(tuple(options))

    def number(self) -> tuple[int, int]:
        self.skip_ws()
        start = self.pos
        digits = self.word(r"[0-9]+")
        if not digits:
            raise self.error(f"expected a repetition count, found {self.found()}")
        return int(digits), start

    def superscript(self) -> tuple[int, int]:
        self.pos += 1  # '^'
        if self.peek() == "?":
            self.pos += 1
            return 0, 1
        self.expect("{", "after '^' (or write ^?)")
        low, low_at = self.number()
        high = low
        if self.peek() == "-":
            self.pos += 1
            high, high_at = self.number()
            if low > high:
                raise self.error(f"repetition bounds {low}-{high}: the low bound exceeds the "
                                 "high bound", low_at)
        else:
            high_at = low_at
        if high < 1:
            raise self.error("a repetition must allow at least one copy", high_at)
        self.expect("}", "to close the superscript")
        return low, high

    def subscript(self) -> Marks:
        self.pos += 1  # '_'
        self.expect("{", "after '_'")
        outputs: list[str] = []
        inputs: list[str] = []
        while True:
            arrow = self.peek()
            arrow_at = self.pos
            if arrow not in ("<", ">"):
                raise self.error(f"expected '<' (input) or '>' (output) in a subscript, found "
                                 f"{self.found()}")
            self.pos += 1
            name_at = self.pos
            name = self.word(r"[A-Za-z][A-Za-z0-9_]*")
            if not name:
                raise self.error(f"expected a tensor name after {arrow!r}")
            output = arrow == ">"
            if output and is_partition_input(name):
                raise self.error(f"{name!r} names a partition input; write <{name}", arrow_at)
            if not output and name == "out":
                raise self.error("'out' names a partition output; write >out", arrow_at)
            names = outputs if output else inputs
            if name in names:
                raise self.error(f"{arrow}{name} is marked twice on the same item", arrow_at)
            names.append(name)
            self.sites.append(_Site(name, output, name_at))
            if self.peek() == ",":
                self.pos += 1
                continue
            self.expect("}", "to close the subscript")
            return Marks(tuple(outputs), tuple(inputs))

    # -- marks across the whole pattern ----------------------------------------------------

    def check_links(self) -> None:
        produced: dict[str, _Site] = {}
        for site in self.sites:
            if site.output and site.name != "out":
                if site.name in produced:
                    first = produced[site.name].position
                    raise self.error(f"tensor {site.name!r} is already output at character "
                                     f"{first}", site.position)
                produced[site.name] = site
        consumed = {site.name for site in self.sites if not site.output}
        for site in self.sites:
            if site.output or is_partition_input(site.name):
                continue
            if site.name not in produced:
                raise self.error(f"tensor {site.name!r} is consumed (<{site.name}) but no op "
                                 f"outputs it (>{site.name})", site.position)
        for name, site in produced.items():
            if name not in consumed:
                raise self.error(f"tensor {name!r} is output (>{name}) but nothing consumes it "
                                 f"(<{name})", site.position)


def parse(text: str) -> Node:
    """Parse a pattern in plain notation; raise `NotationError` with the position of a problem."""
    if not isinstance(text, str):
        raise NotationError(f"a pattern must be a str, got {type(text).__name__}", text="",
                            position=0)
    parser = _Parser(text)
    if not parser.peek():
        raise parser.error("empty pattern")
    tree = parser.pattern()
    parser.check_links()
    return tree


# -- printing ------------------------------------------------------------------------------

def format_marks(marks: Marks) -> str:
    """``_{<a,>b}`` for marks (inputs first), or ``""`` when there are none."""
    if not marks:
        return ""
    inner = [f"<{name}" for name in marks.inputs] + [f">{name}" for name in marks.outputs]
    return "_{" + ",".join(inner) + "}"


def format_bounds(low: int, high: int) -> str:
    """``^?`` for 0..1, ``^{n}`` for n..n, ``^{a-b}`` otherwise."""
    if (low, high) == (0, 1):
        return "^?"
    if low == high:
        return "^{" + str(low) + "}"
    return "^{" + f"{low}-{high}" + "}"


def to_notation(node: Node) -> str:
    """The canonical plain notation of a pattern tree."""
    if isinstance(node, OpRef):
        return node.kind + format_marks(node.marks)
    if isinstance(node, CategoryRef):
        return node.name + format_marks(node.marks)
    if isinstance(node, Alternation):
        inner = " | ".join(to_notation(option) for option in node.options)
        return f"[{inner}]" + format_marks(node.marks)
    if isinstance(node, Group):
        return f"[{to_notation(node.body)}]" + format_marks(node.marks)
    if isinstance(node, Repeat):
        return (to_notation(node.body) + format_bounds(node.low, node.high)
                + format_marks(node.marks))
    if isinstance(node, Chain):
        return " + ".join(to_notation(item) for item in node.items)
    return ", ".join(to_notation(part) for part in node.parts)


# -- the pages' RST form -------------------------------------------------------------------

_MATH = re.compile(r"\s*:math:`([^`]*)`")
_BRACES = re.compile(r"(\{[^{}]*\})")


def _tidy_outside_braces(segment: str) -> str:
    segment = re.sub(r"\s+", " ", segment)
    segment = re.sub(r"\s*\+\s*", " + ", segment)
    segment = re.sub(r"\s*\|\s*", " | ", segment)
    segment = re.sub(r"\s*,\s*", ", ", segment)
    segment = re.sub(r"\[\s+", "[", segment)
    segment = re.sub(r"\s+\]", "]", segment)
    return re.sub(r"\s+(?=[\^_])", "", segment)


def rst_to_plain(text: str) -> str:
    """Turn the pages' RST spelling of a pattern into the plain notation.

    ``BiasAdd :math:`^?``` becomes ``BiasAdd^?``, ``\\|`` becomes ``|``, and spacing becomes
    canonical (``" + "``, ``" | "``, ``", "``, none inside brackets' edges or braces).
    """
    plain = _MATH.sub(r"\1", text).replace("\\|", "|")
    pieces = _BRACES.split(plain)
    tidy = [re.sub(r"\s+", "", piece) if piece.startswith("{") else _tidy_outside_braces(piece)
            for piece in pieces]
    return "".join(tidy).strip()
