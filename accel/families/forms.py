"""Which kernel form a partition gets: the table form or the specialised one.

``form="table"`` takes the table form wherever it fits, ``"specialised"`` never, and ``"auto"``
(the backend's default) for kernels of at most `TABLE_LIMIT` elements (multiply-adds for a
GEMM). Below that a kernel runs in microseconds either way and the 0.1-0.3 s a specialised
program costs to build is the whole price of a case; above it the specialised kernel's
straight-line code is what matters (the benchmarks' problems are far above it).

A main op's table form also reads its source through index maps computed on the host
(`fusionspec.accel.families.table_gather`), one int32 per entry, so the form further needs its
largest map within `MAP_LIMIT` entries. `table_form` is the one place that decides, and
`build_in_form` the one way a family acts on it: a family first validates its partition (the
checks both forms share, so both reject the same partitions with the same errors), then hands
its sizes and one builder per form to `build_in_form`, which runs only the builder of the form
it decides on. A table form that cannot hold the partition after all (more slots, registers
or axes than its interpreter has; one launch cannot cover the domain) says so with None, and
the specialised form is built instead.
"""

from __future__ import annotations

from collections.abc import Callable

from ..plan import KernelPlan
from .base import BuildContext

__all__ = ["FORMS", "TABLE_LIMIT", "MAP_LIMIT", "table_form", "build_in_form"]

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


def build_in_form(ctx: BuildContext, work: int, map_entries: int, *,
                  table: Callable[[], KernelPlan | None],
                  specialised: Callable[[], KernelPlan]) -> KernelPlan:
    """The plan of a validated partition in the form `table_form` takes for `work` and
    `map_entries`: `table`'s where it takes the table form and `table` fits (not None), else
    `specialised`'s. Only the builder of that form runs."""
    if table_form(ctx, work, map_entries):
        plan = table()
        if plan is not None:
            return plan
    return specialised()
