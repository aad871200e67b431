"""When a run shows nothing: the one rule that keeps an empty run from reading as a PASS.

A run whose selection matched no case (``pytest -k nomatch``), whose parts all came back empty,
or whose every case the backend declared unsupported (a catch-all `Limitation`) judged no case
as conforming: it says nothing about the backend, so `conform`, the pytest plugin, `merge` and
`diff` all call it incomplete, with the reason `shows_nothing` gives.

>>> shows_nothing([], [])
'no case was judged'
>>> shows_nothing([{"status": "unsupported"}], [])
'every case judged is declared unsupported by the backend, so no case was judged conforming'
>>> shows_nothing([{"status": "pass"}, {"status": "unsupported"}], []) is None
True
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from ..cases import Status

__all__ = ["shows_nothing"]


def shows_nothing(verdicts: Sequence[Any], skipped: Sequence[Any]) -> str | None:
    """Why a run with these verdict records and skipped cases shows nothing, or None when it
    judged some case other than as unsupported (skipped cases are not judged)."""
    if not verdicts:
        return "no case was judged" + (f" ({len(skipped)} skipped by the expectations file)"
                                       if skipped else "")
    statuses = {v.get("status") if isinstance(v, Mapping) else None for v in verdicts}
    if statuses == {Status.unsupported.value}:
        return ("every case judged is declared unsupported by the backend, so no case was "
                "judged conforming")
    return None
