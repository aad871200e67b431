"""One OpenCL context and queue per device, the program cache, and work-size helpers.

`runtime_for(info)` gives the device's `Runtime`, created on first use. `Runtime.program`
returns a built program for (source, build options), looking in three places in turn:

1. memory: programs already built in this context, keyed by (source, options), the
   `MEMORY_PROGRAMS` most recently used;
2. disk: program binaries under ``$FUSIONSPEC_ACCEL_CACHE_DIR`` (default
   ``$XDG_CACHE_HOME/fusionspec/opencl``, i.e. ``~/.cache/fusionspec/opencl``), one file per
   sha256 of (generator version, source, options, platform, device, driver version), so a new
   process or context reuses them and a driver upgrade or a new generator never does;
   ``FUSIONSPEC_ACCEL_CACHE_DIR=off`` disables the disk cache;
3. the OpenCL compiler; a rejected program raises `KernelBuildError` with its source and log.

``FUSIONSPEC_ACCEL_ASSERT_NO_COMPILE=1`` makes step 3 an error, to prove that a run is served
from the caches. `Runtime.stats` counts memory hits, disk hits and builds.

Build options: every program gets ``-cl-fp32-correctly-rounded-divide-sqrt`` when the device
supports it (Divide, Reciprocal and Sqrt then round like NumPy's float32 operations; without
it OpenCL allows 2.5 ulp for division and 3 ulp for sqrt), and never a fast-math option.
"""

from __future__ import annotations

import hashlib
import math
import os
import tempfile
import threading
import warnings
from collections import OrderedDict
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from .devices import DeviceInfo, check_not_forked
from .errors import AccelError, KernelBuildError

__all__ = ["GENERATOR_VERSION", "CACHE_ENV", "NO_COMPILE_ENV", "Runtime", "CacheStats",
           "runtime_for", "cache_dir", "base_options", "launch_1d", "pick_work_group"]

#: Part of every disk-cache key: bump when generated code changes meaning for the same source
#: (e.g. different helper semantics), so stale binaries are never reused.
GENERATOR_VERSION = "1"
CACHE_ENV = "FUSIONSPEC_ACCEL_CACHE_DIR"
#: How many built programs a context keeps in memory (a suite run compiles thousands; compiled
#: partitions keep their own programs alive regardless).
MEMORY_PROGRAMS = 256
NO_COMPILE_ENV = "FUSIONSPEC_ACCEL_ASSERT_NO_COMPILE"


def cache_dir() -> Path | None:
    """Where program binaries are kept, or None when disk caching is off."""
    configured = os.environ.get(CACHE_ENV)
    if configured is not None:
        return None if configured.strip().lower() in ("", "off", "0", "none") \
            else Path(configured)
    base = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    return Path(base) / "fusionspec" / "opencl"


def base_options(info: DeviceInfo) -> tuple[str, ...]:
    """Build options every program gets on `info` (see the module docstring)."""
    return ("-cl-fp32-correctly-rounded-divide-sqrt",) if info.correctly_rounded_divide_sqrt \
        else ()


@dataclass
class CacheStats:
    memory_hits: int = 0
    disk_hits: int = 0
    builds: int = 0


