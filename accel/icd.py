"""Making OpenCL runtimes installed with pip visible to pyopencl's driver loader.

An OpenCL program finds its drivers through vendor files (``*.icd``, one line naming a driver
library) in the folder ``OCL_ICD_VENDORS`` names, by default ``/etc/OpenCL/vendors``; the loader
bundled with pyopencl's wheels also reads the one beside it (PoCL's, from
``pocl-binary-distribution``). Intel's CPU runtime from PyPI (``intel-opencl-rt``, which the
``accel`` extra installs on x86-64 Linux) puts its library in the environment's ``lib`` folder
and registers it nowhere the loader looks, so without a step of its own it would stay unused.

`register_pip_runtimes()` takes that step: it writes a vendor folder under the user's cache
(``<cache>/fusionspec/icd/<hash>/``) holding one file per pip-installed runtime and a copy of
every system vendor file (so system drivers, a GPU's included, stay visible), and points
``OCL_ICD_VENDORS`` at it. The loader reads that variable once, when a process first asks for
platforms: device discovery calls this first, and child processes inherit the variable. A user
who set ``OCL_ICD_VENDORS`` keeps exactly what they chose, and
``FUSIONSPEC_ACCEL_PIP_RUNTIMES=off`` leaves the environment alone.
"""

from __future__ import annotations

import hashlib
import os
from importlib import metadata
from pathlib import Path

__all__ = ["PIP_RUNTIMES", "SWITCH_ENV", "pip_runtime_libraries", "register_pip_runtimes"]

#: Distribution name -> the OpenCL driver library it installs.
PIP_RUNTIMES: dict[str, str] = {"intel-opencl-rt": "libintelocl.so"}
SWITCH_ENV = "FUSIONSPEC_ACCEL_PIP_RUNTIMES"
VENDORS_ENV = "OCL_ICD_VENDORS"
SYSTEM_VENDORS = Path("/etc/OpenCL/vendors")


def pip_runtime_libraries() -> dict[str, Path]:
    """Vendor-file name -> driver library, for every pip-installed runtime whose library
    exists."""
    found: dict[str, Path] = {}
    for dist, library in PIP_RUNTIMES.items():
        try:
            files = metadata.distribution(dist).files or []
        except metadata.PackageNotFoundError:
            continue
        for entry in files:
            if entry.name == library:
                path = Path(str(entry.locate())).resolve()
                if path.is_file():
                    found[f"fusionspec-{dist}.icd"] = path
                break
    return found


def _cache_root() -> Path:
    base = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    return Path(base) / "fusionspec" / "icd"


def _vendor_files(libraries: dict[str, Path]) -> dict[str, str]:
    files = {name: f"{path}\n" for name, path in libraries.items()}
    if SYSTEM_VENDORS.is_dir():
        for icd in sorted(SYSTEM_VENDORS.glob("*.icd")):
            try:
                files.setdefault(icd.name, icd.read_text(encoding="utf-8"))
            except OSError:
                continue  # an unreadable vendor file is skipped, as the loader would
    return files


def register_pip_runtimes() -> Path | None:
    """Point the OpenCL loader at a vendor folder that adds the pip-installed runtimes (see
    the module docstring); returns the folder, or None when nothing was changed."""
    if os.environ.get(VENDORS_ENV) or \
            os.environ.get(SWITCH_ENV, "").strip().lower() in ("off", "0", "no"):
        return None
    libraries = pip_runtime_libraries()
    if not libraries:
        return None
    files = _vendor_files(libraries)
    digest = hashlib.sha256(repr(sorted(files.items())).encode()).hexdigest()[:16]
    folder = _cache_root() / digest
    try:
        folder.mkdir(parents=True, exist_ok=True)
        for name, text in files.items():
            target = folder / name
            if not target.is_file() or target.read_text(encoding="utf-8") != text:
                tmp = folder / f".{name}.{os.getpid()}.tmp"
                tmp.write_text(text, encoding="utf-8")
                os.replace(tmp, target)
    except OSError:
        return None  # no writable cache: the pip runtimes stay invisible, nothing breaks
    os.environ[VENDORS_ENV] = str(folder)
    return folder
