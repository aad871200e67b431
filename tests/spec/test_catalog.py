"""The catalog holds exactly the patterns of the pages, in order, with sources, rules, decisions.

The page files are read directly: page 001's three RST tables give the pattern rows (converted
to plain notation they must equal the catalog's notations, in order), its category lines give
the categories, and pages 000 and 003 give the epilogue bounds. The pages are not shipped with
fusionspec: `testkit.material.spec_docs` finds them (``$FUSIONSPEC_SPEC_DOCS``, ...) or skips the
tests that read them, saying how to provide them.
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from testkit.material import spec_docs

from fusionspec.spec import SCHEMAS
from fusionspec.spec.catalog import (
    CATALOG,
    PatternEntry,
    PatternFamily,
    UnknownPatternError,
    entries,
    entry,
    pattern_ids,
)
from fusionspec.spec.categories import CATEGORIES
from fusionspec.spec.notation import parse, rst_to_plain, to_notation
from fusionspec.spec.pages import FUSION_PATTERNS, PAGES, QUANTIZED_CONVTRANSPOSE, SOFTMAX
from fusionspec.spec.pattern_tree import Alternation, CategoryRef, Repeat, walk
from fusionspec.spec.rules import RULES


def _pages_dir() -> Path:
    return spec_docs()


def _page_lines(file: str) -> list[str]:
    return (_pages_dir() / file).read_text(encoding="utf-8").splitlines()


def _page_text(file: str) -> str:
    return (_pages_dir() / file).read_text(encoding="utf-8")


def _tables(lines: list[str]) -> list[tuple[str, list[tuple[str, str]]]]:
    """Page 001's pattern tables: (heading above the table, [(pattern cell, description)])."""
    found = []
    for i, line in enumerate(lines):
        if line.startswith("=") and i + 1 < len(lines) and lines[i + 1].startswith("Pattern"):
            width = len(line.split()[0])
            heading = next(lines[j] for j in range(i - 1, 0, -1)
                           if lines[j].strip() and set(lines[j + 1].strip()) <= set("+-~")
                           and lines[j + 1].strip())
            rows = []
            j = i + 3
            while not lines[j].startswith("="):
                rows.append((lines[j][:width].rstrip(), lines[j][width:].strip()))
                j += 1
            found.append((heading.strip(), rows))
    return found


def test_catalog_holds_exactly_the_patterns_of_page_001_in_order() -> None:
    tables = _tables(_page_lines(FUSION_PATTERNS.file))
    headings = [h for h, _ in tables]
    assert headings == ["Floating Point Patterns", "Quantized Patterns", "Training"], \
        f"page 001 tables under {headings}"
    rows = [(heading, cell, text) for heading, table in tables for cell, text in table]
    assert len(rows) == 20, f"page 001 has {len(rows)} pattern rows, expected 11 + 7 + 2"
    page_entries = CATALOG[:len(rows)]
    want_plain = [rst_to_plain(cell) for _, cell, _ in rows]
    got_plain = [e.notation for e in page_entries]
    assert got_plain == want_plain, "catalog notations differ from page 001's rows: " + "; ".join(
        f"{g!r} != {w!r}" for g, w in zip(got_plain, want_plain) if g != w)
    for (heading, cell, text), pattern in zip(rows, page_entries):
        assert pattern.rst == cell, f"{pattern.id}: rst {pattern.rst!r}, page has {cell!r}"
        assert pattern.description == text, \
            f"{pattern.id}: description {pattern.description!r}, page has {text!r}"
        assert pattern.section.endswith(heading), \
            f"{pattern.id}: section {pattern.section!r}, page row is under {heading!r}"
        assert pattern.page == FUSION_PATTERNS, f"{pattern.id} cites {pattern.page}"


