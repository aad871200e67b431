"""A backend's detached helper (a daemon in a session of its own) must not hold the command's
standard output: ``fusionspec conform --json | consumer`` ends when the command does."""

from __future__ import annotations

import contextlib
import json
import os
import signal
import subprocess
from pathlib import Path

from testkit.cli import fusionspec


def test_a_detached_helper_does_not_keep_the_output_open(tmp_path: Path) -> None:
    try:
        # capture_output waits for end-of-file on the pipe: a helper holding it would make
        # this run into its timeout.
        done = fusionspec(["conform", "--backend", "testkit.session_helpers:StartsSessionHelper",
                           "--patterns", "fp.bn_relu", "--kinds", "valid", "--json", "--out",
                           "out"], tmp_path, timeout=240)
    except subprocess.TimeoutExpired as exc:
        raise AssertionError("the command's output stayed open after it ended: a detached "
                             "helper of the backend holds it") from exc
    finally:
        for pid_file in tmp_path.rglob("helper.pid"):
            with contextlib.suppress(ProcessLookupError, ValueError):
                os.kill(int(pid_file.read_text()), signal.SIGKILL)
    said = json.loads(done.stdout)
    assert done.returncode == 0 and said["verdict"] == "PASS", \
        f"the helper changes nothing else: {done.returncode} {said}"
