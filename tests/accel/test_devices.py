"""Device discovery and selection: stable ids, PoCL first, selection by argument and by
FUSIONSPEC_ACCEL_DEVICE, NoDeviceError listing the devices for an unknown id, and a machine
without OpenCL (no ICD, no pyopencl) giving no devices and typed errors, never a traceback."""

from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest
from testkit.accel import requires_device

from fusionspec.accel.backend import AccelBackend
from fusionspec.accel.devices import ENV_VAR, discover, order_with_selected, select_device
from fusionspec.accel.errors import NoDeviceError
from fusionspec.accel.probe import health
from fusionspec.backend import Backend, Device


@requires_device
def test_ids_are_unique_and_pocl_comes_first() -> None:
    infos = discover()
    ids = [d.id for d in infos]
    assert len(set(ids)) == len(ids), f"device ids must be unique: {ids}"
    pocl = [i for i in ids if i.startswith("pocl-")]
    if pocl:
        assert ids[0] == pocl[0], f"PoCL's device is the default, first in {ids}"
    for info in infos:
        assert info.max_work_group_size >= 1 and info.local_mem_size > 0, \
            f"{info.id} reports work-group and local-memory limits"
        assert info.fp16 == ("cl_khr_fp16" in info.extensions), \
            f"{info.id}: fp16 follows cl_khr_fp16"


@requires_device
def test_device_view_for_the_suite() -> None:
    # The first device that passes its probe: on a CPU its LLVM does not know, PoCL fails it.
    info = next(i for i in discover() if health(i).ok)
    device = info.as_device()
    assert isinstance(device, Device) and device.id == info.id, "DeviceInfo -> suite Device"
    assert device.kind in ("cpu", "gpu"), f"kind {device.kind} is cpu or gpu"
    assert device.driver == info.driver and device.runtime.startswith("OpenCL"), \
        f"driver {device.driver!r} and OpenCL version {device.runtime!r} are recorded"
    for key in ("max_work_group_size", "local_mem_size", "fp16", "extensions"):
        assert key in device.extras, f"extras record {key}"
    backend = AccelBackend()
    assert isinstance(backend, Backend), "AccelBackend implements the Backend protocol"
    assert backend.devices()[0] == device, \
        "the backend's first device is the default one (the first that passes its probe)"


@requires_device
def test_selection_by_argument_and_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    last = discover()[-1]
    monkeypatch.delenv(ENV_VAR, raising=False)
    assert select_device().id == discover()[0].id, "no selection: the first device"
    assert select_device(last.id).id == last.id, "selection by argument"
    monkeypatch.setenv(ENV_VAR, last.id)
    assert select_device().id == last.id, f"selection by {ENV_VAR}"
    assert order_with_selected()[0].id == last.id, "the selected device is listed first"
    assert AccelBackend().devices()[0].id == last.id, \
        "the backend lists the selected device first, so the suite picks it"


@requires_device
def test_unknown_device_lists_what_exists(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(ENV_VAR, "no-such-gpu7")
    with pytest.raises(NoDeviceError) as caught:
        select_device()
    message = str(caught.value)
    assert "no-such-gpu7" in message and ENV_VAR in message, \
        f"the error names the unknown id and where it came from: {message}"
    for info in discover():
        assert info.id in message, f"the error lists the existing device {info.id}: {message}"
    assert caught.value.available == tuple(d.id for d in discover()), "available ids attached"
    with pytest.raises(NoDeviceError, match="nope"):
        AccelBackend(device="nope").devices()


_PROBE = """
import json
from fusionspec.accel.backend import AccelBackend
from fusionspec.accel.devices import select_device
from fusionspec.accel.errors import NoDeviceError
report = {"devices": list(AccelBackend().devices())}
try:
    select_device()
except NoDeviceError as exc:
    report["error"] = str(exc)
print(json.dumps(report))
"""


def _probe(env: dict[str, str], prelude: str = "") -> dict[str, object]:
    result = subprocess.run([sys.executable, "-c", prelude + _PROBE], env={**os.environ, **env},
                            capture_output=True, text=True, timeout=120)
    assert result.returncode == 0, f"the probe must not crash: {result.stderr[-2000:]}"
    found: dict[str, object] = json.loads(result.stdout.strip().splitlines()[-1])
    return found


def test_no_icd_means_no_devices_and_a_typed_error() -> None:
    found = _probe({"OCL_ICD_VENDORS": "/nonexistent-icd-dir"})
    assert found["devices"] == [], f"no OpenCL platform: no devices, got {found['devices']}"
    error = str(found.get("error", ""))
    assert "no OpenCL" in error and "fusionspec[accel]" in error, \
        f"NoDeviceError says what is missing and what to install: {error!r}"


def test_no_pyopencl_means_no_devices_and_a_typed_error() -> None:
    found = _probe({}, prelude="import sys\nsys.modules['pyopencl'] = None\n")
    assert found["devices"] == [], "without pyopencl the backend has no devices"
    error = str(found.get("error", ""))
    assert "pyopencl is not installed" in error, f"the error names pyopencl: {error!r}"
