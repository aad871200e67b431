"""The reference's side of judging a well-formed case, computed apart from the backend's.

Judging a valid or near-miss case costs the reference about as much as the backend: it
finalizes the graph, partitions it, fills the inputs, executes it (keeping the intermediates
for the diagnosis) and bounds the error of every output. None of that depends on the backend,
only on the case and the seed, so `prepare` computes it ahead, in another process where the
run has several cores (`fusionspec.conformance.workers.ahead`), and `judge` takes it instead of
computing it. The error bounds kept here are those of the reference's own partitioning; where
the backend's partitions round an intermediate the reference keeps in f32 (or the other way),
`judge` bounds the errors again for that case.

A preparation is an optimisation only: a case it could not prepare (the reference failed on it,
or the process computing it died) is judged as before, and the reference's failure is reported
there.
"""

from __future__ import annotations

from dataclasses import dataclass

from fusionspec.reference import execute, fill_inputs
from fusionspec.reference.partitioner import partition
from fusionspec.spec.graph import Graph, Partition
from fusionspec.spec.types import Array

from ..cases import Case, CaseKind
from .bounds import error_bounds

__all__ = ["Prepared", "prepare"]


@dataclass(frozen=True)
class Prepared:
    """The reference's side of a case's verdict (see the module docstring)."""

    case_id: str
    seed: int
    #: The case graph, finalized.
    graph: Graph
    #: The reference's partitions of `graph`.
    expected: tuple[Partition, ...]
    #: The input arrays filled from the seed, by tensor id.
    inputs: dict[int, Array]
    #: The reference's value of every tensor (intermediates included), by tensor id.
    reference: dict[int, Array]
    #: The error radius of every tensor under the reference's own partitioning.
    radii: dict[int, Array]

    def serves(self, case: Case, seed: int) -> bool:
        """Whether this preparation is the one `case` judged with `seed` needs."""
        return self.case_id == case.id and self.seed == seed


def prepare(case: Case, seed: int) -> Prepared | None:
    """The reference's side of `case` with inputs filled from `seed`; None for an ill-formed
    case (nothing to compute) or where the reference fails (judging reports that)."""
    if case.kind is CaseKind.ill_formed:
        return None
    try:
        graph = case.graph.finalize()
        expected = tuple(partition(graph))
        inputs = fill_inputs(graph, seed, case.values)
        reference = execute(graph, inputs, keep_intermediates=True)
        radii = error_bounds(graph, inputs, expected)
    except Exception:  # judged afresh, where the failure becomes the verdict's reason
        return None
    return Prepared(case.id, seed, graph, expected, dict(inputs), dict(reference), radii)
