"""Finding, loading and calling ``libdnnl.so`` through ctypes.

Discovery, first match wins:

1. an explicit path (``OnednnBackend(library=...)``), a ``libdnnl.so`` file or the folder
   holding it;
2. the environment variable ``FUSIONSPEC_ONEDNN_LIB`` (same forms);
3. the library the PyPI packages install into the running environment
   (``<sys.prefix>/lib/libdnnl.so``: ``onednn-cpu-gomp`` and ``onednn``).

A library whose dependencies sit beside it without an RPATH to find them (the SYCL build of
the ``onednn`` package needs ``libtbb.so.12``, ``libsycl.so`` ... from the same folder) gets
them preloaded from that folder, so no ``LD_LIBRARY_PATH`` is needed. A SYCL build reaches its
CPU device through an OpenCL CPU runtime: when ``libintelocl.so`` sits beside the library and
``OCL_ICD_FILENAMES`` is not set, the adapter points the OpenCL loader at it (the wheel's own
ICD file names a placeholder path).

The headers are read from ``FUSIONSPEC_ONEDNN_INCLUDE`` when set, else from the ``include``
folder beside the library's ``lib`` folder, where the ``-devel`` packages put them.

`Library.call` runs one C function and turns an error status into a typed error carrying the
status name and whatever the library printed about it: the adapter sets ``ONEDNN_VERBOSE=check``
(unless the user set it) so versions that explain a refusal do so, and captures the process's
standard output around each call.
"""

from __future__ import annotations

import ctypes
import os
import re
import sys
import tempfile
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from functools import cache
from pathlib import Path
from typing import Any

from .errors import INSTALL_HINT, OnednnCallError, OnednnRejection, OnednnSetupError
from .headers import Headers, read_headers

__all__ = ["Library", "load_library", "find_library", "LIB_ENV", "INCLUDE_ENV"]

LIB_ENV = "FUSIONSPEC_ONEDNN_LIB"
INCLUDE_ENV = "FUSIONSPEC_ONEDNN_INCLUDE"

_P = ctypes.c_void_p
_SIZE = ctypes.c_size_t
_PP = ctypes.POINTER(ctypes.c_void_p)

#: argtypes of every C function the adapter calls (pointer arguments as void pointers, so one
#: table serves every struct; the restype is always dnnl_status_t unless listed apart).
_PROTOTYPES: dict[str, tuple[object, ...]] = {
    "dnnl_engine_create": (_PP, ctypes.c_int, _SIZE),
    "dnnl_engine_destroy": (_P,),
    "dnnl_stream_create": (_PP, _P, ctypes.c_uint),
    "dnnl_stream_wait": (_P,),
    "dnnl_stream_destroy": (_P,),
    "dnnl_graph_graph_create_with_fpmath_mode": (_PP, ctypes.c_int, ctypes.c_int),
    "dnnl_graph_graph_destroy": (_P,),
    "dnnl_graph_add_op": (_P, _P),
    "dnnl_graph_graph_finalize": (_P,),
    "dnnl_graph_graph_filter": (_P, ctypes.c_int),
    "dnnl_graph_graph_get_partition_num": (_P, ctypes.POINTER(_SIZE)),
    "dnnl_graph_graph_get_partitions": (_P, _SIZE, _PP),
    "dnnl_graph_op_create": (_PP, _SIZE, ctypes.c_int, ctypes.c_char_p),
    "dnnl_graph_op_destroy": (_P,),
    "dnnl_graph_op_add_input": (_P, _P),
    "dnnl_graph_op_add_output": (_P, _P),
    "dnnl_graph_op_set_attr_f32": (_P, ctypes.c_int, ctypes.POINTER(ctypes.c_float), _SIZE),
    "dnnl_graph_op_set_attr_bool": (_P, ctypes.c_int, ctypes.POINTER(ctypes.c_uint8), _SIZE),
    "dnnl_graph_op_set_attr_s64": (_P, ctypes.c_int, ctypes.POINTER(ctypes.c_int64), _SIZE),
    "dnnl_graph_op_set_attr_str": (_P, ctypes.c_int, ctypes.c_char_p, _SIZE),
    "dnnl_graph_partition_destroy": (_P,),
    "dnnl_graph_partition_get_op_num": (_P, ctypes.POINTER(_SIZE)),
    "dnnl_graph_partition_get_ops": (_P, _SIZE, ctypes.POINTER(_SIZE)),
    "dnnl_graph_partition_is_supported": (_P, ctypes.POINTER(ctypes.c_uint8)),
    "dnnl_graph_partition_get_input_ports_num": (_P, ctypes.POINTER(_SIZE)),
    "dnnl_graph_partition_get_input_ports": (_P, _SIZE, _P),
    "dnnl_graph_partition_get_output_ports_num": (_P, ctypes.POINTER(_SIZE)),
    "dnnl_graph_partition_get_output_ports": (_P, _SIZE, _P),
    "dnnl_graph_partition_compile": (_P, _P, _SIZE, _PP, _SIZE, _PP, _P),
    "dnnl_graph_compiled_partition_create": (_PP, _P),
    "dnnl_graph_compiled_partition_destroy": (_P,),
    "dnnl_graph_compiled_partition_execute": (_P, _P, _SIZE, _PP, _SIZE, _PP),
    "dnnl_graph_compiled_partition_query_logical_tensor": (_P, _SIZE, _P),
    "dnnl_graph_logical_tensor_get_mem_size": (_P, ctypes.POINTER(_SIZE)),
    "dnnl_graph_tensor_create": (_PP, _P, _P, _P),
    "dnnl_graph_tensor_destroy": (_P,),
    "dnnl_graph_set_constant_tensor_cache": (ctypes.c_int,),
}

