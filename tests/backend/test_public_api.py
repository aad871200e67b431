"""The "Public API" section of docs/writing-a-backend.md stays true: every name it lists imports
from the package it is listed under and is documented, and the backend interface documents
every method and optional member a backend author needs.

The names are parsed from the document itself, so the list and the code cannot drift apart.
"""

from __future__ import annotations

import importlib
import inspect
import re
from pathlib import Path

import pytest

from fusionspec.backend import Backend, CompiledPartition, Device, Limitation

DOC = Path(__file__).resolve().parents[2] / "docs" / "writing-a-backend.md"
PACKAGES = ("fusionspec.backend", "fusionspec.spec", "fusionspec.reference")


def _listed() -> dict[str, list[tuple[str, str]]]:
    """Package -> [(name, the doc's description of it)] from the Public API section."""
    text = DOC.read_text(encoding="utf-8")
    section = text.split("\n## Public API\n", 1)[1].split("\n## ", 1)[0]
    found: dict[str, list[tuple[str, str]]] = {}
    package = ""
    for block in re.split(r"\n(?=### |- )", section):
        heading = re.match(r"### `([\w.]+)`", block)
        if heading:
            package = heading.group(1)
            found[package] = []
            continue
        if block.startswith("- ") and package:
            names, _, description = block[2:].partition(": ")
            for name in re.findall(r"`(\w+)`", names):
                found[package].append((name, " ".join(description.split())))
    return found


def _own_doc(obj: object) -> str:
    """The object's own docstring: not one inherited from a base class, nor the signature a
    dataclass writes when its class has none."""
    if isinstance(obj, type):
        doc = obj.__dict__.get("__doc__") or ""
        return "" if doc.startswith(f"{obj.__name__}(") else doc
    return getattr(obj, "__doc__", None) or ""


def test_the_section_lists_each_package() -> None:
    listed = _listed()
    assert set(listed) == set(PACKAGES), f"the Public API section lists {sorted(listed)}"
    for package, names in listed.items():
        assert len(names) >= 5, f"{package} lists only {names}"
    backend_names = {name for name, _ in listed["fusionspec.backend"]}
    missing = set(importlib.import_module("fusionspec.backend").__all__) - backend_names
    assert not missing, f"fusionspec.backend exports names the doc does not list: {missing}"


@pytest.mark.parametrize("package", PACKAGES)
def test_every_listed_name_imports_and_is_documented(package: str) -> None:
    module = importlib.import_module(package)
    for name, description in _listed()[package]:
        assert name in module.__all__, f"{package}.{name} is listed but not in __all__"
        obj = getattr(module, name, None)
        assert obj is not None, f"{package}.{name} is listed but does not import"
        assert description, f"{package}.{name} has no description in the doc"
        if inspect.isclass(obj) or inspect.isfunction(obj):
            assert _own_doc(obj).strip(), f"{package}.{name} has no docstring of its own"


def test_array_is_exported_where_backend_authors_look() -> None:
    from fusionspec.backend import Array as from_backend
    from fusionspec.spec import Array as from_spec
    from fusionspec.spec.types import Array
    assert from_backend is Array and from_spec is Array, \
        "fusionspec.backend.Array and fusionspec.spec.Array are the one array type"


@pytest.mark.parametrize("protocol", [Backend, CompiledPartition, Device, Limitation])
def test_the_backend_interface_documents_every_method(protocol: type) -> None:
    assert _own_doc(protocol).strip(), f"{protocol.__name__} has no docstring"
    methods = [name for name, member in vars(protocol).items()
               if inspect.isfunction(member) and not name.startswith("_")]
    undocumented = [name for name in methods if not (getattr(protocol, name).__doc__ or "")]
    assert not undocumented, f"{protocol.__name__} methods without a docstring: {undocumented}"


def test_the_backend_docstrings_state_the_contract() -> None:
    """Each optional member and each attribute is named where ``help()`` shows it."""
    said = {
        Backend: ["name", "limitations", "rejection_errors", "unavailable_reason",
                  "device_problems", "counters"],
        CompiledPartition: ["execute_timed", "kernel_source"],
        Device: ["id", "kind", "name", "driver", "runtime", "extras"],
        Limitation: ["reason", "pattern", "dtype", "device_kind", "case_kind",
                     "tensor_dtypes"],
    }
    for protocol, members in said.items():
        doc = _own_doc(protocol)
        missing = [m for m in members if m not in doc]
        assert not missing, f"{protocol.__name__}'s docstring does not mention {missing}"
    partition_doc = Backend.partition.__doc__ or ""
    assert "supported" in partition_doc and "rejected-valid" in partition_doc, \
        "Backend.partition says what Partition.supported=False means"
    for method in (Backend.partition, Backend.compile, CompiledPartition.execute):
        doc = method.__doc__ or ""
        assert "error" in doc, f"{method.__qualname__} says what an exception becomes"
