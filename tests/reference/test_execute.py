"""The executor: fused semantics (f32 inside a partition, casts only at its outputs), input
checking, strided inputs, graph execution with the single-op fallback, and typed errors."""

from __future__ import annotations

import warnings
from typing import Any

import ml_dtypes
import numpy as np
import pytest
from testkit.reference import D, f32, same_bits, tensor

from fusionspec.reference import (
    ExecutionError,
    InputMismatchError,
    OpInputError,
    UnsupportedOpError,
    execute,
    single_op_partitions,
)
from fusionspec.reference.execute import default_partitioner
from fusionspec.reference.registry import REGISTRY
from fusionspec.spec.graph import Graph, Op, Partition
from fusionspec.spec.validate import OutsideSpecWarning

BF16 = ml_dtypes.bfloat16


def bf16(values: list[float]) -> np.ndarray[Any, np.dtype[Any]]:
    return np.asarray(values, dtype=np.float32).astype(BF16)


# x*y + z in bf16, with x = y = 1 + 2^-7 and z = -(1 + 2^-6):
# in f32 x*y = 1 + 2^-6 + 2^-14, so the fused result is 2^-14; rounding x*y to bf16 first
# loses the 2^-14 and the op-by-op result is 0.
X, Y, T, Z, OUT = (tensor(i, D.bf16, (1,)) for i in range(5))
MUL = Op(0, "Multiply", (X, Y), (T,))
ADD = Op(1, "Add", (T, Z), (OUT,))
CHAIN_INPUTS = {0: bf16([1 + 2**-7]), 1: bf16([1 + 2**-7]), 3: bf16([-(1 + 2**-6)])}


def test_fused_partition_rounds_once_at_its_output() -> None:
    fused = Partition(0, (MUL, ADD), (X, Y, Z), (OUT,))
    got = execute(fused, CHAIN_INPUTS)
    assert list(got) == [4], f"a partition returns its outputs only, got ids {list(got)}"
    assert got[4].dtype == BF16, f"the output is cast to its declared bf16, got {got[4].dtype}"
    assert got[4].astype(np.float32).tolist() == [2**-14], \
        f"fused bf16 x*y+z keeps x*y in f32: expected 2^-14, got {got[4]}"


def test_op_by_op_execution_rounds_every_intermediate() -> None:
    graph = Graph([MUL, ADD])
    got = execute(graph, CHAIN_INPUTS, partitioner=single_op_partitions)
    assert got[4].astype(np.float32).tolist() == [0.0], \
        f"with one op per partition x*y is stored as bf16 and the sum is 0, got {got[4]}"
    everything = execute(graph, CHAIN_INPUTS, partitioner=single_op_partitions,
                         keep_intermediates=True)
    assert sorted(everything) == [0, 1, 2, 3, 4], \
        f"keep_intermediates returns every tensor, got {sorted(everything)}"
    assert everything[2].astype(np.float32).tolist() == [1 + 2**-6], \
        f"the intermediate is the bf16-rounded product, got {everything[2]}"


def test_intermediate_that_is_also_an_output_is_cast_but_consumed_in_f32() -> None:
    fused = Partition(0, (ADD, MUL), (X, Y, Z), (T, OUT))  # op order does not matter
    got = execute(fused, CHAIN_INPUTS)
    assert got[2].astype(np.float32).tolist() == [1 + 2**-6], \
        f"the output copy of x*y is rounded to bf16, got {got[2]}"
    assert got[4].astype(np.float32).tolist() == [2**-14], \
        "the Add inside the partition still consumed the f32 product"


def test_typecast_inside_a_partition_rounds() -> None:
    a, b, c = tensor(0, D.f32, (1,)), tensor(1, D.bf16, (1,)), tensor(2, D.f32, (1,))
    part = Partition(0, (Op(0, "TypeCast", (a,), (b,)), Op(1, "TypeCast", (b,), (c,))),
                     (a,), (c,))
    got = execute(part, {0: f32([1 + 2**-10])})
    assert got[2].tolist() == [1.0], f"f32 -> bf16 -> f32 rounds at the TypeCast, got {got[2]}"