#: Statuses that mean "oneDNN refuses this graph" rather than "something broke".
_REFUSALS = frozenset({"invalid_arguments", "unimplemented", "invalid_graph", "invalid_graph_op",
                       "invalid_shape", "invalid_data_type"})


class _Version(ctypes.Structure):
    _fields_ = [("major", ctypes.c_int), ("minor", ctypes.c_int), ("patch", ctypes.c_int),
                ("hash", ctypes.c_char_p), ("cpu_runtime", ctypes.c_uint),
                ("gpu_runtime", ctypes.c_uint)]


def _candidates(explicit: str | None) -> list[Path]:
    given = explicit or os.environ.get(LIB_ENV)
    if given:
        path = Path(given)
        return [path / "libdnnl.so", path / "libdnnl.so.3"] if path.is_dir() else [path]
    prefixes = dict.fromkeys([Path(sys.prefix), Path(sys.base_prefix)])
    return [p / "lib" / "libdnnl.so" for p in prefixes] + \
           [p / "lib" / "libdnnl.so.3" for p in prefixes]


def find_library(explicit: str | None = None) -> tuple[Path, Path]:
    """The library file and the include folder to use (`OnednnSetupError` when missing)."""
    tried = _candidates(explicit)
    lib = next((p for p in tried if p.is_file()), None)
    if lib is None:
        raise OnednnSetupError(f"oneDNN library not found (looked for "
                               f"{', '.join(str(p) for p in tried)}); {INSTALL_HINT}")
    include = Path(os.environ[INCLUDE_ENV]) if os.environ.get(INCLUDE_ENV) else \
        lib.resolve().parent.parent / "include"
    return lib, include


@cache
def _sink() -> int:
    """One scratch file per process that native output is diverted to (kept open)."""
    fd, path = tempfile.mkstemp(prefix="fusionspec-onednn-")
    os.unlink(path)  # the open descriptor keeps it; nothing is left behind
    return fd


@contextmanager
def _captured_stdout() -> Iterator[list[str]]:
    """Collects what native code writes to file descriptor 1 meanwhile (the list is filled
    when the block ends). The scratch file is reused, so a call costs a few system calls."""
    lines: list[str] = []
    sys.stdout.flush()
    sink = _sink()
    saved = os.dup(1)
    os.dup2(sink, 1)
    try:
        yield lines
    finally:
        os.dup2(saved, 1)
        os.close(saved)
        size = os.lseek(sink, 0, os.SEEK_END)
        if size:
            lines.extend(os.pread(sink, size, 0).decode(errors="replace").splitlines())
            os.ftruncate(sink, 0)
            os.lseek(sink, 0, os.SEEK_SET)


