"""OpenCL device discovery and selection.

Every device of every OpenCL platform gets a stable id made of a platform slug, the device type
and, when a platform has several devices of that type, their index: ``pocl-cpu``,
``nvidia-gpu``, ``intel-gpu0``/``intel-gpu1``. Two platforms of one kind (PoCL from pip and
PoCL from the system) are told apart by their driver release: ``pocl3.0-cpu``, ``pocl3.1-cpu``.
`discover()` lists them, PoCL first (it is the embedded default, installed with
``pocl-binary-distribution``), then the other platforms in the driver's order (pip-installed
runtimes, Intel's CPU runtime among them, are made visible first: `fusionspec.accel.icd`).
`select_device(id)` picks one by id, else by the environment variable
``FUSIONSPEC_ACCEL_DEVICE``, else the first. Each `DeviceInfo` records what kernel generation
needs to know about its device (work-group limit, local memory, fp16/fp64, extensions) and
turns into the suite's `fusionspec.backend.Device` with `as_device()`.

A machine without pyopencl, without an OpenCL driver (ICD) or without devices discovers
nothing; asking for a device then raises `NoDeviceError`, never a raw driver traceback. A process
forked after discovery cannot run kernels (drivers do not survive fork); `check_not_forked`
raises `AccelError` there instead of letting a kernel hang.
"""

from __future__ import annotations

import os
import re
from collections.abc import Sequence
from dataclasses import dataclass, field
from functools import cache
from typing import Any

from fusionspec.backend import Device

from .errors import AccelError, NoDeviceError
from .icd import register_pip_runtimes

__all__ = ["DeviceInfo", "Discovery", "ENV_VAR", "discover", "discovery", "discovery_problem",
           "select_device", "device_ids", "order_with_selected", "check_not_forked"]

#: The environment variable that selects a device by id.
ENV_VAR = "FUSIONSPEC_ACCEL_DEVICE"

# Platform name/vendor fragments -> slug; checked in order, first hit wins.
_SLUGS: tuple[tuple[str, str], ...] = (
    ("portable computing language", "pocl"), ("pocl", "pocl"), ("nvidia", "nvidia"),
    ("rusticl", "rusticl"), ("clover", "clover"), ("intel", "intel"),
    ("advanced micro devices", "amd"), ("amd", "amd"), ("apple", "apple"), ("arm", "arm"),
    ("qualcomm", "qualcomm"),
)


@dataclass(frozen=True)
class DeviceInfo:
    """One OpenCL device and the capabilities the kernel generators query."""

    id: str
    kind: str  # "cpu", "gpu" or "accelerator"
    name: str
    platform: str
    vendor: str
    driver: str
    opencl_version: str
    opencl_c_version: str
    max_work_group_size: int
    max_work_item_sizes: tuple[int, ...]
    compute_units: int
    local_mem_size: int
    local_mem_dedicated: bool  # False when "local" memory is emulated in global memory
    global_mem_size: int
    extensions: frozenset[str]
    fp16: bool  # cl_khr_fp16: native half arithmetic and half variables
    fp64: bool
    correctly_rounded_divide_sqrt: bool  # the -cl-fp32-correctly-rounded-divide-sqrt option
    #: CL_DEVICE_NATIVE/PREFERRED_VECTOR_WIDTH_FLOAT (0: not reported). The code generators cap
    #: what they use at 8 lanes (`vector_width`).
    native_vector_width: int = 0
    preferred_vector_width: int = 0
    handle: Any = field(default=None, compare=False, repr=False)  # the pyopencl Device

    def has_extension(self, name: str) -> bool:
        return name in self.extensions

    @property
    def vector_width(self) -> int:
        """The f32 vector width kernels use on this device: its native width, at most 8 (a
        16-wide type aborts PoCL 3.0's LLVM on AVX-512 CPUs it does not know; 8 lanes fill the
        256-bit registers that LLVM then targets) and at least 4 (every OpenCL device has
        float4)."""
        return 8 if self.native_vector_width >= 8 else 4

    def as_device(self) -> Device:
        """The suite's view of this device (ids, versions, capabilities for the report)."""
        return Device(id=self.id, kind="gpu" if self.kind == "gpu" else "cpu", name=self.name,
                      driver=self.driver, runtime=self.opencl_version, extras={
                          "platform": self.platform,
                          "vendor": self.vendor,
                          "opencl_c_version": self.opencl_c_version,
                          "device_type": self.kind,
                          "compute_units": str(self.compute_units),
                          "max_work_group_size": str(self.max_work_group_size),
                          "local_mem_size": str(self.local_mem_size),
                          "global_mem_size": str(self.global_mem_size),
                          "fp16": "yes" if self.fp16 else "no",
                          "fp64": "yes" if self.fp64 else "no",
                          "extensions": " ".join(sorted(self.extensions)),
                      })


