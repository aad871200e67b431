"""No worker outlives the runner: ``conform`` stopped with SIGTERM (``timeout``, a CI job
cancelled) or Ctrl-C kills its workers' process groups, helpers included, and says what it
judged."""

from __future__ import annotations

import os
import signal
import subprocess
import time
from collections.abc import Callable
from pathlib import Path

import pytest
from testkit.cli import BIN, env


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    try:  # a zombie waiting for its parent counts as gone
        return Path(f"/proc/{pid}/stat").read_text().split(")")[-1].split()[0] != "Z"
    except OSError:
        return False


def _pid_in(marker: Path) -> int:
    """The pid written in `marker`, or 0 while the file is missing or not yet complete (the
    helper writes it with a trailing newline)."""
    try:
        text = marker.read_text()
    except OSError:
        return 0
    return int(text) if text.endswith("\n") and text.strip().isdigit() else 0


def _stop(runner: subprocess.Popen[bytes], sent: signal.Signals, said: Path,
          survivors: Callable[[], list[int]]) -> list[int]:
    """Send `sent` to the runner, check that it stops cleanly, and return the processes of
    `survivors()` still alive 10 s later (killed, so none outlives the test)."""
    runner.send_signal(sent)
    try:
        code = runner.wait(60)
    finally:
        runner.kill()
    err = said.read_text(errors="replace")
    assert code != 0 and "Traceback" not in err, f"{sent.name}: a clean stop: {code} {err}"
    deadline = time.monotonic() + 10
    while survivors() and time.monotonic() < deadline:
        time.sleep(0.2)
    left = survivors()
    for pid in left:
        os.kill(pid, signal.SIGKILL)
    return left


@pytest.mark.parametrize("sent", [signal.SIGTERM, signal.SIGINT])
def test_a_stopped_runner_leaves_no_worker(sent: signal.Signals, tmp_path: Path) -> None:
    # Files, not pipes: a helper that outlived the runner would keep a pipe open.
    said = tmp_path / "said.txt"
    with said.open("wb") as out:
        runner = subprocess.Popen(
            [str(BIN / "fusionspec"), "conform", "--backend",
             "testkit.toy_backends:SpawnsAndHangs", "--patterns", "fp.bn_relu", "--kinds",
             "valid", "--out", "out"],
            cwd=tmp_path, env=env(), stdout=out, stderr=out, stdin=subprocess.DEVNULL)
    marker = tmp_path / "child.pid"
    deadline = time.monotonic() + 120
    # Wait for the event itself, the helper's pid written in full, never for a fixed time.
    while not _pid_in(marker) and time.monotonic() < deadline and runner.poll() is None:
        time.sleep(0.05)
    helper = _pid_in(marker)
    assert helper, f"the backend started its helper and wrote its pid: {runner.poll()}"
    left = _stop(runner, sent, said, lambda: [helper] if _alive(helper) else [])
    assert not left, f"{sent.name}: the backend's helper {helper} died with the runner"


def _marked(mark: str) -> list[int]:
    """The live processes whose environment holds `mark`."""
    found = []
    for folder in Path("/proc").iterdir():
        if not folder.name.isdigit():
            continue
        try:
            if mark.encode() in (folder / "environ").read_bytes() and _alive(int(folder.name)):
                found.append(int(folder.name))
        except OSError:
            continue
    return found


@pytest.mark.skipif(not Path("/proc/self/environ").exists(), reason="needs Linux's /proc")
@pytest.mark.parametrize("sent", [signal.SIGTERM, signal.SIGINT])
def test_the_processes_preparing_cases_ahead_stop_with_the_runner(sent: signal.Signals,
                                                                  tmp_path: Path) -> None:
    # A paced backend on many cases with two jobs: the reference's side of the cases is being
    # prepared ahead in processes of its own when the signal comes.
    mark = f"FUSIONSPEC_TEST_MARK_{os.getpid()}_{sent.name}"
    said = tmp_path / "said.txt"
    with said.open("wb") as out:
        runner = subprocess.Popen(
            [str(BIN / "fusionspec"), "conform", "--backend",
             "testkit.perf_backends:PacedBackend", "--patterns", "fp.conv_post_ops", "--jobs",
             "2", "--out", "out"],
            cwd=tmp_path, env=env({mark: "1"}), stdout=out, stderr=out,
            stdin=subprocess.DEVNULL)
    deadline = time.monotonic() + 120

    def family() -> list[int]:
        return [pid for pid in _marked(mark) if pid != runner.pid]
    # The event: the run judging with its workers and the processes preparing cases ahead all
    # started (polled, however long the machine's load makes that take).
    while not ("judging" in said.read_text(errors="replace") and len(family()) >= 4) \
            and runner.poll() is None and time.monotonic() < deadline:
        time.sleep(0.05)
    running = family()
    assert runner.poll() is None and len(running) >= 4, \
        f"the run is judging with its workers and preparing processes: {running}"
    left = _stop(runner, sent, said, lambda: _marked(mark))
    assert not left, f"{sent.name}: processes of the run outlived it: {left}"
