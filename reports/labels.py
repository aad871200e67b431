"""How a run is named wherever the reports name it: the HTML report's columns and headings, the
performance section, the diff's notes and lines, and the folders findings copies examples into.

A run is its backend on its device (`run_name`). Several documents of one backend and device
(two versions of a library, two runs compared) are told apart by a suffix (`run_suffixes`): the
driver version where each of them has its own, else a number. `run_folder` is the same name as
one safe path component, with the driver in it.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Sequence

from fusionspec.spec.files import safe_component

__all__ = ["run_name", "run_names", "run_suffixes", "run_folder"]


def run_name(backend: str, device: str, suffix: str = "") -> str:
    """``reference on numpy``, with `suffix` (one of `run_suffixes`) after it."""
    return f"{backend} on {device}{suffix}"


def run_suffixes(keys: Sequence[tuple[str, str]], drivers: Sequence[str]) -> list[str]:
    """For each run (its (backend, device) key and its driver version), what tells it apart
    from the others of the same key: `` (driver)`` where every run of that key has a driver of
    its own, else `` (n)`` from the second one on; nothing for a key seen once."""
    total = Counter(keys)
    distinct = {key: len({d for k, d in zip(keys, drivers) if k == key and d}) == total[key]
                for key in total}
    seen: Counter[tuple[str, str]] = Counter()
    suffixes = []
    for key, driver in zip(keys, drivers):
        seen[key] += 1
        if total[key] > 1 and distinct[key]:
            suffixes.append(f" ({driver})")
        else:
            suffixes.append("" if seen[key] == 1 else f" ({seen[key]})")
    return suffixes


def run_names(keys: Sequence[tuple[str, str]], drivers: Sequence[str]) -> list[str]:
    """`run_name` of each run, with its suffix."""
    return [run_name(backend, device, suffix)
            for (backend, device), suffix in zip(keys, run_suffixes(keys, drivers))]


def run_folder(backend: str, driver: str, device: str) -> str:
    """``mybackend-1.2.0-cpu``: the run as one safe path component
    (`fusionspec.spec.files.safe_component`)."""
    parts = [backend, driver, device]
    return safe_component("-".join(p for p in parts if p), fallback="run")
