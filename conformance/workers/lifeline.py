"""Child processes die with the process that started them, however it ends (SIGKILL, the OOM
killer included), and none of multiprocessing's helper processes holds the runner's output.

multiprocessing's fork server lives as long as any process it forked holds the write end of
its "alive" pipe, which every one of them inherits; a pool process waits for work on a queue
it holds both ends of. After a SIGKILL of the runner nothing of that ever ends: the fork server,
the resource tracker and the pool processes would live on, holding the runner's standard output
(a ``conform ... | cat`` would never finish). So:

- `context` is the start method's context (the fork server where there is one, else spawn)
  with the fork server and the resource tracker started with their standard output on
  ``/dev/null``, never on the runner's (where a results document may go); their standard error
  stays, for what their children say, and is let go when they end with the runner;
- a child calls `hold` first thing (a pool's initializer, a worker's entry point) with the
  `ticket` its parent made. On Linux it asks for SIGKILL when its parent dies
  (``prctl(PR_SET_PDEATHSIG)``), then checks that its parent is still the one expected (it may
  have died before the request; the child then ends at once). It lets go of the fork server's
  alive pipe, so the fork server ends with the runner, and with it every child it forked. On
  every platform a thread watches the runner's lifeline pipe, whose write end only the runner
  holds: at its end of file the child kills itself, with its process group where it leads one
  (a backend's helpers), so the guarantee does not hang on the fork server alone. A child that
  leads a process group also forks a guardian, a process that only waits for its own
  parent-death signal and then kills the group: the SIGKILL that ends the child runs none of its
  code, and the helpers would otherwise outlive it.

A fork server child's parent is the fork server (one thread, ending with the runner). A spawned
child's parent is the thread that started it, and Linux sends the parent-death signal when that
*thread* ends: a ticket asks for the signal there only when made in the main thread (make the
ticket in the thread that starts the process). Elsewhere the lifeline pipe alone holds.
"""

from __future__ import annotations

import contextlib
import ctypes
import multiprocessing
import os
import signal
import sys
import threading
from collections.abc import Callable
from dataclasses import dataclass
from multiprocessing.connection import Connection
from multiprocessing.context import BaseContext, DefaultContext
from typing import Any

__all__ = ["Ticket", "context", "ticket", "hold", "parent_death_signal"]

_PR_SET_PDEATHSIG = 1
#: Modules the fork server imports once for all its children: what a backend's worker, a
#: process preparing the reference's side and a drawing process import before their first
#: request. SciPy's special functions are the reference's erfc (GELU, the error bounds): each
#: of those children would otherwise import them on its first GELU, a third of a second each.
FORK_SERVER_PRELOAD = ("fusionspec.conformance.workers.worker", "fusionspec.reference",
                       "fusionspec.conformance.grade.prepared", "scipy.special")
_LOCK = threading.Lock()
_lifeline: tuple[Connection, Connection] | None = None


@dataclass(frozen=True)
class Ticket:
    """What a child needs to die with its parent (picklable while a process starts)."""

    #: The read end of the runner's lifeline pipe (None: no pipe to watch).
    reader: Connection | None
    #: The pid the child's parent must have once the parent-death signal is asked for (None:
    #: do not ask for it).
    parent: int | None
    #: Whether the child was forked by the fork server (and holds its alive pipe).
    forked_by_server: bool


def context(method: str | None = None) -> DefaultContext:
    """The context of `method` (default: the fork server where there is one, else spawn), its
    helper processes running and started away from this process's output."""
    if method is None:
        method = "forkserver" if "forkserver" in multiprocessing.get_all_start_methods() \
            else "spawn"
    # Typed as the default context: what each start method's context offers alike.
    found: DefaultContext = multiprocessing.get_context(method)  # type: ignore[assignment]
    with _LOCK:
        _start_helpers(method)
    return found


def ticket(ctx: BaseContext) -> Ticket:
    """The ticket for the next child started by `ctx` from this thread (see `hold`)."""
    method = ctx.get_start_method()
    parent: int | None = None
    if method == "forkserver":
        parent = _fork_server_pid()
    elif threading.current_thread() is threading.main_thread():
        parent = os.getpid()
    return Ticket(_reader(), parent, method == "forkserver")


def hold(held: Ticket, then: Callable[[], object] | None = None) -> None:
    """In a child: die with the parent (see the module docstring), then call `then` (what a
    pool's initializer does besides)."""
    if held.parent is not None and parent_death_signal() and os.getppid() != held.parent:
        _die()  # the parent died before the signal was asked for: nobody would send it
    if held.forked_by_server:
        _let_go_of_fork_server()
    if held.parent is not None:
        _guard_group()
    if held.reader is not None:
        if held.reader.poll(0):  # at end of file already: the runner is gone
            _die()
        threading.Thread(target=_watch, args=(held.reader,), name="fusionspec-lifeline",
                         daemon=True).start()
    if then is not None:
        then()


def parent_death_signal() -> bool:
    """Ask the kernel for SIGKILL when this process's parent dies; False where it cannot
    (not Linux, or no C library to ask through)."""
    if not sys.platform.startswith("linux"):
        return False
    try:
        libc = ctypes.CDLL(None, use_errno=True)
        return int(libc.prctl(_PR_SET_PDEATHSIG, int(signal.SIGKILL), 0, 0, 0)) == 0
    except (OSError, AttributeError):
        return False


