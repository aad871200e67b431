"""Text from elsewhere made fit to print: a backend's messages and names, a document's fields.

A string a backend or a results document supplies may carry terminal escape sequences (which
can move the cursor and erase a FAIL line), other control characters, bidirectional overrides
(which make a terminal show text in another order than it is), characters no UTF-8 writer
takes (a lone surrogate, which JSON's ``"\\ud800"`` escape and Python exception text can
hold), Unicode noncharacters, or megabytes of text. `clean_text` removes the escapes, controls
and overrides, replaces the unwritable characters and noncharacters with U+FFFD, and clips the
length, so what reaches a terminal, a results document or a report is plain text of a bounded
length. `fit_text` and `clean_json` only replace what cannot be written (for data whose other
characters are kept as they are: a results document as read).

>>> clean_text("FAIL\\x1b[2K\\x1b[1A\\rPASS")
'FAILPASS'
>>> clean_text("a\\tb\\nc")
'a\\tb\\nc'
>>> clean_text("x" * 10, 4)
'xxxx ... (6 more characters cut)'
>>> clean_text("a\\ud800b\\ufffe")
'a\\ufffdb\\ufffd'
>>> clean_json({"k\\udfff": ["\\uffff", 1]})
{'k\\ufffd': ['\\ufffd', 1]}
"""

from __future__ import annotations

import re
from typing import Any

__all__ = ["clean_text", "clip", "fit_text", "clean_json", "MESSAGE_LIMIT", "REPLACEMENT"]

#: The longest message fusionspec keeps from a backend or a document (characters).
MESSAGE_LIMIT = 2000
#: What stands for a character that cannot be written (U+FFFD REPLACEMENT CHARACTER).
REPLACEMENT = "\ufffd"

# CSI (ESC [ ... final), OSC (ESC ] ... BEL or ESC \), other two-character escapes, then every
# C0/C1 control character but tab and newline, and the bidirectional embeddings, overrides and
# isolates.
_ESCAPES = re.compile(r"\x1b\[[0-?]*[ -/]*[@-~]?|\x1b\][^\x07\x1b]*(?:\x07|\x1b\\)?|\x1b.?"
                      r"|\x9b[0-?]*[ -/]*[@-~]?|[\x00-\x08\x0b-\x1f\x7f-\x9f]"
                      "|[\u202a-\u202e\u2066-\u2069]", re.DOTALL)
# Lone surrogates (no UTF-8 encoder writes them; a str never holds a valid pair) and the 66
# noncharacters: U+FDD0..U+FDEF and the last two code points of every plane.
_UNFIT = re.compile("[\ud800-\udfff\ufdd0-\ufdef" + "".join(
    f"{chr(plane * 0x10000 + 0xFFFE)}{chr(plane * 0x10000 + 0xFFFF)}" for plane in range(17))
    + "]")


def clip(text: str, limit: int) -> str:
    """`text`, cut to `limit` characters with a note saying how much was left out."""
    if len(text) <= limit:
        return text
    return f"{text[:limit]} ... ({len(text) - limit} more characters cut)"


def fit_text(text: str) -> str:
    """`text` with every lone surrogate and noncharacter replaced by U+FFFD, so that any
    UTF-8 writer (a file, a terminal, XML, TOML) takes it; nothing else changes."""
    if text.isascii():
        return text
    return _UNFIT.sub(REPLACEMENT, text)


def clean_text(text: object, limit: int | None = MESSAGE_LIMIT) -> str:
    """`text` (made a string) without escape sequences, bidirectional overrides and control
    characters other than tab and newline, its unwritable characters replaced (`fit_text`),
    clipped to `limit` characters unless `limit` is None (see the module docstring)."""
    try:
        raw = text if isinstance(text, str) else str(text)
    except Exception as exc:  # a foreign object's __str__ may raise anything
        raw = f"<{type(text).__name__} that cannot be shown: {type(exc).__name__}>"
    if limit is None:
        return fit_text(_ESCAPES.sub("", raw))
    # Only a bounded head is scanned, so a huge text costs no more than its kept part.
    head = limit * 4
    cut = max(0, len(raw) - head)
    body = fit_text(_ESCAPES.sub("", raw[:head]))
    if len(body) <= limit and not cut:
        return body
    return f"{body[:limit]} ... ({max(0, len(body) - limit) + cut} more characters cut)"


def clean_json(value: Any) -> Any:
    """`value` (JSON data as `json.loads` gives it) with `fit_text` applied to every string,
    keys included. Lists and dicts are changed in place (a dict subclass stays what it is)
    and returned; the walk keeps its own stack, so no nesting depth raises."""
    if isinstance(value, str):
        return fit_text(value)
    stack: list[Any] = [value]
    while stack:
        node = stack.pop()
        if isinstance(node, list):
            for index, item in enumerate(node):
                if isinstance(item, str):
                    node[index] = fit_text(item)
                elif isinstance(item, list | dict):
                    stack.append(item)
        elif isinstance(node, dict):
            for key in [k for k in node if isinstance(k, str) and fit_text(k) != k]:
                node[fit_text(key)] = node.pop(key)
            for key, item in node.items():
                if isinstance(item, str):
                    node[key] = fit_text(item)
                elif isinstance(item, list | dict):
                    stack.append(item)
    return value
