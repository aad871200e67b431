"""Packaging: every Python package folder of the repository is listed in pyproject.toml, so a
regular (non-editable) install ships it (an unlisted subpackage is silently left out)."""

from __future__ import annotations

import tomllib
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
TOP = {"spec": "fusionspec.spec", "reference": "fusionspec.reference",
       "accel": "fusionspec.accel", "conformance": "fusionspec.conformance",
       "reports": "fusionspec.reports"}


def test_every_package_folder_is_listed() -> None:
    config = tomllib.loads((ROOT / "pyproject.toml").read_text())
    listed = set(config["tool"]["setuptools"]["packages"])
    found: set[str] = set()
    for folder, name in TOP.items():
        for init in (ROOT / folder).rglob("__init__.py"):
            rel = init.parent.relative_to(ROOT / folder).parts
            found.add(".".join((name, *rel)))
    missing = sorted(found - listed)
    assert not missing, f"packages missing from pyproject.toml [tool.setuptools] packages: " \
                        f"{missing}"


def test_every_top_package_ships_py_typed() -> None:
    config = tomllib.loads((ROOT / "pyproject.toml").read_text())
    data = config["tool"]["setuptools"]["package-data"]["*"]
    assert "py.typed" in data, f"py.typed is not package data: {data}"
    missing = [folder for folder in TOP if not (ROOT / folder / "py.typed").exists()]
    assert not missing, f"subpackages without a py.typed marker: {missing}"


def test_test_module_names_are_unique() -> None:
    # Test folders are not packages: pytest imports each file by its base name, so two files
    # with one name (tests/reference/test_pool.py, tests/accel/test_pool.py) collide.
    names: dict[str, Path] = {}
    clashes = []
    for path in sorted((ROOT / "tests").rglob("*.py")):
        if path.name == "conftest.py":
            continue
        if path.name in names:
            clashes.append(f"{names[path.name].relative_to(ROOT)} and {path.relative_to(ROOT)}")
        names.setdefault(path.name, path)
    assert not clashes, f"test modules sharing a name: {clashes}"
