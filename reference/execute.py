"""The reference executor: run a partition, or a whole graph, with the NumPy op functions.

Semantics (docs/semantics.md, "Precision inside a partition"): a partition's result *is* its
ops run one by one in f32, with casts only at the partition's outputs. Inside a partition every
floating-point value is float32 and is never rounded to its tensor's declared dtype (only
TypeCast and Quantize, which are conversions by definition, round); each partition output is
cast to its declared dtype (round to nearest even, integer saturation). Between partitions of a
graph, values travel in their declared dtypes, as they would between separately compiled
partitions.

Inputs, keyed by logical-tensor id, must have exactly the storage dtype of their tensor
(`fusionspec.reference.dtypes.numpy_dtype`; bf16 is ``ml_dtypes.bfloat16``). Each is one of:

- an array of the tensor's shape: its values are the tensor's values, whatever the array's own
  memory layout (the logical strides only describe memory, never values);
- for a tensor with explicit strides, a flat 1-D buffer in which the tensor's elements sit at
  ``sum(index * stride)``: it is read through the strides (non-dense and zero strides work;
  the buffer must be long enough for the largest offset).

Keys that are not inputs of the partition or graph are ignored, so one dictionary can feed
several partitions.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from contextlib import nullcontext
from typing import Any, TypeAlias

import numpy as np

from fusionspec.spec.dtypes import DataType
from fusionspec.spec.graph import Graph, LogicalTensor, Op, Partition
from fusionspec.spec.opschemas import OPAQUE_KINDS, SCHEMAS
from fusionspec.spec.types import Array
from fusionspec.spec.validate import validate_op

from .dtypes import cast_to, compute_dtype, high_precision, is_float_dtype, numpy_dtype, widen
from .errors import (
    ExecutionError,
    InputMismatchError,
    OpInputError,
    OutputShapeError,
    UnsupportedOpError,
)
from .memory import budget, check_budget
from .partitioner import partition
from .registry import OpImpl, implementation

__all__ = ["execute", "execute_partition", "execute_graph", "execute_high_precision", "evaluate_op",
           "run_op", "partition_order", "single_op_partitions", "read_input",
           "default_partitioner", "Partitioner"]

#: A function that splits a finalized graph into partitions covering every op once.
Partitioner: TypeAlias = Callable[[Graph], Sequence[Partition]]


def execute(target: Partition | Graph, inputs: Mapping[int, Array], *,
            partitioner: Partitioner | None = None, keep_intermediates: bool = False,
            memory_budget: int | None = None) -> dict[int, Array]:
    """Run a partition or a graph on `inputs` and return its outputs by tensor id.

    For a `Partition`: its outputs, each in its declared dtype. For a `Graph`: every graph
    output (tensors no op consumes); the graph is finalized first if needed and split with
    `partitioner` (default: the reference partitioner, see `default_partitioner`). With
    `keep_intermediates`, every tensor is returned, inputs included; tensors internal to a fused
    partition are then reported cast to their declared dtype, for inspection only (the
    partition's own consumers saw f32). A graph or partition whose tensors would need more
    than `memory_budget` bytes (default `fusionspec.reference.memory.budget()`) raises
    `MemoryBudgetError` before anything is computed.
    """
    if isinstance(target, Partition):
        if partitioner is not None:
            raise TypeError("partitioner applies to a Graph, not to a Partition")
        check_budget(target.as_graph(), budget() if memory_budget is None else memory_budget)
        return execute_partition(target, inputs, keep_intermediates=keep_intermediates)
    if isinstance(target, Graph):
        check_budget(target, budget() if memory_budget is None else memory_budget)
        return execute_graph(target, inputs, partitioner=partitioner,
                             keep_intermediates=keep_intermediates)
    raise TypeError(f"execute() takes a Partition or a Graph, got {type(target).__name__}")


# -- inputs ---------------------------------------------------------------------------------

def read_input(tensor: LogicalTensor, array: object) -> Array:
    """Check `array` against `tensor` and return the tensor's values as a dense array of its
    storage dtype (see the module docstring for the two accepted forms)."""
    if not isinstance(array, np.ndarray):
        raise InputMismatchError(f"expected a NumPy array, got {type(array).__name__}",
                                 tensor_id=tensor.id)
    want = numpy_dtype(tensor.dtype)
    if array.dtype != want:
        raise InputMismatchError(f"dtype {array.dtype} does not match the tensor's {tensor.dtype}"
                                 f" (NumPy {want})", tensor_id=tensor.id)
    shape = tensor.shape
    if shape is None or _shape_fits(shape, array.shape):
        return np.array(array, copy=True)
    if tensor.strides is not None and array.ndim == 1 and tensor.shape_known:
        return _through_strides(tensor, array)
    raise InputMismatchError(f"shape {list(array.shape)} does not match the tensor's "
                             f"{_fmt(shape)}", tensor_id=tensor.id)


def _shape_fits(declared: tuple[int, ...], actual: tuple[int, ...]) -> bool:
    return len(declared) == len(actual) and all(d < 0 or d == a
                                                for d, a in zip(declared, actual))


def _through_strides(tensor: LogicalTensor, buffer: Array) -> Array:
    assert tensor.shape is not None and tensor.strides is not None
    shape, strides = tensor.shape, tensor.strides
    if len(strides) != len(shape):
        raise InputMismatchError(f"{len(strides)} strides for a rank-{len(shape)} tensor",
                                 tensor_id=tensor.id)
    if any(s < 0 for s in strides):
        raise InputMismatchError(f"negative strides {list(strides)} are not supported",
                                 tensor_id=tensor.id)
    if 0 in shape:
        return np.zeros(shape, dtype=buffer.dtype)
    needed = 1 + sum((d - 1) * s for d, s in zip(shape, strides))
    if buffer.shape[0] < needed:
        raise InputMismatchError(
            f"a flat buffer of {buffer.shape[0]} elements is too short for shape "
            f"{list(shape)} with strides {list(strides)} (needs {needed})", tensor_id=tensor.id)
    flat = np.ascontiguousarray(buffer)
    view = np.lib.stride_tricks.as_strided(
        flat, shape=shape, strides=tuple(s * flat.itemsize for s in strides), writeable=False)
    return np.array(view, copy=True)


def _fmt(shape: tuple[int, ...]) -> str:
    return "[" + ", ".join(str(d) if d >= 0 else "?" for d in shape) + "]"


# -- one partition --------------------------------------------------------------------------

def execute_partition(partition: Partition, inputs: Mapping[int, Array], *,
                      keep_intermediates: bool = False) -> dict[int, Array]:
    """Run one partition; see `execute`."""
    missing = [t.id for t in partition.inputs if t.id not in inputs]
    if missing:
        raise InputMismatchError(f"no array given for partition {partition.id} input(s) "
                                 f"{missing}", tensor_id=missing[0])
    values: dict[int, Array] = {t.id: widen(read_input(t, inputs[t.id]))
                                for t in partition.inputs}
    declared: dict[int, LogicalTensor] = {t.id: t for t in partition.inputs}
    for op in partition_order(partition):
        results = run_op(op, [values[t.id] for t in op.inputs])
        for tensor, result in zip(op.outputs, results):
            values[tensor.id] = result
            declared[tensor.id] = tensor
    wanted = declared if keep_intermediates else {t.id: t for t in partition.outputs}
    return {tid: cast_to(values[tid], t.dtype) for tid, t in wanted.items()}


def partition_order(partition: Partition) -> list[Op]:
    """The partition's ops with producers first; checks that every op input is available."""
    available = {t.id for t in partition.inputs}
    produced = {t.id for op in partition.ops for t in op.outputs}
    for op in partition.ops:
        for t in op.inputs:
            if t.id not in available and t.id not in produced:
                raise ExecutionError(f"input tensor {t.id} is neither an input of partition "
                                     f"{partition.id} nor produced inside it",
                                     op_id=op.id, op_kind=op.kind, tensor_id=t.id)
    for t in partition.outputs:
        if t.id not in produced and t.id not in available:
            raise ExecutionError(f"partition {partition.id} lists output {t.id}, which none of "
                                 "its ops produces", tensor_id=t.id)
    order: list[Op] = []
    pending = list(partition.ops)
    while pending:
        ready = [op for op in pending if all(t.id in available for t in op.inputs)]
        if not ready:
            raise ExecutionError(f"the ops {[op.id for op in pending]} of partition "
                                 f"{partition.id} form a cycle")
        for op in ready:
            order.append(op)
            available.update(t.id for t in op.outputs)
        pending = [op for op in pending if op not in ready]
    return order


def run_op(op: Op, args: Sequence[Array]) -> list[Array]:
    """One op on its input values (compute dtype), with its schema's defaults filled in: its
    outputs in the compute dtype (f32, or float64 under `high_precision`), never cast to their
    declared types. Errors are the executor's typed errors, naming the op."""
    if op.kind in OPAQUE_KINDS or op.kind not in SCHEMAS:
        raise UnsupportedOpError("the reference does not execute this op kind: it is outside "
                                 "the spec pages", op_id=op.id, op_kind=op.kind)
    impl = implementation(op.kind)
    if impl is None:
        raise UnsupportedOpError("no reference implementation is registered for this kind",
                                 op_id=op.id, op_kind=op.kind)
    op = validate_op(op)  # fills attribute defaults; raises a GraphError for a malformed op
    kwargs: dict[str, Any] = dict(op.attrs)
    if impl.wants_dst_dtype:
        kwargs["dst_dtype"] = op.outputs[0].dtype
    return evaluate_op(op, impl, kwargs, args)


def evaluate_op(op: Op, impl: OpImpl, kwargs: Mapping[str, Any],
                args: Sequence[Array]) -> list[Array]:
    """`run_op` past its checks: `impl` of the checked `op` on `args`, with `kwargs` (the op's
    attributes, defaults filled, and ``dst_dtype`` where the implementation takes it). For a
    caller that evaluates one checked op many times (the error bounds)."""
    try:
        # inf and NaN are IEEE results of the spec's arithmetic here, not accidents to warn of
        with np.errstate(all="ignore"):
            result = impl.fn(*args, **kwargs)
    except ExecutionError as exc:
        raise exc.at_op(op.id, op.kind) from exc
    except (ValueError, IndexError, TypeError) as exc:
        # A NumPy failure on input it cannot evaluate; report it as the op's error.
        raise OpInputError(f"cannot evaluate: {exc}", op_id=op.id, op_kind=op.kind) from exc
    results = list(result) if isinstance(result, tuple) else [result]
    if len(results) < len(op.outputs):
        raise ExecutionError(f"the implementation returned {len(results)} output(s) for "
                             f"{len(op.outputs)} declared", op_id=op.id, op_kind=op.kind)
    out: list[Array] = []
    for tensor, value in zip(op.outputs, results):
        arr = np.asarray(value)
        if is_float_dtype(arr.dtype) and arr.dtype != compute_dtype():
            arr = arr.astype(compute_dtype())
        if tensor.shape is not None and not _shape_fits(tensor.shape, arr.shape):
            raise OutputShapeError(f"computed shape {list(arr.shape)} differs from the declared "
                                 f"{_fmt(tensor.shape)}", op_id=op.id, op_kind=op.kind,
                                 tensor_id=tensor.id)
        out.append(arr)
    return out


# -- graphs ---------------------------------------------------------------------------------

def single_op_partitions(graph: Graph) -> list[Partition]:
    """One partition per op, in graph order: the op's inputs (each tensor once) and outputs.

    A partition is marked unsupported when its op kind is outside the spec pages.
    """
    parts: list[Partition] = []
    for index, op in enumerate(graph.ops):
        ins = tuple({t.id: t for t in op.inputs}.values())
        parts.append(Partition(index, (op,), ins, op.outputs, pattern=None,
                               supported=op.kind in SCHEMAS))
    return parts


def default_partitioner(graph: Graph) -> list[Partition]:
    """The reference partitioner (`fusionspec.reference.partitioner.partition`)."""
    return partition(graph)


def execute_graph(graph: Graph, inputs: Mapping[int, Array], *,
                  partitioner: Partitioner | None = None,
                  keep_intermediates: bool = False) -> dict[int, Array]:
    """Run a whole graph partition by partition; see `execute`."""
    if not graph.finalized:
        graph = graph.finalize()
    missing = [t.id for t in graph.input_tensors if t.id not in inputs]
    if missing:
        raise InputMismatchError(f"no array given for graph input(s) {missing}",
                                 tensor_id=missing[0])
    values: dict[int, Array] = {t.id: read_input(t, inputs[t.id]) for t in graph.input_tensors}
    kept: dict[int, Array] = dict(values)
    parts = list((partitioner or default_partitioner)(graph))
    _check_cover(graph, parts)
    for part in _partitions_in_order(parts):
        produced = execute_partition(part, values, keep_intermediates=keep_intermediates)
        values.update({t.id: produced[t.id] for t in part.outputs})
        kept.update(produced)
    if keep_intermediates:
        return kept
    lost = [t.id for t in graph.output_tensors if t.id not in values]
    if lost:
        raise ExecutionError(f"graph output(s) {lost} are not outputs of any partition",
                             tensor_id=lost[0])
    return {t.id: values[t.id] for t in graph.output_tensors}


def execute_high_precision(graph: Graph, inputs: Mapping[int, Array],
                           partitions: Sequence[Partition] | None = None, *,
                           cast: Callable[[Array, DataType], Array] = cast_to,
                           single: bool = False) -> dict[int, Array]:
    """Every tensor of `graph`, inputs included, computed by the same op functions under
    `high_precision()`: float64 throughout, with no rounding to f32 or to any declared type
    between ops; only the conversions an op means (TypeCast, Quantize, Round) still round.
    Without `partitions` nothing else rounds: not the spec's value but a closer estimate of the
    exact one, to tell how far the reference and a backend each are from it. With
    `partitions`, each of their outputs is rounded to its declared type as the spec says, and
    only the f32 roundings inside a partition are left out: the spec's value as a backend that
    keeps its intermediates exact would compute it. `cast` rounds those partition outputs (an
    alternative rounding evaluates a backend's mistake next to the spec's value). With
    `single`, the ops keep their own f32 arithmetic instead (what a backend computing in f32
    gets before `cast`)."""
    if not graph.finalized:
        graph = graph.finalize()
    rounded = {t.id: t for p in partitions or () for t in p.outputs}
    with nullcontext() if single else high_precision():
        values: dict[int, Array] = {t.id: widen(read_input(t, inputs[t.id]))
                                    for t in graph.input_tensors}
        for op in graph.ops:
            for tensor, result in zip(op.outputs, run_op(op, [values[t.id]
                                                                for t in op.inputs])):
                if tensor.id in rounded and is_float_dtype(np.asarray(result).dtype):
                    with np.errstate(over="ignore", invalid="ignore"):
                        result = widen(cast(result, tensor.dtype))
                values[tensor.id] = result
    return values


def _check_cover(graph: Graph, parts: Sequence[Partition]) -> None:
    seen: dict[int, int] = {}
    for part in parts:
        for op in part.ops:
            if op.id in seen:
                raise ExecutionError(f"op {op.id} is in partitions {seen[op.id]} and {part.id}",
                                     op_id=op.id, op_kind=op.kind)
            seen[op.id] = part.id
    left = [op.id for op in graph.ops if op.id not in seen]
    if left:
        raise ExecutionError(f"the partitioner left ops {left} in no partition")


def _partitions_in_order(parts: Sequence[Partition]) -> list[Partition]:
    """Partitions after every partition that produces one of their inputs."""
    producer = {t.id: index for index, p in enumerate(parts) for t in p.outputs}
    needs = [{producer[t.id] for t in p.inputs if t.id in producer} for p in parts]
    order: list[Partition] = []
    done: set[int] = set()
    pending = list(range(len(parts)))
    while pending:
        ready = [i for i in pending if needs[i] <= done]
        if not ready:
            stuck = [parts[i].id for i in pending]
            raise ExecutionError(f"partitions {stuck} depend on each other in a cycle")
        order.extend(parts[i] for i in ready)
        done.update(ready)
        pending = [i for i in pending if i not in done]
    return order
