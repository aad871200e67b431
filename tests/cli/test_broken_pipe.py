"""A reader that goes away early (``fusionspec ... --json | head``) ends the command quietly,
with the exit code a shell gives a command stopped by SIGPIPE, never a traceback."""

from __future__ import annotations

import subprocess
from pathlib import Path

from testkit.cli import BIN, env


def test_a_closed_pipe_is_no_traceback(tmp_path: Path) -> None:
    command = subprocess.Popen([str(BIN / "fusionspec"), "patterns", "--json"], cwd=tmp_path,
                               env=env(), stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                               stdin=subprocess.DEVNULL)
    assert command.stdout is not None and command.stderr is not None
    command.stdout.read(10)
    command.stdout.close()  # the reader leaves while the command is still writing
    err = command.stderr.read().decode()
    code = command.wait(timeout=120)
    assert "Traceback" not in err, f"a closed pipe gave a traceback:\n{err[-800:]}"
    assert code in (0, 141), f"exit code {code}: 141 (SIGPIPE) when the reader left early"
