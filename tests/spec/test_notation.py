"""The pattern notation: parsing, printing, errors with positions, and the tree helpers.

Round trips are checked on every catalog entry and, as a property, on generated trees; errors
are checked to point at the character that is wrong.
"""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from fusionspec.spec import SCHEMAS, NotationError
from fusionspec.spec.catalog import CATALOG, PatternEntry, entry
from fusionspec.spec.categories import CATEGORIES
from fusionspec.spec.match import match_kinds
from fusionspec.spec.notation import parse, rst_to_plain, to_notation
from fusionspec.spec.pattern_tree import (
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
    first_kinds,
    leaves,
    mark_sites,
    max_ops,
    min_ops,
    node_at,
    op_kinds,
    walk,
)

# -- catalog round trips -------------------------------------------------------------------


@pytest.mark.parametrize("pattern", CATALOG, ids=lambda e: e.id)
def test_catalog_entry_prints_back_to_its_notation(pattern: PatternEntry) -> None:
    notation = pattern.notation
    printed = to_notation(parse(notation))
    assert printed == notation, f"printed {printed!r}, catalog has {notation!r}"


def test_quantized_row_tree_shape() -> None:
    tree = entry("int8.conv_post_ops").tree
    assert isinstance(tree, Subgraphs) and len(tree.parts) == 3, \
        f"int8 conv should be 3 ','-joined subgraphs, got {tree!r}"
    t2 = tree.parts[1]
    assert t2 == Repeat(OpRef("Dequantize", Marks(outputs=("t2",))), 0, 3), \
        f"'Dequantize_{{>t2}}^{{0-3}}' should repeat a t2-marked Dequantize, got {t2!r}"
    main = tree.parts[2]
    assert isinstance(main, Chain), f"main subgraph should be a chain, got {main!r}"
    last = main.items[-1]
    assert last == Repeat(OpRef("Quantize"), 0, 1, Marks(outputs=("out",))), \
        f"'Quantize^?_{{>out}}' should mark the Repeat's output, got {last!r}"
    post = main.items[3]
    want = Repeat(Alternation((CategoryRef("Unary"),
                               CategoryRef("Binary", Marks(inputs=("t2",))))), 0, 3)
    assert post == want, f"post-ops should be [Unary | Binary_{{<t2}}]^{{0-3}}, got {post!r}"


def test_mark_order_and_canonical_spelling() -> None:
    cases = {
        "ReLU_{>out,<in1}": "ReLU_{<in1,>out}",
        "Convolution+BiasAdd^{0-1}+[Unary|Binary]^{0-3}_{>out}":
            "Convolution + BiasAdd^? + [Unary | Binary]^{0-3}_{>out}",
        "ReLU^{2-2}": "ReLU^{2}",
        "  [ ReLU ]  ": "[ReLU]",
        "Dequantize _{>t1} , Dequantize + Add_{<t1}": "Dequantize_{>t1}, Dequantize + Add_{<t1}",
        "ReLU_{>t1}^{2}_{>out}, Add_{<t1}": "ReLU_{>t1}^{2}_{>out}, Add_{<t1}",
    }
    for text, canonical in cases.items():
        got = to_notation(parse(text))
        assert got == canonical, f"{text!r} printed as {got!r}, canonical is {canonical!r}"


def test_categories_parse_to_category_refs() -> None:
    tree = parse("Reduction + Unary + Binary")
    assert isinstance(tree, Chain), f"expected a chain, got {tree!r}"
    names = [item.name for item in tree.items if isinstance(item, CategoryRef)]
    assert names == ["Reduction", "Unary", "Binary"], f"category refs {names}"
    for item in tree.items:
        assert isinstance(item, CategoryRef) and item.kinds == CATEGORIES[item.name], \
            f"{item!r} should carry the page's member list"


# -- rst -----------------------------------------------------------------------------------


