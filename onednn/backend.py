"""`OnednnBackend`: the real oneDNN Graph API behind the suite's `Backend` protocol.

- ``devices()``: one device, oneDNN's CPU engine (``cpu``), with the library version, git hash
  and CPU runtime for the report; an empty tuple when the library cannot be found or its engine
  cannot be created (``unavailable_reason`` says why), so the suite lists the backend as
  unavailable.
- ``partition(graph)``: the graph handed to oneDNN as it is (no fusionspec validation first:
  oneDNN's own checks are what is graded), its partitions read back. A refusal raises
  `OnednnRejection`, which the suite counts as a rejection.
- ``compile(partition, device)``: compiles the native partition that `partition` came from.
- Data types the installed headers do not define are declared limitations, so cases using them
  are reported ``unsupported`` with the reason instead of failing.
"""

from __future__ import annotations

from collections import OrderedDict
from collections.abc import Sequence

from fusionspec.backend import Device, Limitation
from fusionspec.spec.dtypes import DataType
from fusionspec.spec.graph import Graph, Partition

from .compiled import CpuEngine, OnednnCompiledPartition
from .departures import DEPARTURES
from .errors import OnednnError, OnednnRejection, OnednnSetupError
from .library import Library, load_library
from .native_graph import NativeGraph, NativePartition
from .structs import supported_dtypes

__all__ = ["OnednnBackend"]

#: Data types a spec graph may use (the f8 types only in Quantize/Dequantize rows).
_SPEC_DTYPES = (DataType.f32, DataType.bf16, DataType.f16, DataType.s8, DataType.u8,
                DataType.s32, DataType.f8_e4m3, DataType.f8_e5m2)

#: How many recent graphs keep their native partitions for `compile`.
_KEEP_GRAPHS = 4


def _key(part: Partition) -> tuple[tuple[int, ...], tuple[int, ...], tuple[int, ...]]:
    return (tuple(sorted(part.op_ids)), tuple(t.id for t in part.inputs),
            tuple(t.id for t in part.outputs))


class OnednnBackend:
    """The oneDNN library through its C API (see the module doc)."""

    name = "onednn"
    rejection_errors = (OnednnRejection,)
    #: oneDNN's known departures from the pages (`fusionspec.onednn.departures`).
    departures = DEPARTURES

    def __init__(self, library: str | None = None) -> None:
        self._explicit = library
        self._engine: CpuEngine | None = None
        self._problem: str | None = None
        self._graphs: OrderedDict[int, NativeGraph] = OrderedDict()
        self._natives: dict[tuple[tuple[int, ...], ...], NativePartition] = {}

    # -- the library ---------------------------------------------------------------------------

    @property
    def library(self) -> Library:
        return load_library(self._explicit)

    def _cpu(self) -> CpuEngine:
        if self._engine is None:
            self._engine = CpuEngine(self.library)
        return self._engine

    @property
    def limitations(self) -> Sequence[Limitation]:
        try:
            headers, version = self.library.headers, self.library.version
        except OnednnError:
            return ()
        missing = sorted(d.value for d in _SPEC_DTYPES if d not in supported_dtypes(headers))
        if not missing:
            return ()
        return (Limitation(f"oneDNN {version} has no data type {', '.join(missing)} in its "
                           "C API", tensor_dtypes=tuple(missing)),)

    def devices(self) -> Sequence[Device]:
        try:
            lib = self.library
            self._cpu()
        except OnednnError as exc:
            self._problem = str(exc)
            return ()
        return (Device("cpu", "cpu", f"oneDNN {lib.version} CPU engine", driver=lib.version,
                       runtime=lib.cpu_runtime,
                       extras={"git_hash": lib.git_hash, "library": str(lib.path)}),)

    def unavailable_reason(self) -> str:
        if self._problem is None:
            self.devices()
        return self._problem or "no oneDNN CPU engine"

    # -- the protocol --------------------------------------------------------------------------

    def partition(self, graph: Graph) -> list[Partition]:
        native = NativeGraph(self.library, graph)
        self._graphs[id(native)] = native
        while len(self._graphs) > _KEEP_GRAPHS:
            _, old = self._graphs.popitem(last=False)
            self._natives = {k: v for k, v in self._natives.items() if v.owner is not old}
            old.close()
        found = native.partitions()
        for part, handle in found:
            self._natives[_key(part)] = handle
        return [part for part, _ in found]

    def compile(self, partition: Partition, device: Device) -> OnednnCompiledPartition:
        if device.id != "cpu":
            raise OnednnSetupError(f"oneDNN backend has no device {device.id!r}; it has: cpu")
        native = self._natives.get(_key(partition))
        if native is None:
            raise OnednnSetupError("compile() got a partition that this backend's recent "
                                   "partition() calls did not return")
        return OnednnCompiledPartition(partition, native, self._cpu())

