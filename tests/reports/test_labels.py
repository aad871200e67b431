"""A run has one name wherever the reports name it: its backend on its device, told apart from
another run of the same backend and device by its driver, or by a number."""

from __future__ import annotations

from fusionspec.reports.labels import run_folder, run_name, run_names, run_suffixes


def test_a_run_is_its_backend_on_its_device() -> None:
    assert run_name("reference", "numpy") == "reference on numpy", "backend on device"


def test_runs_of_one_backend_and_device_are_told_apart_by_driver() -> None:
    keys = [("onednn", "cpu0"), ("onednn", "cpu0"), ("reference", "numpy")]
    assert run_names(keys, ["3.2", "3.13", ""]) == [
        "onednn on cpu0 (3.2)", "onednn on cpu0 (3.13)", "reference on numpy"], \
        "two versions of one library carry their driver; a run alone carries nothing"


def test_without_a_driver_of_their_own_they_are_numbered() -> None:
    keys = [("toy", "numpy")] * 3
    assert run_suffixes(keys, ["1.0", "1.0", "2.0"]) == ["", " (2)", " (3)"], \
        "a driver two runs share cannot tell them apart: they are numbered"
    assert run_suffixes(keys[:2], ["", ""]) == ["", " (2)"], \
        "runs without drivers are numbered"


def test_a_run_as_a_folder_name_is_one_safe_component() -> None:
    assert run_folder("mybackend", "1.2.0", "cpu") == "mybackend-1.2.0-cpu", \
        "backend, driver and device joined"
    assert "/" not in run_folder("../evil", "", "x/y"), "no path separator survives"
