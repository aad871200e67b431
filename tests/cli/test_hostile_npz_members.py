"""An ``.npz`` archive holding two members of one name (a zip file may): a reader would take
the last one silently, so `run --inputs` (and a failure folder's ``inputs.npz``) refuse it,
naming the member."""

from __future__ import annotations

import io
import warnings
import zipfile
from pathlib import Path

import numpy as np
import pytest

from fusionspec.cli.main import main
from fusionspec.reference.arrays import read_npz
from fusionspec.reference.errors import InputMismatchError
from fusionspec.spec.dtypes import DataType as D
from fusionspec.spec.graph import Graph, LogicalTensor, Op
from fusionspec.spec.onednn_json import dump


def _npy(array: np.ndarray) -> bytes:
    buffer = io.BytesIO()
    np.save(buffer, array)
    return buffer.getvalue()


def _twice(path: Path) -> Path:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # zipfile warns of the duplicate name it writes
        with zipfile.ZipFile(path, "w") as archive:
            archive.writestr("0.npy", _npy(np.zeros((2, 3), np.float32)))
            archive.writestr("0.npy", _npy(np.full((2, 3), 7, np.float32)))
    return path


def test_a_member_named_twice_is_refused(tmp_path: Path) -> None:
    tensor = LogicalTensor(0, D.f32, (2, 3))
    with pytest.raises(InputMismatchError, match=r"member '0\.npy' appears more than once"):
        read_npz(_twice(tmp_path / "in.npz"), [tensor])


def test_run_refuses_such_inputs_in_one_line(tmp_path: Path,
                                             capsys: pytest.CaptureFixture[str]) -> None:
    t = [LogicalTensor(0, D.f32, (2, 3)), LogicalTensor(1, D.f32, (2, 3))]
    dump(Graph([Op(0, "ReLU", (t[0],), (t[1],))]), tmp_path / "graph.json")
    code = main(["run", str(tmp_path / "graph.json"), "--inputs",
                 str(_twice(tmp_path / "in.npz"))])
    err = capsys.readouterr().err
    assert code == 1 and "appears more than once" in err and "Traceback" not in err, \
        f"one line naming the member, exit 1: {code} {err}"
