"""A backend module that does something on import (exits, prints to standard output, raises
KeyboardInterrupt, patches the suite's grading in its own process): ``fusionspec conform
--json`` still ends with one JSON document, a results file and an honest exit code."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

import pytest
from testkit.cli import BIN, env

_TAIL = "from fusionspec.reference.backend import ReferenceBackend as Backend\n"

#: (what the module does on import, the exit code and verdict the run must end with)
_SIDE_EFFECTS = [
    ("import sys; sys.exit(5)", 3, "UNAVAILABLE"),
    ("import os; os._exit(0)", 3, "UNAVAILABLE"),
    ("raise KeyboardInterrupt", 3, "UNAVAILABLE"),
    ("print('garbage on standard output', flush=True)", 0, "PASS"),
    # The grading runs in the runner: patching it in the worker's copy changes no grade.
    ("import fusionspec.conformance.grade.verdicts as v; v.judge = None", 0, "PASS"),
]


@pytest.mark.parametrize(("body", "code", "verdict"), _SIDE_EFFECTS,
                         ids=[s[0].split(";")[-1].strip()[:24] for s in _SIDE_EFFECTS])
def test_an_import_side_effect_ends_in_one_clean_document(tmp_path: Path, body: str, code: int,
                                                          verdict: str) -> None:
    (tmp_path / "sidefx.py").write_text(f"{body}\n{_TAIL}", encoding="utf-8")
    done = subprocess.run([str(BIN / "fusionspec"), "conform", "--backend", "sidefx:Backend",
                           "--patterns", "fp.bn_relu", "--kinds", "valid", "--json", "--out",
                           "out"], cwd=tmp_path, env=env({"PYTHONPATH": f"{tmp_path}"}),
                          capture_output=True, text=True, timeout=300, check=False,
                          stdin=subprocess.DEVNULL)
    assert "Traceback" not in done.stderr, f"{body}: a traceback reached the user"
    said = json.loads(done.stdout)  # one document, nothing the backend printed
    assert (done.returncode, said["verdict"]) == (code, verdict), \
        f"{body}: want exit {code} {verdict}, got {done.returncode} {said}"
    assert (tmp_path / "out" / "results.json").is_file(), f"{body}: no results document"
