"""Running ``fusionspec`` and pytest in subprocesses the way a CI job does, with the test
backends (``testkit.toy_backends:...``) importable, and reading their results documents."""

from __future__ import annotations

import atexit
import json
import os
import shutil
import subprocess
import sys
import tempfile
from collections.abc import Iterable, Mapping, Sequence
from pathlib import Path
from typing import Any

__all__ = ["TESTS", "BIN", "env", "fusionspec", "pytest_run", "comparable", "VOLATILE"]

#: The folder holding the testkit package (what the workers need on their path).
TESTS = Path(__file__).resolve().parents[1]
#: Where the ``fusionspec`` console script of this environment lives.
BIN = Path(sys.executable).parent

#: Fields that differ between two runs of the same cases (times, where things were written).
VOLATILE = frozenset({"started", "finished", "seconds", "dir", "environment"})


#: One draw cache for the runs this test process starts: they run the suite's code unpatched,
#: so a selection drawn by one run is read back by the next (the cache keys on the sources).
#: The tests' own process keeps the cache off (tests/conftest.py).
DRAWS = tempfile.mkdtemp(prefix="fusionspec-test-draws-")
atexit.register(shutil.rmtree, DRAWS, ignore_errors=True)


def env(extra: Mapping[str, str] | None = None) -> dict[str, str]:
    """The environment with the testkit importable, this environment's scripts first, and the
    test process's draw cache."""
    found = dict(os.environ)
    found["FUSIONSPEC_DRAW_CACHE"] = DRAWS
    found["PYTHONPATH"] = os.pathsep.join(filter(None, [str(TESTS),
                                                        found.get("PYTHONPATH", "")]))
    found["PATH"] = os.pathsep.join([str(BIN), found.get("PATH", "")])
    found.update(extra or {})
    return found


def fusionspec(args: Sequence[str], cwd: Path, *, timeout: float = 600,
               ) -> subprocess.CompletedProcess[str]:
    """``fusionspec ARGS`` (the console script) in `cwd`."""
    return subprocess.run([str(BIN / "fusionspec"), *args], cwd=cwd, env=env(),
                          capture_output=True, text=True, timeout=timeout, check=False,
                          stdin=subprocess.DEVNULL)


def pytest_run(args: Sequence[str], cwd: Path, *, timeout: float = 600,
               extra_env: Mapping[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    """``python -m pytest ARGS`` in `cwd`, without the cache plugin's files."""
    return subprocess.run([sys.executable, "-m", "pytest", "-p", "no:cacheprovider", *args],
                          cwd=cwd, env=env(extra_env), capture_output=True, text=True,
                          timeout=timeout, check=False, stdin=subprocess.DEVNULL)


def _strip(value: Any, drop: Iterable[str]) -> Any:
    dropped = frozenset(drop)
    if isinstance(value, dict):
        return {k: _strip(v, dropped) for k, v in value.items() if k not in dropped}
    if isinstance(value, list):
        return [_strip(v, dropped) for v in value]
    return value


def comparable(path: Path, drop: Iterable[str] = VOLATILE) -> dict[str, Any]:
    """The results document at `path` without the fields two runs of the same cases may
    differ in."""
    document: dict[str, Any] = json.loads(path.read_text(encoding="utf-8"))
    stripped: dict[str, Any] = _strip(document, drop)
    return stripped
