"""Handing a fusionspec `Graph` to oneDNN and reading its partitions back.

`NativeGraph(library, graph)` creates the oneDNN graph (engine kind and fpmath mode from the
graph), adds every op with its logical tensors and attributes, finalizes it and asks for the
partitions under the fusion policy. `partitions()` returns them as fusionspec `Partition`s
(oneDNN's op ids, supported flag and input/output ports, mapped back to the graph's own ops
and tensors) alongside the native handles that `compile` needs.

Op kinds and attribute names are matched to the header enumerators by spelling: ``SoftMax`` is
``dnnl_graph_op_softmax``, ``BatchNormInference`` is ``dnnl_graph_op_batch_norm_inference``
(case and underscores aside), with the one renamed kind in `_KIND_ALIASES`. An attribute this
version does not know is dropped when it holds the schema default (the graph means the same
without it) and makes the graph inexpressible otherwise.
"""

from __future__ import annotations

import ctypes
from dataclasses import dataclass
from typing import Any

from fusionspec.spec.dtypes import DataType
from fusionspec.spec.errors import JsonFormatError
from fusionspec.spec.graph import Graph, LogicalTensor, Op, Partition
from fusionspec.spec.onednn_json import typed_attr
from fusionspec.spec.opschemas import SCHEMAS

from .errors import OnednnCallError, OnednnUnsupportedError
from .library import Library
from .structs import NativeLogicalTensor, native_dims, to_native

__all__ = ["NativeGraph", "NativePartition", "kind_value"]

#: Attribute kind (as the JSON writer types it) -> the C element type of its array, and the
#: suffix of the dnnl_graph_op_set_attr_* function that takes it.
_ATTR_ARRAYS: dict[str, tuple[Any, str]] = {
    "f32": (ctypes.c_float, "f32"), "f32[]": (ctypes.c_float, "f32"),
    "s64": (ctypes.c_int64, "s64"), "s64[]": (ctypes.c_int64, "s64"),
    "bool": (ctypes.c_uint8, "bool")}

#: fusionspec kinds whose enumerator is not their spelling.
_KIND_ALIASES = {"BatchNormTrainingBackward": "batch_norm_backward"}


def _squash(name: str) -> str:
    return name.replace("_", "").lower()


def kind_value(library: Library, kind: str) -> int:
    """The ``dnnl_graph_op_kind_t`` value of op kind `kind`."""
    members = library.headers.members("dnnl_graph_op_kind_t", "dnnl_graph_op_")
    wanted = _squash(_KIND_ALIASES.get(kind, kind))
    for member, value in members.items():
        if _squash(member) == wanted and member not in ("end", "last_symbol"):
            return value
    raise OnednnUnsupportedError(f"op kind {kind} is not in its dnnl_graph_op_kind_t",
                                 library.version)


def _is_default(op: Op, name: str, value: object) -> bool:
    schema = SCHEMAS.get(op.kind)
    spec = schema.attr_spec(name) if schema is not None else None
    return spec is not None and spec.default is not None and spec.default == value


@dataclass(eq=False)
class NativePartition:
    """A oneDNN partition handle with its ports as the library reported them."""

    handle: ctypes.c_void_p
    inputs: list[NativeLogicalTensor]
    outputs: list[NativeLogicalTensor]
    owner: NativeGraph


