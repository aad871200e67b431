"""Packaging: the subpackages are listed once (pyproject.toml's package-dir table) and every
package below them is derived from the folders (setup.py), so a regular (non-editable) install
ships them all; each ships its py.typed marker."""

from __future__ import annotations

import subprocess
import sys
import tomllib
import zipfile
from pathlib import Path

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