class Runtime:
    """The context, queue and program cache of one device."""

    def __init__(self, info: DeviceInfo) -> None:
        import pyopencl as cl

        check_not_forked()
        self.info = info
        self.stats = CacheStats()
        self._lock = threading.Lock()
        try:
            self.context = cl.Context([info.handle])
            self.queue = cl.CommandQueue(self.context)
        except cl.Error as exc:
            raise AccelError(f"cannot open OpenCL device {info.id} ({info.name}): {exc}") \
                from exc
        self._programs: OrderedDict[tuple[str, tuple[str, ...]], Any] = OrderedDict()
        self._kernels: dict[tuple[int, str], Any] = {}

    # -- programs -------------------------------------------------------------------------

    def cache_key(self, source: str, options: Sequence[str]) -> str:
        """The disk-cache key of a program on this device."""
        info = self.info
        parts = (GENERATOR_VERSION, source, " ".join(options), info.platform, info.vendor,
                 info.name, info.opencl_version, info.driver)
        return hashlib.sha256("\0".join(parts).encode()).hexdigest()

    def program(self, source: str, options: Sequence[str] = ()) -> Any:
        """A built `pyopencl.Program` of `source` (see the module docstring for the caches)."""
        opts = (*base_options(self.info), *options)
        key = (source, opts)
        with self._lock:
            found = self._programs.get(key)
            if found is not None:
                self._programs.move_to_end(key)
                self.stats.memory_hits += 1
                return found
            program = self._from_disk(source, opts)
            if program is None:
                program = self._build(source, opts)
            self._programs[key] = program
            while len(self._programs) > MEMORY_PROGRAMS:  # least recently used goes first
                _, old = self._programs.popitem(last=False)
                for name in [k for k in self._kernels if k[0] == id(old)]:
                    del self._kernels[name]
            return program

    def kernel_work_group_size(self, kernel: Any) -> int:
        """The largest work group `kernel` can run with on this device
        (CL_KERNEL_WORK_GROUP_SIZE: register or local-memory use can put it below the
        device's maximum)."""
        import pyopencl as cl

        return int(kernel.get_work_group_info(cl.kernel_work_group_info.WORK_GROUP_SIZE,
                                              self.info.handle))

    def kernel(self, program: Any, name: str) -> Any:
        """The kernel `name` of `program`, created once (creating one is not free)."""
        import pyopencl as cl

        key = (id(program), name)
        found = self._kernels.get(key)
        if found is None:
            try:
                found = cl.Kernel(program, name)
            except cl.Error as exc:
                raise AccelError(f"the program has no kernel {name!r}: {exc}") from exc
            self._kernels[key] = found
        return found

    def _path(self, source: str, options: Sequence[str]) -> Path | None:
        root = cache_dir()
        return None if root is None else root / f"{self.cache_key(source, options)}.bin"

    def _from_disk(self, source: str, options: tuple[str, ...]) -> Any | None:
        import pyopencl as cl

        path = self._path(source, options)
        if path is None or not path.is_file():
            return None
        try:
            binary = path.read_bytes()
            program = cl.Program(self.context, [self.info.handle], [binary])
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                program.build(options=list(options))
        except (OSError, cl.Error):
            return None  # unreadable or stale binary: rebuild from source and overwrite it
        self.stats.disk_hits += 1
        return program

    def _build(self, source: str, options: tuple[str, ...]) -> Any:
        import pyopencl as cl

        if os.environ.get(NO_COMPILE_ENV, "").strip() not in ("", "0"):
            raise AccelError(f"{NO_COMPILE_ENV} is set, but a program must be compiled (no "
                             f"cached binary for key {self.cache_key(source, options)[:16]})")
        program = cl.Program(self.context, source)
        try:
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")  # compiler chatter; errors raise below
                program.build(options=list(options))
        except cl.Error as exc:
            raise KernelBuildError("the OpenCL compiler rejected a generated kernel",
                                   source=source, log=self._log(program, exc), options=options,
                                   device=self.info.id) from None
        self.stats.builds += 1
        self._to_disk(source, options, program)
        return program

    def _log(self, program: Any, exc: Exception) -> str:
        import pyopencl as cl

        try:
            log = program.get_build_info(self.info.handle, cl.program_build_info.LOG)
            return str(log) or str(exc)
        except cl.Error:
            return str(exc)

    def _to_disk(self, source: str, options: tuple[str, ...], program: Any) -> None:
        path = self._path(source, options)
        if path is None:
            return
        try:
            binaries = program.binaries
            if not binaries or not binaries[0]:
                return
            path.parent.mkdir(parents=True, exist_ok=True)
            # Write then rename, so a concurrent reader never sees half a binary.
            fd, tmp = tempfile.mkstemp(dir=path.parent, suffix=".tmp")
            with os.fdopen(fd, "wb") as handle:
                handle.write(bytes(binaries[0]))
            os.replace(tmp, path)
        except OSError:
            pass  # a read-only or full cache directory only costs a rebuild next time


_RUNTIMES: dict[str, Runtime] = {}
_RUNTIMES_LOCK = threading.Lock()


def runtime_for(info: DeviceInfo) -> Runtime:
    """The `Runtime` of `info`, created on first use (one per device per process)."""
    check_not_forked()
    with _RUNTIMES_LOCK:
        found = _RUNTIMES.get(info.id)
        if found is None:
            found = _RUNTIMES[info.id] = Runtime(info)
        return found


# -- work sizes -----------------------------------------------------------------------------

def pick_work_group(info: DeviceInfo, wanted: int = 256, *, kernel_limit: int | None = None
                    ) -> int:
    """A 1-D work-group size: `wanted` rounded down to a power of two and capped by the device
    (and the kernel's own limit, CL_KERNEL_WORK_GROUP_SIZE, when given)."""
    limit = min(info.max_work_group_size, info.max_work_item_sizes[0] if
                info.max_work_item_sizes else info.max_work_group_size)
    if kernel_limit is not None:
        limit = min(limit, kernel_limit)
    size = max(1, min(wanted, limit))
    return 1 << (size.bit_length() - 1)


def launch_1d(info: DeviceInfo, elements: int, *, per_item: int = 1,
              work_group: int | None = None, kernel_limit: int | None = None
              ) -> tuple[tuple[int], tuple[int]]:
    """(global, local) sizes for a grid-stride loop over `elements` (`kernel_limit`: a cap on
    the work-group size below the device's, the kernel's own CL_KERNEL_WORK_GROUP_SIZE).

    GPUs get one work item per `per_item` elements, capped at 64 work groups per compute
    unit (the loop takes the rest). CPUs get one work item per `per_item` elements too, with
    no cap short of the index range: a CPU runtime runs a work group's items one after another
    in a loop, so an item that strode over the whole grid would touch a new cache line at every
    step (measured on PoCL: a grid-stride copy ran at 3% of a one-item-per-element copy).
    """
    local = pick_work_group(info, work_group or (256 if info.kind == "gpu" else 64),
                            kernel_limit=kernel_limit)
    wanted_items = max(1, math.ceil(elements / max(per_item, 1)))
    groups = math.ceil(wanted_items / local)
    cap = info.compute_units * 64 if info.kind == "gpu" else (1 << 31) // local
    groups = max(1, min(groups, cap))
    return (groups * local,), (local,)