def _slug(platform_name: str, vendor: str) -> str:
    text = f"{platform_name} {vendor}".lower()
    for fragment, slug in _SLUGS:
        if fragment in text:
            return slug
    words = re.findall(r"[a-z0-9]+", platform_name.lower())
    return words[0] if words else "opencl"


def _kind(device_type: int) -> str:
    import pyopencl as cl

    if device_type & cl.device_type.GPU:
        return "gpu"
    if device_type & cl.device_type.CPU:
        return "cpu"
    return "accelerator"


@dataclass(frozen=True)
class Discovery:
    """What looking for OpenCL devices found in this process."""

    devices: tuple[DeviceInfo, ...] = ()
    #: Why there is no device ('' when there are some).
    problem: str = ""
    #: The process that loaded the OpenCL driver (None when it was never loaded).
    opencl_pid: int | None = None


@cache
def discovery() -> Discovery:
    """Every OpenCL device of this machine, PoCL's first, and why there is none (cached for
    the process)."""
    try:
        import pyopencl as cl
    except ImportError as exc:
        return Discovery(problem=f"pyopencl is not installed ({exc}); install the `accel` "
                                 "extra: pip install 'fusionspec[accel]'")
    pid = os.getpid()
    try:
        return _discover(cl, pid)
    except Exception as exc:  # a broken ICD can fail in many ways; it means "no device"
        return Discovery(problem=f"OpenCL discovery failed: {type(exc).__name__}: {exc}",
                         opencl_pid=pid)


def discover() -> tuple[DeviceInfo, ...]:
    """Every OpenCL device of this machine, PoCL's first (cached for the process)."""
    return discovery().devices


def discovery_problem() -> str:
    """Why `discover()` found no device ('' when it found some)."""
    return discovery().problem


def check_not_forked() -> None:
    """Raise `AccelError` in a process forked after OpenCL was initialized: drivers keep
    threads and device state (PoCL's worker threads, GPU contexts) that fork() does not copy,
    so any kernel there would hang. Detecting it turns a hang into an error."""
    loaded = discovery().opencl_pid
    if loaded is not None and loaded != os.getpid():
        raise AccelError(
            f"OpenCL was initialized in process {loaded}, and this process "
            f"({os.getpid()}) was forked from it afterwards; OpenCL drivers do not survive "
            "fork(). Start worker processes with the 'spawn' or 'forkserver' method, or use "
            "OpenCL only after forking")


def _discover(cl: Any, pid: int) -> Discovery:
    register_pip_runtimes()  # before the loader's first look (see fusionspec.accel.icd)
    try:
        platforms = cl.get_platforms()
    except cl.Error as exc:
        return Discovery(problem=f"no OpenCL platform (no ICD driver is installed?): {exc}",
                         opencl_pid=pid)
    raw: list[tuple[str, str, Any, Any]] = []  # (slug, kind, platform, device)
    for platform in platforms:
        try:
            devices = platform.get_devices()
        except cl.Error:
            continue  # a platform with no devices reports DEVICE_NOT_FOUND
        slug = _slug(platform.name, platform.vendor)
        raw.extend((slug, _kind(d.type), platform, d) for d in devices)
    if not raw:
        return Discovery(problem="the OpenCL platforms report no devices", opencl_pid=pid)
    raw = _qualify_shared_slugs(raw)
    counts: dict[tuple[str, str], int] = {}
    for slug, kind, _, _ in raw:
        counts[slug, kind] = counts.get((slug, kind), 0) + 1
    seen: dict[tuple[str, str], int] = {}
    found: list[DeviceInfo] = []
    for slug, kind, platform, device in raw:
        index = seen.get((slug, kind), 0)
        seen[slug, kind] = index + 1
        ident = f"{slug}-{kind}" + (str(index) if counts[slug, kind] > 1 else "")
        found.append(_info(ident, kind, platform, device))
    found.sort(key=lambda d: not d.id.startswith("pocl"))  # stable: PoCL first
    return Discovery(tuple(found), "", pid)


