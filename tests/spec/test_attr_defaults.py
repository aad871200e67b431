"""Attribute defaults live in the op schemas only.

`fusionspec.spec.attrs` reads an attribute as given or as its schema default; no code of the
package reads one with a default of its own (``op.attrs.get("mode", "nearest")``), which could
disagree with the schema or stand in for an attribute the schema requires. The source scan
below finds any such read; the accessor's tests pin what it returns and how it fails.
"""

from __future__ import annotations

import ast
import sys
import textwrap
from collections.abc import Iterator
from pathlib import Path

import pytest

from fusionspec.spec.attrs import attr_value, attr_value_in, attr_value_or_none
from fusionspec.spec.dtypes import DataType
from fusionspec.spec.errors import FusionspecError, MissingAttributeError
from fusionspec.spec.graph import AttrValue, Graph, LogicalTensor, Op
from fusionspec.spec.opschemas import SCHEMAS

ROOT = Path(__file__).resolve().parent.parent.parent
sys.path.insert(0, str(ROOT / "tools"))
from layout import subpackages  # noqa: E402

#: Where defaults are applied on purpose: the validator fills them in, the accessor falls back
#: on them. (file, function)
_ALLOWED = {("spec/validate.py", "_check_attrs"), ("spec/attrs.py", "attr_value_in"),
            ("spec/attrs.py", "attr_value_or_none")}
#: Folders scanned besides the subpackages: scripts that also read ops.
_EXTRA_FOLDERS = ("bench", "tools")


def _sources() -> Iterator[Path]:
    folders = [*subpackages().values(), *_EXTRA_FOLDERS]
    for folder in folders:
        yield from sorted((ROOT / folder).rglob("*.py"))


def _is_attrs(node: ast.expr) -> bool:
    return isinstance(node, ast.Attribute) and node.attr == "attrs"


class _Finder(ast.NodeVisitor):
    """Reads with a default of their own: ``<x>.attrs.get(name, default)``, the same on a
    name bound to an ``.attrs`` mapping or named ``attrs``, and ``<x>.attr(name, default)``."""

    def __init__(self, tree: ast.Module) -> None:
        self.found: list[tuple[int, str, str]] = []
        self._function = "<module>"
        self._bound = {"attrs"}
        for node in ast.walk(tree):
            value = getattr(node, "value", None)
            if isinstance(node, ast.Assign | ast.AnnAssign) and value is not None \
                    and _is_attrs(value):
                targets = node.targets if isinstance(node, ast.Assign) else [node.target]
                self._bound |= {t.id for t in targets if isinstance(t, ast.Name)}

    def visit_FunctionDef(self, node: ast.FunctionDef | ast.AsyncFunctionDef) -> None:
        outer, self._function = self._function, node.name
        self.generic_visit(node)
        self._function = outer

    visit_AsyncFunctionDef = visit_FunctionDef

    def visit_Call(self, node: ast.Call) -> None:
        func = node.func
        given = len(node.args) + len(node.keywords)
        if isinstance(func, ast.Attribute) and given >= 2:
            receiver = func.value
            mapping = _is_attrs(receiver) or (isinstance(receiver, ast.Name)
                                              and receiver.id in self._bound)
            if (func.attr == "get" and mapping) or func.attr == "attr":
                self.found.append((node.lineno, self._function, ast.unparse(node)))
        self.generic_visit(node)


def _shadow_defaults(path: Path, text: str) -> list[str]:
    rel = path.relative_to(ROOT).as_posix()
    tree = ast.parse(text, filename=rel)
    finder = _Finder(tree)
    finder.visit(tree)
    return [f"{rel}:{line}: {code} (in {function})" for line, function, code in finder.found
            if (rel, function) not in _ALLOWED]


def test_no_code_reads_an_attribute_with_a_default_of_its_own() -> None:
    found = [hit for path in _sources()
             for hit in _shadow_defaults(path, path.read_text(encoding="utf-8"))]
    assert not found, ("attribute defaults belong to the op schemas: read these through "
                       "fusionspec.spec.attrs.attr_value (or op.attrs[name] on a finalized "
                       "op)\n  " + "\n  ".join(found))


@pytest.mark.parametrize("code", [
    'mode = op.attrs.get("mode", "nearest")',
    'x = main.attrs.get(\n    "data_format",\n    "NXC")',
    "v = op.attrs.get(spec.name, spec.default)",
    'a = op.attrs\nb = a.get("beta", 1.0)',
    'b = attrs.get("beta", default=1.0)',
    'v = op.attr("axis", 1)',
])
def test_the_scan_finds_a_planted_shadow_default(code: str) -> None:
    path = ROOT / "spec" / "planted.py"
    source = "def f(op, main, spec, attrs):\n" + textwrap.indent(code, "    ") + "\n"
    assert _shadow_defaults(path, source), f"the scan misses {code!r}"


@pytest.mark.parametrize("code", [
    'v = op.attrs.get("zps")',
    'v = op.attrs["mode"]',
    'v = table.get("mode", "nearest")',
    'v = attr_value(op, "mode")',
])
def test_the_scan_leaves_plain_reads_alone(code: str) -> None:
    path = ROOT / "spec" / "planted.py"
    assert not _shadow_defaults(path, f"def f(op, table):\n    {code}\n")


