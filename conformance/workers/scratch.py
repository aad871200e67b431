"""Where hypothesis keeps its own files (caches it builds while drawing cases) during a run.

Hypothesis writes them under ``.hypothesis/`` in the current folder unless told otherwise; a
``fusionspec conform`` run in a checkout, an artifact folder or a CI workspace must not leave
files there. `use_cache_home` points it at the user's cache folder (``$XDG_CACHE_HOME`` or
``~/.cache``, then ``fusionspec/hypothesis``). The example database a ``thorough`` run keeps
is separate: it lives under the run's output folder.
"""

from __future__ import annotations

import os
from pathlib import Path

__all__ = ["use_cache_home", "cache_home"]


def cache_home() -> Path:
    """``$XDG_CACHE_HOME/fusionspec/hypothesis`` (``~/.cache`` when unset)."""
    base = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    return Path(base) / "fusionspec" / "hypothesis"


def use_cache_home() -> None:
    """Point hypothesis' own files at `cache_home` for this process."""
    from hypothesis.configuration import set_hypothesis_home_dir

    set_hypothesis_home_dir(cache_home())
