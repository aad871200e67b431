"""Arrays keyed by tensor id in ``.npz`` files: how fusionspec stores inputs and outputs.

Keys are tensor ids as decimal strings. Types NumPy cannot store natively travel as their bit
patterns: bf16 as uint16, f8_e4m3/f8_e5m2 as uint8, s4/u4 as int8/uint8; every other dtype as
its own NumPy dtype. `read_npz` checks ids, dtypes and shapes against the tensors it expects;
`write_npz` writes the same encoding (``fusionspec run`` and the suite's failure folders use it).
"""

from __future__ import annotations

import zipfile
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import numpy as np

from fusionspec.spec.dtypes import DataType
from fusionspec.spec.graph import LogicalTensor
from fusionspec.spec.types import Array

from .dtypes import numpy_dtype
from .errors import InputMismatchError

__all__ = ["read_npz", "write_npz", "to_transport", "from_transport"]

#: Types an npz file cannot hold, and the integer type their bits travel in.
_TRANSPORT: dict[DataType, np.dtype[Any]] = {
    DataType.bf16: np.dtype(np.uint16),
    DataType.f8_e4m3: np.dtype(np.uint8),
    DataType.f8_e5m2: np.dtype(np.uint8),
    DataType.s4: np.dtype(np.int8),
    DataType.u4: np.dtype(np.uint8),
}


def to_transport(array: Array, dtype: DataType) -> Array:
    """The array as an npz can store it (bit patterns for bf16, f8, s4 and u4)."""
    if dtype in _TRANSPORT:
        return np.ascontiguousarray(array).view(_TRANSPORT[dtype])
    return array


def from_transport(array: Array, tensor: LogicalTensor) -> Array:
    """An array read from an npz, as tensor `tensor`'s storage dtype; raises
    `InputMismatchError` when its dtype is neither the storage nor the transport type."""
    want = numpy_dtype(tensor.dtype)
    if array.dtype == want:
        return array
    carrier = _TRANSPORT.get(tensor.dtype)
    if carrier is not None and array.dtype == carrier:
        return np.ascontiguousarray(array).view(want)
    expected = f"{carrier} bit patterns" if carrier is not None else str(want)
    raise InputMismatchError(f"npz array has dtype {array.dtype}; a {tensor.dtype} tensor needs "
                             f"{expected}", tensor_id=tensor.id)


def read_npz(path: str | Path, inputs: Sequence[LogicalTensor]) -> dict[int, Array]:
    """Read the arrays of `inputs` from an npz file, checking ids, dtypes and shapes."""
    by_id = {t.id: t for t in inputs}
    try:
        loaded = np.load(path, allow_pickle=False)
        if not isinstance(loaded, np.lib.npyio.NpzFile):
            raise InputMismatchError(f"{path} holds a single array, not an .npz archive keyed "
                                     "by tensor id")
        with loaded as npz:
            raw: dict[str, Array] = {key: npz[key] for key in npz.files}
    except (zipfile.BadZipFile, ValueError, EOFError) as exc:
        raise InputMismatchError(f"cannot read {path} as an .npz archive: {exc}") from None
    arrays: dict[int, Array] = {}
    for key, array in raw.items():
        if not key.isdigit():
            raise InputMismatchError(f"npz key {key!r} is not a tensor id (a decimal number)")
        tid = int(key)
        if tid not in by_id:
            known = ", ".join(str(i) for i in sorted(by_id)) or "none"
            raise InputMismatchError(f"npz key {key!r} is not an input of the graph (inputs: "
                                     f"{known})", tensor_id=tid)
        arrays[tid] = from_transport(array, by_id[tid])
    missing = sorted(set(by_id) - set(arrays))
    if missing:
        raise InputMismatchError(f"{path} has no array for graph input(s) {missing}",
                                 tensor_id=missing[0])
    return arrays


def write_npz(path: str | Path, arrays: Mapping[int, Array],
              tensors: Mapping[int, LogicalTensor]) -> None:
    payload = {str(tid): to_transport(arr, tensors[tid].dtype) for tid, arr in arrays.items()}
    with open(path, "wb") as handle:
        np.savez(handle, **payload)  # type: ignore[arg-type]
