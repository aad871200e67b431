"""Text from elsewhere made fit to print: a backend's messages and names, a document's fields.

A string a backend or a results document supplies may carry terminal escape sequences (which
can move the cursor and erase a FAIL line), other control characters, or megabytes of text.
`clean_text` removes the first two and clips the third, so what reaches a terminal, a results
document or a report is plain text of a bounded length.

>>> clean_text("FAIL\\x1b[2K\\x1b[1A\\rPASS")
'FAILPASS'
>>> clean_text("a\\tb\\nc")
'a\\tb\\nc'
>>> clean_text("x" * 10, 4)
'xxxx ... (6 more characters cut)'
"""

from __future__ import annotations

import re

__all__ = ["clean_text", "clip", "MESSAGE_LIMIT"]

#: The longest message fusionspec keeps from a backend or a document (characters).
MESSAGE_LIMIT = 2000

# CSI (ESC [ ... final), OSC (ESC ] ... BEL or ESC \), other two-character escapes, then every
# C0/C1 control character but tab and newline, and the bidirectional overrides.
_ESCAPES = re.compile(r"\x1b\[[0-?]*[ -/]*[@-~]?|\x1b\][^\x07\x1b]*(?:\x07|\x1b\\)?|\x1b.?"
                      r"|\x9b[0-?]*[ -/]*[@-~]?|[\x00-\x08\x0b-\x1f\x7f-\x9f]"
                      "|[\u202a-\u202e\u2066-\u2069]", re.DOTALL)


def clip(text: str, limit: int) -> str:
    """`text`, cut to `limit` characters with a note saying how much was left out."""
    if len(text) <= limit:
        return text
    return f"{text[:limit]} ... ({len(text) - limit} more characters cut)"


def clean_text(text: object, limit: int = MESSAGE_LIMIT) -> str:
    """`text` (made a string) without escape sequences and control characters other than tab
    and newline, clipped to `limit` characters (see the module docstring)."""
    raw = text if isinstance(text, str) else str(text)
    # Only a bounded head is scanned, so a huge text costs no more than its kept part.
    head = limit * 4
    cut = max(0, len(raw) - head)
    body = _ESCAPES.sub("", raw[:head])
    if len(body) <= limit and not cut:
        return body
    return f"{body[:limit]} ... ({max(0, len(body) - limit) + cut} more characters cut)"