class NativeGraph:
    """One oneDNN graph built from a fusionspec graph; frees its handles on `close`."""

    def __init__(self, library: Library, graph: Graph) -> None:
        self.library = library
        self.graph = graph
        self._handle = ctypes.c_void_p()
        self._partitions: list[ctypes.c_void_p] = []
        self._build()

    # -- building ------------------------------------------------------------------------------

    def _build(self) -> None:
        lib, headers = self.library, self.library.headers
        engine = headers.value("dnnl_engine_kind_t", f"dnnl_{self.graph.engine_kind}")
        mode = headers.value("dnnl_fpmath_mode_t", f"dnnl_fpmath_mode_{self.graph.fpmath_mode}")
        if engine is None or mode is None:
            raise OnednnUnsupportedError(f"engine kind {self.graph.engine_kind!r} / fpmath mode "
                                         f"{self.graph.fpmath_mode!r}", lib.version)
        lib.call("dnnl_graph_graph_create_with_fpmath_mode", ctypes.byref(self._handle), engine,
                 mode, context="creating the graph")
        for op in self.graph.ops:
            self._add(op)
        lib.call("dnnl_graph_graph_finalize", self._handle, context="finalizing the graph",
                 refusal_is_rejection=True)

    def _add(self, op: Op) -> None:
        lib = self.library
        handle = ctypes.c_void_p()
        lib.call("dnnl_graph_op_create", ctypes.byref(handle), op.id, kind_value(lib, op.kind),
                 op.name.encode(), context=f"op {op.id} ({op.kind})", refusal_is_rejection=True)
        try:
            for direction, tensors in (("input", op.inputs), ("output", op.outputs)):
                for t in tensors:
                    native = to_native(t, lib.headers, lib.version)
                    lib.call(f"dnnl_graph_op_add_{direction}", handle, ctypes.byref(native),
                             context=f"op {op.id} ({op.kind}) {direction} {t.id}",
                             refusal_is_rejection=True, op_kind=op.kind)
            for name, value in op.attrs.items():
                self._set_attr(handle, op, name, value)
            lib.call("dnnl_graph_add_op", self._handle, handle,
                     context=f"adding op {op.id} ({op.kind})", refusal_is_rejection=True,
                     op_kind=op.kind)
        finally:
            lib.call("dnnl_graph_op_destroy", handle)

    def _set_attr(self, handle: ctypes.c_void_p, op: Op, name: str, value: object) -> None:
        lib = self.library
        attr = lib.headers.value("dnnl_graph_op_attr_t", f"dnnl_graph_op_attr_{name}")
        if attr is None:
            if _is_default(op, name, value):
                return
            raise OnednnUnsupportedError(f"op {op.id} ({op.kind}) attribute {name!r} is not in "
                                         "its dnnl_graph_op_attr_t", lib.version)
        try:
            kind, written = typed_attr(op.kind, name, value)
        except JsonFormatError as exc:
            raise OnednnUnsupportedError(f"op {op.id} ({op.kind}) attribute {name!r}: {exc}",
                                         lib.version) from None
        args: tuple[object, ...]
        if kind == "string":
            data = str(written).encode()
            args = ("dnnl_graph_op_set_attr_str", handle, attr, data, len(data))
        else:
            items = written if isinstance(written, list) else [written]
            ctype, fn = _ATTR_ARRAYS[kind]
            array = (ctype * max(len(items), 1))(*items)
            args = (f"dnnl_graph_op_set_attr_{fn}", handle, attr, array, len(items))
        lib.call(*args, context=f"op {op.id} ({op.kind}) attribute {name}",
                 refusal_is_rejection=True, op_kind=op.kind)

    # -- partitions ----------------------------------------------------------------------------

    def partitions(self) -> list[tuple[Partition, NativePartition]]:
        """oneDNN's partitions in its order, as fusionspec partitions plus native handles."""
        lib = self.library
        policy = lib.headers.value("dnnl_graph_partition_policy_t",
                                   "dnnl_graph_partition_policy_fusion")
        lib.call("dnnl_graph_graph_filter", self._handle, policy, context="partitioning",
                 refusal_is_rejection=True)
        count = ctypes.c_size_t()
        # oneDNN 3.2 finalizes a graph with a cycle and refuses it only here (invalid_graph):
        # a refusal of the graph like any other.
        lib.call("dnnl_graph_graph_get_partition_num", self._handle, ctypes.byref(count),
                 context="partitioning", refusal_is_rejection=True)
        handles = (ctypes.c_void_p * max(count.value, 1))()
        lib.call("dnnl_graph_graph_get_partitions", self._handle, count.value, handles,
                 context="partitioning", refusal_is_rejection=True)
        self._partitions = [ctypes.c_void_p(h) for h in handles[:count.value]]
        return [self._describe(index, h) for index, h in enumerate(self._partitions)]

    def _ports(self, handle: ctypes.c_void_p, which: str) -> list[NativeLogicalTensor]:
        lib = self.library
        count = ctypes.c_size_t()
        lib.call(f"dnnl_graph_partition_get_{which}_ports_num", handle, ctypes.byref(count))
        ports = (NativeLogicalTensor * max(count.value, 1))()
        lib.call(f"dnnl_graph_partition_get_{which}_ports", handle, count.value, ports)
        return list(ports[:count.value])

    def _tensor(self, native: NativeLogicalTensor) -> LogicalTensor:
        known = self.graph.tensors.get(native.id)
        if known is not None:
            return known
        # oneDNN reported a tensor the graph does not have (it should not): describe it as seen.
        shape, _ = native_dims(native)
        return LogicalTensor(native.id, DataType.undef, shape)

    def _describe(self, index: int, handle: ctypes.c_void_p) -> tuple[Partition, NativePartition]:
        lib = self.library
        count = ctypes.c_size_t()
        lib.call("dnnl_graph_partition_get_op_num", handle, ctypes.byref(count))
        ids = (ctypes.c_size_t * max(count.value, 1))()
        lib.call("dnnl_graph_partition_get_ops", handle, count.value, ids)
        supported = ctypes.c_uint8()
        lib.call("dnnl_graph_partition_is_supported", handle, ctypes.byref(supported))
        by_id = self.graph.op_by_id
        unknown = [i for i in ids[:count.value] if i not in by_id]
        if unknown:
            raise OnednnCallError("dnnl_graph_partition_get_ops", "unknown op ids",
                                  f"partition {index} names ops {unknown} the graph lacks")
        ops = [by_id[i] for i in sorted(ids[:count.value])]
        ins, outs = self._ports(handle, "input"), self._ports(handle, "output")
        part = Partition(index, ops, [self._tensor(t) for t in ins],
                         [self._tensor(t) for t in outs], pattern=None,
                         supported=bool(supported.value))
        return part, NativePartition(handle, ins, outs, self)

    def close(self) -> None:
        for handle in self._partitions:
            self.library.call("dnnl_graph_partition_destroy", handle)
        self._partitions = []
        if self._handle:
            self.library.call("dnnl_graph_graph_destroy", self._handle)
            self._handle = ctypes.c_void_p()