def _guard_group() -> None:
    """Where this process leads a process group (a worker, whose backend may start helpers
    there), fork a guardian that kills the whole group when this process dies. The
    parent-death signal ends this process with SIGKILL, which runs none of its code, so
    without the guardian a helper the backend started would outlive it. Call it while the
    process has one thread: the guardian runs only system calls."""
    if not sys.platform.startswith("linux") or os.getpgid(0) != os.getpid():
        return
    leader = os.getpid()
    if os.fork() != 0:
        return
    try:  # the guardian: no Python-level state of the worker is used past this point
        os.closerange(3, 1 << 16)  # hold nothing of the worker's: its pipes end with it
        signal.pthread_sigmask(signal.SIG_BLOCK, {signal.SIGTERM})
        libc = ctypes.CDLL(None, use_errno=True)
        if int(libc.prctl(_PR_SET_PDEATHSIG, int(signal.SIGTERM), 0, 0, 0)) != 0:
            os._exit(0)  # no signal to wait for: the lifeline thread alone holds
        if os.getppid() == leader:  # else the leader died before the signal was asked for
            signal.sigwait({signal.SIGTERM})
        os.killpg(leader, signal.SIGKILL)
    finally:
        os._exit(0)


def _watch(reader: Connection) -> None:
    with contextlib.suppress(OSError, EOFError, ValueError):
        reader.poll(None)  # nobody writes: it wakes only at end of file
    _die()


def _die() -> None:
    kill = getattr(os, "killpg", None)
    sigkill = getattr(signal, "SIGKILL", None)
    if sigkill is not None:
        with contextlib.suppress(OSError):
            if kill is not None and os.getpgid(0) == os.getpid():
                kill(os.getpid(), sigkill)  # a group leader takes its helpers along
            os.kill(os.getpid(), sigkill)
    os._exit(1)


def _reader() -> Connection:
    """The read end of this process's lifeline pipe, made on first use; the write end stays
    here (made non-inheritable, and closed in a fork of this process)."""
    global _lifeline
    with _LOCK:
        if _lifeline is None:
            reader, writer = multiprocessing.Pipe(duplex=False)
            _lifeline = (reader, writer)
        return _lifeline[0]


def _forget_lifeline() -> None:
    # A plain fork of the runner must not keep the runner's lifeline open: the child's own
    # children get a pipe of the child's.
    global _lifeline
    if _lifeline is not None:
        for end in _lifeline:
            with contextlib.suppress(OSError):
                end.close()
        _lifeline = None


if hasattr(os, "register_at_fork"):
    os.register_at_fork(after_in_child=_forget_lifeline)


def _fork_server_pid() -> int | None:
    with contextlib.suppress(ImportError, AttributeError):
        from multiprocessing import forkserver

        server: Any = forkserver._forkserver
        pid = server._forkserver_pid
        return pid if isinstance(pid, int) else None
    return None


def _let_go_of_fork_server() -> None:
    """Close this child's copy of the fork server's alive pipe (it would keep the fork server,
    and so this child, alive after the runner died); a fork server this process may want
    later is a new one of its own."""
    with contextlib.suppress(ImportError, AttributeError):
        from multiprocessing import forkserver

        server: Any = forkserver._forkserver
        fd = server._forkserver_alive_fd
        if isinstance(fd, int):
            with contextlib.suppress(OSError):
                os.close(fd)
        server._forkserver_alive_fd = None
        server._forkserver_address = None
        server._forkserver_pid = None


def _running(pid: object) -> bool:
    """Whether the child `pid` has not exited (not reaped here: its owner reaps it)."""
    if not isinstance(pid, int):
        return False
    try:
        return os.waitid(os.P_PID, pid, os.WEXITED | os.WNOHANG | os.WNOWAIT) is None
    except (AttributeError, OSError):  # no waitid here, or not our child: assume it runs
        return True


def _helpers_running(method: str) -> bool:
    with contextlib.suppress(ImportError, AttributeError):
        from multiprocessing import resource_tracker

        tracker: Any = resource_tracker._resource_tracker
        if not _running(tracker._pid):
            return False
        if method != "forkserver":
            return True
        from multiprocessing import forkserver

        server: Any = forkserver._forkserver
        return _running(server._forkserver_pid)
    return False


def _start_helpers(method: str) -> None:
    """Start the resource tracker (and the fork server) with standard output on /dev/null:
    they would inherit this process's descriptor 1, which a pipe may hold. Standard error
    stays (what a child of the fork server says about itself goes there); it is freed when
    they end, with the runner."""
    if method == "fork" or sys.platform == "win32" or _helpers_running(method):
        return
    from multiprocessing import resource_tracker

    def start() -> None:
        resource_tracker.ensure_running()
        if method == "forkserver":
            from multiprocessing import forkserver

            # Every child forked from it starts with these imported (a worker, a preparing
            # process) instead of importing them itself. Only fusionspec's own modules and
            # what the reference needs (NumPy, ml_dtypes, SciPy): the fork server must never
            # load a backend's runtime.
            forkserver.set_forkserver_preload(["__main__", *FORK_SERVER_PRELOAD])
            forkserver.ensure_running()

    with contextlib.suppress(Exception):
        if sys.stdout is not None:
            sys.stdout.flush()
    try:
        saved = os.dup(1)
    except OSError:  # no output to protect
        start()
        return
    null = os.open(os.devnull, os.O_WRONLY)
    try:
        os.dup2(null, 1)
        start()
    finally:
        os.dup2(saved, 1)
        os.close(saved)
        os.close(null)
