"""Hostile input to ``fusionspec run`` and ``validate``: each case once crashed with a traceback,
loaded something it should have refused, or overwrote a file it was reading. Every case must
end in one line naming the problem and a non-zero exit, never a traceback or a wrong result."""

from __future__ import annotations

import io
import json
import re
import zipfile
from pathlib import Path

import numpy as np
import pytest

from fusionspec.cli.main import main
from fusionspec.reference import execute
from fusionspec.reference.arrays import read_npz
from fusionspec.reference.errors import InputMismatchError, MemoryBudgetError
from fusionspec.reference.memory import graph_bytes
from fusionspec.spec.dtypes import DataType as D
from fusionspec.spec.graph import Graph, LogicalTensor, Op
from fusionspec.spec.onednn_json import dump


def _graph(shape: tuple[int, ...] = (2, 3)) -> Graph:
    """out = ReLU(x0 + x1): inputs 0 and 1, f32."""
    t = [LogicalTensor(i, D.f32, shape) for i in range(4)]
    return Graph([Op(0, "Add", (t[0], t[1]), (t[2],)), Op(1, "ReLU", (t[2],), (t[3],))])


@pytest.fixture
def graph_file(tmp_path: Path) -> Path:
    path = tmp_path / "graph.json"
    dump(_graph(), path)
    return path


def _cli(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str, str]:
    code = main(list(argv))
    captured = capsys.readouterr()
    assert "Traceback" not in captured.err, f"{argv}: a traceback on stderr: {captured.err}"
    return code, captured.out, captured.err


def _npz(path: Path, members: dict[str, bytes]) -> Path:
    with zipfile.ZipFile(path, "w") as archive:
        for name, data in members.items():
            archive.writestr(name, data)
    return path


def _npy(array: np.ndarray) -> bytes:
    buffer = io.BytesIO()
    np.save(buffer, array)
    return buffer.getvalue()


def _claiming(shape: tuple[int, ...]) -> bytes:
    """An .npy member whose header claims `shape` but which holds no data."""
    buffer = io.BytesIO()
    header = {"descr": "<f4", "fortran_order": False, "shape": shape}
    np.lib.format.write_array_header_1_0(buffer, header)
    return buffer.getvalue()


ok = _npy(np.zeros((2, 3), np.float32))


@pytest.mark.parametrize(("members", "message"), [
    # int("²") raises ValueError and int("00") == 0: a key must be canonical decimal.
    ({"\u00b2.npy": ok, "1.npy": ok}, r"member '\u00b2\.npy' is not an array keyed by a tensor id"),
    ({"0.npy": ok, "00.npy": ok, "1.npy": ok}, r"member '00\.npy' is not an array keyed"),
    ({"0.npy": ok, "1.npy": ok, "notes.txt": b"hello"}, r"member 'notes\.txt' is not an array"),
    ({"0.npy": b"not an array", "1.npy": ok}, r"member '0\.npy' is not a NumPy array"),
    # A 100-byte member claiming 4 TB must be refused from its header, never allocated.
    ({"0.npy": _claiming((10**6, 10**6)), "1.npy": ok},
     r"npz array has shape \[1000000, 1000000\]"),
    ({"0.npy": _npy(np.zeros((2, 3), object)), "1.npy": ok}, r"dtype object"),
])
def test_hostile_npz_is_refused_from_its_headers(
        members: dict[str, bytes], message: str, tmp_path: Path, graph_file: Path,
        capsys: pytest.CaptureFixture[str]) -> None:
    path = _npz(tmp_path / "hostile.npz", members)
    code, _, err = _cli(capsys, "run", str(graph_file), "--inputs", str(path))
    assert code == 1, f"a hostile npz exits with 1, got {code}: {err}"
    assert re.search(message, err), f"stderr {err!r} lacks {message!r}"