def test_quantize_dequantize_inside_a_partition_is_exact() -> None:
    a, q, d = tensor(0, D.f32, (3,)), tensor(1, D.u8, (3,)), tensor(2, D.f32, (3,))
    attrs = {"scales": [0.5], "zps": [4]}
    part = Partition(0, (Op(0, "Quantize", (a,), (q,), attrs),
                         Op(1, "Dequantize", (q,), (d,), attrs)), (a,), (d, q))
    got = execute(part, {0: f32([1.0, -1.3, 200.0])})
    assert got[1].dtype == np.uint8 and got[1].tolist() == [6, 1, 255], \
        f"Quantize gave {got[1]} (1.0 -> 6, -1.3 -> 1.4 -> 1, 200 saturates)"
    assert got[2].tolist() == [1.0, -1.5, 125.5], f"Dequantize gave {got[2]}"


# -- input checking --------------------------------------------------------------------------

RELU_IN, RELU_OUT = tensor(0, D.f32, (2, 3)), tensor(1, D.f32, (2, 3))
RELU = Partition(0, (Op(0, "ReLU", (RELU_IN,), (RELU_OUT,)),), (RELU_IN,), (RELU_OUT,))


def test_missing_input_names_the_tensor() -> None:
    with pytest.raises(InputMismatchError, match=r"tensor 0.*no array given") as info:
        execute(RELU, {})
    assert info.value.tensor_id == 0, f"the error names tensor 0, got {info.value.tensor_id}"


@pytest.mark.parametrize(("array", "pattern"), [
    (np.zeros((2, 3), np.float64), r"dtype float64 does not match the tensor's f32"),
    (np.zeros((2, 3), BF16), r"dtype bfloat16 does not match"),
    (np.zeros((3, 2), np.float32), r"shape \[3, 2\] does not match the tensor's \[2, 3\]"),
    (np.zeros((6,), np.float32), r"shape \[6\] does not match"),
    ([[0.0] * 3] * 2, r"expected a NumPy array, got list"),
])
def test_mismatched_input_raises_a_typed_error(array: Any, pattern: str) -> None:
    with pytest.raises(InputMismatchError, match=pattern) as info:
        execute(RELU, {0: array})
    assert info.value.tensor_id == 0, "the error carries the tensor id"


def test_unknown_dims_accept_any_size() -> None:
    a, b = tensor(0, D.f32, (-1, 3)), tensor(1, D.f32, None)
    part = Partition(0, (Op(0, "Abs", (a,), (b,)),), (a,), (b,))
    got = execute(part, {0: f32(-np.ones((5, 3)))})
    assert got[1].shape == (5, 3), f"an unknown dim takes the array's size, got {got[1].shape}"


def test_extra_keys_are_ignored() -> None:
    got = execute(RELU, {0: f32(np.ones((2, 3))), 99: f32([1.0])})
    assert list(got) == [1], "inputs of other partitions in the mapping do not matter"


# -- strided inputs ----------------------------------------------------------------------------

def _strided_relu(shape: tuple[int, ...], strides: tuple[int, ...]) -> Partition:
    src, dst = tensor(0, D.f32, shape, strides), tensor(1, D.f32, shape)
    return Partition(0, (Op(0, "ReLU", (src,), (dst,)),), (src,), (dst,))


def test_flat_buffer_is_read_through_column_major_strides() -> None:
    buffer = f32([0, 1, 2, 3, 4, 5])
    got = execute(_strided_relu((2, 3), (1, 2)), {0: buffer})[1]
    want = f32([[0, 2, 4], [1, 3, 5]])  # element [i, j] sits at i*1 + j*2
    assert same_bits(got, want), f"column-major read gave {got}, expected {want}"


