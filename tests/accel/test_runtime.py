"""The program cache and build errors: a bad kernel raises KernelBuildError with its source and
the compiler's log; a second request is served from memory; the disk cache serves a new context
(and a new process); the assert-no-compile switch; work sizes within the device's limits."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest
from _accel_util import requires_device

from fusionspec.accel.devices import select_device
from fusionspec.accel.errors import AccelError, KernelBuildError
from fusionspec.accel.runtime import (
    CACHE_ENV,
    NO_COMPILE_ENV,
    Runtime,
    base_options,
    cache_dir,
    launch_1d,
    pick_work_group,
    runtime_for,
)

pytestmark = requires_device

GOOD = "__kernel void twice(__global float* a) { a[get_global_id(0)] *= %s; }\n"


@pytest.fixture
def cache(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.setenv(CACHE_ENV, str(tmp_path / "opencl"))
    monkeypatch.delenv(NO_COMPILE_ENV, raising=False)
    return tmp_path / "opencl"


def test_build_error_carries_source_and_log(cache: Path) -> None:
    source = "__kernel void broken(__global float* a) { a[0] = undefined_name_42; }\n"
    with pytest.raises(KernelBuildError) as caught:
        Runtime(select_device()).program(source)
    error = caught.value
    assert error.source == source, "the error carries the generated source"
    assert "undefined_name_42" in error.log, f"the build log names the problem: {error.log!r}"
    assert "undefined_name_42" in str(error), "the message includes the log"
    assert not list(cache.glob("*.bin")), "a failed build leaves nothing in the disk cache"


def test_memory_then_disk_cache(cache: Path) -> None:
    info = select_device()
    source = GOOD % "2.0f"
    first = Runtime(info)
    program = first.program(source)
    assert (first.stats.builds, first.stats.memory_hits) == (1, 0), \
        f"first request builds: {first.stats}"
    assert first.program(source) is program and first.stats.memory_hits == 1, \
        f"second request in the same context is a memory hit: {first.stats}"
    assert len(list(cache.glob("*.bin"))) == 1, "the binary is written to the disk cache"
    second = Runtime(info)  # a new context: memory is empty, the disk cache serves it
    second.program(source)
    assert (second.stats.builds, second.stats.disk_hits) == (0, 1), \
        f"a new context loads the binary from disk: {second.stats}"
    second.program(source, ("-DUNUSED=1",))
    assert second.stats.builds == 1, "other build options are another cache entry"


def test_disk_cache_survives_a_new_process_and_no_compile_mode(cache: Path) -> None:
    source = GOOD % "3.0f"
    Runtime(select_device()).program(source)
    script = ("from fusionspec.accel.devices import select_device\n"
              "from fusionspec.accel.runtime import Runtime\n"
              f"r = Runtime(select_device()); r.program({source!r})\n"
              "print(r.stats.disk_hits, r.stats.builds)\n")
    env = {**os.environ, CACHE_ENV: str(cache), NO_COMPILE_ENV: "1"}
    done = subprocess.run([sys.executable, "-c", script], env=env, capture_output=True,
                          text=True, timeout=120)
    assert done.returncode == 0, f"a cached program needs no compiler: {done.stderr[-1500:]}"
    assert done.stdout.split() == ["1", "0"], f"one disk hit, no build: {done.stdout!r}"


def test_no_compile_mode_refuses_a_build(cache: Path, monkeypatch: pytest.MonkeyPatch
                                         ) -> None:
    monkeypatch.setenv(NO_COMPILE_ENV, "1")
    with pytest.raises(AccelError, match=NO_COMPILE_ENV):
        Runtime(select_device()).program(GOOD % "4.0f")


def test_cache_key_and_directory(cache: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    runtime = runtime_for(select_device())
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
    info = select_device()
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
