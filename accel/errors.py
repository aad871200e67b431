"""Typed errors of the OpenCL backend.

Everything the accel backend raises on purpose derives from `AccelError` (a `FusionspecError`),
so a caller can catch "the OpenCL backend cannot do this" in one place:

- `NoDeviceError`: pyopencl, an OpenCL driver (ICD) or a usable device is missing, or the device
  asked for does not exist; the message lists the devices that do exist and how to select one.
- `KernelBuildError`: the OpenCL compiler rejected a generated kernel; it carries the source and
  the build log, so a report can show both.
- `UnsupportedPartitionError`: no kernel family can generate code for a partition (yet); it
  names the pattern and the op kinds.
"""

from __future__ import annotations

from collections.abc import Sequence

from fusionspec.spec.errors import FusionspecError

__all__ = ["AccelError", "NoDeviceError", "KernelBuildError", "UnsupportedPartitionError",
           "SELECT_HINT", "INSTALL_HINT"]

#: How a user selects a device, quoted in `NoDeviceError` messages.
SELECT_HINT = ("select one with AccelBackend(device=ID), the environment variable "
               "FUSIONSPEC_ACCEL_DEVICE=ID, or `fusionspec conform --device ID`")


#: What to install when no device exists at all.
INSTALL_HINT = ("install the accel extra, pip install 'fusionspec[accel]', which brings PoCL's "
                "CPU device, or an OpenCL driver for your GPU")


class AccelError(FusionspecError):
    """Base class of the OpenCL backend's errors."""


class NoDeviceError(AccelError):
    """No OpenCL device can be used: `available` lists the ids of the ones that exist."""

    def __init__(self, message: str, *, available: Sequence[str] = ()) -> None:
        self.available = tuple(available)
        listing = (f"available devices: {', '.join(self.available)}; {SELECT_HINT}"
                   if self.available else INSTALL_HINT)
        super().__init__(f"{message} ({listing})")


class KernelBuildError(AccelError):
    """The OpenCL compiler rejected a generated program."""

    def __init__(self, message: str, *, source: str, log: str, options: Sequence[str] = (),
                 device: str = "") -> None:
        self.source = source
        self.log = log
        self.options = tuple(options)
        self.device = device
        where = f" for {device}" if device else ""
        #: One line, without the whole log (for listings such as a failed probe's reason): the
        #: compiler's first error, and what to do where the cause is a known one.
        self.summary = f"{message}{where}{_first_error(log)}"
        shown = log.strip() or "(the compiler gave no log)"
        if len(shown) > 2000:  # the full log stays on .log; the message must stay readable
            shown = shown[:2000] + " ..."
        super().__init__(f"{message}{where}; build log:\n{shown}")


#: Causes a build log names that lie in the OpenCL runtime, not in the kernel, with what to do.
KNOWN_CAUSES = {
    "unknown target CPU": (
        "the runtime's LLVM does not know this CPU, so it builds no kernel at all (PoCL 3.0 on an "
        "AMD Zen 5, for one); the intel-opencl extra gives such a machine a CPU device that works, "
        "see docs/install.md"),
}


def _first_error(log: str) -> str:
    """`` [error: ...]`` for the log's first error line, then a known cause's advice; '' when
    the log names no error."""
    line = next((ln.strip() for ln in log.splitlines() if "error:" in ln), "")
    if not line:
        return ""
    line = line[line.index("error:"):]
    if len(line) > 200:
        line = line[:200] + " ..."
    advice = next((why for cause, why in KNOWN_CAUSES.items() if cause in line), "")
    return f" [{line}]" + (f": {advice}" if advice else "")


class UnsupportedPartitionError(AccelError):
    """No kernel family of the backend handles this partition."""

    def __init__(self, message: str, *, pattern: str | None = None,
                 kinds: Sequence[str] = ()) -> None:
        self.pattern = pattern
        self.kinds = tuple(kinds)
        what = pattern if pattern is not None else "single-op partition"
        chain = "->".join(self.kinds)
        super().__init__(f"{what} [{chain}]: {message}" if chain else f"{what}: {message}")
