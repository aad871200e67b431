"""Which kernel form a partition gets: the table form or the specialised one.

``form="table"`` takes the table form wherever it fits, ``"specialised"`` never, and ``"auto"``
(the backend's default) for kernels of at most `TABLE_LIMIT` elements (multiply-adds for a
GEMM). Below that a kernel runs in microseconds either way and the 0.1-0.3 s a specialised
program costs to build is the whole price of a case; above it the specialised kernel's
straight-line code is what matters (the benchmarks' problems are far above it).

A main op's table form also reads its source through index maps computed on the host
(`fusionspec.accel.families.table_gather`), one int32 per entry, so the form further needs its
largest map within `MAP_LIMIT` entries. `table_form` is the one place that decides; every
family asks it with its own sizes before building anything.
"""

from __future__ import annotations

from .base import BuildContext

__all__ = ["FORMS", "TABLE_LIMIT", "MAP_LIMIT", "table_form"]

#: The kernel forms a backend can be asked for.
FORMS = ("auto", "table", "specialised")
#: The largest domain (elements) that ``form="auto"`` runs in the table form.
TABLE_LIMIT = 1 << 20
#: The largest index map (entries) the table form makes; a larger problem keeps its
#: specialised kernels.
MAP_LIMIT = 1 << 20


def table_form(ctx: BuildContext, work: int, map_entries: int = 0) -> bool:
    """Whether a kernel of `work` elements (multiply-adds for a GEMM) whose table form needs
    index maps of at most `map_entries` entries takes the table form under ``ctx.form``."""
    if map_entries > MAP_LIMIT:
        return False
    if ctx.form == "table":
        return True
    return ctx.form == "auto" and work <= TABLE_LIMIT