def test_rst_to_plain_prose_examples() -> None:
    cases = {
        "A+[B\\|C] :math:`^{3}`": "A + [B | C]^{3}",
        "A :math:`_{>t1}` +B+C :math:`_{<t1}`": "A_{>t1} + B + C_{<t1}",
        "A :math:`_{>t1}` +B :math:`_{>out}` +C :math:`_{<t1,>out}`":
            "A_{>t1} + B_{>out} + C_{<t1,>out}",
        "[Unary | Binary :math:`_{<t2}` ] :math:`^{0-3}`": "[Unary | Binary_{<t2}]^{0-3}",
        "Dequantize :math:`_{>t1}` , Dequantize + Reorder":
            "Dequantize_{>t1}, Dequantize + Reorder",
    }
    for rst, plain in cases.items():
        got = rst_to_plain(rst)
        assert got == plain, f"rst {rst!r} became {got!r}, want {plain!r}"


# -- errors point at the right character ----------------------------------------------------

ERRORS = [
    # (text, the substring the error must point at (its first occurrence), words in message)
    ("", "", "empty"),
    ("Convolution + ", "<end>", "expected an op kind"),
    ("Convolutoin + ReLU", "Convolutoin", "did you mean 'Convolution'"),
    ("relu", "relu", "unknown op kind"),
    ("[ReLU | Tanh", "<end>", "close the '[' at character 0"),
    ("[ReLU, Tanh]", ", Tanh", "',' joins top-level subgraphs"),
    ("ReLU ] + Tanh", "] + Tanh", "unexpected ']'"),
    ("ReLU^{3-1}", "3-1", "low bound exceeds"),
    ("ReLU^{0}", "0}", "at least one copy"),
    ("ReLU^{0-0}", "0}", "at least one copy"),
    ("ReLU^x", "x", "expected '{'"),
    ("ReLU^{}", "}", "expected a repetition count"),
    ("ReLU^{1-}", "}", "expected a repetition count"),
    ("ReLU^{2", "<end>", "close the superscript"),
    ("ReLU^?^{2}", "^{2}", "second superscript"),
    ("ReLU_{>out}_{<in1}", "_{<in1}", "second subscript"),
    ("ReLU^?_{>out}_{<in1}", "_{<in1}", "second subscript"),
    ("ReLU_{out}", "out}", "expected '<' (input) or '>' (output)"),
    ("ReLU_>out", ">out", "expected '{'"),
    ("ReLU_{>}", "}", "expected a tensor name"),
    ("ReLU_{<out}", "<out", "'out' names a partition output"),
    ("ReLU_{>in1}", ">in1", "names a partition input"),
    ("ReLU_{>out,>out}", ">out}", "marked twice"),
    ("ReLU_{>out", "<end>", "close the subscript"),
    ("Add_{<t1}", "t1", "no op outputs it"),
    ("ReLU_{>t1} + Add", "t1", "nothing consumes it"),
    ("ReLU_{>t1}, Tanh_{>t1}, Add_{<t1}", "t1}, Add", "already output at character 7"),
    ("ReLU +, Tanh", ", Tanh", "expected an op kind"),
]


@pytest.mark.parametrize(("text", "at", "words"), ERRORS, ids=[e[0] or "<empty>" for e in ERRORS])
def test_parse_error_points_at_the_problem(text: str, at: str, words: str) -> None:
    want = len(text) if at == "<end>" else text.index(at) if at else 0
    with pytest.raises(NotationError) as caught:
        parse(text)
    err = caught.value
    assert err.position == want, \
        f"{text!r}: error at {err.position}, expected {want} ({at!r}); message: {err.detail}"
    assert words in err.detail, f"{text!r}: message {err.detail!r} should say {words!r}"
    assert "^" in str(err).splitlines()[-1], f"rendered error should show a caret: {err}"


def test_parse_rejects_non_strings() -> None:
    with pytest.raises(NotationError, match="must be a str"):
        parse(42)  # type: ignore[arg-type]


# -- node construction ---------------------------------------------------------------------

