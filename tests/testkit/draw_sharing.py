"""What the processes of tests/conformance/test_shared_draws.py run: each a separate process
standing for another run on the same cache folder. They live here, not in the test module, so
that a spawned process can import them by name (pytest imports test modules by path)."""

from __future__ import annotations

import multiprocessing.queues
import multiprocessing.synchronize
import os
from pathlib import Path

from fusionspec.conformance import draw_cache, suite
from fusionspec.conformance.cache_files import folder_key
from fusionspec.conformance.cases import CaseKind
from fusionspec.conformance.selection import Selection
from fusionspec.conformance.suite import PROFILES
from fusionspec.spec.catalog import entry as catalog_entry

PATTERN = "fp.bn_relu"
CI = PROFILES["ci"]
#: How long a helper process may wait for the others: far more than it needs.
START_S = 120.0


def first_draw() -> suite._Draw:
    """A near-miss draw of one rule: a few cases, drawn in well under a second."""
    return suite._draws(catalog_entry(PATTERN), CaseKind.near_miss, CI, Selection())[0]


def shared_draws() -> list[suite._Draw]:
    """Near-miss draws of two patterns: enough draws for drawing processes, a few cases
    each."""
    return [d for p in (PATTERN, "fp.unary_binary")
            for d in suite._draws(catalog_entry(p), CaseKind.near_miss, CI, Selection())]


def key_of(folder: str, start: multiprocessing.synchronize.Barrier) -> bytes:
    """The folder's key, asked for once every process is ready."""
    start.wait(START_S)
    return folder_key(Path(folder))


def hold(key: str, cache_env: str, held: multiprocessing.synchronize.Event,
         release: multiprocessing.synchronize.Event) -> None:
    """Claim the draw of `key`, say so through `held`, keep it until `release`."""
    os.environ["FUSIONSPEC_DRAW_CACHE"] = cache_env
    with draw_cache.claim(key, wait=True) as mine:
        if not mine:
            raise SystemExit(2)
        held.set()
        release.wait(START_S)


def plan_ids(cache_env: str, start: multiprocessing.synchronize.Barrier, index: int,
             out: multiprocessing.queues.Queue[tuple[int, list[str]]]) -> None:
    """Draw `shared_draws` with two drawing processes once every run is ready; the case ids,
    in order, go to `out` under `index`."""
    os.environ["FUSIONSPEC_DRAW_CACHE"] = cache_env
    draws = shared_draws()
    start.wait(START_S)
    out.put((index, [case.id for cases in suite._drawn(draws, CI, 0, None, jobs=2)
                     for case in cases]))
