"""The tuning cache and the bounded autotuner: documents round-trip under the program cache's
directory keyed by the device identity, damaged or foreign documents are ignored, build
contexts hand the tuned choices to the families, the cache is off with the program cache,
nothing is tuned unless asked, and a tuning run on the test device keeps choices that compute
the reference result."""

from __future__ import annotations

import dataclasses
import json
from collections.abc import Iterator
from pathlib import Path

import pytest
from testkit.accel import first_info, requires_device

from fusionspec.accel import tune as tune_module
from fusionspec.accel.families import BuildContext
from fusionspec.accel.families.gemm import A_MODES
from fusionspec.accel.runtime import CACHE_ENV
from fusionspec.accel.tuning_cache import (
    TUNING_VERSION,
    forget_tuning,
    load_tuning,
    save_tuning,
    tuning_key,
    tuning_path,
)

pytestmark = [requires_device]


@pytest.fixture(autouse=True)
def _cache(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Path]:
    """Each test gets its own cache directory and a process that has read nothing yet."""
    monkeypatch.setenv(CACHE_ENV, str(tmp_path))
    forget_tuning()
    yield tmp_path
    forget_tuning()


def test_choices_round_trip_keyed_by_device(_cache: Path) -> None:
    info = first_info()
    assert load_tuning(info) == {}, "an untuned device has no choices"
    path = save_tuning(info, {"gemm": {"block": [4, 3]}}, {"note": "test"})
    assert path == tuning_path(info) and path is not None and path.parent == _cache / "tuning"
    assert path.name == f"{tuning_key(info)}.json", "named by the device identity"
    forget_tuning()
    assert load_tuning(info) == {"gemm": {"block": [4, 3]}}, "read back from disk"
    other = dataclasses.replace(info, driver=info.driver + "-next")
    assert tuning_key(other) != tuning_key(info) and load_tuning(other) == {}, \
        "another driver version is another device: untuned"
    assert BuildContext.for_device(info).tuned("gemm") == {"block": [4, 3]}, \
        "build contexts carry the device's choices"
    assert BuildContext.for_device(info).tuned("softmax") == {}, "per family"


def test_damaged_or_foreign_documents_are_ignored(_cache: Path) -> None:
    info = first_info()
    path = tuning_path(info)
    assert path is not None
    path.parent.mkdir(parents=True)
    for text in ("{not json", json.dumps({"version": "0", "choices": {"gemm": {"rm": 2}}}),
                 json.dumps({"version": TUNING_VERSION, "choices": ["gemm"]})):
        path.write_text(text)
        forget_tuning()
        assert load_tuning(info) == {}, f"ignored: {text}"


def test_no_cache_when_the_program_cache_is_off(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(CACHE_ENV, "off")
    info = first_info()
    assert tuning_path(info) is None and load_tuning(info) == {}
    assert save_tuning(info, {"gemm": {"rm": 4, "nv": 2}}, {}) is None, "nowhere to write"
    assert load_tuning(info) == {"gemm": {"rm": 4, "nv": 2}}, "still used by this process"


def test_made_up_devices_are_never_tuned() -> None:
    made_up = dataclasses.replace(first_info(), handle=None)
    save_tuning(first_info(), {"gemm": {"rm": 4, "nv": 2}}, {})
    assert load_tuning(made_up) == {}, "code generation for a description alone is untuned"


def test_nothing_is_tuned_unless_asked(monkeypatch: pytest.MonkeyPatch) -> None:
    calls: list[object] = []
    monkeypatch.setattr(tune_module, "tune", lambda info, **kw: calls.append(info))
    monkeypatch.delenv(tune_module.TUNE_ENV, raising=False)
    tune_module._DONE.clear()
    tune_module.tune_if_asked(first_info())
    assert calls == [], "no FUSIONSPEC_ACCEL_TUNE: no tuning"
    monkeypatch.setenv(tune_module.TUNE_ENV, "1")
    tune_module.tune_if_asked(first_info())
    tune_module.tune_if_asked(first_info())
    assert len(calls) == 1, "asked: tuned once per device and process"
    tune_module._DONE.clear()
    save_tuning(first_info(), {"gemm": {"rm": 6, "nv": 2}}, {})
    tune_module.tune_if_asked(first_info())
    assert len(calls) == 1, "a device with a tuning document is not tuned again"


def test_tuning_run_keeps_working_choices(_cache: Path) -> None:
    """A real (short) tuning run: every candidate is checked against the reference before it is
    timed, and the kept choices are a block and an A mode of the candidate set."""
    info = first_info()
    result = tune_module.tune(info, repeats=1)
    if info.local_mem_dedicated:
        assert result["choices"] == {}, "the tiled form has nothing to tune"
        return
    gemm = result["choices"]["gemm"]
    blocks = [list(b) for b in tune_module.GEMM_BLOCKS]
    assert gemm["block"] in blocks and gemm["window_block"] in blocks and \
        gemm["a_mode"] in A_MODES, f"kept choice {gemm}"
    reports = [r for rows in result["measured"].values() for r in rows]
    assert all("median_ms" in r for r in reports), f"every candidate built and matched: {reports}"
    forget_tuning()
    assert load_tuning(info)["gemm"] == gemm, "saved in the cache"
