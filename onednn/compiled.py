"""Compiling a oneDNN partition for the CPU engine and executing it on NumPy arrays.

Buffers follow the logical tensors' layouts: each input is copied into a buffer of the size
oneDNN asks for (``dnnl_graph_logical_tensor_get_mem_size``) through a strided view, so a
transposed or padded layout reaches the library exactly as declared; outputs are read back the
same way into dense arrays. Every execution gets fresh buffers, so an in-place post-op (a final
Add writing over its other input) can never change the caller's arrays.
"""

from __future__ import annotations

import contextlib
import ctypes
from collections.abc import Mapping

import numpy as np
from numpy.lib.stride_tricks import as_strided

from fusionspec.reference.dtypes import numpy_dtype
from fusionspec.spec.graph import Partition
from fusionspec.spec.types import Array

from .errors import OnednnCallError
from .library import Library
from .native_graph import NativePartition
from .structs import NativeLogicalTensor, dtype_of, native_dims

__all__ = ["CpuEngine", "OnednnCompiledPartition"]


class CpuEngine:
    """oneDNN's CPU engine and one in-order stream on it."""

    def __init__(self, library: Library) -> None:
        self.library = library
        self.engine = ctypes.c_void_p()
        self.stream = ctypes.c_void_p()
        cpu = library.headers.value("dnnl_engine_kind_t", "dnnl_cpu")
        flags = library.headers.value("dnnl_stream_flags_t", "dnnl_stream_default_flags")
        library.call("dnnl_engine_create", ctypes.byref(self.engine), cpu, 0,
                     context="creating the CPU engine")
        library.call("dnnl_stream_create", ctypes.byref(self.stream), self.engine, flags,
                     context="creating a stream on the CPU engine")


