"""``fusionspec validate``: exit codes, the text summary, the --json object, several files."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from fusionspec.cli.main import main
from fusionspec.spec import DataType, Graph, LogicalTensor, Op
from fusionspec.spec import onednn_json as oj

EXAMPLES = Path(__file__).resolve().parents[2] / "examples"
EXAMPLE_FILES = sorted(EXAMPLES.glob("*.json"))


def run(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str, str]:
    code = main(["validate", *argv])
    out, err = capsys.readouterr()
    return code, out, err


def _write(tmp_path: Path, name: str, graph: Graph) -> str:
    path = tmp_path / name
    oj.dump(graph, path)
    return str(path)


def _t(tid: int, shape: tuple[int, ...]) -> LogicalTensor:
    return LogicalTensor(tid, DataType.f32, shape)


def opaque_graph() -> Graph:
    reshape = Op(0, "StaticReshape", (_t(0, (6,)),), (_t(1, (2, 3)),),
                 {"shape": (2, 3), "special_zero": False})
    return Graph((reshape, Op(1, "ReLU", (_t(1, (2, 3)),), (_t(2, (2, 3)),))))


def bad_shape_graph() -> Graph:
    # ReLU keeps its shape: a (3, 2) output contradicts inference.
    return Graph((Op(4, "ReLU", (_t(0, (2, 3)),), (_t(1, (3, 2)),)),))


def test_examples_exist() -> None:
    names = [p.name for p in EXAMPLE_FILES]
    assert names == ["conv_bias_relu.json", "int8_conv.json", "matmul_gelu_add.json",
                     "softmax_typecast.json"], f"examples/ holds {names}"


@pytest.mark.parametrize("path", EXAMPLE_FILES, ids=[p.name for p in EXAMPLE_FILES])
def test_each_example_is_valid(capsys: pytest.CaptureFixture[str], path: Path) -> None:
    code, out, _ = run(capsys, str(path))
    assert code == 0, f"{path.name}: exit {code}, output {out!r}"
    assert out.startswith(f"{path}: ok: ") and "(0 outside the spec)" in out, (
        f"{path.name}: summary line {out!r}")


def test_summary_counts(capsys: pytest.CaptureFixture[str]) -> None:
    path = EXAMPLES / "conv_bias_relu.json"
    code, out, _ = run(capsys, str(path))
    assert code == 0, f"exit {code} for a valid example"
    assert out == f"{path}: ok: 3 ops, 6 tensors (0 outside the spec)\n", f"summary {out!r}"


def test_json_object_for_one_file(capsys: pytest.CaptureFixture[str]) -> None:
    code, out, _ = run(capsys, str(EXAMPLES / "int8_conv.json"), "--json")
    data = json.loads(out)
    want: dict[str, Any] = {"file": str(EXAMPLES / "int8_conv.json"), "ok": True, "ops": 5,
                            "tensors": 7, "outside_spec": 0, "warnings": [], "error": None}
    assert (code, data) == (0, want), f"exit {code}, --json gave {data}"


def test_opaque_ops_are_counted_and_warned(capsys: pytest.CaptureFixture[str],
                                          tmp_path: Path) -> None:
    path = _write(tmp_path, "opaque.json", opaque_graph())
    code, out, _ = run(capsys, path)
    assert code == 0 and out.endswith("ok: 2 ops, 3 tensors (1 outside the spec)\n"), (
        f"exit {code}, output {out!r}")
    code, out, _ = run(capsys, path, "--json")
    warnings = json.loads(out)["warnings"]
    assert len(warnings) == 1 and "StaticReshape" in warnings[0], f"warnings {warnings}"


def test_malformed_json_names_the_path(capsys: pytest.CaptureFixture[str],
                                       tmp_path: Path) -> None:
    doc = oj.to_dict(bad_shape_graph())
    doc["graph"][0]["inputs"][0]["dtype"] = "f31"
    path = tmp_path / "bad.json"
    path.write_text(json.dumps(doc))
    code, out, _ = run(capsys, str(path))
    assert code == 1, f"exit {code} for a malformed file"
    assert out.startswith(f"{path}: error: JsonFormatError: $.graph[0].inputs[0].dtype: "
                          "unknown data type 'f31'"), f"output {out!r}"
    code, out, _ = run(capsys, str(path), "--json")
    error = json.loads(out)["error"]
    assert error["type"] == "JsonFormatError" and error["path"] == "$.graph[0].inputs[0].dtype", (
        f"--json error {error}")


def test_rule_violation_names_op_and_rule(capsys: pytest.CaptureFixture[str],
                                          tmp_path: Path) -> None:
    path = _write(tmp_path, "shape.json", bad_shape_graph())
    code, out, _ = run(capsys, path)
    assert code == 1, f"exit {code} for a graph breaking a shape rule"
    assert "error: ShapeRuleError: op 4 (ReLU), output 0:" in out and \
        "[schema.shape.output]" in out, f"output {out!r}"
    code, out, _ = run(capsys, path, "--json")
    data = json.loads(out)
    assert data["ok"] is False and data["ops"] == 1, f"--json {data}"
    assert {k: data["error"][k] for k in ("type", "rule", "op_id", "op_kind", "where")} == {
        "type": "ShapeRuleError", "rule": "schema.shape.output", "op_id": 4, "op_kind": "ReLU",
        "where": "output 0"}, f"--json error {data['error']}"


def test_several_files(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    good = str(EXAMPLES / "softmax_typecast.json")
    bad = _write(tmp_path, "shape.json", bad_shape_graph())
    missing = str(tmp_path / "missing.json")
    code, out, _ = run(capsys, good, bad, missing)
    lines = out.splitlines()
    assert code == 1 and len(lines) == 3, f"exit {code}, lines {lines}"
    assert lines[0].startswith(f"{good}: ok:") and lines[1].startswith(f"{bad}: error:"), (
        f"lines {lines}")
    assert lines[2].startswith(f"{missing}: error: FileNotFoundError:"), f"line {lines[2]!r}"
    code, out, _ = run(capsys, good, bad, missing, "--json")
    data = json.loads(out)
    assert data["ok"] is False and [f["ok"] for f in data["files"]] == [True, False, False], (
        f"--json {data}")
    code, out, _ = run(capsys, good, good)
    assert code == 0, f"two valid files: exit {code}"


def test_no_file_is_a_usage_error(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as info:
        main(["validate"])
    assert info.value.code == 2, f"validate without a file exits {info.value.code}, want 2"


def test_command_line_entry_point() -> None:
    proc = subprocess.run([sys.executable, "-m", "fusionspec.cli", "validate",
                           str(EXAMPLES / "matmul_gelu_add.json")],
                          capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0 and "ok: 3 ops, 7 tensors" in proc.stdout, (
        f"exit {proc.returncode}, stdout {proc.stdout!r}, stderr {proc.stderr!r}")