def test_catalog_order_and_families() -> None:
    families = [e.family for e in CATALOG]
    want = ([PatternFamily.float_inference] * 11 + [PatternFamily.quantized] * 7
            + [PatternFamily.training] * 2
            + [PatternFamily.quantized_convtranspose, PatternFamily.softmax])
    assert families == want, f"catalog family order {[f.value for f in families]}"
    assert [e.id for e in CATALOG[-2:]] == ["convtranspose.int8", "softmax.post_ops"], \
        "page 000's pattern then page 003's must close the catalog"
    assert CATALOG[-2].page == QUANTIZED_CONVTRANSPOSE and CATALOG[-1].page == SOFTMAX, \
        "the last two entries must cite pages 000 and 003"
    ids = pattern_ids()
    assert len(set(ids)) == len(ids) == 22, f"ids must be 22 and unique: {ids}"
    for pattern_id in ids:
        assert re.fullmatch(r"[a-z0-9]+(\.[a-z0-9_]+)+", pattern_id), \
            f"id {pattern_id!r} is not a dotted lower-case id"


def test_every_cited_title_is_the_page_title() -> None:
    for page in PAGES:
        lines = _page_lines(page.file)
        titles = [lines[i] for i in range(len(lines) - 1)
                  if lines[i].strip() and set(lines[i + 1]) == {"="}]
        assert titles[:1] == [page.title], f"{page.file} is titled {titles[:1]}, cited as " \
            f"{page.title!r}"


def _post_op_bounds(pattern: PatternEntry) -> list[tuple[int, int]]:
    """Bounds of every repetition of [Unary | Binary] in the entry's tree."""
    found = []
    for _, node in walk(pattern.tree):
        if isinstance(node, Repeat) and isinstance(node.body, Alternation):
            names = [o.name for o in node.body.options if isinstance(o, CategoryRef)]
            if names == ["Unary", "Binary"]:
                found.append((node.low, node.high))
    return found


@pytest.mark.parametrize(("pattern_id", "page_file"), [
    ("convtranspose.int8", QUANTIZED_CONVTRANSPOSE.file), ("softmax.post_ops", SOFTMAX.file)])
def test_structured_pages_bounds_come_from_the_page(pattern_id: str, page_file: str) -> None:
    stated = re.findall(r"(\d+) to (\d+) Binary or Unary operations", _page_text(page_file))
    assert len(stated) == 1, f"{page_file} should state one epilogue range, found {stated}"
    want = (int(stated[0][0]), int(stated[0][1]))
    got = _post_op_bounds(entry(pattern_id))
    assert got == [want], f"{pattern_id}: epilogue bounds {got}, page says {want}"
    assert want in ((0, 4), (0, 20)), f"page bound {want} is not the 0-4 / 0-20 of the pages"


def test_structured_pages_are_written_in_the_notation_with_a_decision() -> None:
    ct = entry("convtranspose.int8")
    assert ct.notation == ("Quantize^? + Dequantize_{>t1}, Dequantize + ConvTranspose_{<t1} + "
                           "BiasAdd^? + [Unary | Binary]^{0-4} + Quantize^?_{>out}"), ct.notation
    sm = entry("softmax.post_ops")
    assert sm.notation == "SoftMax + [Unary | Binary]^{0-20} + TypeCast^? + Quantize^?_{>out}", \
        sm.notation
    for pattern in (ct, sm):
        assert pattern.rst is None, f"{pattern.id} has no RST row on its page"
        ids = [d.id for d in pattern.decisions]
        assert "dec.written_in_notation" in ids, f"{pattern.id} decisions {ids}"


def test_page_categories_are_the_category_table() -> None:
    text = _page_text(FUSION_PATTERNS.file)
    for name, kinds in CATEGORIES.items():
        found = re.search(rf"^{name} = \[(.*)\]$", text, re.MULTILINE)
        assert found is not None, f"page 001 has no line defining {name}"
        listed = tuple(k.strip() for k in found.group(1).split("\\|"))
        assert listed == kinds, f"{name}: page lists {listed}, table has {kinds}"
        for kind in kinds:
            assert kind in SCHEMAS, f"{name} member {kind} has no op schema"