def test_flat_buffer_with_padding_and_zero_strides() -> None:
    padded = execute(_strided_relu((2, 2), (3, 1)), {0: f32([1, 2, -9, 3, 4])})[1]
    assert same_bits(padded, f32([[1, 2], [3, 4]])), f"row stride 3 skips the pad: {padded}"
    broadcast = execute(_strided_relu((2, 3), (0, 1)), {0: f32([5, 6, 7])})[1]
    assert same_bits(broadcast, f32([[5, 6, 7], [5, 6, 7]])), f"stride 0 repeats: {broadcast}"


def test_array_of_the_logical_shape_is_taken_as_values_whatever_the_strides() -> None:
    values = f32(np.arange(6).reshape(2, 3))
    got = execute(_strided_relu((2, 3), (1, 2)), {0: values})[1]
    assert same_bits(got, values), "an array of the tensor's shape is its values"
    got = execute(_strided_relu((2, 3), (1, 2)), {0: np.asfortranarray(values)})[1]
    assert same_bits(got, values), "NumPy's own memory order does not change the values"


def test_short_buffer_and_negative_strides_are_rejected() -> None:
    with pytest.raises(InputMismatchError, match=r"too short .* \(needs 6\)"):
        execute(_strided_relu((2, 3), (1, 2)), {0: f32([0, 1, 2, 3, 4])})
    with pytest.raises(InputMismatchError, match="negative strides"):
        execute(_strided_relu((2, 3), (-3, 1)), {0: f32(np.zeros(12))})


# -- graphs and partitions -------------------------------------------------------------------

def test_graph_returns_only_unconsumed_tensors_with_the_fallback_partitioner() -> None:
    graph = Graph([MUL, ADD])
    got = execute(graph, CHAIN_INPUTS)
    assert list(got) == [4], f"graph outputs are the tensors no op consumes, got {list(got)}"
    parts = default_partitioner(graph.finalize())
    covered = sorted(op.id for p in parts for op in p.ops)
    assert covered == [0, 1], f"the default partitioner covers every op once, got {covered}"


def test_single_op_partitions_lists_each_op_with_its_tensors() -> None:
    sq = Op(0, "Multiply", (X, X), (T,))
    parts = single_op_partitions(Graph([sq, ADD]))
    assert [p.op_ids for p in parts] == [(0,), (1,)], "one partition per op, in graph order"
    assert [t.id for t in parts[0].inputs] == [0], "an input used twice is listed once"
    assert [t.id for t in parts[1].outputs] == [4], "outputs are the op's outputs"
    got = execute(Graph([sq, ADD]), {0: bf16([3.0]), 3: bf16([1.0])},
                  partitioner=single_op_partitions)
    assert got[4].astype(np.float32).tolist() == [10.0], f"3*3 + 1 gave {got[4]}"


def test_graph_is_finalized_first_so_defaults_and_shapes_apply() -> None:
    a, b = tensor(0, D.f32, (2, 3)), tensor(1, D.f32, None)
    graph = Graph([Op(0, "SoftMax", (a,), (b,))])  # axis defaults to 1
    got = execute(graph, {0: f32(np.zeros((2, 3)))})[1]
    assert np.allclose(got, 1 / 3), f"softmax over axis 1 of zeros is 1/3, got {got}"


def test_opaque_and_unimplemented_kinds_raise_unsupported(monkeypatch: Any) -> None:
    a, b = tensor(0, D.f32, (2,)), tensor(1, D.f32, (2,))
    opaque = Partition(0, (Op(7, "Mish", (a,), (b,)),), (a,), (b,))
    with pytest.raises(UnsupportedOpError, match=r"op 7 \(Mish\).*outside the spec") as info:
        execute(opaque, {0: f32([1.0, 2.0])})
    assert info.value.op_id == 7 and info.value.op_kind == "Mish", "the error names the op"
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", OutsideSpecWarning)
        with pytest.raises(UnsupportedOpError):
            execute(Graph([Op(7, "Mish", (a,), (b,))]), {0: f32([1.0, 2.0])})
    monkeypatch.delitem(REGISTRY, "Abs")
    plain = Partition(0, (Op(3, "Abs", (a,), (b,)),), (a,), (b,))
    with pytest.raises(UnsupportedOpError, match="no reference implementation"):
        execute(plain, {0: f32([1.0, 2.0])})


