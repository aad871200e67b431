"""When a run shows too little: the one rule that keeps a hollow run from reading as a PASS.

A case the backend declares unsupported (a `Limitation`) is not judged: it neither passes nor
fails. A run is **incomplete** (exit 1, never a PASS; its document's ``incomplete`` says why)
when what it judged falls below this floor:

- it judged no case at all (a selection that matched nothing, parts that all came back empty),
  or every case it ran is unsupported;
- some case kind it ran (valid, near-miss, ill-formed) has no judged case: every valid case
  unsupported means the backend's arithmetic was never checked, and a PASS made of the cases
  it merely had to refuse says nothing about it;
- fewer than `MIN_JUDGED_FRACTION` (a quarter) of the cases it ran were judged.

A backend that declares a few patterns or dtypes unsupported stays well above the floor; one
that supports only a small part of the catalog passes once the run selects that part
(``--patterns``, ``--dtype``, ``--kinds``). Cases an expectations file skips are not run and
are not counted. `conform`, the pytest plugin, `merge` and `diff` all apply this rule, a shard
to its own cases.

>>> shows_nothing([], [])
'no case was judged'
>>> shows_nothing([{"status": "unsupported"}], [])
'every case judged is declared unsupported by the backend, so no case was judged conforming'
>>> shows_nothing([{"status": "pass"}, {"status": "unsupported"}], []) is None
True
>>> print(shows_nothing([{"status": "pass", "kind": "near-miss"},
...                      {"status": "unsupported", "kind": "valid"}], []))
every valid case (1) is declared unsupported by the backend, so no valid case was judged
>>> print(shows_nothing([{"status": "pass"}] + [{"status": "unsupported"}] * 4, [])[:36])
only 1 of the 5 cases run was judged
>>> shows_nothing([{"status": "pass"}] + [{"status": "unsupported"}] * 3, []) is None
True
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Mapping, Sequence
from typing import Any

from ..cases import CaseKind, Status

__all__ = ["shows_nothing", "MIN_JUDGED_FRACTION"]

#: The least share of the cases a run ran that it must judge (not unsupported) to PASS.
MIN_JUDGED_FRACTION = 0.25


def _status_and_kind(verdict: object) -> tuple[object, object]:
    """A verdict line's status and case kind, from a `VerdictLine` or its JSON object."""
    if isinstance(verdict, Mapping):
        return verdict.get("status"), verdict.get("kind")
    return getattr(verdict, "status", None), getattr(verdict, "kind", None)


def shows_nothing(verdicts: Sequence[Any], skipped: Sequence[Any]) -> str | None:
    """Why a run with these verdict lines (`VerdictLine` records or their JSON objects) and
    skipped cases falls below the floor of the module docstring, or None when it does not
    (skipped cases are not run)."""
    if not verdicts:
        return "no case was judged" + (f" ({len(skipped)} skipped by the expectations file)"
                                       if skipped else "")
    unsupported = Status.unsupported.value
    records = [_status_and_kind(v) for v in verdicts]
    if all(status == unsupported for status, _ in records):
        return ("every case judged is declared unsupported by the backend, so no case was "
                "judged conforming")
    ran = Counter(kind for _, kind in records)
    judged = Counter(kind for status, kind in records if status != unsupported)
    for kind in CaseKind:
        if ran[kind.value] and not judged[kind.value]:
            return (f"every {kind.value} case ({ran[kind.value]}) is declared unsupported by "
                    f"the backend, so no {kind.value} case was judged")
    total = sum(judged.values())
    if total < MIN_JUDGED_FRACTION * len(records):
        return (f"only {total} of the {len(records)} cases run "
                f"{'was' if total == 1 else 'were'} judged (the backend declares the others "
                "unsupported); a run must judge at least a quarter of its cases: select what "
                "the backend supports (--patterns, --dtype, --kinds)")
    return None