def test_the_scan_allows_the_validators_filling() -> None:
    path = ROOT / "spec" / "validate.py"
    code = "def _check_attrs(op, schema):\n    return op.attrs.get('x', 1)\n"
    assert not _shadow_defaults(path, code)
    assert _shadow_defaults(path, code.replace("_check_attrs", "validate_op"))


# -- the accessor ------------------------------------------------------------------------------

def _interpolate(**attrs: AttrValue) -> Op:
    src = LogicalTensor(0, DataType.f32, (1, 4, 4, 3))
    dst = LogicalTensor(1, DataType.f32, (1, 8, 8, 3))
    return Op(7, "Interpolate", [src], [dst], attrs)


def test_a_given_value_is_returned_as_given() -> None:
    op = _interpolate(mode="linear", data_format="NCX", sizes=(8, 8))
    assert attr_value(op, "mode") == "linear"
    assert attr_value(op, "data_format") == "NCX"
    assert attr_value(op, "sizes") == (8, 8)


def test_a_left_out_attribute_reads_as_its_schema_default() -> None:
    op = _interpolate(mode="nearest", sizes=(8, 8))
    spec = SCHEMAS["Interpolate"].attr_spec("coordinate_transformation_mode")
    assert spec is not None
    assert attr_value(op, "coordinate_transformation_mode") == spec.default == "half_pixel"
    assert attr_value(op, "data_format") == "NXC"


def test_the_default_is_what_finalizing_fills_in() -> None:
    op = _interpolate(mode="nearest", sizes=(8, 8))
    done = Graph([op]).finalize().ops[0]
    for spec in SCHEMAS["Interpolate"].attrs:
        if spec.default is not None:
            assert attr_value(op, spec.name) == done.attrs[spec.name], spec.name


def test_a_missing_required_attribute_names_kind_op_and_attribute() -> None:
    op = _interpolate(sizes=(8, 8))
    with pytest.raises(MissingAttributeError) as caught:
        attr_value(op, "mode")
    error = caught.value
    assert isinstance(error, FusionspecError)
    assert (error.op_kind, error.op_id, error.attribute) == ("Interpolate", 7, "mode")
    text = str(error)
    assert "Interpolate" in text and "op 7" in text and "mode" in text and "required" in text


def test_an_optional_attribute_without_a_default_has_no_value() -> None:
    op = _interpolate(mode="nearest", sizes=(8, 8))
    with pytest.raises(MissingAttributeError, match="optional without a default"):
        attr_value(op, "scales")
    assert attr_value_or_none(op, "scales") is None
    assert attr_value_or_none(op, "sizes") == (8, 8)
    assert attr_value_or_none(_interpolate(sizes=(8, 8)), "mode") is None


def test_an_attribute_the_schema_does_not_name_is_an_error() -> None:
    op = _interpolate(mode="nearest", sizes=(8, 8))
    for read in (attr_value, attr_value_or_none):
        with pytest.raises(MissingAttributeError, match="no such attribute"):
            read(op, "axis")


def test_a_kind_without_a_schema_is_an_error() -> None:
    op = Op(3, "LayerNorm", [LogicalTensor(0, DataType.f32, (2, 2))],
            [LogicalTensor(1, DataType.f32, (2, 2))])
    for read in (attr_value, attr_value_or_none):
        with pytest.raises(MissingAttributeError, match="no op schema") as caught:
            read(op, "epsilon")
        assert "op 3 (LayerNorm)" in str(caught.value)


def test_attributes_of_an_op_being_composed() -> None:
    assert attr_value_in("SoftPlus", {}, "beta") == 1.0
    assert attr_value_in("SoftPlus", {"beta": 2.0}, "beta") == 2.0
    with pytest.raises(MissingAttributeError) as caught:
        attr_value_in("Pow", {}, "beta")
    assert caught.value.op_id is None and str(caught.value).startswith("Pow, attribute beta")


def test_former_shadow_defaults_that_disagreed_with_the_schema() -> None:
    """Readers once took Interpolate's mode as "nearest", Pow's beta as 1.0 and AvgPool's
    kernel as empty when left out; the schema requires all three, so there is no value to
    read."""
    pow_op = Op(1, "Pow", [LogicalTensor(0, DataType.f32, (2,))],
                [LogicalTensor(1, DataType.f32, (2,))])
    pool = Op(2, "AvgPool", [LogicalTensor(0, DataType.f32, (1, 4, 4, 1))],
              [LogicalTensor(1, DataType.f32, (1, 2, 2, 1))],
              {"strides": (2, 2), "pads_begin": (0, 0), "pads_end": (0, 0),
               "exclude_pad": False})
    for op, name in ((_interpolate(sizes=(8, 8)), "mode"), (pow_op, "beta"), (pool, "kernel")):
        with pytest.raises(MissingAttributeError, match="required"):
            attr_value(op, name)
    # A SoftPlus beta does default to 1.0: the same reader serves both kinds.
    softplus = Op(3, "SoftPlus", [LogicalTensor(0, DataType.f32, (2,))],
                  [LogicalTensor(1, DataType.f32, (2,))])
    assert attr_value(softplus, "beta") == 1.0
