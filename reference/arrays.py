"""Arrays keyed by tensor id in ``.npz`` files: how fusionspec stores inputs and outputs.

Keys are tensor ids as decimal strings. Types NumPy cannot store natively travel as their bit
patterns: bf16 as uint16, f8_e4m3/f8_e5m2 as uint8, s4/u4 as int8/uint8; every other dtype as
its own NumPy dtype. `read_npz` checks ids, dtypes and shapes against the tensors it expects,
and refuses an archive holding two members of one name (a zip reader would silently take the
last); `write_npz` writes the same encoding (``fusionspec run`` and the suite's failure folders
use it).
"""

from __future__ import annotations

import math
import re
import zipfile
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import numpy as np

from fusionspec.spec.dtypes import DataType
from fusionspec.spec.files import atomic_open
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


def read_npz(path: str | Path, inputs: Sequence[LogicalTensor], *,
             max_bytes: int | None = None) -> dict[int, Array]:
    """Read the arrays of `inputs` from an npz file. Every member's key, dtype and shape are
    checked against `inputs` from the array headers, and their total size against `max_bytes`,
    before any array is loaded: a small file that claims a huge array is refused, never
    loaded. Raises `InputMismatchError` naming the problem."""
    by_id = {t.id: t for t in inputs}
    try:
        with zipfile.ZipFile(path) as archive:
            members = _members(archive, by_id, path)
            total = sum(math.prod(shape) * dtype.itemsize for _, shape, dtype in
                        members.values())
            if max_bytes is not None and total > max_bytes:
                raise InputMismatchError(
                    f"{path} holds {total / 2**30:.3g} GB of arrays, more than the budget of "
                    f"{max_bytes / 2**30:.3g} GB")
            arrays = {tid: from_transport(_load(archive, name), by_id[tid])
                      for tid, (name, _, _) in members.items()}
    except (zipfile.BadZipFile, zipfile.LargeZipFile, EOFError, OSError) as exc:
        raise InputMismatchError(f"cannot read {path} as an .npz archive: {exc}"
                                 f"{_npy_hint(path)}") from None
    missing = sorted(set(by_id) - set(arrays))
    if missing:
        raise InputMismatchError(f"{path} has no array for graph input(s) {missing}",
                                 tensor_id=missing[0])
    return arrays


def _npy_hint(path: str | Path) -> str:
    """A hint when the file is a single .npy array rather than an archive of them."""
    try:
        with open(path, "rb") as handle:
            is_npy = handle.read(6) == b"\x93NUMPY"
    except OSError:
        return ""
    return (" (it is a single array in .npy format; inputs go in an .npz archive keyed by "
            "tensor id)") if is_npy else ""


#: A tensor id as a key: a decimal number without leading zeros, so "0" and "00" never collide.
_KEY = re.compile(r"0|[1-9][0-9]*")


def _members(archive: zipfile.ZipFile, by_id: Mapping[int, LogicalTensor], path: str | Path
             ) -> dict[int, tuple[str, tuple[int, ...], np.dtype[Any]]]:
    """Tensor id -> (member name, shape, dtype), from the headers, each checked."""
    found: dict[int, tuple[str, tuple[int, ...], np.dtype[Any]]] = {}
    names = archive.namelist()
    seen: set[str] = set()
    for name in names:
        if name in seen:
            raise InputMismatchError(f"{path}: member {name!r} appears more than once (an "
                                     ".npz archive holds one array per tensor id)")
        seen.add(name)
    for name in names:
        key = name.removesuffix(".npy")
        if not name.endswith(".npy") or not _KEY.fullmatch(key):
            raise InputMismatchError(f"{path}: member {name!r} is not an array keyed by a tensor "
                                     "id (a decimal number without leading zeros)")
        tid = int(key)
        if tid not in by_id:
            known = ", ".join(str(i) for i in sorted(by_id)) or "none"
            raise InputMismatchError(f"npz key {key!r} is not an input of the graph (inputs: "
                                     f"{known})", tensor_id=tid)
        shape, dtype = _header(archive, name, path)
        _check_header(by_id[tid], shape, dtype)
        found[tid] = (name, shape, dtype)
    return found


def _header(archive: zipfile.ZipFile, name: str, path: str | Path
            ) -> tuple[tuple[int, ...], np.dtype[Any]]:
    try:
        with archive.open(name) as member:
            version = np.lib.format.read_magic(member)
            if version == (1, 0):
                shape, _, dtype = np.lib.format.read_array_header_1_0(member)
            else:
                shape, _, dtype = np.lib.format.read_array_header_2_0(member)
    except (ValueError, EOFError) as exc:
        raise InputMismatchError(f"{path}: member {name!r} is not a NumPy array: {exc}") \
            from None
    return tuple(int(d) for d in shape), np.dtype(dtype)


def _check_header(tensor: LogicalTensor, shape: tuple[int, ...], dtype: np.dtype[Any]) -> None:
    want = numpy_dtype(tensor.dtype)
    carrier = _TRANSPORT.get(tensor.dtype)
    if dtype != want and dtype != carrier:
        expected = f"{want} or {carrier} bit patterns" if carrier is not None else str(want)
        raise InputMismatchError(f"npz array has dtype {dtype}; a {tensor.dtype} tensor needs "
                                 f"{expected}", tensor_id=tensor.id)
    declared = tensor.shape
    flat_strided = tensor.strides is not None and len(shape) == 1
    if declared is not None and shape != declared and not flat_strided:
        raise InputMismatchError(f"npz array has shape {list(shape)}; tensor {tensor.id} is "
                                 f"{list(declared)}", tensor_id=tensor.id)


def _load(archive: zipfile.ZipFile, name: str) -> Array:
    try:
        with archive.open(name) as member:
            array: Array = np.lib.format.read_array(member, allow_pickle=False)
    except ValueError as exc:  # NumPy's word for data shorter than its header says
        raise InputMismatchError(f"member {name!r} is not a whole NumPy array: {exc}") from None
    return array


def write_npz(path: str | Path, arrays: Mapping[int, Array],
              tensors: Mapping[int, LogicalTensor]) -> None:
    """Write `arrays` keyed by tensor id, atomically (`fusionspec.spec.files.atomic_open`): a
    failed write never leaves a truncated file behind."""
    payload = {str(tid): to_transport(arr, tensors[tid].dtype) for tid, arr in arrays.items()}
    with atomic_open(path) as out:
        np.savez(out, **payload)  # type: ignore[arg-type]
