"""The C enums of the installed oneDNN, read from its headers.

Enum values differ between library versions (op kinds are numbered in declaration order, and
``dnnl_graph_op_end`` sits in the middle of that order in 3.2), so the adapter never hard-codes
them: `read_headers(include_dir)` parses every ``typedef enum { ... } name;`` in
``oneapi/dnnl/dnnl_common_types.h`` and ``oneapi/dnnl/dnnl_graph_types.h`` (the ``-devel``
packages ship them) plus the ``#define DNNL_RUNTIME_*`` values of ``dnnl_config.h``.

Enumerator values follow C: an explicit value may be a literal or an expression over earlier
enumerators (``dnnl_stream_default_flags = dnnl_stream_in_order``); an enumerator without one is
the previous value plus one.
"""

from __future__ import annotations

import ast
import operator
import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import Path
from types import MappingProxyType

from .errors import INSTALL_HINT, OnednnSetupError

__all__ = ["Headers", "parse_enums", "parse_defines", "read_headers", "HEADER_FILES"]

#: The headers the adapter reads, relative to the include folder.
HEADER_FILES = ("oneapi/dnnl/dnnl_common_types.h", "oneapi/dnnl/dnnl_graph_types.h")

_COMMENTS = re.compile(r"/\*.*?\*/|//[^\n]*", re.S)
_ENUM = re.compile(r"typedef\s+enum\s*\w*\s*\{(?P<body>[^{}]*)\}\s*(?P<name>\w+)\s*;", re.S)
_PREPROCESSOR = re.compile(r"^\s*#[^\n]*", re.M)
_DEFINE = re.compile(r"^\s*#\s*define\s+(\w+)\s+(.+?)\s*$", re.M)
_SUFFIX = re.compile(r"\b(0[xX][0-9a-fA-F]+|\d+)[uUlL]+\b")


_UNARY: dict[type[ast.unaryop], Callable[[int], int]] = {
    ast.USub: operator.neg, ast.UAdd: operator.pos, ast.Invert: operator.invert}


def _evaluate(expr: str, known: Mapping[str, int]) -> int:
    """An integer C constant expression over literals and `known` names."""
    text = _SUFFIX.sub(r"\1", expr.strip())
    tree = ast.parse(text, mode="eval")

    def value(node: ast.AST) -> int:
        if isinstance(node, ast.Constant) and isinstance(node.value, int):
            return node.value
        if isinstance(node, ast.Name) and node.id in known:
            return known[node.id]
        if isinstance(node, ast.UnaryOp) and type(node.op) in _UNARY:
            return _UNARY[type(node.op)](value(node.operand))
        if isinstance(node, ast.BinOp):
            left, right = value(node.left), value(node.right)
            binops = {ast.Add: int.__add__, ast.Sub: int.__sub__, ast.Mult: int.__mul__,
                      ast.BitOr: int.__or__, ast.BitAnd: int.__and__, ast.LShift: int.__lshift__,
                      ast.RShift: int.__rshift__}
            if type(node.op) in binops:
                return binops[type(node.op)](left, right)
        raise ValueError(f"cannot evaluate {ast.dump(node)} in {expr!r}")

    return value(tree.body)


def parse_enums(text: str) -> dict[str, dict[str, int]]:
    """Every ``typedef enum`` of a C header: enum name -> enumerator -> value."""
    # Conditional members (``#ifdef DNNL_EXPERIMENTAL_PROFILING``) are kept: their values are
    # fixed whether or not the library was built with them.
    text = _PREPROCESSOR.sub(" ", _COMMENTS.sub(" ", text))
    enums: dict[str, dict[str, int]] = {}
    known: dict[str, int] = {}
    for match in _ENUM.finditer(text):
        members: dict[str, int] = {}
        nxt = 0
        for item in match["body"].split(","):
            item = " ".join(item.split())
            if not item:
                continue
            name, _, expr = item.partition("=")
            name = name.strip()
            current = _evaluate(expr, known) if expr.strip() else nxt
            members[name] = current
            known[name] = current
            nxt = current + 1
        enums[match["name"]] = members
    return enums


def parse_defines(text: str) -> dict[str, int]:
    """Integer ``#define``s of a header (values that are not integer expressions are skipped)."""
    text = _COMMENTS.sub(" ", text)
    found: dict[str, int] = {}
    for name, expr in _DEFINE.findall(text):
        try:
            found[name] = _evaluate(expr, found)
        except (ValueError, SyntaxError):
            continue
    return found


@dataclass(frozen=True)
class Headers:
    """The enums of one installed oneDNN, with lookups by the spec's names."""

    enums: Mapping[str, Mapping[str, int]]
    defines: Mapping[str, int]
    include_dir: Path

    def enum(self, name: str) -> Mapping[str, int]:
        if name not in self.enums:
            raise OnednnSetupError(f"the oneDNN headers in {self.include_dir} define no enum "
                                   f"{name}; {INSTALL_HINT}")
        return self.enums[name]

    def value(self, enum: str, member: str) -> int | None:
        """The value of `member` in `enum`, or None when this version has no such member."""
        return self.enum(enum).get(member)

    def members(self, enum: str, prefix: str) -> dict[str, int]:
        """`enum`'s members with `prefix` stripped from their names."""
        return {k[len(prefix):]: v for k, v in self.enum(enum).items() if k.startswith(prefix)}


def read_headers(include_dir: Path) -> Headers:
    """Parse the oneDNN headers under `include_dir` (the folder holding ``oneapi/``)."""
    enums: dict[str, dict[str, int]] = {}
    for rel in HEADER_FILES:
        path = include_dir / rel
        if not path.is_file():
            raise OnednnSetupError(f"oneDNN header {path} not found; {INSTALL_HINT}")
        enums.update(parse_enums(path.read_text(encoding="utf-8", errors="replace")))
    config = include_dir / "oneapi/dnnl/dnnl_config.h"
    defines = parse_defines(config.read_text(encoding="utf-8", errors="replace")) \
        if config.is_file() else {}
    return Headers(MappingProxyType(enums), MappingProxyType(defines), include_dir)