def test_op_errors_name_the_op() -> None:
    a, b, c = tensor(0, D.f32, None), tensor(1, D.f32, None), tensor(2, D.f32, None)
    add = Op(9, "Add", (a, b), (c,), {"auto_broadcast": "none"})
    part = Partition(0, (add,), (a, b), (c,))
    with pytest.raises(OpInputError, match=r"op 9 \(Add\): shapes \[2\] and \[1\] differ"):
        execute(part, {0: f32([1.0, 2.0]), 1: f32([1.0])})


def test_inconsistent_partitions_raise_execution_errors() -> None:
    orphan = Partition(0, (ADD,), (Z,), (OUT,))  # T is neither an input nor produced
    with pytest.raises(ExecutionError, match="input tensor 2 is neither an input"):
        execute(orphan, CHAIN_INPUTS)
    ghost = Partition(0, (MUL,), (X, Y), (OUT,))
    with pytest.raises(ExecutionError, match="lists output 4, which none of its ops"):
        execute(ghost, CHAIN_INPUTS)
    graph = Graph([MUL, ADD])
    with pytest.raises(ExecutionError, match=r"left ops \[1\] in no partition"):
        execute(graph, CHAIN_INPUTS, partitioner=lambda g: single_op_partitions(g)[:1])
    hidden = Partition(0, (MUL, ADD), (X, Y, Z), (T,))  # the graph output 4 is not listed
    with pytest.raises(ExecutionError, match=r"graph output\(s\) \[4\] are not outputs"):
        execute(graph, CHAIN_INPUTS, partitioner=lambda g: [hidden])
    with pytest.raises(ExecutionError, match="is in partitions"):
        execute(graph, CHAIN_INPUTS,
                partitioner=lambda g: [*single_op_partitions(g), Partition(5, (ADD,), (T, Z),
                                                                          (OUT,))])


def test_graph_input_mismatch_is_reported_before_running() -> None:
    with pytest.raises(InputMismatchError, match=r"no array given for graph input\(s\) \[3\]"):
        execute(Graph([MUL, ADD]), {0: CHAIN_INPUTS[0], 1: CHAIN_INPUTS[1]})


def test_graph_execution_uses_the_reference_partitioner_by_default() -> None:
    # bf16 MatMul + Add is a fusion pattern: the product stays f32 inside the partition.
    a, b, c, d, e = (tensor(i, D.bf16, s)
                     for i, s in enumerate([(1, 2), (2, 1), (1, 1), (1, 1), (1, 1)]))
    graph = Graph([Op(0, "MatMul", (a, b), (c,)), Op(1, "Add", (c, d), (e,))])
    inputs = {0: bf16([[1 + 2**-7, 2**-14]]), 1: bf16([[1 + 2**-7], [1.0]]),
              3: bf16([[-(1 + 2**-6)]])}
    fused = execute(graph, inputs)[4].astype(np.float32)
    split = execute(graph, inputs, partitioner=single_op_partitions)[4].astype(np.float32)
    # (1 + 2^-7)^2 + 2^-14 = 1 + 2^-6 + 2^-13: bf16 keeps only 1 + 2^-6 between partitions.
    assert fused.tolist() == [[2**-13]], f"fused MatMul+Add gave {fused}, expected 2^-13"
    assert split.tolist() == [[0.0]], f"op by op the bf16 product loses 2^-13, got {split}"
