"""Spec coverage per op kind: how much of the coverage model the runs' cases drew.

The coverage model's items are keyed ``Kind.facet`` (``SoftPlus.beta`` -> ``negative``,
``SoftMax.output stats`` -> ``present``, ``ReduceProd.rank`` -> ``1``, ``ReduceProd.narrow
fill`` -> ``f16 inexact``; see `fusionspec.conformance.generate.model`). They
reach the report twice: as required data (each pattern's required items, handed in by the
``report`` command) and as what each case recorded (each pattern's ``coverage`` in a results
document). This module gathers them across patterns and runs, per op kind: an item counts as
exercised when any case of any run drew it, whichever pattern held the op.

>>> rows = op_coverage([{"SoftPlus.beta": {"negative,one": 2}}],
...                    {"p": [("SoftPlus.beta", "negative"), ("SoftPlus.beta", "zero"),
...                           ("dtype_row", "f32")]})
>>> rows[0].kind, rows[0].exercised, rows[0].required, rows[0].missing
('SoftPlus', 1, 2, ('beta = zero',))
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from .coverage import Required, percent, split_counts

__all__ = ["OpCoverage", "op_coverage"]


@dataclass(frozen=True)
class OpCoverage:
    """One op kind's line: its required model items, how many were drawn, and the others."""

    kind: str
    required: int
    exercised: int
    missing: tuple[str, ...]
    #: The ranks of its first input that some case drew (the model's ``K.rank`` items).
    ranks: tuple[str, ...] = ()

    @property
    def share(self) -> str:
        return percent(self.exercised, self.required)


def _op_kind(feature: str) -> str | None:
    """The op kind of a model feature (``SoftMax.axis`` -> ``SoftMax``); None for the
    grammar's and the generator's own features."""
    kind, dot, _ = feature.partition(".")
    return kind if dot and kind[:1].isupper() and kind.isalnum() else None


def op_coverage(observed: Sequence[Mapping[str, Mapping[str, int]]],
                required: Mapping[str, Required]) -> tuple[OpCoverage, ...]:
    """Per op kind (sorted), the model items `required` by any pattern and how many of them
    the `observed` coverages (one per pattern and run) drew."""
    drawn = {(feature, value) for coverage in observed
             for feature, values in split_counts(coverage).items()
             for value, count in values.items() if count > 0}
    wanted: dict[str, set[tuple[str, str]]] = {}
    for items in required.values():
        for feature, value in items:
            kind = _op_kind(feature)
            if kind is not None:
                wanted.setdefault(kind, set()).add((feature, value))
    rows = []
    for kind, needed in sorted(wanted.items()):
        missing = sorted(needed - drawn)
        ranks = sorted((v for f, v in drawn if f == f"{kind}.rank"), key=lambda v: (len(v), v))
        rows.append(OpCoverage(kind, len(needed), len(needed) - len(missing), tuple(
            f"{feature.split('.', 1)[1]} = {value}" for feature, value in missing),
            tuple(ranks)))
    return tuple(rows)
