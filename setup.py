"""Derives the package list from pyproject.toml's ``package-dir`` table, so it is written once.

Every folder holding an ``__init__.py`` below a mapped top-level folder is a package
(``conformance/grade`` -> ``fusionspec.conformance.grade``). Everything else about the
distribution lives in pyproject.toml.
"""

from __future__ import annotations

import tomllib
from pathlib import Path

from setuptools import setup

HERE = Path(__file__).resolve().parent


def packages() -> list[str]:
    config = tomllib.loads((HERE / "pyproject.toml").read_text(encoding="utf-8"))
    found: list[str] = []
    for name, folder in config["tool"]["setuptools"]["package-dir"].items():
        for init in sorted((HERE / folder).rglob("__init__.py")):
            parts = init.parent.relative_to(HERE / folder).parts
            found.append(".".join((name, *parts)))
    return found


setup(packages=packages())