BAD_NODES = [
    (lambda: Chain((OpRef("ReLU"),)), "at least two items"),
    (lambda: Chain((Chain((OpRef("ReLU"), OpRef("Tanh"))), OpRef("Abs"))), "Chain item"),
    (lambda: Alternation((OpRef("ReLU"),)), "at least two options"),
    (lambda: Subgraphs((OpRef("ReLU"),)), "at least two parts"),
    (lambda: Group(Subgraphs((OpRef("ReLU"), OpRef("Tanh")))), "bracket"),
    (lambda: Repeat(OpRef("ReLU"), 2, 1), "low exceeds high"),
    (lambda: Repeat(OpRef("ReLU"), 0, 0), "at least 1"),
    (lambda: Repeat(OpRef("ReLU"), -1, 2), "int >= 0"),
    (lambda: Repeat(Repeat(OpRef("ReLU"), 0, 1), 0, 2), "Repeat body cannot be a Repeat"),
    (lambda: Repeat(Chain((OpRef("ReLU"), OpRef("Tanh"))), 0, 2), "Group"),
    (lambda: OpRef("Relu"), "not an op kind"),
    (lambda: OpRef("Unary"), "is a category"),
    (lambda: CategoryRef("Eltwise"), "not a category"),
    (lambda: Marks(outputs=("1x",)), "not a tensor name"),
    (lambda: Marks(inputs=("out",)), "partition output"),
    (lambda: Marks(outputs=("in2",)), "partition input"),
    (lambda: Marks(outputs=("t1", "t1")), "duplicate"),
    (lambda: Group("ReLU"), "pattern node"),  # type: ignore[arg-type]
]


@pytest.mark.parametrize(("build", "words"), BAD_NODES, ids=[w for _, w in BAD_NODES])
def test_unprintable_trees_are_refused(build: object, words: str) -> None:
    with pytest.raises(PatternTreeError) as caught:
        build()  # type: ignore[operator]
    assert words in str(caught.value), f"message {caught.value} should say {words!r}"


# -- helpers -------------------------------------------------------------------------------


@pytest.mark.parametrize(("pattern_id", "low", "high"), [
    ("fp.conv_post_ops", 1, 6), ("fp.bn_relu", 2, 2), ("int8.conv_post_ops", 3, 12),
    ("int8.pool_add", 5, 5), ("convtranspose.int8", 3, 10), ("softmax.post_ops", 1, 23),
])
def test_op_count_bounds(pattern_id: str, low: int, high: int) -> None:
    tree = entry(pattern_id).tree
    got = (min_ops(tree), max_ops(tree))
    assert got == (low, high), f"{pattern_id}: op count {got}, expected {(low, high)}"


def test_kinds_a_node_can_match() -> None:
    pool = entry("fp.pool_binary").tree
    want = {"AvgPool", "MaxPool", *CATEGORIES["Binary"]}
    assert op_kinds(pool) == want, f"fp.pool_binary kinds {sorted(op_kinds(pool))}"
    assert first_kinds(pool) == {"AvgPool", "MaxPool"}, f"first kinds {first_kinds(pool)}"
    int8 = entry("int8.conv_post_ops").tree
    assert first_kinds(int8) == {"Quantize", "Dequantize"}, f"first kinds {first_kinds(int8)}"
    optional_head = parse("BiasAdd^? + ReLU")
    assert first_kinds(optional_head) == {"BiasAdd", "ReLU"}, \
        f"an optional first item lets the second start the match: {first_kinds(optional_head)}"


def test_walk_paths_lead_back_to_their_nodes() -> None:
    for pattern in CATALOG:
        for path, node in walk(pattern.tree):
            assert node_at(pattern.tree, path) is node, f"{pattern.id}: path {path} is off"
    with pytest.raises(PatternTreeError, match="leads nowhere"):
        node_at(entry("fp.bn_relu").tree, (0, 3))


def test_mark_sites_link_t1() -> None:
    sites = mark_sites(entry("int8.conv_post_ops").tree)
    t1 = [(s.path, s.output) for s in sites if s.name == "t1"]
    assert t1 == [((0, 1), True), ((2, 1), False)], \
        f"t1 should be output by the weights Dequantize and input by Convolution, got {t1}"


