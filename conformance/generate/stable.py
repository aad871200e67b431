"""Draws that depend on their seed alone, not on which modules happen to be loaded.

Hypothesis now and then draws a *constant* instead of a random value. Beside its own constants
it collects the literals of every "local" module loaded at the time (any module outside the
standard library and site-packages). So the same strategy under the same seed draws different
values depending on where fusionspec is installed (an editable checkout counts as local, a
wheel in site-packages does not), on which commands and plugins were imported before the draw
(``fusionspec conform`` and the pytest plugin load different modules), and on the literals in
those modules' sources. Case ids would then differ between a checkout and CI, and between the
command line and pytest, for the same profile and seed.

`source_independent` turns the local constants off around a draw, leaving Hypothesis' own
constants and generation as they are: a draw then gives what an installed fusionspec gives
everywhere. It reaches into Hypothesis' provider module; when a Hypothesis release no longer has
the hook it patches, nothing is patched, and the suite's test that draws with and without
extra local modules loaded says whether draws are still independent of them.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any

from hypothesis.internal.conjecture import providers

__all__ = ["source_independent"]


def _no_local_constants() -> Any:
    return getattr(providers, "Constants")()  # noqa: B009


#: How many blocks are open: only the outermost one patches and restores. Counted rather than
#: read off the hook, so that a test which swaps `_no_local_constants` for Hypothesis' own
#: hook (the guard switched off) still gets a cleared cache around its draw.
_depth = 0


@contextmanager
def source_independent() -> Iterator[None]:
    """Draw inside this block with no constants taken from loaded modules' sources.

    Blocks nest: an inner one leaves the outer one's setting and Hypothesis' cache of allowed
    constants as they are, so a draw of many Hypothesis runs (a floor's designed cases) fills
    that cache once instead of once per run. What the cache holds inside a block depends only
    on the choice asked for, so keeping it changes no draw."""
    global _depth
    hook: Callable[[], Any] | None = getattr(providers, "_get_local_constants", None)
    cache = getattr(providers, "CONSTANTS_CACHE", None)
    if hook is None or not hasattr(providers, "Constants") or _depth:
        yield
        return
    setattr(providers, "_get_local_constants", _no_local_constants)  # noqa: B010
    # The allowed constants are cached per choice type with the local ones folded in.
    if cache is not None:
        cache.cache.clear()
    _depth += 1
    try:
        yield
    finally:
        _depth -= 1
        setattr(providers, "_get_local_constants", hook)  # noqa: B010
        if cache is not None:
            cache.cache.clear()
