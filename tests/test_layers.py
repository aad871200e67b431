"""The import contracts (pyproject.toml, ``[tool.importlinter]``) hold, and they catch a planted
upward import: a copy of the spec that imports the suite breaks the floors contract."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "tools"))
from layout import subpackages  # noqa: E402

LINT = Path(sys.executable).with_name("lint-imports")

pytestmark = pytest.mark.skipif(not LINT.exists(), reason="import-linter is not installed "
                                "(pip install 'fusionspec[dev]')")


def _tree(tmp: Path, planted: str | None = None) -> Path:
    """``fusionspec/<sub>`` for every subpackage, linked to the repository; with `planted`,
    the spec is a copy whose dtypes module also runs `planted`."""
    root = tmp / "tree"
    (root / "fusionspec").mkdir(parents=True)
    for name, folder in subpackages().items():
        target = root / "fusionspec" / name.split(".", 1)[1]
        if planted is not None and folder == "spec":
            shutil.copytree(ROOT / folder, target)
            module = target / "dtypes.py"
            module.write_text(module.read_text() + f"\n{planted}\n")
        else:
            target.symlink_to(ROOT / folder)
    return root


def _lint(root: Path, cwd: Path) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "PYTHONPATH": str(root)}
    return subprocess.run([str(LINT), "--config", str(ROOT / "pyproject.toml"), "--no-cache"],
                          cwd=cwd, env=env, capture_output=True, text=True, timeout=300,
                          check=False)


def test_the_contracts_hold(tmp_path: Path) -> None:
    done = _lint(_tree(tmp_path), tmp_path)
    assert done.returncode == 0, f"the import contracts are broken:\n{done.stdout[-3000:]}"


def test_a_planted_upward_import_breaks_the_floors(tmp_path: Path) -> None:
    done = _lint(_tree(tmp_path, "import fusionspec.conformance.cases  # planted"), tmp_path)
    assert done.returncode != 0, "an upward import from the spec must break a contract"
    assert "Floors" in done.stdout and "BROKEN" in done.stdout, \
        f"the floors contract names the break:\n{done.stdout[-3000:]}"
    assert "fusionspec.spec.dtypes -> fusionspec.conformance.cases" in done.stdout, \
        f"the report names the planted import:\n{done.stdout[-3000:]}"
