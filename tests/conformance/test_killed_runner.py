"""A runner killed outright (SIGKILL, as the OOM killer does) takes every process it started
with it: the fork server, the resource tracker, the drawing processes, the processes preparing
cases ahead, the backend's workers and the helpers they started. Nothing is left holding the
runner's output, so ``fusionspec conform ... | cat`` ends."""

from __future__ import annotations

import os
import select
import signal
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path

import pytest
from testkit.cli import BIN, env

from fusionspec.conformance.workers import lifeline

#: How long the processes may take to notice the runner's death (they notice at once; the
#: rest is a loaded machine's scheduling).
DEADLINE_S = 60.0
#: How long the run may take to reach the state the test kills it in.
START_S = 240.0

pytestmark = pytest.mark.skipif(not Path("/proc/self/stat").exists(),
                                reason="reads the process tree from Linux's /proc")

Process = tuple[int, str]  # (pid, start time): a pid reused meanwhile is another process


def _stat(pid: int) -> list[str] | None:
    """The fields of /proc/<pid>/stat after the command name (state first), or None."""
    try:
        return Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    except (OSError, IndexError):
        return None


def _descendants(root: int) -> set[Process]:
    parents: dict[int, list[int]] = {}
    for folder in Path("/proc").iterdir():
        fields = _stat(int(folder.name)) if folder.name.isdigit() else None
        if fields is not None:
            parents.setdefault(int(fields[1]), []).append(int(folder.name))
    found: set[Process] = set()
    todo = [root]
    while todo:
        for child in parents.get(todo.pop(), []):
            fields = _stat(child)
            if fields is not None:
                found.add((child, fields[19]))
                todo.append(child)
    return found


def _alive(process: Process) -> bool:
    fields = _stat(process[0])
    return fields is not None and fields[19] == process[1] and fields[0] not in ("Z", "X")


def _command(pid: int) -> str:
    try:
        return Path(f"/proc/{pid}/cmdline").read_bytes().replace(b"\0", b" ").decode()[:120]
    except OSError:
        return "?"


def _kill_and_watch(args: list[str], cwd: Path, ready: Callable[[str, set[Process]], bool],
                    ) -> None:
    """Run ``fusionspec conform`` with `args`, its output (standard output and error) into a
    pipe; once `ready(output so far, descendants)`, SIGKILL it, and check that the pipe ends
    and that no process it started lives on."""
    runner = subprocess.Popen(
        [str(BIN / "fusionspec"), "conform", *args], cwd=cwd,
        env=env({"FUSIONSPEC_DRAW_CACHE": "off"}), stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL)
    assert runner.stdout is not None
    pipe = runner.stdout.fileno()
    said, family = b"", set[Process]()
    try:
        deadline = time.monotonic() + START_S
        while time.monotonic() < deadline and runner.poll() is None:
            if select.select([pipe], [], [], 0.1)[0]:
                said += os.read(pipe, 65536)
            family = _descendants(runner.pid)
            if ready(said.decode(errors="replace"), family):
                break
        text = said.decode(errors="replace")
        assert runner.poll() is None and ready(text, family), \
            f"the run reached the state to kill it in: {runner.poll()} {text[-2000:]}"
        runner.kill()
        runner.wait()
        deadline = time.monotonic() + DEADLINE_S
        ended = False
        while not ended and time.monotonic() < deadline:
            if select.select([pipe], [], [], 0.5)[0]:
                ended = not os.read(pipe, 65536)
        assert ended, "the runner's output reaches end of file once it is killed: " + \
            "; ".join(f"{pid} {_command(pid)}" for pid, _ in family if _alive((pid, _)))
        while any(map(_alive, family)) and time.monotonic() < deadline:
            time.sleep(0.1)
        left = [f"{pid} {_command(pid)}" for pid, start in family if _alive((pid, start))]
        assert not left, f"no process of the killed runner lives on: {left}"
    finally:
        runner.kill()
        runner.wait()
        for process in _descendants(runner.pid) | family:
            if _alive(process):
                os.kill(process[0], signal.SIGKILL)
        runner.stdout.close()


def _parent(pid: int) -> int:
    fields = _stat(pid)
    return int(fields[1]) if fields is not None else 0


def _forked(family: set[Process]) -> int:
    """How many of `family` are the fork server's children (a pool's or a worker): its
    children run the fork server's command line too, but their parent is the fork server."""
    forks = {pid for pid, _ in family if "forkserver import main" in _command(pid)}
    servers = {pid for pid in forks if _parent(pid) not in forks}
    return sum(1 for pid in forks if _parent(pid) in servers)


def test_killed_while_drawing(tmp_path: Path) -> None:
    # Two jobs and seven draws, none cached: the draws are spread over processes.
    _kill_and_watch(["--backend", "reference", "--patterns", "fp.conv_post_ops", "--jobs",
                     "2", "--out", "out"], tmp_path,
                    lambda said, family: "judging" not in said and _forked(family) >= 2)


def test_killed_while_judging(tmp_path: Path) -> None:
    # A backend that sleeps in every case, on 200 cases with two jobs: two busy workers, and
    # (unless the oracle cache holds the reference's side already) processes preparing the
    # next cases ahead; whichever are up when both workers are, the kill must take them all.
    _kill_and_watch(["--backend", "testkit.toy_backends:Sleeps", "--patterns",
                     "fp.conv_post_ops", "--jobs", "2", "--out", "out"], tmp_path,
                    lambda said, family: "judging" in said and _forked(family) >= 2)


def test_killed_while_a_backend_hangs_with_a_helper(tmp_path: Path) -> None:
    marker = tmp_path / "child.pid"
    _kill_and_watch(["--backend", "testkit.toy_backends:SpawnsAndHangs", "--patterns",
                     "fp.bn_relu", "--kinds", "valid", "--out", "out"], tmp_path,
                    lambda said, family: marker.exists() and any(
                        pid == int(marker.read_text()) for pid, _ in family))


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="Linux's parent-death signal")
def test_a_child_whose_parent_is_not_the_expected_one_ends_at_once() -> None:
    # The parent died between the start and the request for the signal: the child's parent is
    # then another process, and nobody would send it.
    context = lifeline.context()
    held = lifeline.ticket(context)
    assert held.parent is not None, "a fork server child is asked to die with its parent"
    wrong = lifeline.Ticket(held.reader, held.parent + 1_000_000, held.forked_by_server)
    child = context.Process(target=lifeline.hold, args=(wrong,))
    child.start()
    child.join(DEADLINE_S)
    assert child.exitcode == -signal.SIGKILL, \
        f"the orphaned child killed itself at once: {child.exitcode}"
    child = context.Process(target=lifeline.hold, args=(lifeline.ticket(context),))
    child.start()
    child.join(DEADLINE_S)
    assert child.exitcode == 0, f"a child with its expected parent goes on: {child.exitcode}"


def test_without_the_parent_death_signal_nothing_breaks(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(sys, "platform", "darwin")
    assert lifeline.parent_death_signal() is False, \
        "where there is no parent-death signal, asking for it says so instead of failing"
