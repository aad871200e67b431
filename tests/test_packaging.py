"""Packaging: the subpackages are listed once (pyproject.toml's package-dir table) and every
package below them is derived from the folders (setup.py), so a regular (non-editable) install
ships them all; each ships its py.typed marker."""

from __future__ import annotations

import json
import subprocess
import sys
import tomllib
import zipfile
from pathlib import Path

import pytest

from fusionspec.spec.release import VERSION

ROOT = Path(__file__).resolve().parent.parent


def _mapping() -> dict[str, str]:
    config = tomllib.loads((ROOT / "pyproject.toml").read_text())
    mapping: dict[str, str] = config["tool"]["setuptools"]["package-dir"]
    return mapping


def test_every_folder_of_modules_is_a_package() -> None:
    """A folder of modules without __init__.py would be left out of the derived list."""
    missing = sorted(str(py.parent.relative_to(ROOT)) for folder in _mapping().values()
                     for py in (ROOT / folder).rglob("*.py")
                     if not (py.parent / "__init__.py").exists())
    assert not missing, f"folders of modules without __init__.py (not shipped): {missing}"


def test_every_top_package_ships_py_typed() -> None:
    config = tomllib.loads((ROOT / "pyproject.toml").read_text())
    data = config["tool"]["setuptools"]["package-data"]["*"]
    assert "py.typed" in data, f"py.typed is not package data: {data}"
    missing = [folder for folder in _mapping().values()
               if not (ROOT / folder / "py.typed").exists()]
    assert not missing, f"subpackages without a py.typed marker: {missing}"


def test_the_wheel_holds_every_package(tmp_path: Path) -> None:
    built = subprocess.run([sys.executable, "-m", "pip", "wheel", "--no-deps",
                            "--no-build-isolation", "-w", str(tmp_path), str(ROOT)],
                           capture_output=True, text=True, timeout=600, check=False)
    assert built.returncode == 0, f"the wheel builds: {built.stderr[-1500:]}"
    (wheel,) = tmp_path.glob("fusionspec-*.whl")
    names = set(zipfile.ZipFile(wheel).namelist())
    for name, folder in _mapping().items():
        for init in (ROOT / folder).rglob("__init__.py"):
            rel = init.relative_to(ROOT / folder).as_posix()
            shipped = f"{name.replace('.', '/')}/{rel}"
            assert shipped in names, f"{shipped} is missing from the wheel"


def test_the_license_is_the_one_pyproject_names() -> None:
    config = tomllib.loads((ROOT / "pyproject.toml").read_text())
    text = (ROOT / "LICENSE").read_text()
    assert config["project"]["license"] == "Apache-2.0", "pyproject names the license"
    assert "Apache License" in text and "Version 2.0, January 2004" in text, \
        "LICENSE holds the Apache-2.0 text"
    assert config["project"]["license-files"] == ["LICENSE"], "the wheel ships LICENSE"


@pytest.mark.slow
def test_sdist_and_wheel_build_check_install_and_run(tmp_path: Path) -> None:
    """`python -m build` gives an sdist and a wheel that `twine check` accepts; the wheel
    installs into a fresh virtual environment, where `fusionspec conform` grades the
    reference; the wheel's version is fusionspec.spec.release.VERSION."""
    dist = tmp_path / "dist"
    built = subprocess.run([sys.executable, "-m", "build", "--outdir", str(dist), str(ROOT)],
                           capture_output=True, text=True, timeout=1200, check=False)
    assert built.returncode == 0, f"python -m build: {built.stderr[-2000:]}"
    (sdist,) = dist.glob("fusionspec-*.tar.gz")
    (wheel,) = dist.glob("fusionspec-*.whl")
    checked = subprocess.run([sys.executable, "-m", "twine", "check", "--strict", str(sdist),
                              str(wheel)], capture_output=True, text=True, timeout=300,
                             check=False)
    assert checked.returncode == 0, f"twine check: {checked.stdout}{checked.stderr}"
    venv = tmp_path / "venv"
    subprocess.run([sys.executable, "-m", "venv", str(venv)], check=True, timeout=300)
    pip = [str(venv / "bin" / "python"), "-m", "pip", "install", "-q"]
    installed = subprocess.run([*pip, f"{wheel}[conformance]"], capture_output=True,
                               text=True, timeout=1800, check=False)
    assert installed.returncode == 0, f"pip install the wheel: {installed.stderr[-2000:]}"
    work = tmp_path / "work"
    work.mkdir()
    graded = subprocess.run([str(venv / "bin" / "fusionspec"), "conform", "--backend",
                             "reference", "--jobs", "2", "--json"], cwd=work,
                            capture_output=True, text=True, timeout=1200, check=False)
    assert graded.returncode == 0, f"conform in the fresh venv: {graded.stderr[-2000:]}"
    said = json.loads(graded.stdout)
    assert said["verdict"] == "PASS" and said["totals"]["pass"] > 2000, said
    shown = subprocess.run([str(venv / "bin" / "fusionspec"), "--version"], cwd=work,
                           capture_output=True, text=True, timeout=300, check=False)
    assert shown.returncode == 0 and wheel.name.split("-")[1] in shown.stdout, shown.stdout
    assert wheel.name.split("-")[1] == VERSION, f"the wheel is version {VERSION}: {wheel.name}"
