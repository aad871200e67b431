"""``fusionspec run``: a JSON graph file in, a summary and an npz of the outputs out; inputs
filled from a seed or read from an npz (bf16 as uint16 bit patterns), bad npz files rejected
with a typed error and exit code 1."""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import ml_dtypes
import numpy as np
import pytest

from fusionspec.cli.main import main
from fusionspec.reference import execute, fill_inputs
from fusionspec.spec.dtypes import DataType as D
from fusionspec.spec.graph import Graph, LogicalTensor, Op
from fusionspec.spec.onednn_json import dump


def _graph() -> Graph:
    """bf16 x*y + z, then a f32 copy: outputs 4 (bf16) and 5 (f32)."""
    t = [LogicalTensor(i, D.bf16, (2, 3)) for i in range(5)]
    f = LogicalTensor(5, D.f32, (2, 3))
    return Graph([Op(0, "Multiply", (t[0], t[1]), (t[2],)), Op(1, "Add", (t[2], t[3]), (t[4],)),
                  Op(2, "TypeCast", (t[4],), (f,))])


@pytest.fixture
def graph_file(tmp_path: Path) -> Path:
    path = tmp_path / "graph.json"
    dump(_graph(), path)
    return path


def _run(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str, str]:
    code = main(["run", *argv])
    captured = capsys.readouterr()
    return code, captured.out, captured.err


def test_run_fills_inputs_summarises_and_writes_outputs(
        graph_file: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    out = tmp_path / "out.npz"
    code, text, err = _run(capsys, str(graph_file), "--seed", "7", "--out", str(out))
    assert code == 0, f"run exits 0 on a valid graph, got {code}: {err}"
    assert "3 op(s)" in text and "seed 7" in text, f"summary names ops and seed: {text}"
    assert "tensor 5  f32  [2, 3]" in text, f"each output gets a line: {text}"
    with np.load(out) as npz:
        saved = {k: npz[k] for k in npz.files}
    assert sorted(saved) == ["5"], f"only graph outputs are written, got keys {sorted(saved)}"
    graph = _graph().finalize()
    want = execute(graph, fill_inputs(graph, 7))
    assert np.array_equal(saved["5"], want[5]), "the npz holds the reference result"


def test_bf16_inputs_round_trip_as_uint16_bits(
        graph_file: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    saved_inputs, out1, out2 = tmp_path / "in.npz", tmp_path / "o1.npz", tmp_path / "o2.npz"
    code, _, err = _run(capsys, str(graph_file), "--save-inputs", str(saved_inputs),
                        "--out", str(out1))
    assert code == 0, err
    with np.load(saved_inputs) as npz:
        dtypes = {k: npz[k].dtype for k in npz.files}
    assert dtypes == {"0": np.uint16, "1": np.uint16, "3": np.uint16}, \
        f"bf16 inputs are stored as uint16 bit patterns, got {dtypes}"
    code, text, err = _run(capsys, str(graph_file), "--inputs", str(saved_inputs),
                           "--out", str(out2))
    assert code == 0 and "inputs from" in text, f"run with --inputs: {code} {err}"
    with np.load(out1) as a, np.load(out2) as b:
        assert np.array_equal(a["5"], b["5"]), "replaying the saved inputs gives the same output"


def test_hand_made_npz_with_bf16_bits(tmp_path: Path, capsys: pytest.CaptureFixture[str],
                                      graph_file: Path) -> None:
    def bits(v: float) -> np.ndarray[Any, np.dtype[Any]]:
        return np.full((2, 3), v, np.float32).astype(ml_dtypes.bfloat16).view(np.uint16)
    inputs = tmp_path / "in.npz"
    np.savez(inputs, **{"0": bits(1 + 2**-7), "1": bits(1 + 2**-7), "3": bits(-(1 + 2**-6))})
    out = tmp_path / "out.npz"
    code, _, err = _run(capsys, str(graph_file), "--inputs", str(inputs), "--out", str(out),
                        "--single-op")
    assert code == 0, err
    with np.load(out) as npz:
        # (1 + 2^-7)^2 = 1 + 2^-6 + 2^-14 is stored as bf16 1 + 2^-6 between partitions.
        assert npz["5"].tolist() == [[0.0] * 3] * 2, \
            f"op by op, the bf16 product loses 2^-14 and x*y + z is 0: got {npz['5']}"


def test_json_output(graph_file: Path, capsys: pytest.CaptureFixture[str]) -> None:
    code, text, _ = _run(capsys, str(graph_file), "--json", "--single-op")
    data = json.loads(text)
    assert code == 0 and data["ok"] is True, f"--json reports ok: {data}"
    assert data["partitions"] == 3 and data["seed"] == 0, f"3 single-op partitions: {data}"
    (stats,) = data["outputs"]
    assert stats["id"] == 5 and stats["dtype"] == "f32" and stats["shape"] == [2, 3], stats
    assert stats["min"] <= stats["mean"] <= stats["max"], f"min <= mean <= max: {stats}"


@pytest.mark.parametrize(("arrays", "message"), [
    ({"0": np.zeros((2, 3), np.uint16), "1": np.zeros((2, 3), np.uint16)},
     r"has no array for graph input\(s\) \[3\]"),
    ({"0": np.zeros((2, 3), np.float32), "1": np.zeros((2, 3), np.uint16),
      "3": np.zeros((2, 3), np.uint16)}, r"tensor 0: npz array has dtype float32; a bf16"),
    ({"0": np.zeros((3, 2), np.uint16), "1": np.zeros((2, 3), np.uint16),
      "3": np.zeros((2, 3), np.uint16)},
     r"tensor 0: npz array has shape \[3, 2\]; tensor 0 is \[2, 3\]"),
    ({"x": np.zeros(1)}, r"member 'x.npy' is not an array keyed by a tensor id"),
    ({"42": np.zeros(1)}, r"key '42' is not an input of the graph \(inputs: 0, 1, 3\)"),
])
def test_bad_npz_is_a_typed_error(arrays: dict[str, Any], message: str, tmp_path: Path,
                                  graph_file: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path = tmp_path / "bad.npz"
    np.savez(path, **arrays)
    code, _, err = _run(capsys, str(graph_file), "--inputs", str(path))
    assert code == 1, f"a bad npz exits with 1, got {code}"
    assert re.search(message, err), f"stderr {err!r} lacks {message!r}"


def test_unreadable_npz_and_missing_file(tmp_path: Path, graph_file: Path,
                                         capsys: pytest.CaptureFixture[str]) -> None:
    junk = tmp_path / "junk.npz"
    junk.write_bytes(b"not a zip file")
    code, _, err = _run(capsys, str(graph_file), "--inputs", str(junk))
    assert code == 1 and "cannot read" in err, f"junk npz: {code} {err!r}"
    single = tmp_path / "one.npy"
    np.save(single, np.zeros(3))
    code, _, err = _run(capsys, str(graph_file), "--inputs", str(single))
    assert code == 1 and "single array" in err, f".npy instead of .npz: {code} {err!r}"
    code, _, err = _run(capsys, str(tmp_path / "nope.json"))
    assert code == 1 and "nope.json" in err, f"a missing graph file: {code} {err!r}"


def test_json_error_report(tmp_path: Path, graph_file: Path,
                           capsys: pytest.CaptureFixture[str]) -> None:
    path = tmp_path / "bad.npz"
    np.savez(path, **{"9": np.zeros(1)})
    code, text, _ = _run(capsys, str(graph_file), "--inputs", str(path), "--json")
    data = json.loads(text)
    assert code == 1 and data["error"] == "InputMismatchError", f"typed error in JSON: {data}"
