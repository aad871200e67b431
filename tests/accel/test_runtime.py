"""The program cache and build errors: a bad kernel raises KernelBuildError with its source and
the compiler's log; a second request is served from memory; the disk cache serves a new context
(and a new process) where the driver keeps no cache of its own, and holds nothing where it
does; a cached binary that does not load or lacks a kernel is discarded and rebuilt; a program
that comes back without its kernels is built afresh, and is an error if it still lacks them;
compiler chatter never reaches the terminal; work sizes within the device's limits and within a
kernel's own work-group limit (the backend regenerates a partition within it)."""

from __future__ import annotations

import logging
import math
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from testkit.accel import OnDevice, first_info, requires_device

from fusionspec.accel import build
from fusionspec.accel.backend import AccelBackend
from fusionspec.accel.errors import AccelError, KernelBuildError
from fusionspec.accel.families import BuildContext
from fusionspec.accel.families.gemm import choose_tiles
from fusionspec.accel.runtime import (
    CACHE_ENV,
    Runtime,
    base_options,
    cache_dir,
    driver_caches_builds,
    launch_1d,
    pick_work_group,
    runtime_for,
)
from fusionspec.reference.partitioner import partition
from fusionspec.spec.dtypes import DataType
from fusionspec.spec.graph import Graph, LogicalTensor, Op

pytestmark = requires_device

GOOD = "__kernel void twice(__global float* a) { a[get_global_id(0)] *= %s; }\n"