def test_npz_larger_than_the_budget_is_refused_before_loading(tmp_path: Path) -> None:
    inputs = [LogicalTensor(i, D.f32, (1024, 1024)) for i in (0, 1)]  # 4 MiB each
    members = {f"{i}.npy": _claiming((1024, 1024)) for i in (0, 1)}
    path = _npz(tmp_path / "big.npz", members)
    with pytest.raises(InputMismatchError, match=r"holds 0\.00781 GB of arrays, more than the "
                                                 r"budget of 0\.00391 GB"):
        read_npz(path, inputs, max_bytes=4 * 2**20)


def test_graph_past_the_memory_budget_ends_in_one_line(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path = tmp_path / "huge.json"
    dump(_graph((10**6, 10**6, 1000)), path)
    code, _, err = _cli(capsys, "run", str(path))
    assert code == 1, f"a 4 EB graph exits with 1, got {code}"
    assert "needs about" in err and "--max-memory" in err, f"names the need and the knob: {err}"
    code, _, err = _cli(capsys, "run", str(path), "--max-memory", "-1")
    assert code == 2 and "--max-memory must be positive" in err, f"usage error: {code} {err}"


def test_execute_checks_the_budget_before_computing() -> None:
    graph = _graph((4, 4)).finalize()
    need = graph_bytes(graph)
    zeros = {i: np.zeros((4, 4), np.float32) for i in (0, 1)}
    with pytest.raises(MemoryBudgetError, match="needs about"):
        execute(graph, zeros, memory_budget=need - 1)
    out = execute(graph, zeros, memory_budget=need)
    assert out[3].shape == (4, 4), "at the budget exactly the graph runs"


@pytest.mark.parametrize("option", ["--out", "--save-inputs", "--inputs"])
def test_an_output_never_overwrites_an_input(option: str, tmp_path: Path, graph_file: Path,
                                             capsys: pytest.CaptureFixture[str]) -> None:
    before = graph_file.read_bytes()
    argv = ["run", str(graph_file)]
    if option == "--inputs":
        argv += ["--inputs", str(tmp_path / "x.npz"), "--out", str(tmp_path / "x.npz")]
    else:
        argv += [option, str(graph_file)]
    code, _, err = _cli(capsys, *argv)
    assert code == 2 and "is also an input" in err, f"{option}: usage error, got {code} {err}"
    assert graph_file.read_bytes() == before, f"{option}: the graph file is untouched"


def test_two_outputs_on_one_path_are_refused(tmp_path: Path, graph_file: Path,
                                             capsys: pytest.CaptureFixture[str]) -> None:
    same = str(tmp_path / "same.npz")
    code, _, err = _cli(capsys, "run", str(graph_file), "--out", same, "--save-inputs", same)
    assert code == 2 and "is also another output" in err, f"usage error, got {code} {err}"


@pytest.mark.parametrize(("text", "what"), [
    ("[" * 100_000 + "]" * 100_000, "nested arrays"),
    ('{"graph": [{"id": 1e999999}]}', "a number past float range"),
    ('{"version": "3.5", "engine_kind": "cpu", "fpmath_mode": "strict", "input_ports": [], '
     '"output_ports": [], "graph": [{"id": 0, "name": "a", "kind": "ReLU", "attrs": {}, '
     '"inputs": [{"id": 1, "dtype": "f32", "shape": [' + "9" * 5000 + '], "stride": [1], '
     '"layout_type": "strided", "property_type": "undef"}], "outputs": []}]}',
     "a 5000-digit dim"),
])
@pytest.mark.parametrize("command", ["run", "validate"])
def test_pathological_json_is_one_line(text: str, what: str, command: str, tmp_path: Path,
                                       capsys: pytest.CaptureFixture[str]) -> None:
    path = tmp_path / "evil.json"
    path.write_text(text)
    code, out, _ = _cli(capsys, command, str(path), "--json")
    assert code == 1, f"{command} on {what}: exit 1, got {code}"
    data = json.loads(out)
    assert data["ok"] is False and data["error"], f"{command} on {what}: --json says why: {data}"
