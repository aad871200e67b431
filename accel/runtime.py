"""One OpenCL context and queue per device, the program cache, and work-size helpers.

`runtime_for(info)` gives the device's `Runtime`, created on first use. `Runtime.program`
returns a built program for (source, build options) that contains the kernels the caller
names, looking in three places in turn:

1. memory: programs already built in this context, keyed by (source, options), the
   `MEMORY_PROGRAMS` most recently used;
2. disk, where the driver keeps no cache of its own: program binaries under
   ``$FUSIONSPEC_ACCEL_CACHE_DIR`` (default ``$XDG_CACHE_HOME/fusionspec/opencl``, i.e.
   ``~/.cache/fusionspec/opencl``), one file per sha256 of (generator version, source, options,
   platform, device, driver version), so a new process or context reuses them and a driver
   upgrade or a new generator never does; ``FUSIONSPEC_ACCEL_CACHE_DIR=off`` disables it. A
   binary that does not load, or lacks a kernel, is deleted and rebuilt, never trusted.
   Drivers that cache source builds themselves (PoCL, NVIDIA's) get no binaries of ours:
   asking PoCL for a program's binary compiles every kernel once more (0.5 s a program,
   measured, three times the build itself), and its own cache serves a warm run faster;
3. the OpenCL compiler (`fusionspec.accel.build`: quiet, checked for the kernels, rebuilt
   afresh when a driver hands back a program without them); a rejected program raises
   `KernelBuildError` with its source and log.

`Runtime.stats` counts memory hits, disk hits, builds, fresh rebuilds and discarded binaries.

Build options: every program gets ``-cl-fp32-correctly-rounded-divide-sqrt`` when the device
supports it (Divide, Reciprocal and Sqrt then round like NumPy's float32 operations; without
it OpenCL allows 2.5 ulp for division and 3 ulp for sqrt), and never a fast-math option.

Every program is built headed by `fusionspec.accel.build.PRELUDE`, which turns floating-point
contraction off: OpenCL lets a
compiler fuse ``a * b + c`` into one FMA (one rounding instead of two), and whether it does
depends on the shape of the kernel. Intel's CPU compiler fuses differently in the table and the
specialised form of one partition, so the two forms gave results a few ulp apart there; with
contraction off each product is rounded, as the reference rounds it, on every driver.
"""

from __future__ import annotations

import hashlib
import math
import os
import tempfile
import threading
from collections import OrderedDict
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from .build import compile_source, load_binary
from .devices import DeviceInfo, check_not_forked
from .errors import AccelError

__all__ = ["GENERATOR_VERSION", "CACHE_ENV", "Runtime", "CacheStats", "runtime_for",
           "cache_dir", "base_options", "launch_1d", "pick_work_group",
           "driver_caches_builds", "all_stats"]

#: Part of every disk-cache key: bump when generated code changes meaning for the same source
#: (e.g. different helper semantics), so stale binaries are never reused.
GENERATOR_VERSION = "3"  # 3: programs built with contraction off (`build.PRELUDE`)
CACHE_ENV = "FUSIONSPEC_ACCEL_CACHE_DIR"
#: How many built programs a context keeps in memory (a suite run compiles thousands; compiled
#: partitions keep their own programs alive regardless).
MEMORY_PROGRAMS = 256


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


def driver_caches_builds(info: DeviceInfo) -> bool:
    """Whether the device's driver keeps its own cache of programs built from source."""
    if info.handle is None:
        return False
    from pyopencl.characterize import has_src_build_cache

    return bool(has_src_build_cache(info.handle))


@dataclass
class CacheStats:
    memory_hits: int = 0
    disk_hits: int = 0
    builds: int = 0
    fresh_rebuilds: int = 0  # programs rebuilt because a build came back without its kernels
    discarded: int = 0  # cached binaries that did not load or lacked a kernel


class Runtime:
    """The context, queue and program cache of one device. `keep_binaries` None: keep
    binaries on disk only where the driver caches no builds itself (module docstring)."""

    def __init__(self, info: DeviceInfo, *, keep_binaries: bool | None = None) -> None:
        import pyopencl as cl

        check_not_forked()
        self.info = info
        self.stats = CacheStats()
        self.keep_binaries = (not driver_caches_builds(info) if keep_binaries is None
                              else keep_binaries)
        self._lock = threading.Lock()
        try:
            self.context = cl.Context([info.handle])
            self.queue = cl.CommandQueue(self.context)
        except cl.Error as exc:
            raise AccelError(f"cannot open OpenCL device {info.id} ({info.name}): {exc}") \
                from exc
        self._programs: OrderedDict[tuple[str, tuple[str, ...]], Any] = OrderedDict()
        self._kernels: dict[tuple[int, str], Any] = {}
        self._profiling_queue: Any = None

    @property
    def profiling_queue(self) -> Any:
        """A second queue on the device, with profiling events, for timing kernels
        (`fusionspec.backend.timing`); created on first use, so normal runs never pay for
        profiling."""
        import pyopencl as cl

        with self._lock:
            if self._profiling_queue is None:
                try:
                    self._profiling_queue = cl.CommandQueue(
                        self.context, properties=cl.command_queue_properties.PROFILING_ENABLE)
                except cl.Error as exc:
                    raise AccelError(f"cannot open a profiling queue on {self.info.id}: "
                                     f"{exc}") from exc
            return self._profiling_queue

    # -- programs -------------------------------------------------------------------------

    def cache_key(self, source: str, options: Sequence[str]) -> str:
        """The disk-cache key of a program on this device."""
        info = self.info
        parts = (GENERATOR_VERSION, source, " ".join(options), info.platform, info.vendor,
                 info.name, info.opencl_version, info.driver)
        return hashlib.sha256("\0".join(parts).encode()).hexdigest()

    def program(self, source: str, options: Sequence[str] = (), *,
                kernels: Sequence[str] = ()) -> Any:
        """A built `pyopencl.Program` of `source` that contains `kernels` (see the module
        docstring for the caches)."""
        opts = (*base_options(self.info), *options)
        key = (source, opts)
        with self._lock:
            found = self._programs.get(key)
            if found is not None:
                self._programs.move_to_end(key)
                self.stats.memory_hits += 1
                return found
            program = self._from_disk(source, opts, kernels)
            if program is None:
                program = self._build(source, opts, kernels)
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
        root = cache_dir() if self.keep_binaries else None
        return None if root is None else root / f"{self.cache_key(source, options)}.bin"

    def _from_disk(self, source: str, options: tuple[str, ...], kernels: Sequence[str]
                   ) -> Any | None:
        path = self._path(source, options)
        if path is None or not path.is_file():
            return None
        try:
            binary = path.read_bytes()
        except OSError:
            return None
        program = load_binary(self.context, self.info.handle, binary, options, kernels)
        if program is None:  # stale, truncated or broken: never trusted, rebuilt below
            self.stats.discarded += 1
            path.unlink(missing_ok=True)
            return None
        self.stats.disk_hits += 1
        return program

    def _build(self, source: str, options: tuple[str, ...], kernels: Sequence[str]) -> Any:
        program, fresh = compile_source(self.context, self.info.handle, source, options,
                                        kernels, self.info.id)
        self.stats.builds += 1
        self.stats.fresh_rebuilds += int(fresh)
        self._to_disk(source, options, program)
        return program

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


def all_stats() -> CacheStats:
    """The program-cache counts of every runtime of this process, added up."""
    total = CacheStats()
    with _RUNTIMES_LOCK:
        for runtime in _RUNTIMES.values():
            for name, value in vars(runtime.stats).items():
                setattr(total, name, getattr(total, name) + value)
    return total


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
