"""Which catalog workloads a bench script measures: the ones its --workload globs name, its
own defaults without any, or every one with --all (the same rule as `fusionspec bench`)."""

from __future__ import annotations

from collections.abc import Sequence
from fnmatch import fnmatchcase

from fusionspec.conformance.perf.workloads import WORKLOADS, Workload


def chosen(globs: list[str] | None, everything: bool, defaults: Sequence[str]) -> list[Workload]:
    """The workloads `globs` select (`defaults` without any), or all with `everything`."""
    if everything:
        return list(WORKLOADS)
    patterns = globs or list(defaults)
    found = [w for w in WORKLOADS if any(fnmatchcase(w.id, g) for g in patterns)]
    if not found:
        raise SystemExit(f"--workload {','.join(patterns)} matches no workload "
                         "(see fusionspec bench --list)")
    return found