def _qualify_shared_slugs(raw: list[tuple[str, str, Any, Any]]
                          ) -> list[tuple[str, str, Any, Any]]:
    """Where two platforms share a slug (PoCL from pip and PoCL from the system), add each
    one's driver release to it (``pocl3.0``, ``pocl3.1``), so ids tell them apart."""
    platforms: dict[str, set[int]] = {}
    for slug, _, platform, _ in raw:
        platforms.setdefault(slug, set()).add(id(platform))
    qualified = []
    for slug, kind, platform, device in raw:
        if len(platforms[slug]) > 1:
            release = re.match(r"\d+(\.\d+)?", str(device.driver_version).strip())
            slug = f"{slug}{release.group(0) if release else ''}"
        qualified.append((slug, kind, platform, device))
    return qualified


def _info(ident: str, kind: str, platform: Any, device: Any) -> DeviceInfo:
    import pyopencl as cl

    extensions = frozenset(device.extensions.split())
    fp_config = int(device.single_fp_config)
    return DeviceInfo(
        id=ident, kind=kind, name=device.name.strip(), platform=platform.name.strip(),
        vendor=device.vendor.strip(), driver=device.driver_version.strip(),
        opencl_version=device.version.strip(), opencl_c_version=device.opencl_c_version.strip(),
        max_work_group_size=int(device.max_work_group_size),
        max_work_item_sizes=tuple(int(s) for s in device.max_work_item_sizes),
        compute_units=int(device.max_compute_units),
        local_mem_size=int(device.local_mem_size),
        local_mem_dedicated=int(device.local_mem_type) == int(cl.device_local_mem_type.LOCAL),
        global_mem_size=int(device.global_mem_size),
        extensions=extensions,
        fp16="cl_khr_fp16" in extensions,
        fp64="cl_khr_fp64" in extensions,
        correctly_rounded_divide_sqrt=bool(
            fp_config & int(cl.device_fp_config.CORRECTLY_ROUNDED_DIVIDE_SQRT)),
        native_vector_width=int(device.native_vector_width_float),
        preferred_vector_width=int(device.preferred_vector_width_float),
        handle=device)


def device_ids() -> list[str]:
    return [d.id for d in discover()]


def _wanted(device_id: str | None) -> str | None:
    return device_id or os.environ.get(ENV_VAR) or None


def select_device(device_id: str | None = None) -> DeviceInfo:
    """The device `device_id`, else the one named by ``FUSIONSPEC_ACCEL_DEVICE``, else the
    first discovered (PoCL's CPU device when installed). Raises `NoDeviceError`."""
    devices = discover()
    wanted = _wanted(device_id)
    if not devices:
        raise NoDeviceError(f"no OpenCL device is available: {discovery_problem()}")
    if wanted is None:
        return devices[0]
    for info in devices:
        if info.id == wanted:
            return info
    source = "" if device_id else f" (from {ENV_VAR})"
    raise NoDeviceError(f"there is no OpenCL device {wanted!r}{source}",
                        available=[d.id for d in devices])


def order_with_selected(device_id: str | None = None) -> Sequence[DeviceInfo]:
    """All devices, the selected one (argument or environment variable) first; the discovery
    order when nothing is selected. Raises `NoDeviceError` for an unknown selection."""
    devices = discover()
    if not devices or _wanted(device_id) is None:
        return devices
    chosen = select_device(device_id)
    return (chosen, *(d for d in devices if d.id != chosen.id))
