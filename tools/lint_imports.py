"""Check the import contracts of pyproject.toml (``[tool.importlinter]``) with import-linter.

import-linter finds the subpackages by import name (``fusionspec.spec`` ...): an installed copy
is used as is; for an editable install a tree of links gives them those names
(`layout.import_root`).

Usage: python tools/lint_imports.py [extra lint-imports arguments]
"""

from __future__ import annotations

import os
import subprocess
import sys
import tempfile
from pathlib import Path

from layout import REPO, import_root


def main() -> int:
    with tempfile.TemporaryDirectory() as tmp:
        root, _ = import_root(Path(tmp))
        env = {**os.environ, "PYTHONPATH": os.pathsep.join(
            p for p in (str(root), os.environ.get("PYTHONPATH", "")) if p)}
        # Run from the scratch folder: the repository's own folders (spec/, ...) must not be
        # importable under their bare names.
        cmd = [str(Path(sys.executable).with_name("lint-imports")), "--config",
               str(REPO / "pyproject.toml"), "--no-cache", *sys.argv[1:]]
        return subprocess.run(cmd, cwd=tmp, env=env, check=False).returncode


if __name__ == "__main__":
    raise SystemExit(main())
