"""The repository's package layout, read from pyproject.toml, for the development tools.

Each top-level folder is a subpackage of the ``fusionspec`` namespace (``spec/`` ->
``fusionspec.spec``), as pyproject.toml's ``[tool.setuptools] package-dir`` table says; that table
is the one list of subpackages. Tools that analyse the code by import name (mypy, the import
contracts) need it under those names: `import_root` gives a folder where ``fusionspec.<sub>``
resolves, the installed copy for a regular install, else a tree of symbolic links into the
repository (an editable install's import hook is invisible to them).
"""

from __future__ import annotations

import importlib.util
import tomllib
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent

__all__ = ["REPO", "subpackages", "import_root"]


def subpackages() -> dict[str, str]:
    """Import name -> folder, for every top-level subpackage (``fusionspec.spec`` -> ``spec``)."""
    config = tomllib.loads((REPO / "pyproject.toml").read_text(encoding="utf-8"))
    mapping: dict[str, str] = config["tool"]["setuptools"]["package-dir"]
    return dict(mapping)


def _installed_root() -> Path | None:
    spec = importlib.util.find_spec("fusionspec.spec")
    if spec is None or spec.origin is None:
        return None
    package_dir = Path(spec.origin).resolve().parent
    if package_dir == REPO / "spec":
        return None  # editable install: the import hook points back into the repository
    return package_dir.parent.parent  # .../site-packages


def import_root(scratch: Path) -> tuple[Path, bool]:
    """A folder holding ``fusionspec/<sub>`` for every subpackage, and whether it is a link
    tree made in `scratch` (an editable install) rather than the installed copy."""
    installed = _installed_root()
    if installed is not None:
        return installed, False
    root = scratch / "tree"
    (root / "fusionspec").mkdir(parents=True, exist_ok=True)
    for name, folder in subpackages().items():
        link = root / "fusionspec" / name.split(".", 1)[1]
        if not link.exists():
            link.symlink_to(REPO / folder)
    return root, True
