"""Text no UTF-8 writer takes (lone surrogates), Unicode noncharacters, control characters,
escape sequences and bidirectional overrides: `clean_text` leaves none of them, `fit_text` and
`clean_json` replace the unwritable ones and keep the rest, whatever the input."""

from __future__ import annotations

import json

from hypothesis import given
from hypothesis import strategies as st
from testkit.fuzz import FUZZ, UNFIT_TEXTS, hostile_text

from fusionspec.spec.text import REPLACEMENT, clean_json, clean_text, fit_text

#: Every noncharacter: U+FDD0..U+FDEF and the last two code points of each plane.
NONCHARACTERS = [chr(c) for c in range(0xFDD0, 0xFDF0)] + \
    [chr(p * 0x10000 + e) for p in range(17) for e in (0xFFFE, 0xFFFF)]
#: What a terminal acts on rather than shows.
CONTROLS = "\x1b\x9b\u202a\u202b\u202c\u202d\u202e\u2066\u2067\u2068\u2069"


def test_every_surrogate_and_noncharacter_is_replaced() -> None:
    unfit = [chr(c) for c in range(0xD800, 0xE000)] + NONCHARACTERS
    assert len(NONCHARACTERS) == 66, f"Unicode has 66 noncharacters: {len(NONCHARACTERS)}"
    for char in unfit:
        for clean in (clean_text(f"a{char}b"), fit_text(f"a{char}b")):
            assert clean == f"a{REPLACEMENT}b", f"U+{ord(char):04X} becomes U+FFFD: {clean!r}"


def test_what_is_fit_stays() -> None:
    kept = "plain ascii, tab\tand newline\n, é, 漢字, 😀, \U0010fffd, \ufffd, \ufdf0"
    assert clean_text(kept) == kept, f"nothing fit is changed: {clean_text(kept)!r}"
    assert fit_text("x\x1b[2K\u202e") == "x\x1b[2K\u202e", \
        "fit_text only replaces what cannot be written"


@FUZZ
@given(text=st.one_of(hostile_text(200), st.text(max_size=200)),
       limit=st.one_of(st.none(), st.integers(1, 300)))
def test_clean_text_always_gives_writable_terminal_safe_text(text: str, limit: int | None
                                                             ) -> None:
    clean = clean_text(text, limit)
    clean.encode("utf-8")  # raises for a lone surrogate
    assert not any(c in clean for c in CONTROLS), f"no terminal control left: {clean!r}"
    assert not any(c in clean for c in NONCHARACTERS), f"no noncharacter left: {clean!r}"
    if limit is not None:
        assert len(clean) <= limit + 60, f"clipped near {limit}: {len(clean)}"


def test_clean_json_cleans_keys_values_and_deep_nesting() -> None:
    doc = json.loads('{"k\\ud800": ["\\udfff", {"x": "\\uffff"}], "n": 1}')
    cleaned = clean_json(doc)
    assert cleaned == {f"k{REPLACEMENT}": [REPLACEMENT, {"x": REPLACEMENT}], "n": 1}, \
        f"every string replaced, numbers kept: {cleaned!r}"
    deep: list[object] = ["\ud800"]
    for _ in range(100_000):
        deep = [deep]
    clean_json(deep)  # its own stack: no RecursionError
    inner = deep
    for _ in range(100_000):
        inner = inner[0]  # type: ignore[assignment,index]
    assert inner == [REPLACEMENT], f"the innermost string is cleaned too: {inner!r}"


@FUZZ
@given(values=st.lists(st.sampled_from(UNFIT_TEXTS), min_size=1, max_size=6))
def test_a_cleaned_document_writes_as_strict_json(values: list[str]) -> None:
    doc = {v: {"list": values, "text": "".join(values)} for v in values}
    text = json.dumps(clean_json(doc), ensure_ascii=False)
    text.encode("utf-8")
    assert "\\ud" not in json.dumps(clean_json(doc)), "no surrogate escape is written"
