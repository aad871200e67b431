"""The oneDNN adapter against the installed library: partitions read back, buffers laid out
as declared, refusals typed, and the library's absence reported rather than raised."""

from __future__ import annotations

import re

import numpy as np
import pytest

from fusionspec.backend import Backend, load_backend
from fusionspec.conformance.answers import rejection_types
from fusionspec.onednn import OnednnBackend, OnednnRejection, OnednnUnsupportedError
from fusionspec.onednn.structs import supported_dtypes
from fusionspec.reference import execute, fill_inputs
from fusionspec.reference.partitioner import external_tensors
from fusionspec.spec import DataType, Graph, LogicalTensor, Op


def _t(tid: int, shape: tuple[int, ...], dtype: DataType = DataType.f32,
       strides: tuple[int, ...] | None = None) -> LogicalTensor:
    return LogicalTensor(tid, dtype, shape, strides)


def _run(backend: OnednnBackend, graph: Graph) -> tuple[dict[int, np.ndarray],
                                                        dict[int, np.ndarray], int]:
    device = backend.devices()[0]
    final = graph.finalize()
    inputs = fill_inputs(final, seed=3)
    want = execute(final, inputs)
    got: dict[int, np.ndarray] = {}
    parts = backend.partition(graph)
    for part in parts:
        got.update(backend.compile(part, device).execute({**inputs, **got}))
    return want, got, len(parts)


def test_registered_and_describes_its_library(onednn: OnednnBackend) -> None:
    backend = load_backend("onednn")
    assert isinstance(backend, Backend), "the entry point yields a Backend"
    (device,) = onednn.devices()
    assert device.id == "cpu" and device.kind == "cpu", f"one CPU device expected: {device}"
    assert re.fullmatch(r"\d+\.\d+\.\d+", device.driver), \
        f"the library version goes into the device info: {device.driver!r}"
    assert device.runtime and device.extras.get("library"), \
        f"runtime and library path are recorded: {device}"


def test_matmul_relu_is_one_partition_with_the_spec_ports(onednn: OnednnBackend) -> None:
    graph = Graph([
        Op(0, "MatMul", [_t(0, (4, 8)), _t(1, (8, 16))], [_t(2, (4, 16))]),
        Op(1, "ReLU", [_t(2, (4, 16))], [_t(3, (4, 16))]),
    ])
    (part,) = onednn.partition(graph)
    assert part.op_ids == (0, 1) and part.supported, f"MatMul+ReLU fuse: {part}"
    ins, outs = external_tensors(graph.finalize(), part.ops)
    assert [t.id for t in part.inputs] == [t.id for t in ins] and \
        [t.id for t in part.outputs] == [t.id for t in outs], \
        f"ports {part.inputs} / {part.outputs} must be the partition's external tensors"
    want, got, _ = _run(onednn, graph)
    np.testing.assert_allclose(got[3], want[3], rtol=1e-5, atol=1e-5,
                               err_msg="oneDNN MatMul+ReLU vs the reference")


def test_strided_inputs_reach_the_library_as_declared(onednn: OnednnBackend) -> None:
    # A column-major (transposed) weight and a padded row stride on the source.
    graph = Graph([Op(0, "MatMul", [_t(0, (3, 5), strides=(8, 1)),
                                    _t(1, (5, 4), strides=(1, 5))], [_t(2, (3, 4))])])
    want, got, _ = _run(onednn, graph)
    np.testing.assert_allclose(got[2], want[2], rtol=1e-5, atol=1e-5,
                               err_msg="strided MatMul inputs must be laid out by their strides")


def test_bf16_and_int8_outputs_round_trip(onednn: OnednnBackend) -> None:
    shape = (2, 3, 4)
    graph = Graph([
        Op(0, "TypeCast", [_t(0, shape)], [_t(1, shape, DataType.bf16)]),
        Op(1, "Quantize", [_t(2, shape)], [_t(3, shape, DataType.u8)],
           {"scales": [0.5], "zps": [3], "qtype": "per_tensor", "axis": 1}),
    ])
    want, got, _ = _run(onednn, graph)
    assert got[1].dtype == want[1].dtype and got[3].dtype == want[3].dtype, \
        f"output dtypes {got[1].dtype}/{got[3].dtype}, spec requires bf16/u8"
    np.testing.assert_array_equal(got[1].astype(np.float32), want[1].astype(np.float32),
                                  err_msg="TypeCast f32->bf16 rounds to nearest even")
    np.testing.assert_array_equal(got[3], want[3], err_msg="Quantize to u8 with a zero point")


