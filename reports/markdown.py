"""Escaping for the Markdown fusionspec writes (the findings document).

Everything placed in Markdown comes from results documents, so from backends and their
messages: a ``<script>`` in a reason, a backtick in a device name or a ``|`` in a message must
read back as the same characters, never as markup, a link, a broken table or code that ends
early. Three contexts, three functions:

- `text`: running text and table cells. CommonMark lets any ASCII punctuation be escaped with
  a backslash; the characters that could start markup (``<`` ``&`` ``[`` ``]`` ``*`` ``_``
  ``\\`` `````) or end a table cell (``|``) are escaped, and line breaks become spaces. (``>``
  is left alone: with every ``<`` escaped it starts nothing mid-line, and chains keep reading
  ``Conv->ReLU``.)
- `code`: an inline code span whose fence is longer than any run of backticks inside it.
- `shell`: a command line, each argument quoted for a POSIX shell (`shlex.quote`), as a code
  span: copied from the document, it runs exactly the arguments shown.

In every context, escape sequences, control characters and bidirectional overrides are dropped
and text no UTF-8 writer takes (a lone surrogate) is replaced (`clean_text`), so the file is
always written and reads in the order it was written.

>>> text("<script>alert(1)</script> | x*y")
'\\\\<script>alert(1)\\\\</script> \\\\| x\\\\*y'
>>> code("a`b")
'``a`b``'
>>> shell(["fusionspec", "conform", "--backend", "x; rm -rf ~ #"])
"`fusionspec conform --backend 'x; rm -rf ~ #'`"
"""

from __future__ import annotations

import re
import shlex
from collections.abc import Sequence

from fusionspec.spec.text import clean_text

__all__ = ["text", "code", "cell_code", "shell"]

_SPECIAL = re.compile(r"([\\`*_\[\]<&|])")
_BREAKS = re.compile(r"[\r\n\x00-\x08\x0b\x0c\x0e-\x1f\x7f]+")
_TICKS = re.compile(r"`+")


def _one_line(value: object) -> str:
    # Escape sequences go whole first; then the line breaks clean_text keeps become spaces.
    return _BREAKS.sub(" ", clean_text(value, None))


def text(value: object) -> str:
    """`value` as inline Markdown text that renders as exactly its characters."""
    return _SPECIAL.sub(r"\\\1", _one_line(value))


def code(value: object) -> str:
    """`value` as an inline code span (outside tables)."""
    body = _one_line(value)
    fence = "`" * (max((len(m) for m in _TICKS.findall(body)), default=0) + 1)
    if body.startswith("`") or body.endswith("`") or (body and not body.strip()):
        body = f" {body} "
    return f"{fence}{body or ' '}{fence}"


def cell_code(value: object) -> str:
    """`value` as a code span inside a table cell, where ``|`` must be escaped even in code."""
    return code(value).replace("|", "\\|")


def shell(argv: Sequence[object]) -> str:
    """A command line as a code span, each argument quoted for a POSIX shell."""
    return code(" ".join(shlex.quote(str(arg)) for arg in argv))