class OnednnCompiledPartition:
    """A compiled oneDNN partition (`execute` follows the suite's `CompiledPartition`)."""

    def __init__(self, partition: Partition, native: NativePartition, engine: CpuEngine) -> None:
        self.partition = partition
        self.library = engine.library
        self.engine = engine
        self._native = native  # keeps the graph and its partition handles alive
        self._handle = ctypes.c_void_p()
        lib = self.library
        what = ", ".join(op.kind for op in partition.ops)
        lib.call("dnnl_graph_compiled_partition_create", ctypes.byref(self._handle),
                 native.handle, context=f"partition [{what}]")
        ins = (ctypes.c_void_p * max(len(native.inputs), 1))(
            *[ctypes.addressof(t) for t in native.inputs])
        outs = (ctypes.c_void_p * max(len(native.outputs), 1))(
            *[ctypes.addressof(t) for t in native.outputs])
        lib.call("dnnl_graph_partition_compile", native.handle, self._handle, len(native.inputs),
                 ins, len(native.outputs), outs, engine.engine,
                 context=f"compiling partition [{what}]", refusal_is_rejection=True)
        self.inputs = native.inputs
        self.outputs = [self._query(t.id) for t in native.outputs]

    def _query(self, tensor_id: int) -> NativeLogicalTensor:
        out = NativeLogicalTensor()
        self.library.call("dnnl_graph_compiled_partition_query_logical_tensor", self._handle,
                          tensor_id, ctypes.byref(out), context=f"output {tensor_id}")
        return out

    def _buffer(self, native: NativeLogicalTensor) -> tuple[Array, Array]:
        """A zeroed byte buffer of the size oneDNN wants and the typed strided view on it."""
        lib = self.library
        size = ctypes.c_size_t()
        lib.call("dnnl_graph_logical_tensor_get_mem_size", ctypes.byref(native),
                 ctypes.byref(size), context=f"tensor {native.id}")
        strided = lib.headers.value("dnnl_graph_layout_type_t", "dnnl_graph_layout_type_strided")
        if native.layout_type != strided:
            raise OnednnCallError("dnnl_graph_compiled_partition_query_logical_tensor",
                                  "opaque layout", f"tensor {native.id} has no strided layout "
                                  "to read or write it through")
        found = dtype_of(lib.headers, native.data_type)
        if found is None:
            raise OnednnCallError("dnnl_graph_compiled_partition_query_logical_tensor",
                                  f"data type {native.data_type}", f"tensor {native.id}")
        dtype = numpy_dtype(found)
        items = max(-(-size.value // dtype.itemsize), 1)
        raw = np.zeros(items * dtype.itemsize, np.uint8)
        shape, strides = native_dims(native)
        # NumPy's as_strided rebuilds the array from its type string, which it cannot read back
        # for ml_dtypes' float8 types ('<f1'): stride an unsigned carrier of the same width.
        carrier = np.dtype(f"u{dtype.itemsize}")
        view = as_strided(raw.view(carrier), shape=shape,
                          strides=tuple(s * dtype.itemsize for s in strides)).view(dtype)
        return raw, view

    def _tensor(self, native: NativeLogicalTensor, raw: Array) -> ctypes.c_void_p:
        handle = ctypes.c_void_p()
        self.library.call("dnnl_graph_tensor_create", ctypes.byref(handle), ctypes.byref(native),
                          self.engine.engine, ctypes.c_void_p(raw.ctypes.data),
                          context=f"tensor {native.id}")
        return handle

    def _stage(self, inputs: Mapping[int, np.ndarray]
               ) -> tuple[list[Array], list[ctypes.c_void_p], list[ctypes.c_void_p],
                          dict[int, Array]]:
        """Fill input buffers, allocate output buffers and wrap both in oneDNN tensors:
        (buffers to keep alive, input tensors, output tensors, output views by id)."""
        raws: list[Array] = []
        in_handles: list[ctypes.c_void_p] = []
        out_handles: list[ctypes.c_void_p] = []
        views: dict[int, Array] = {}
        try:
            for native in self.inputs:
                if native.id not in inputs:
                    raise OnednnCallError("dnnl_graph_compiled_partition_execute",
                                          "missing input", f"no array for tensor {native.id}")
                raw, view = self._buffer(native)
                view[...] = np.asarray(inputs[native.id]).astype(view.dtype, copy=False)
                raws.append(raw)
                in_handles.append(self._tensor(native, raw))
            for native in self.outputs:
                raw, view = self._buffer(native)
                raws.append(raw)
                views[native.id] = view
                out_handles.append(self._tensor(native, raw))
        except BaseException:
            self._release(in_handles + out_handles)
            raise
        return raws, in_handles, out_handles, views

    def _release(self, handles: list[ctypes.c_void_p]) -> None:
        for handle in handles:
            self.library.call("dnnl_graph_tensor_destroy", handle)

    def _run(self, in_handles: list[ctypes.c_void_p], out_handles: list[ctypes.c_void_p]) -> None:
        lib = self.library
        ins = (ctypes.c_void_p * max(len(in_handles), 1))(*[h.value for h in in_handles])
        outs = (ctypes.c_void_p * max(len(out_handles), 1))(*[h.value for h in out_handles])
        lib.call("dnnl_graph_compiled_partition_execute", self._handle, self.engine.stream,
                 len(in_handles), ins, len(out_handles), outs, context="executing")
        lib.call("dnnl_stream_wait", self.engine.stream, context="waiting for the stream")

    def execute(self, inputs: Mapping[int, np.ndarray]) -> dict[int, np.ndarray]:
        raws, in_handles, out_handles, views = self._stage(inputs)
        try:
            self._run(in_handles, out_handles)
            return {tid: np.array(view) for tid, view in views.items()}
        finally:
            self._release(in_handles + out_handles)
            del raws

    def time_executions(self, inputs: Mapping[int, np.ndarray], repeats: int) -> list[float]:
        """Seconds each of `repeats` executions takes, buffers filled once beforehand (the
        counterpart of the OpenCL backend's ``time_launches``)."""
        import time

        raws, in_handles, out_handles, _ = self._stage(inputs)
        try:
            times: list[float] = []
            for _ in range(repeats):
                start = time.perf_counter()
                self._run(in_handles, out_handles)
                times.append(time.perf_counter() - start)
            return times
        finally:
            self._release(in_handles + out_handles)
            del raws

    def close(self) -> None:
        if self._handle:
            self.library.call("dnnl_graph_compiled_partition_destroy", self._handle)
            self._handle = ctypes.c_void_p()

    def __del__(self) -> None:
        # At interpreter shutdown the library may already be gone.
        with contextlib.suppress(Exception):
            self.close()
