"""Known departures a backend declares: where it knowingly differs from the spec pages.

A backend lists its `Departure` records as ``departures`` (a sequence, like ``limitations``).
Each one is data: what it matches (verdict statuses, pattern and rule globs, op kinds with
optional attribute values or input counts, dtypes, the cut of a fusion, partitions marked
unsupported, error kinds and the structured fields of the backend's error) and what it says
(its statement, its source, and its label in findings).
A numeric departure names a ``substitute`` instead: an alternative semantics the suite knows
by that name (``select-max``, ``flush-subnormals``; see docs/writing-a-backend.md), under which
the suite re-runs the reference to see whether it reproduces the backend's values.

The suite matches departures when it grades a case, from the verdict's facts and the case
graph; the verdict records the ids and statements it matched, and findings take them from
there. Departures travel from a worker process as plain data (`departure_data`), and are
rebuilt and checked in the runner (`fusionspec.backend.checks.checked_departures`).

`error_fields(exc)` is the structured description an exception may carry as ``fields`` (a
mapping of short strings, such as the API call, its status and the op kind): grading and
departures read these fields, never the exception's message.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

__all__ = ["Departure", "OpMatch", "LABELS", "departure_data", "error_fields", "FIELD_LIMIT",
           "MAX_FIELDS"]

#: How a finding that a departure explains is labelled.
LABELS = ("Known departure", "Limitation", "Bug", "Note")
#: The most structured fields an error carries, and the longest value kept.
MAX_FIELDS, FIELD_LIMIT = 16, 200


@dataclass(frozen=True)
class OpMatch:
    """An op of the case graph: its kind, and optionally attribute values it must have
    (compared as text, so ``("mode", "gelu_tanh")`` or ``("rounding_type", "ceil")``)."""

    kind: str
    attrs: tuple[tuple[str, str], ...] = ()
    #: How many inputs the op has (a base op with its own bias has one more), if it matters.
    inputs: int | None = None

    def matches(self, kind: str, attrs: Mapping[str, object], inputs: int) -> bool:
        return kind == self.kind and self.inputs in (None, inputs) and all(
            name in attrs and _text(attrs[name]) == value for name, value in self.attrs)


def _text(value: object) -> str:
    if isinstance(value, bool):
        return str(value).lower()
    if isinstance(value, (list, tuple)):
        return ",".join(_text(v) for v in value)
    return str(value)


@dataclass(frozen=True)
class Departure:
    """One known departure (see the module docstring). Every matcher given must hold; an
    empty matcher holds for any case. `cut` is the kinds either side of the first place where
    the backend split a partition the spec promises (``"*"`` for any kind, ``"(graph input)"``
    where the formed partition starts one the spec extends further back)."""

    id: str
    statement: str
    source: str = ""
    label: str = "Known departure"
    #: Verdict statuses (`fusionspec.backend.status.Status`, or their names as strings).
    statuses: tuple[str, ...] = ()
    patterns: tuple[str, ...] = ()
    #: Globs over the rule id the case names (near misses and ill-formed cases name one).
    rules: tuple[str, ...] = ()
    ops: tuple[OpMatch, ...] = ()
    dtypes: tuple[str, ...] = ()
    cut: tuple[str, str] | None = None
    unsupported: tuple[str, ...] = ()
    error_kinds: tuple[str, ...] = ()
    error_fields: tuple[tuple[str, str], ...] = ()
    substitute: str | None = None
    #: Free-form (name, text) facts the suite ignores (kept in the results document).
    notes: tuple[tuple[str, str], ...] = ()

    @property
    def matchers(self) -> tuple[object, ...]:
        """What the departure matches on (a departure must name at least one)."""
        return (self.statuses, self.patterns, self.rules, self.ops, self.dtypes, self.cut,
                self.unsupported, self.error_kinds, self.error_fields, self.substitute)


def departure_data(departure: Departure) -> dict[str, Any]:
    """`departure` as plain data (what a worker sends and a results document records)."""
    return {"id": departure.id, "statement": departure.statement, "source": departure.source,
            "label": departure.label, "statuses": [str(s) for s in departure.statuses],
            "patterns": list(departure.patterns), "rules": list(departure.rules),
            "ops": [{"kind": o.kind, "attrs": [list(a) for a in o.attrs], "inputs": o.inputs}
                    for o in departure.ops],
            "dtypes": list(departure.dtypes),
            "cut": list(departure.cut) if departure.cut is not None else None,
            "unsupported": list(departure.unsupported),
            "error_kinds": list(departure.error_kinds),
            "error_fields": [list(f) for f in departure.error_fields],
            "substitute": departure.substitute, "notes": dict(departure.notes)}


def error_fields(exc: BaseException) -> dict[str, str]:
    """The structured fields `exc` carries as ``fields`` (short strings), or {}."""
    said = getattr(exc, "fields", None)
    if not isinstance(said, Mapping):
        return {}
    return {str(k)[:FIELD_LIMIT]: str(v)[:FIELD_LIMIT]
            for k, v in list(said.items())[:MAX_FIELDS] if isinstance(v, (str, int))}