@dataclass(frozen=True, eq=False)
class Library:
    """One loaded oneDNN: the ctypes handle, its enums and its version."""

    path: Path
    headers: Headers
    dll: ctypes.CDLL
    version: str
    git_hash: str
    cpu_runtime: str

    def fn(self, name: str) -> Callable[..., Any]:
        try:
            found: Callable[..., Any] = getattr(self.dll, name)
            return found
        except AttributeError:
            raise OnednnSetupError(f"{self.path} (oneDNN {self.version}) exports no {name}") \
                from None

    def status_name(self, code: int) -> str:
        names = {v: k.removeprefix("dnnl_") for k, v in self.headers.enum("dnnl_status_t").items()}
        return names.get(code, f"status {code}")

    def call(self, name: str, *args: object, context: str = "",
             refusal_is_rejection: bool = False, op_kind: str = "") -> None:
        """Call `name`; an error status raises `OnednnCallError`, or `OnednnRejection` for a
        refusal of the graph when `refusal_is_rejection`. What the library prints meanwhile
        (its ``check`` lines, also on successful executions) is captured, never shown."""
        with _captured_stdout() as printed:
            code = self.fn(name)(*args)
        if code == 0:
            return
        status = self.status_name(code)
        # The first call of a process also prints the library's banner (",info," lines).
        log = " | ".join(line.strip() for line in printed
                         if line.strip() and ",info," not in line)[:2000]
        cls = OnednnRejection if refusal_is_rejection and status in _REFUSALS else \
            OnednnCallError
        raise cls(name, status, context, log, op_kind)


def _runtime_name(headers: Headers, value: int) -> str:
    names = {v: k.removeprefix("DNNL_RUNTIME_").lower() for k, v in headers.defines.items()
             if k.startswith("DNNL_RUNTIME_") and k != "DNNL_RUNTIME_DPCPP"}
    return names.get(value, f"runtime {value}")


_MISSING = re.compile(r"^(\S+?): cannot open shared object file")


def _load(path: Path, depth: int = 0) -> ctypes.CDLL:
    """CDLL `path`, preloading (globally) any missing dependency found in its folder."""
    for _ in range(64):
        try:
            return ctypes.CDLL(str(path), mode=ctypes.RTLD_GLOBAL)
        except OSError as exc:
            match = _MISSING.match(str(exc).split(": ", 1)[-1]) or \
                _MISSING.search(str(exc))
            sibling = path.parent / match.group(1) if match else None
            if sibling is None or not sibling.is_file() or depth > 8 or sibling == path:
                raise
            _load(sibling, depth + 1)
    return ctypes.CDLL(str(path), mode=ctypes.RTLD_GLOBAL)


def _point_opencl_loader(lib_dir: Path) -> None:
    runtime = lib_dir / "libintelocl.so"
    if runtime.is_file() and "OCL_ICD_FILENAMES" not in os.environ:
        os.environ["OCL_ICD_FILENAMES"] = str(runtime)


@cache
def load_library(explicit: str | None = None) -> Library:
    """Find, load and describe oneDNN (cached per explicit path)."""
    lib_path, include = find_library(explicit)
    headers = read_headers(include)
    os.environ.setdefault("ONEDNN_VERBOSE", "check")
    _point_opencl_loader(lib_path.resolve().parent)
    try:
        dll = _load(lib_path)
    except OSError as exc:
        raise OnednnSetupError(f"cannot load {lib_path}: {exc}; {INSTALL_HINT}") from None
    for name, argtypes in _PROTOTYPES.items():
        func = getattr(dll, name, None)
        if func is not None:
            func.argtypes = list(argtypes)
            func.restype = ctypes.c_int
    version_fn = dll.dnnl_version
    version_fn.restype = ctypes.POINTER(_Version)
    info = version_fn().contents
    version = f"{info.major}.{info.minor}.{info.patch}"
    library = Library(lib_path, headers, dll, version, (info.hash or b"").decode(),
                      _runtime_name(headers, info.cpu_runtime))
    # Constant inputs differ from case to case; a cache keyed by compiled partition would serve
    # one case's weights to the next.
    if hasattr(dll, "dnnl_graph_set_constant_tensor_cache"):
        library.call("dnnl_graph_set_constant_tensor_cache", 0)
    return library
