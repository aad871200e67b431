"""The build guard never asks a driver what it may not survive: a program without kernels is
asked how many it has (CL_PROGRAM_NUM_KERNELS), never their names (CL_PROGRAM_KERNEL_NAMES,
which kills the process on NVIDIA's driver). Fake programs record what they are asked, so these
tests need no OpenCL device."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import pyopencl as cl
import pytest

from fusionspec.accel import build
from fusionspec.accel.errors import KernelBuildError


class FakeProgram:
    """A built program as far as the guard can tell: `names` are its kernels; every
    `get_info` question is recorded in `asked`."""

    def __init__(self, names: Sequence[str], *, count_fails: bool = False) -> None:
        self.names = tuple(names)
        self.count_fails = count_fails
        self.asked: list[Any] = []

    def get_info(self, what: Any) -> Any:
        self.asked.append(what)
        if what == cl.program_info.NUM_KERNELS:
            if self.count_fails:
                raise cl.LogicError("clGetProgramInfo", cl.status_code.INVALID_PROGRAM_EXECUTABLE,
                                    "no executable")
            return len(self.names)
        if what == cl.program_info.KERNEL_NAMES:
            if not self.names:
                pytest.fail("CL_PROGRAM_KERNEL_NAMES was asked of a program without kernels")
            return ";".join(self.names)
        raise AssertionError(f"unexpected program query {what!r}")

    def get_build_info(self, device: Any, what: Any) -> str:
        return "fake build log"


def test_the_names_of_a_program_without_kernels_are_never_asked() -> None:
    empty = FakeProgram(())
    assert build.kernel_names(empty) == frozenset(), "a program without kernels has no names"
    assert cl.program_info.KERNEL_NAMES not in empty.asked, \
        f"only the kernel count may be asked of a program without kernels: {empty.asked}"
    assert empty.asked == [cl.program_info.NUM_KERNELS], \
        f"the count is asked first, and alone: {empty.asked}"


def test_a_program_that_cannot_count_its_kernels_has_none() -> None:
    broken = FakeProgram(("k",), count_fails=True)
    assert build.kernel_count(broken) == 0, "a count the driver refuses reads as no kernels"
    assert build.kernel_names(broken) == frozenset(), "and no names are asked for"
    assert cl.program_info.KERNEL_NAMES not in broken.asked, f"asked: {broken.asked}"


def test_a_program_with_kernels_gives_their_names() -> None:
    full = FakeProgram(("a", "b"))
    assert build.kernel_names(full) == {"a", "b"}, "the names of a program with kernels"
    assert build.missing_kernels(full, ["a", "c"]) == ["c"], "what it lacks is named"
    assert full.asked[0] == cl.program_info.NUM_KERNELS, \
        f"the count is asked before the names: {full.asked}"


def test_the_guard_returns_its_error_without_asking_names(monkeypatch: pytest.MonkeyPatch
                                                          ) -> None:
    """A compiler that keeps returning programs without kernels: the build and its fresh
    rebuild are both refused with the clean error, and neither is asked its kernels' names."""
    built: list[FakeProgram] = []

    def empty_build(context: Any, device: Any, source: str, options: Sequence[str],
                    device_id: str) -> FakeProgram:
        built.append(FakeProgram(()))
        return built[-1]

    monkeypatch.setattr(build, "_build_once", empty_build)
    with pytest.raises(KernelBuildError, match="lacks kernel") as caught:
        build.compile_source(None, None, "__kernel void k() {}", (), ["k"], "fake-gpu")
    assert len(built) == 2, f"one build and one fresh rebuild, got {len(built)}"
    assert all(cl.program_info.KERNEL_NAMES not in p.asked for p in built), \
        f"no kernel-less program was asked its names: {[p.asked for p in built]}"
    assert caught.value.device == "fake-gpu", "the error names the device"


def test_a_fresh_rebuild_with_kernels_is_accepted(monkeypatch: pytest.MonkeyPatch) -> None:
    built = [FakeProgram(()), FakeProgram(("k",))]
    monkeypatch.setattr(build, "_build_once", lambda *args: built.pop(0))
    program, fresh = build.compile_source(None, None, "src", (), ["k"], "fake-gpu")
    assert fresh, "the second, fresh build is the one returned"
    assert isinstance(program, FakeProgram) and program.names == ("k",), \
        "the program with the kernel is returned"


def test_the_planted_fault_source_declares_no_kernel() -> None:
    assert "__kernel" not in build.NO_KERNELS_SOURCE and "kernel " not in \
        build.NO_KERNELS_SOURCE, f"the no-kernels fault source: {build.NO_KERNELS_SOURCE!r}"


def test_a_build_errors_one_line_names_the_compilers_first_error() -> None:
    log = ("warning: something harmless\n<source>:12:5: error: use of undeclared identifier 'x'\n"
           "<source>:14:1: error: expected ';'\n")
    err = KernelBuildError("the OpenCL compiler rejected a generated kernel", source="",
                           log=log, device="pocl-cpu")
    assert "error: use of undeclared identifier 'x'" in err.summary, \
        f"the one-line summary names the compiler's first error: {err.summary}"
    assert "expected ';'" not in err.summary and "intel-opencl" not in err.summary, \
        f"only the first error, and no advice for a cause in the kernel: {err.summary}"
    bare = KernelBuildError("the OpenCL compiler rejected a generated kernel", source="", log="",
                            device="pocl-cpu")
    assert bare.summary == "the OpenCL compiler rejected a generated kernel for pocl-cpu", \
        f"a build without a log says what failed and where, nothing more: {bare.summary}"


def test_a_runtime_that_does_not_know_the_cpu_is_named_with_what_to_do() -> None:
    err = KernelBuildError("the OpenCL compiler rejected a generated kernel", source="",
                           log="error: unknown target CPU 'generic'\n", device="pocl-cpu")
    assert "unknown target CPU 'generic'" in err.summary, \
        f"the compiler's words are kept: {err.summary}"
    assert "does not know this CPU" in err.summary and "intel-opencl" in err.summary, \
        f"a CPU the runtime's LLVM does not know is named as the cause, with the way out: " \
        f"{err.summary}"
