"""``fusionspec run FILE.json``: execute a oneDNN graph JSON file with the reference.

The graph is loaded, finalized, partitioned (the reference partitioner, or one op per
partition with ``--single-op``) and executed; inputs come from ``--inputs in.npz`` or are
filled deterministically from ``--seed``. The graph outputs (tensors no op consumes) are
summarised on stdout and written to ``--out out.npz``; ``--save-inputs`` writes the inputs used,
so a run can be replayed exactly.

npz files are keyed by tensor id as a decimal string. Types NumPy cannot store natively travel
as their bit patterns: bf16 as uint16, f8_e4m3/f8_e5m2 as uint8, s4/u4 as int8/uint8; every other
dtype as its own NumPy dtype.
"""

from __future__ import annotations

import argparse
import math
import zipfile
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import numpy as np

from fusionspec.reference.dtypes import numpy_dtype
from fusionspec.reference.errors import InputMismatchError
from fusionspec.reference.execute import default_partitioner, execute, single_op_partitions
from fusionspec.reference.filling import fill_inputs
from fusionspec.spec.dtypes import DataType
from fusionspec.spec.graph import Graph, LogicalTensor, Partition
from fusionspec.spec.onednn_json import load

from .cli import emit

__all__ = ["HELP", "add_arguments", "run", "read_npz", "write_npz", "to_transport",
           "from_transport"]

HELP = "execute a graph JSON file with the reference and summarise its outputs"

Array = np.ndarray[Any, np.dtype[Any]]

#: Types an npz file cannot hold, and the integer type their bits travel in.
_TRANSPORT: dict[DataType, np.dtype[Any]] = {
    DataType.bf16: np.dtype(np.uint16),
    DataType.f8_e4m3: np.dtype(np.uint8),
    DataType.f8_e5m2: np.dtype(np.uint8),
    DataType.s4: np.dtype(np.int8),
    DataType.u4: np.dtype(np.uint8),
}


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("file", help="oneDNN graph JSON file")
    parser.add_argument("--inputs", metavar="IN.npz", help="input arrays keyed by tensor id "
                        "(default: filled deterministically from --seed)")
    parser.add_argument("--seed", type=int, default=0, help="seed for filled inputs "
                        "(default 0)")
    parser.add_argument("--out", metavar="OUT.npz", help="write the graph outputs here")
    parser.add_argument("--save-inputs", metavar="IN.npz", help="write the inputs used here")
    parser.add_argument("--single-op", action="store_true",
                        help="run every op as its own partition (no fusion)")
    parser.add_argument("--json", action="store_true", help="machine-readable output")


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


def _number(value: float) -> float | None:
    return value if math.isfinite(value) else None


def summarise(tid: int, array: Array, tensor: LogicalTensor) -> dict[str, Any]:
    """Statistics of one output: min/max/mean over its finite values, NaN and inf counts."""
    values = np.asarray(array).astype(np.float64)
    finite = values[np.isfinite(values)]
    stats: dict[str, Any] = {"id": tid, "dtype": tensor.dtype.value, "shape": list(array.shape),
                             "min": None, "max": None, "mean": None,
                             "nan": int(np.isnan(values).sum()),
                             "inf": int(np.isinf(values).sum())}
    if finite.size:
        stats.update(min=_number(float(finite.min())), max=_number(float(finite.max())),
                     mean=_number(float(finite.mean())))
    return stats


def _line(s: dict[str, Any]) -> str:
    def fmt(v: float | None) -> str:
        return "-" if v is None else f"{v:.6g}"
    extra = "".join(f"  {k} {s[k]}" for k in ("nan", "inf") if s[k])
    return (f"  tensor {s['id']}  {s['dtype']}  {s['shape']}  min {fmt(s['min'])}  "
            f"max {fmt(s['max'])}  mean {fmt(s['mean'])}{extra}")


def run(args: argparse.Namespace) -> int:
    graph: Graph = load(args.file).finalize()
    parts: list[Partition] = (single_op_partitions(graph) if args.single_op
                              else default_partitioner(graph))
    if args.inputs:
        inputs = read_npz(args.inputs, graph.input_tensors)
        origin = f"inputs from {args.inputs}"
    else:
        inputs = fill_inputs(graph, args.seed)
        origin = f"inputs filled with seed {args.seed}"
    outputs = execute(graph, inputs, partitioner=lambda _graph: parts)
    tensors = graph.tensors
    if args.save_inputs:
        write_npz(args.save_inputs, inputs, tensors)
    if args.out:
        write_npz(args.out, outputs, tensors)
    stats = [summarise(tid, arr, tensors[tid]) for tid, arr in outputs.items()]
    lines = [f"{args.file}: {len(graph.ops)} op(s) in {len(parts)} partition(s), {origin}"]
    lines += [_line(s) for s in stats]
    if args.out:
        lines.append(f"wrote {len(outputs)} output(s) to {args.out}")
    emit(args, "\n".join(lines), {
        "ok": True, "file": args.file, "ops": len(graph.ops), "partitions": len(parts),
        "inputs": args.inputs, "seed": None if args.inputs else args.seed, "out": args.out,
        "outputs": stats})
    return 0
