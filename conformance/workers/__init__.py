"""How a backend is run safely: each in worker processes of its own, answering with data.

- `Runner` (`runner`): one worker process for one backend and device; it judges cases by
  calling the backend in the worker and grading in this process, and restarts a worker that
  times out, crashes or runs out of memory;
- `RunnerPool` (`pool`): several runners, one per job, with the interface of one;
- the worker's side (`worker.serve`) and what travels between the two (`transport`: requests,
  replies unpickled against an allowlist and bounded in size);
- `terminate_cleanly` and the process tracking behind it (`signals`): Ctrl-C or SIGTERM stops
  every worker and its children; `lifeline`: every process the runner starts dies with it,
  however it ends (SIGKILL included); `use_cache_home` (`scratch`): a private cache folder for the
  workers of one run.

The rest of the suite uses the names below; the modules' other names are theirs alone.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from .pool import RunnerPool
    from .runner import STARTUP_TIMEOUT_S, Runner, default_memory_limit
    from .scratch import cache_home, use_cache_home
    from .signals import terminate_cleanly

__all__ = ["Runner", "RunnerPool", "STARTUP_TIMEOUT_S", "default_memory_limit",
           "terminate_cleanly", "use_cache_home", "cache_home"]

#: Where each public name lives. Imported on first use, so that importing one module of the
#: package (the transport, in a process that only reads replies) loads nothing else.
_HOMES = {"Runner": "runner", "RunnerPool": "pool", "STARTUP_TIMEOUT_S": "runner",
          "default_memory_limit": "runner", "terminate_cleanly": "signals",
          "use_cache_home": "scratch", "cache_home": "scratch"}


def __getattr__(name: str) -> Any:
    home = _HOMES.get(name)
    if home is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    return getattr(importlib.import_module(f".{home}", __name__), name)