@pytest.mark.parametrize("pattern", CATALOG, ids=lambda e: e.id)
def test_entry_is_complete(pattern: PatternEntry) -> None:
    assert to_notation(parse(pattern.notation)) == pattern.notation, \
        f"{pattern.id}: notation does not print back"
    assert pattern.tree is pattern.tree, f"{pattern.id}: tree is parsed again on each access"
    assert pattern.title == pattern.page.title and pattern.section, \
        f"{pattern.id}: cites {pattern.page}, section {pattern.section!r}"
    assert pattern.description, f"{pattern.id}: empty description"
    decision_ids = [d.id for d in pattern.decisions]
    assert len(set(decision_ids)) == len(decision_ids), f"{pattern.id}: {decision_ids}"
    for d in pattern.decisions:
        assert d.text.strip() and d.reason.strip(), f"{pattern.id}: decision {d.id} is empty"
    known = {r.id for r in RULES}
    assert set(pattern.rule_ids) <= known, f"{pattern.id}: rules {pattern.rule_ids}"
    assert 1 <= pattern.min_ops <= pattern.max_ops, \
        f"{pattern.id}: op counts {pattern.min_ops}..{pattern.max_ops}"


def test_recorded_decisions_on_the_known_ambiguities() -> None:
    want = {
        "softmax.post_ops": {"dec.softmax_post_op_bound", "dec.softmax_f2f_and_f2q",
                             "dec.softmax_f32", "dec.pow_in_unary"},
        "convtranspose.int8": {"dec.ct_table_unreachable", "dec.ct_q2f", "dec.ct_f2q_optional",
                               "dec.ct_gpu_scope", "dec.pow_in_unary"},
        "train.conv_bwd_weights_bias_bwd": {"dec.conv_bwd_weights_chain"},
        "int8.matmul_post_ops": {"dec.int8_weights_t1", "dec.int8_binary_t2"},
        "fp.pool_binary": {"dec.pool_binary_only", "dec.zero_post_ops"},
    }
    for pattern_id, needed in want.items():
        got = {d.id for d in entry(pattern_id).decisions}
        assert needed <= got, f"{pattern_id} lacks decisions {sorted(needed - got)}"
    pow_entries = {e.id for e in CATALOG if "dec.pow_in_unary" in {d.id for d in e.decisions}}
    uses_unary = {e.id for e in CATALOG
                  if any(isinstance(n, CategoryRef) and n.name == "Unary"
                         for _, n in walk(e.tree))}
    assert pow_entries == uses_unary, \
        f"the Pow decision should sit on exactly the entries using Unary: {sorted(pow_entries)}"


def test_rules_cite_catalog_patterns_and_attach_to_entries() -> None:
    ids = set(pattern_ids())
    for r in RULES:
        assert r.patterns and set(r.patterns) <= ids, f"rule {r.id} names {r.patterns}"
        for pattern_id in r.patterns:
            assert r.id in entry(pattern_id).rule_ids, f"{pattern_id} does not list {r.id}"
    assert entry("convtranspose.int8").rule_ids and entry("softmax.post_ops").rule_ids, \
        "pages 000 and 003 state rules; their entries must carry them"


def test_lookup_errors_are_typed() -> None:
    with pytest.raises(UnknownPatternError, match=r"no pattern 'fp\.nope'.*fp\.conv_post_ops"):
        entry("fp.nope")
    with pytest.raises(UnknownPatternError, match="no pattern family 'misc'"):
        entries("misc")
    softmax = entries("softmax")
    assert [e.id for e in softmax] == ["softmax.post_ops"], f"softmax family {softmax}"
    assert len(entries(PatternFamily.quantized)) == 7, "page 001 has 7 quantized rows"
