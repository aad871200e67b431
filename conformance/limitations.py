"""Checking a backend's declared limitations against the catalog when the backend loads.

A `Limitation`'s fields are globs over the same names an expectations file uses (pattern ids,
headline dtypes, case kinds, tensor data types). A glob that can match nothing the suite draws
would leave the cases it was meant to cover as failures without a word, so a backend declaring
one does not load: `check_limitations` raises `BackendError` naming the limitation, the field
and the names it could have matched. The device kind is not checked: it is the backend's own
word for its devices.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from fnmatch import fnmatchcase

from fusionspec.backend import BackendError, Limitation
from fusionspec.spec.catalog import CATALOG
from fusionspec.spec.dtypes import DataType

from .cases import CaseKind
from .selection import HEADLINE_DTYPES

__all__ = ["check_limitations"]


def _known() -> dict[str, tuple[str, ...]]:
    return {"pattern": tuple(e.id for e in CATALOG), "dtype": HEADLINE_DTYPES,
            "case_kind": tuple(k.value for k in CaseKind),
            "tensor_dtypes": tuple(d.value for d in DataType)}


def _shown(names: Sequence[str]) -> str:
    return ", ".join(names) if len(names) <= 10 else ", ".join(names[:10]) + ", ..."


def _problems(limitation: Limitation, known: dict[str, tuple[str, ...]]) -> Iterable[str]:
    for field, names in known.items():
        value = getattr(limitation, field)
        globs = (value,) if isinstance(value, str) else tuple(value or ())
        for glob in globs:
            if not isinstance(glob, str) or not any(fnmatchcase(n, glob) for n in names):
                yield f"{field}={glob!r} matches no {field.replace('_', ' ')} of the suite " \
                      f"(known: {_shown(names)})"


def check_limitations(limitations: object) -> tuple[Limitation, ...]:
    """The backend's ``limitations`` as a tuple, each checked (see the module docstring);
    `BackendError` lists every limitation that is not a `Limitation` or can match nothing."""
    found = tuple(limitations or ()) if isinstance(limitations, Iterable) else (limitations,)
    known = _known()
    problems: list[str] = []
    for number, limitation in enumerate(found, 1):
        if not isinstance(limitation, Limitation):
            problems.append(f"limitation {number} is a {type(limitation).__name__}, not a "
                            "fusionspec.backend.Limitation")
            continue
        problems += [f"limitation {number} ({limitation.reason!r}): {problem}"
                     for problem in _problems(limitation, known)]
    if problems:
        raise BackendError("the backend declares limitations that cover no case: "
                           + "; ".join(problems))
    return found