@pytest.fixture
def cache(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.setenv(CACHE_ENV, str(tmp_path / "opencl"))
    return tmp_path / "opencl"


def test_build_error_carries_source_and_log(cache: Path) -> None:
    source = "__kernel void broken(__global float* a) { a[0] = undefined_name_42; }\n"
    with pytest.raises(KernelBuildError) as caught:
        Runtime(first_info(), keep_binaries=True).program(source, kernels=["broken"])
    error = caught.value
    assert error.source == source, "the error carries the generated source"
    assert "undefined_name_42" in error.log, f"the build log names the problem: {error.log!r}"
    assert "undefined_name_42" in str(error), "the message includes the log"
    assert not list(cache.glob("*.bin")), "a failed build leaves nothing in the disk cache"


def test_memory_then_disk_cache(cache: Path) -> None:
    info = first_info()
    source = GOOD % "2.0f"
    first = Runtime(info, keep_binaries=True)
    program = first.program(source, kernels=["twice"])
    assert (first.stats.builds, first.stats.memory_hits) == (1, 0), \
        f"first request builds: {first.stats}"
    assert first.program(source) is program and first.stats.memory_hits == 1, \
        f"second request in the same context is a memory hit: {first.stats}"
    assert len(list(cache.glob("*.bin"))) == 1, "the binary is written to the disk cache"
    second = Runtime(info, keep_binaries=True)  # a new context: the disk cache serves it
    second.program(source, kernels=["twice"])
    assert (second.stats.builds, second.stats.disk_hits) == (0, 1), \
        f"a new context loads the binary from disk: {second.stats}"
    second.program(source, ("-DUNUSED=1",))
    assert second.stats.builds == 1, "other build options are another cache entry"


def test_disk_cache_survives_a_new_process(cache: Path) -> None:
    source = GOOD % "3.0f"
    Runtime(first_info(), keep_binaries=True).program(source, kernels=["twice"])
    script = ("from fusionspec.accel.devices import select_device\n"
              "from fusionspec.accel.runtime import Runtime\n"
              f"r = Runtime(select_device({first_info().id!r}), keep_binaries=True)\n"
              f"r.program({source!r}, kernels=['twice'])\n"
              "print(r.stats.disk_hits, r.stats.builds)\n")
    env = {**os.environ, CACHE_ENV: str(cache)}
    done = subprocess.run([sys.executable, "-c", script], env=env, capture_output=True,
                          text=True, timeout=120)
    assert done.returncode == 0, f"a cached program loads in a new process: {done.stderr[-1500:]}"
    assert done.stdout.split() == ["1", "0"], f"one disk hit, no build: {done.stdout!r}"


def test_binaries_are_kept_only_where_the_driver_keeps_none(cache: Path) -> None:
    info = first_info()
    runtime = Runtime(info)
    runtime.program(GOOD % "5.0f", kernels=["twice"])
    kept = list(cache.glob("*.bin"))
    if driver_caches_builds(info):
        assert not kept, f"{info.platform} caches its own builds: no binary of ours, {kept}"
    else:
        assert len(kept) == 1, f"{info.platform} keeps no builds: the binary is kept, {kept}"


@pytest.mark.parametrize("damage", ["garbage", "other program"])
def test_a_broken_cached_binary_is_discarded_and_rebuilt(cache: Path, damage: str) -> None:
    info = first_info()
    source = GOOD % "6.0f"
    runtime = Runtime(info, keep_binaries=True)
    runtime.program(source, kernels=["twice"])
    (path,) = cache.glob("*.bin")
    if damage == "garbage":
        path.write_bytes(b"\x7fELF not really a program")
    else:  # a valid binary of a program without the kernel asked for
        other = Runtime(info, keep_binaries=False).program(
            "__kernel void thrice(__global float* a) { a[0] *= 3.0f; }\n")
        path.write_bytes(bytes(other.binaries[0]))
    again = Runtime(info, keep_binaries=True)
    program = again.program(source, kernels=["twice"])
    assert (again.stats.discarded, again.stats.builds, again.stats.disk_hits) == (1, 1, 0), \
        f"the {damage} binary is discarded and the program rebuilt: {again.stats}"
    assert "twice" in build.kernel_names(program), "the rebuilt program has its kernel"
    assert Runtime(info, keep_binaries=True).program(source, kernels=["twice"]) is not None
    assert path.is_file(), "the rebuilt binary replaced the broken one"


class NamesSpy:
    """A real built program, passed through, that records every question asked of it."""

    def __init__(self, program: Any) -> None:
        self.program = program
        self.asked: list[Any] = []

    def get_info(self, what: Any) -> Any:
        self.asked.append(what)
        return self.program.get_info(what)

    def get_build_info(self, *args: Any) -> Any:
        return self.program.get_build_info(*args)


def _kernel_less(spies: list[NamesSpy]) -> list[NamesSpy]:
    import pyopencl as cl

    return [s for s in spies if s.program.get_info(cl.program_info.NUM_KERNELS) == 0]


def test_a_program_without_its_kernels_is_built_afresh(cache: Path,
                                                       monkeypatch: pytest.MonkeyPatch) -> None:
    """A driver cache entry left by a crashed build can hand back a program with no kernels:
    the runtime builds again from a source no cache has seen. The kernel-less program (built
    for real on the device) is never asked its kernels' names."""
    import pyopencl as cl

    real = build._build_once
    seen: list[str] = []
    spies: list[NamesSpy] = []

    def first_empty(context: Any, device: Any, source: str, options: Any, ident: str) -> Any:
        seen.append(source)
        text = build.NO_KERNELS_SOURCE if len(seen) == 1 else source
        spies.append(NamesSpy(real(context, device, text, options, ident)))
        return spies[-1]

    monkeypatch.setattr(build, "_build_once", first_empty)
    runtime = Runtime(first_info(), keep_binaries=False)
    program = runtime.program(GOOD % "7.0f", kernels=["twice"])
    assert "twice" in build.kernel_names(program), "the fresh build has the kernel"
    assert runtime.stats.fresh_rebuilds == 1, f"one fresh rebuild: {runtime.stats}"
    assert seen[1].endswith(build.FRESH_BUILD_MARK), "the fresh build's source differs"
    (empty,) = _kernel_less(spies)
    assert cl.program_info.KERNEL_NAMES not in empty.asked, \
        f"the program without kernels was asked their names: {empty.asked}"


def test_a_compiler_that_never_returns_kernels_is_an_error(cache: Path,
                                                           monkeypatch: pytest.MonkeyPatch
                                                           ) -> None:
    """The planted fault builds a real kernel-less program twice; the guard refuses it with
    the clean error and asks neither program its kernels' names."""
    import pyopencl as cl

    real = build._build_once
    spies: list[NamesSpy] = []

    def spied(*args: Any) -> Any:
        spies.append(NamesSpy(real(*args)))
        return spies[-1]

    monkeypatch.setenv(build.FAULT_ENV, "no-kernels")
    monkeypatch.setattr(build, "_build_once", spied)
    with pytest.raises(KernelBuildError, match="lacks kernel"):
        Runtime(first_info(), keep_binaries=False).program(GOOD % "8.0f", kernels=["twice"])
    assert len(_kernel_less(spies)) == 2 == len(spies), \
        f"the build and its fresh rebuild both came back without kernels: {len(spies)}"
    assert all(cl.program_info.KERNEL_NAMES not in s.asked for s in spies), \
        f"a program without kernels was asked their names: {[s.asked for s in spies]}"


def test_compiler_chatter_stays_off_the_terminal(cache: Path, capfd: pytest.CaptureFixture[str],
                                                 caplog: pytest.LogCaptureFixture) -> None:
    """What a compiler prints while building goes to the debug log, not to standard error."""
    with caplog.at_level(logging.DEBUG, logger="fusionspec.accel.build"), \
            build.captured_stderr() as said:
        os.write(2, b"1 warning generated.\n")
    assert said == ["1 warning generated.\n"], f"the captured text: {said}"
    Runtime(first_info(), keep_binaries=False).program(
        "__kernel void k(__global float* a) { int unused; a[0] = 1.0f; }\n", kernels=["k"])
    out, err = capfd.readouterr()
    assert "warning" not in err and "warning" not in out, \
        f"compiler chatter reached the terminal: {err[-500:]!r}"


def test_cache_key_and_directory(cache: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    runtime = runtime_for(first_info())
    key = runtime.cache_key("a", ())
    assert key != runtime.cache_key("b", ()) and key != runtime.cache_key("a", ("-D X",)), \
        "the key depends on the source and the options"
    assert cache_dir() == cache, f"{CACHE_ENV} sets the cache directory"
    monkeypatch.setenv(CACHE_ENV, "off")
    assert cache_dir() is None, f"{CACHE_ENV}=off disables the disk cache"
    monkeypatch.delenv(CACHE_ENV)
    monkeypatch.setenv("XDG_CACHE_HOME", "/somewhere")
    assert cache_dir() == Path("/somewhere/fusionspec/opencl"), "default under XDG_CACHE_HOME"


def test_work_sizes_respect_device_limits() -> None:
    info = first_info()
    for wanted in (1, 3, 64, 256, 10 ** 6):
        size = pick_work_group(info, wanted)
        assert 1 <= size <= info.max_work_group_size and size & (size - 1) == 0, \
            f"work group {size} for {wanted}: a power of two within the device limit"
    assert pick_work_group(info, 256, kernel_limit=32) <= 32, "a kernel's own limit caps it"
    for elements in (1, 1000, 10 ** 8):
        (total,), (local,) = launch_1d(info, elements)
        assert total % local == 0 and total >= local, \
            f"global {total} is a multiple of local {local} ({elements} elements)"
    if info.correctly_rounded_divide_sqrt:
        assert "-cl-fp32-correctly-rounded-divide-sqrt" in base_options(info), \
            "division and sqrt are correctly rounded where the device can"


def test_build_context_cap_bounds_every_chosen_work_group() -> None:
    ctx = BuildContext.for_device(first_info(), work_group_limit=8)
    assert ctx.max_work_group == min(8, ctx.device.max_work_group_size), \
        f"the cap bounds the work group: {ctx.max_work_group}"
    (_,), (local,) = ctx.launch_1d(10 ** 6)
    assert local <= 8, f"launch_1d chose a work group of {local} under a cap of 8"
    assert ctx.work_group(256) <= 8, f"work_group chose {ctx.work_group(256)} under a cap of 8"
    tiles = choose_tiles(ctx, 512, 512, 512)
    assert tiles.tx * tiles.ty <= 8, f"GEMM tiles {tiles} exceed a cap of 8 work items"


def test_kernel_work_group_size_is_queried_from_the_kernel() -> None:
    runtime = runtime_for(first_info())
    kernel = runtime.kernel(runtime.program(GOOD % "2.0f", kernels=["twice"]), "twice")
    size = runtime.kernel_work_group_size(kernel)
    assert 1 <= size <= runtime.info.max_work_group_size, \
        f"CL_KERNEL_WORK_GROUP_SIZE {size} is outside 1..{runtime.info.max_work_group_size}"


def _limit_graphs() -> list[tuple[str, Graph]]:
    f32 = DataType.f32
    t = [LogicalTensor(i, f32, s) for i, s in enumerate(
        [(40, 300), (40, 300), (33, 70), (70, 45), (33, 45), (45,), (33, 45), (33, 45),
         (1000,), (1000,), (1000,)])]
    return [
        ("SoftMax", Graph([Op(0, "SoftMax", inputs=(t[0],), outputs=(t[1],),
                              attrs={"axis": 1})])),
        ("MatMul+BiasAdd+GELU", Graph([
            Op(0, "MatMul", inputs=(t[2], t[3]), outputs=(t[4],)),
            Op(1, "BiasAdd", inputs=(t[4], t[5]), outputs=(t[6],)),
            Op(2, "GELU", inputs=(t[6],), outputs=(t[7],))])),
        ("Add", Graph([Op(0, "Add", inputs=(t[8], t[9]), outputs=(t[10],))])),
    ]


@pytest.mark.parametrize("index", [0, 1, 2], ids=[name for name, _ in _limit_graphs()])
def test_compile_regenerates_within_a_kernels_own_limit(index: int,
                                                        monkeypatch: pytest.MonkeyPatch
                                                        ) -> None:
    """A device whose kernels can run only 16 work items per group (as register-hungry
    kernels on a GPU can): every launch is regenerated within 16 and still computes right."""
    monkeypatch.setattr(Runtime, "kernel_work_group_size", lambda self, kernel: 16)
    name, graph = _limit_graphs()[index]
    on = OnDevice(graph)
    sizes = [launch.local_size for compiled in on.compiled for plan in compiled.plans
             for launch in plan.launches]
    assert sizes and all(s is None or math.prod(s) <= 16 for s in sizes), \
        f"{name}: local sizes {sizes} exceed the kernel's limit of 16"
    rng = np.random.default_rng(5)
    feeds: dict[int, Any] = {t.id: rng.standard_normal(t.shape or ()).astype(np.float32)
                             for t in on.graph.input_tensors}
    on.check(feeds, label=f"{name} within a work-group limit of 16")


def test_compile_fails_clearly_when_no_work_group_fits(monkeypatch: pytest.MonkeyPatch
                                                       ) -> None:
    monkeypatch.setattr(Runtime, "kernel_work_group_size", lambda self, kernel: 0)
    _, graph = _limit_graphs()[2]
    backend = AccelBackend()
    part, = partition(graph.finalize())
    with pytest.raises(AccelError, match="work-group limit"):
        backend.compile(part, backend.devices()[0])