def test_no_marks_on_chains_and_subgraphs() -> None:
    tree = entry("int8.reorder_add").tree
    assert tree.marks == NO_MARKS and not tree.marks, f"Subgraphs marks {tree.marks}"


# -- generated trees -----------------------------------------------------------------------

MARKS = st.builds(lambda o, i: Marks(tuple(o), tuple(i)),
                  st.lists(st.just("out"), max_size=1),
                  st.lists(st.sampled_from(["in", "in1", "in2"]), unique=True, max_size=2))
LEAF = st.one_of(st.builds(OpRef, st.sampled_from(sorted(SCHEMAS)), MARKS),
                 st.builds(CategoryRef, st.sampled_from(sorted(CATEGORIES)), MARKS))
BOUNDS = st.tuples(st.integers(0, 3), st.integers(0, 3)).map(lambda b: (b[0], b[0] + b[1] + 1))


def _extend(items: st.SearchStrategy[Node]) -> st.SearchStrategy[Node]:
    chain = st.lists(items, min_size=2, max_size=3).map(lambda xs: Chain(tuple(xs)))
    chain_or_item = st.one_of(items, chain)
    bracket = st.one_of(
        st.builds(lambda xs, m: Alternation(tuple(xs), m),
                  st.lists(chain_or_item, min_size=2, max_size=3), MARKS),
        st.builds(Group, chain_or_item, MARKS))
    repeat = st.builds(lambda body, b, m: Repeat(body, b[0], b[1], m),
                       st.one_of(LEAF, bracket), BOUNDS, MARKS)
    return st.one_of(bracket, repeat)


ITEMS = st.recursive(LEAF, _extend, max_leaves=8)
CHAINS = st.one_of(ITEMS, st.lists(ITEMS, min_size=2, max_size=4).map(lambda xs: Chain(tuple(xs))))
TREES = st.one_of(CHAINS, st.lists(CHAINS, min_size=2, max_size=3)
                  .map(lambda xs: Subgraphs(tuple(xs))))


@settings(max_examples=150)
@given(TREES)
def test_print_then_parse_gives_the_same_tree(tree: Node) -> None:
    text = to_notation(tree)
    again = parse(text)
    assert again == tree, f"{text!r} parsed to a different tree:\n{again!r}\nwant\n{tree!r}"
    assert to_notation(again) == text, f"printing {text!r} twice differs"


def _instance(tree: Node, data: st.DataObject) -> list[str]:
    """One op-kind sequence that `tree` matches, drawn at random."""
    if isinstance(tree, OpRef):
        return [tree.kind]
    if isinstance(tree, CategoryRef):
        return [data.draw(st.sampled_from(tree.kinds))]
    if isinstance(tree, Alternation):
        return _instance(data.draw(st.sampled_from(tree.options)), data)
    if isinstance(tree, Group):
        return _instance(tree.body, data)
    if isinstance(tree, Repeat):
        count = data.draw(st.integers(tree.low, min(tree.high, 4)))
        return [kind for _ in range(count) for kind in _instance(tree.body, data)]
    parts = tree.items if isinstance(tree, Chain) else tree.parts
    return [kind for part in parts for kind in _instance(part, data)]


@settings(max_examples=100)
@given(st.sampled_from(CATALOG), st.data())
def test_every_instance_of_an_entry_matches_its_tree(pattern: PatternEntry,
                                                     data: st.DataObject) -> None:
    tree = pattern.tree
    kinds = _instance(tree, data)
    paths = match_kinds(tree, kinds)
    assert paths is not None, f"{pattern.id}: instance {kinds} not matched"
    assert min_ops(tree) <= len(kinds) <= max_ops(tree), \
        f"instance of {len(kinds)} ops outside {min_ops(tree)}..{max_ops(tree)}"
    leaf_at = dict(leaves(tree))
    for kind, path in zip(kinds, paths):
        leaf = leaf_at[path]
        allowed = (leaf.kind,) if isinstance(leaf, OpRef) else leaf.kinds
        assert kind in allowed, f"{kind} bound to leaf {leaf!r} at {path}"
