"""Run ``mypy --strict`` on the fusionspec packages and print errors with repository paths.

The subpackages are installed under the ``fusionspec`` namespace from top-level folders
(``spec/`` -> ``fusionspec.spec``), so mypy must see them under their import names. With a regular
install mypy checks the installed copy; with an editable install (whose import hook mypy cannot
follow) it checks a temporary tree of symbolic links. Either way every reported path is rewritten
to the source file in this repository (``spec/graph.py:12: error: ...``).

Usage: python tools/typecheck.py [extra mypy arguments]
"""

from __future__ import annotations

import importlib.util
import os
import subprocess
import sys
import tempfile
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
SUBPACKAGES = ("spec", "reference", "accel", "conformance", "reports")


def installed_root() -> Path | None:
    spec = importlib.util.find_spec("fusionspec.spec")
    if spec is None or spec.origin is None:
        return None
    package_dir = Path(spec.origin).resolve().parent
    if package_dir == REPO / "spec":
        return None  # editable install: the import hook points back into the repository
    return package_dir.parent.parent  # .../site-packages


def main() -> int:
    args = sys.argv[1:]
    root = installed_root()
    with tempfile.TemporaryDirectory() as tmp:
        env = dict(os.environ)
        env.pop("MYPYPATH", None)
        if root is None:
            # Editable install: a tree of links gives mypy the import names.
            root = Path(tmp) / "tree"
            (root / "fusionspec").mkdir(parents=True)
            for name in SUBPACKAGES:
                (root / "fusionspec" / name).symlink_to(REPO / name)
            env["MYPYPATH"] = str(root)
        # An installed package is found in site-packages as any dependency would be.
        cmd = [sys.executable, "-m", "mypy", "--strict", "--config-file",
               str(REPO / "pyproject.toml"), "--cache-dir", str(Path(tmp) / "cache"),
               *[arg for name in SUBPACKAGES for arg in ("-p", f"fusionspec.{name}")], *args]
        proc = subprocess.run(cmd, cwd=tmp, env=env, capture_output=True, text=True)
    prefix = f"{root}/fusionspec/"
    for stream, text in ((sys.stdout, proc.stdout), (sys.stderr, proc.stderr)):
        for line in text.splitlines():
            line = line.replace(prefix, "")
            if line.startswith("fusionspec/"):
                line = line[len("fusionspec/"):]
            stream.write(line + "\n")
    return proc.returncode


if __name__ == "__main__":
    raise SystemExit(main())
