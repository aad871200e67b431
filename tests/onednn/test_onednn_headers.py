"""The header reader: C enum semantics, and the enums of the installed library's headers."""

from __future__ import annotations

from pathlib import Path

import pytest

from fusionspec.onednn.errors import OnednnSetupError
from fusionspec.onednn.headers import parse_defines, parse_enums, read_headers

HEADER = """
/// A comment with typedef enum { not_an_enum } fake; inside.
typedef enum {
    first_kind,            // 0
    second_kind,           /* 1 */
    jumped = 0x20,
    after_jump,
#ifdef SOMETHING
    conditional,
#endif
    alias = first_kind,
    shifted = 1u << 4,
} my_kind_t;

typedef enum { a_flag = 1, b_flag = a_flag | 2, } my_flags_t;
#define MY_RUNTIME_OMP 2u
#define MY_RUNTIME_ALIAS MY_RUNTIME_OMP
#define NOT_A_NUMBER "text"
"""


def test_enumerators_follow_c_numbering() -> None:
    enums = parse_enums(HEADER)
    kinds = enums["my_kind_t"]
    want = {"first_kind": 0, "second_kind": 1, "jumped": 0x20, "after_jump": 0x21,
            "conditional": 0x22, "alias": 0, "shifted": 16}
    assert kinds == want, f"my_kind_t parsed as {kinds}, C numbering gives {want}"
    assert enums["my_flags_t"] == {"a_flag": 1, "b_flag": 3}, \
        f"an enumerator defined from an earlier one: {enums['my_flags_t']}"
    assert "fake" not in enums, "an enum inside a comment must not be parsed"


def test_integer_defines_are_read_and_others_skipped() -> None:
    defines = parse_defines(HEADER)
    assert defines.get("MY_RUNTIME_OMP") == 2 and defines.get("MY_RUNTIME_ALIAS") == 2, \
        f"integer #defines (with a u suffix, and one naming another): {defines}"
    assert "NOT_A_NUMBER" not in defines, "a string #define is not an integer constant"


def test_missing_headers_name_the_file_and_the_fix(tmp_path: Path) -> None:
    with pytest.raises(OnednnSetupError, match=r"dnnl_common_types\.h not found.*onednn"):
        read_headers(tmp_path)


def test_installed_headers_give_the_graph_enums(onednn_include: Path) -> None:
    headers = read_headers(onednn_include)
    kinds = headers.members("dnnl_graph_op_kind_t", "dnnl_graph_op_")
    for kind in ("softmax", "batch_norm_inference", "matmul", "convolution", "relu"):
        assert kind in kinds, f"op kind {kind} missing from the installed headers' enum"
    assert len(set(kinds.values())) == len(kinds), \
        "op kind values must be distinct (they are numbered in declaration order)"
    assert headers.value("dnnl_data_type_t", "dnnl_f32") is not None, "dnnl_f32 must be defined"
    attrs = headers.members("dnnl_graph_op_attr_t", "dnnl_graph_op_attr_")
    assert attrs.get("scales") == 0x20 and attrs.get("axis") == 0x30, \
        f"attribute values encode their type by range (scales 0x20, axis 0x30): {attrs}"
