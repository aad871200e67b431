"""Which of a backend's declared known departures a verdict shows.

`matching_departures(departures, case, status, details)` tests each `fusionspec.backend.
Departure` against the verdict's facts (``details["facts"]``, `fusionspec.conformance.grade.
facts`), the names of the substitutes that reproduced a numeric mismatch
(``details["reproduced"]``) and the case itself (its pattern, its rule, its graph's ops and
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

__all__ = ["matching_departures", "departure_matches"]

_CATEGORIES: Mapping[str, frozenset[str]] = {"Unary": frozenset(UNARY),
                                             "Binary": frozenset(BINARY)}


def _side(want: str, kind: object) -> bool:
    return want in ("*", kind) or kind in _CATEGORIES.get(want, frozenset())


def _mapping(value: object) -> Mapping[str, object]:
    return value if isinstance(value, Mapping) else {}


def departure_matches(departure: Departure, case: Case, status: Status,
                      details: Mapping[str, object]) -> bool:
    """Whether `departure` explains the verdict `status` with `details` on `case`."""
    facts = _mapping(details.get("facts"))
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
        cut = _mapping(facts.get("cut"))
        if not cut or not (_side(departure.cut[0], cut.get("before"))
                           and _side(departure.cut[1], cut.get("after"))):
            return False
    if departure.unsupported:
        kinds = facts.get("kinds") if facts.get("what") == "unsupported" else None
        if not isinstance(kinds, list) or not set(kinds) & set(departure.unsupported):
            return False
    if departure.error_kinds and facts.get("kind") not in departure.error_kinds:
        return False
    if departure.error_fields:
        fields = _mapping(facts.get("fields"))
        if not all(fields.get(name) == value for name, value in departure.error_fields):
            return False
    if departure.substitute is not None:
        reproduced = details.get("reproduced")
        if not isinstance(reproduced, list) or departure.substitute not in reproduced:
            return False
    return True


def matching_departures(departures: Sequence[Departure], case: Case, status: Status,
                        details: Mapping[str, object]) -> list[dict[str, str]]:
    """What the verdict records of the `departures` it shows (see the module docstring)."""
    return [{"id": d.id, "statement": d.statement, "source": d.source, "label": d.label}
            for d in departures if departure_matches(d, case, status, details)]
