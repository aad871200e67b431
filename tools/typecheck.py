"""Run ``mypy --strict`` on the fusionspec packages and print errors with repository paths.

The subpackages are installed under the ``fusionspec`` namespace from top-level folders
(``spec/`` -> ``fusionspec.spec``), so mypy must see them under their import names. With a regular
install mypy checks the installed copy; with an editable install (whose import hook mypy cannot
follow) it checks a temporary tree of symbolic links. Either way every reported path is rewritten
to the source file in this repository (``spec/graph.py:12: error: ...``).

The subpackages come from pyproject.toml (`layout.subpackages`), so every one is checked.

Usage: python tools/typecheck.py [extra mypy arguments]
"""

from __future__ import annotations

import os
import subprocess
import sys
import tempfile
from pathlib import Path

from layout import REPO, import_root, subpackages


def main() -> int:
    args = sys.argv[1:]
    with tempfile.TemporaryDirectory() as tmp:
        env = dict(os.environ)
        env.pop("MYPYPATH", None)
        root, linked = import_root(Path(tmp))
        if linked:
            env["MYPYPATH"] = str(root)
        # An installed package is found in site-packages as any dependency would be.
        cmd = [sys.executable, "-m", "mypy", "--strict", "--config-file",
               str(REPO / "pyproject.toml"), "--cache-dir", str(Path(tmp) / "cache"),
               *[arg for name in subpackages() for arg in ("-p", name)], *args]
        proc = subprocess.run(cmd, cwd=tmp, env=env, capture_output=True, text=True)
    # mypy names files by the path it found them under: the tree's (relative to its working
    # folder) or site-packages'; either way map them back to repository paths.
    prefixes = (f"{root}/fusionspec/", "tree/fusionspec/", "fusionspec/")
    for stream, text in ((sys.stdout, proc.stdout), (sys.stderr, proc.stderr)):
        for line in text.splitlines():
            for prefix in prefixes:
                if line.startswith(prefix):
                    line = line[len(prefix):]
                    break
            stream.write(line + "\n")
    return proc.returncode


if __name__ == "__main__":
    raise SystemExit(main())
