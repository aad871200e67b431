"""The examples in the package's docstrings run and print what they show."""

from __future__ import annotations

import doctest
import importlib
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "tools"))
from layout import subpackages  # noqa: E402


def _modules_with_examples() -> list[str]:
    found = []
    for name, folder in subpackages().items():
        for path in sorted((ROOT / folder).rglob("*.py")):
            if ">>> " not in path.read_text(encoding="utf-8"):
                continue
            parts = path.relative_to(ROOT / folder).with_suffix("").parts
            parts = parts[:-1] if parts[-1] == "__init__" else parts
            found.append(".".join((name, *parts)))
    return found


MODULES = _modules_with_examples()


def test_some_docstrings_have_examples() -> None:
    assert len(MODULES) >= 3, f"docstring examples found only in {MODULES}"


@pytest.mark.parametrize("name", MODULES)
def test_docstring_examples(name: str) -> None:
    module = importlib.import_module(name)
    result = doctest.testmod(module, optionflags=doctest.ELLIPSIS | doctest.NORMALIZE_WHITESPACE)
    assert result.attempted, f"{name}: no example ran"
    assert result.failed == 0, f"{name}: {result.failed} of {result.attempted} examples fail"