def test_refusal_is_a_declared_rejection(onednn: OnednnBackend) -> None:
    graph = Graph([Op(0, "ReLU", [_t(0, (2, 2))], [_t(1, (2, 2), DataType.s8)])])
    with pytest.raises(OnednnRejection, match=r"invalid_graph_op.*op 0 \(ReLU\)") as info:
        onednn.partition(graph)
    assert isinstance(info.value, rejection_types(onednn)), \
        "the suite must count a oneDNN refusal as a rejection"


def test_a_cyclic_graph_is_refused_as_a_rejection(onednn: OnednnBackend) -> None:
    # t1 -> Add -> t2 -> ReLU -> t3 -> back into the Add: ill-formed (graph.acyclic). oneDNN 3.2
    # accepts it until it is asked for the partitions; the refusal is a rejection either way.
    graph = Graph([
        Op(0, "ReLU", [_t(0, (2, 2))], [_t(1, (2, 2))]),
        Op(1, "Add", [_t(1, (2, 2)), _t(3, (2, 2))], [_t(2, (2, 2))]),
        Op(2, "ReLU", [_t(2, (2, 2))], [_t(3, (2, 2))]),
    ])
    with pytest.raises(OnednnRejection) as info:
        onednn.partition(graph)
    assert isinstance(info.value, rejection_types(onednn)), \
        f"a cycle refused by oneDNN must count as a rejection, not an error: {info.value}"


def test_dtypes_outside_the_headers_are_limitations(onednn: OnednnBackend) -> None:
    missing = {d for d in (DataType.f8_e4m3, DataType.f8_e5m2)
               if d not in supported_dtypes(onednn.library.headers)}
    declared = {d for lim in onednn.limitations for d in lim.tensor_dtypes}
    assert {d.value for d in missing} == declared, \
        f"data types the headers lack {missing} must be declared, declared {declared}"
    if missing:
        dtype = sorted(missing)[0]
        graph = Graph([Op(0, "Quantize", [_t(0, (2,))], [_t(1, (2,), dtype)],
                          {"scales": [1.0], "zps": [0]})])
        with pytest.raises(OnednnUnsupportedError, match=dtype.value):
            onednn.partition(graph)


def test_f8_buffers_are_read_and_written(onednn: OnednnBackend) -> None:
    """float8 tensors go through strided views like every other type (NumPy cannot stride an
    ml_dtypes float8 array directly)."""
    if DataType.f8_e5m2 not in supported_dtypes(onednn.library.headers):
        pytest.skip(f"oneDNN {onednn.devices()[0].driver} has no f8 data types")
    graph = Graph([Op(0, "Dequantize", [_t(0, (2, 3), DataType.f8_e5m2)], [_t(1, (2, 3))],
                      {"scales": [0.5]})])
    want, got, _ = _run(onednn, graph)
    np.testing.assert_array_equal(got[1], want[1],
                                  err_msg="Dequantize f8_e5m2 -> f32 is exact [Dequantize]")


def test_missing_library_makes_the_backend_unavailable(tmp_path: object) -> None:
    backend = OnednnBackend(library="/nonexistent/libdnnl.so")
    assert backend.devices() == (), "no library: no devices, and no exception"
    reason = backend.unavailable_reason()
    assert "not found" in reason and "fusionspec[onednn]" in reason, \
        f"the reason names what is missing and what to install: {reason}"


def test_unknown_attribute_dropped_only_at_its_default(onednn: OnednnBackend) -> None:
    headers = onednn.library.headers
    if headers.value("dnnl_graph_op_attr_t", "dnnl_graph_op_attr_accumulation_mode") is not None:
        pytest.skip("this oneDNN knows accumulation_mode; nothing to drop")

    def matmul(mode: str) -> Graph:
        return Graph([Op(0, "MatMul", [_t(0, (2, 3)), _t(1, (3, 2))], [_t(2, (2, 2))],
                         {"accumulation_mode": mode})])

    (part,) = onednn.partition(matmul("strict"))
    assert part.supported, "the schema default means the same as no attribute"
    with pytest.raises(OnednnUnsupportedError, match="accumulation_mode"):
        onednn.partition(matmul("relaxed"))
