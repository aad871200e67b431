"""Building one OpenCL program without trusting the compiler: quiet, checked, rebuilt when broken.

`compile_source` and `load_binary` are the only places the backend hands code to an OpenCL
compiler. Around every build:

- **Quiet.** Compilers print their diagnostics straight to the process's standard error
  (PoCL's clang says "1 warning generated." for most generated kernels), which would flood a
  user's terminal on a cold run. The file descriptor is redirected while the build runs; what
  the compiler said goes to the ``fusionspec.accel.build`` logger at debug level, and into the
  `KernelBuildError` when the build fails, so it is shown exactly when it matters.
- **Checked.** A build that "succeeds" is not trusted: the program must contain every kernel
  the caller will create from it (`missing_kernels`). A driver whose own source cache holds an
  entry left by a crashed build has been seen to return programs with no kernels at all.
  A program is asked how many kernels it has (CL_PROGRAM_NUM_KERNELS) before their names:
  asking the names of a program without kernels kills the process on NVIDIA's driver.
- **Rebuilt.** `compile_source` answers such a program by building again from a source that
  differs only by a trailing comment (`FRESH_BUILD_MARK`), which no source-keyed cache (the
  driver's, pyopencl's) can have seen broken; only if that too lacks kernels is it an error.

Programs are built through pyopencl's uncached path: fusionspec keeps its own binary cache
(`fusionspec.accel.runtime`) and checks what it loads, and a driver that caches source builds
itself (PoCL, NVIDIA) needs no third copy.

Fault injection, for the tests that show a broken compiler cannot take a run down: the
environment variable ``FUSIONSPEC_ACCEL_FAULT`` set to ``abort-build`` aborts the process where a
compiler would crash inside LLVM, and ``no-kernels`` makes every build return a program without
kernels. Nothing else reads it.
"""

from __future__ import annotations

import contextlib
import logging
import os
import sys
import tempfile
import warnings
from collections.abc import Iterator, Sequence
from typing import Any

from .errors import KernelBuildError

#: What every program is built headed by: floating-point contraction off, so ``a * b + c``
#: rounds the product as the reference does, whatever the driver's compiler would fuse
#: (`fusionspec.accel.runtime` says why). Errors carry the generated source without it.
PRELUDE = "#pragma OPENCL FP_CONTRACT OFF\n"

__all__ = ["FAULT_ENV", "FRESH_BUILD_MARK", "NO_KERNELS_SOURCE", "PRELUDE", "compile_source",
           "load_binary", "kernel_count", "kernel_names", "missing_kernels", "captured_stderr"]

FAULT_ENV = "FUSIONSPEC_ACCEL_FAULT"
#: Appended to a source whose build came back without its kernels (see the module docstring).
FRESH_BUILD_MARK = "\n/* fusionspec: fresh build after a program without kernels */\n"

#: What the ``no-kernels`` fault builds: a valid translation unit with a helper function and no
#: kernel (some compilers reject a source with no declarations at all, which would plant a
#: build error instead of a program without kernels).
NO_KERNELS_SOURCE = ("/* fault injection: no kernels */\n"
                     "float fs_no_kernel_here(float x) { return x + 1.0f; }\n")

_LOG = logging.getLogger("fusionspec.accel.build")


@contextlib.contextmanager
def captured_stderr() -> Iterator[list[str]]:
    """Redirect file descriptor 2 (where native compilers write) into a temporary file for the
    duration; the yielded list receives the captured text on exit."""
    captured: list[str] = []
    sys.stderr.flush()
    saved = os.dup(2)
    try:
        with tempfile.TemporaryFile() as sink:
            os.dup2(sink.fileno(), 2)
            try:
                yield captured
            finally:
                os.dup2(saved, 2)
                sink.seek(0)
                captured.append(sink.read().decode(errors="replace"))
    finally:
        os.close(saved)


def kernel_count(program: Any) -> int:
    """How many kernels a built program contains (0 when the driver cannot say)."""
    import pyopencl as cl

    try:
        return int(program.get_info(cl.program_info.NUM_KERNELS))
    except (cl.Error, TypeError, ValueError):
        return 0


def kernel_names(program: Any) -> frozenset[str]:
    """The kernels a built program contains.

    The names are asked only of a program that says it has kernels: NVIDIA's driver kills the
    process when CL_PROGRAM_KERNEL_NAMES is asked of a program without any, which is exactly
    the program this module exists to catch."""
    import pyopencl as cl

    if kernel_count(program) <= 0:
        return frozenset()
    try:
        names = str(program.get_info(cl.program_info.KERNEL_NAMES))
    except cl.Error:
        return frozenset()
    return frozenset(n for n in names.split(";") if n)


def missing_kernels(program: Any, wanted: Sequence[str]) -> list[str]:
    """The names of `wanted` that `program` lacks (empty when it has them all)."""
    have = kernel_names(program)
    return [name for name in wanted if name not in have]


def _build_log(program: Any, device: Any, fallback: str) -> str:
    import pyopencl as cl

    try:
        return str(program.get_build_info(device, cl.program_build_info.LOG)) or fallback
    except cl.Error:
        return fallback


def _fault() -> str:
    return os.environ.get(FAULT_ENV, "").strip()


def _build_once(context: Any, device: Any, source: str, options: Sequence[str],
                device_id: str) -> Any:
    import pyopencl as cl

    if _fault() == "abort-build":
        os.abort()  # what an LLVM "fatal error" does to the process
    text = NO_KERNELS_SOURCE if _fault() == "no-kernels" else PRELUDE + source
    program = cl.Program(cl._cl._Program(context, text))  # uncached: see the module docstring
    with captured_stderr() as chatter:
        try:
            program.build(options=list(options), devices=[device])
        except cl.Error as exc:
            failed: Exception | None = exc
        else:
            failed = None
    said = "".join(chatter).strip()
    if failed is not None:
        log = _build_log(program, device, str(failed))
        if said and said not in log:
            log = f"{log}\n{said}"
        raise KernelBuildError("the OpenCL compiler rejected a generated kernel",
                               source=source, log=log, options=options,
                               device=device_id) from None
    if said:
        _LOG.debug("compiler output for %s:\n%s", device_id, said)
    return program


def compile_source(context: Any, device: Any, source: str, options: Sequence[str],
                   kernels: Sequence[str], device_id: str) -> tuple[Any, bool]:
    """Build `source` and check that it has `kernels`; returns the program and whether it had
    to be rebuilt fresh (see the module docstring). Raises `KernelBuildError`."""
    program = _build_once(context, device, source, options, device_id)
    if not missing_kernels(program, kernels):
        return program, False
    program = _build_once(context, device, source + FRESH_BUILD_MARK, options, device_id)
    missing = missing_kernels(program, kernels)
    if missing:
        raise KernelBuildError(
            f"the OpenCL compiler reported success but the program lacks kernel(s) "
            f"{', '.join(missing)}, also when built afresh (a broken compiler)", source=source,
            log=_build_log(program, device, ""), options=options, device=device_id)
    return program, True


def load_binary(context: Any, device: Any, binary: bytes, options: Sequence[str],
                kernels: Sequence[str]) -> Any | None:
    """A program from a cached binary, or None when the binary does not load or lacks one of
    `kernels` (the caller then discards it and builds from source)."""
    import pyopencl as cl

    try:
        program = cl.Program(context, [device], [binary])
        with warnings.catch_warnings(), captured_stderr():
            warnings.simplefilter("ignore")
            program.build(options=list(options))
    except cl.Error:
        return None
    return None if missing_kernels(program, kernels) else program
