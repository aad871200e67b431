"""How much memory running a graph takes, estimated from its shapes, and the budget that bounds it.

The reference holds every tensor of a graph at once (inputs, intermediates, outputs) in its
storage type, and computes in f32 with f64 scratch for the ops that need it, so a graph's
footprint is about twice the bytes of all its tensors. `check_budget` refuses a graph whose
estimate exceeds the budget with a `MemoryBudgetError` that names both, before anything is
allocated: a graph file naming a ``[1000000, 1000000, 1000]`` tensor ends in one clean line,
not in a MemoryError or an exhausted machine.

The default budget is `DEFAULT_BUDGET` bytes, or ``$FUSIONSPEC_MEMORY_BUDGET`` (in GB) when set;
``fusionspec run --max-memory GB`` overrides both.
"""

from __future__ import annotations

import math
import os

from fusionspec.spec.graph import Graph, LogicalTensor

from .dtypes import numpy_dtype
from .errors import MemoryBudgetError

__all__ = ["DEFAULT_BUDGET", "BUDGET_ENV", "tensor_bytes", "graph_bytes", "budget",
           "check_budget"]

#: 4 GiB: far above any graph of the suite, far below what exhausts a small machine.
DEFAULT_BUDGET = 4 * 2**30
BUDGET_ENV = "FUSIONSPEC_MEMORY_BUDGET"
#: Working copies and scratch next to the tensors themselves.
_OVERHEAD = 2


def tensor_bytes(tensor: LogicalTensor) -> int:
    """Bytes of `tensor` in its storage type (an unknown dim counts as 1)."""
    shape = tensor.shape or ()
    return math.prod(max(d, 1) for d in shape) * numpy_dtype(tensor.dtype).itemsize


def graph_bytes(graph: Graph) -> int:
    """The estimated peak memory of running `graph` (see the module docstring)."""
    return _OVERHEAD * sum(tensor_bytes(t) for t in graph.tensors.values())


def budget(gigabytes: float | None = None) -> int:
    """The budget in bytes: `gigabytes` when given, else the environment's, else the default."""
    if gigabytes is None:
        configured = os.environ.get(BUDGET_ENV, "").strip()
        try:
            gigabytes = float(configured) if configured else None
        except ValueError:
            gigabytes = None
    return DEFAULT_BUDGET if gigabytes is None else int(gigabytes * 2**30)


def check_budget(graph: Graph, limit: int) -> None:
    """Raise `MemoryBudgetError` when running `graph` needs more than `limit` bytes."""
    needed = graph_bytes(graph)
    if needed > limit:
        raise MemoryBudgetError(f"running this graph needs about {_gb(needed)} of memory, "
                                f"more than the budget of {_gb(limit)} (raise it with "
                                f"--max-memory or {BUDGET_ENV})")


def _gb(size: int) -> str:
    return f"{size / 2**30:.3g} GB"
