"""Which of a backend's declared known departures a verdict shows.

`matching_departures(departures, case, status, details)` tests each `fusionspec.backend.
Departure` against the verdict's facts (`Details.facts`, `fusionspec.conformance.grade.
details`), the names of the substitutes that reproduced a numeric mismatch
(`Details.reproduced`) and the case itself (its pattern, its rule, its graph's ops and
dtypes), and returns what the verdict records of those that match: id, statement, source
and label. Every matcher a departure gives must hold; within one matcher, any listed value
will do. A cut side matches its kind, ``*``, or the name of a category holding the kind
(``Unary``, ``Binary``).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from fnmatch import fnmatchcase

from fusionspec.backend import Departure
from fusionspec.spec.categories import BINARY, UNARY

from ..cases import Case, Status
from .details import (
    DepartureRef,
    Details,
    ErrorFacts,
    FusionFacts,
    RejectionFacts,
    UnsupportedFacts,
)

__all__ = ["matching_departures", "departure_matches"]

_CATEGORIES: Mapping[str, frozenset[str]] = {"Unary": frozenset(UNARY),
                                             "Binary": frozenset(BINARY)}


def _side(want: str, kind: str) -> bool:
    return want in ("*", kind) or kind in _CATEGORIES.get(want, frozenset())


def departure_matches(departure: Departure, case: Case, status: Status,
                      details: Details) -> bool:
    """Whether `departure` explains the verdict `status` with `details` on `case`."""
    facts = details.facts
    raised = facts if isinstance(facts, RejectionFacts | ErrorFacts) else None
    if departure.statuses and status.value not in departure.statuses:
        return False
    if departure.patterns and not any(fnmatchcase(case.pattern, g) for g in departure.patterns):
        return False
    if departure.rules and not any(fnmatchcase(case.rule or "", g) for g in departure.rules):
        return False
    if departure.ops and not any(m.matches(op.kind, op.attrs, len(op.inputs))
                                 for op in case.graph.ops for m in departure.ops):
        return False
    if departure.dtypes:
        dtypes = {case.dtype} | {t.dtype.value for op in case.graph.ops
                                 for t in (*op.inputs, *op.outputs)}
        if not dtypes & set(departure.dtypes):
            return False
    if departure.cut is not None:
        cut = facts.cut if isinstance(facts, FusionFacts) else None
        if cut is None or not (_side(departure.cut[0], cut.before)
                               and _side(departure.cut[1], cut.after)):
            return False
    if departure.unsupported:
        kinds = facts.kinds if isinstance(facts, UnsupportedFacts) else []
        if not set(kinds) & set(departure.unsupported):
            return False
    if departure.error_kinds and (raised is None or raised.kind not in departure.error_kinds):
        return False
    if departure.error_fields:
        fields = (raised.fields if raised is not None else None) or {}
        if not all(fields.get(name) == value for name, value in departure.error_fields):
            return False
    return departure.substitute is None or departure.substitute in (details.reproduced or ())


def matching_departures(departures: Sequence[Departure], case: Case, status: Status,
                        details: Details) -> list[DepartureRef]:
    """What the verdict records of the `departures` it shows (see the module docstring)."""
    return [DepartureRef(id=d.id, statement=d.statement, source=d.source, label=d.label)
            for d in departures if departure_matches(d, case, status, details)]
