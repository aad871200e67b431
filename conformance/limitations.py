"""Checking a backend's declared limitations against the catalog when the backend loads.

A `Limitation`'s fields are globs over the same names an expectations file uses (pattern ids,
headline dtypes, case kinds, tensor data types). Two kinds of declaration stop the backend from
loading: `check_limitations` raises `BackendError` naming the limitation and the problem.

- A glob that can match nothing the suite draws (a misspelt pattern) would leave the cases it
  was meant to cover as failures without a word; the message names the field and the names it
  could have matched. The device kind is not checked against the catalog: it is the backend's
  own word for its devices.
- A set of limitations that together cover **every case of one case kind** in the whole catalog
  (``Limitation(r, pattern="*", case_kind="valid")``, or ``case_kind="[vn]*"``) would turn a
  backend that computes everything wrong into a PASS made of the cases it merely has to refuse.
  A case kind is covered when, for every pattern of the catalog and every headline dtype, some
  limitation matches it whatever the case's tensors are (it names no tensor dtype, or its
  tensor dtype globs match every data type) and whatever the device (it names no device kind,
  or the one of the device the backend runs on). This is the catalog-wide check; what a run
  actually judged is checked once it is over (`fusionspec.conformance.grade.emptiness`: a run
  that judged too few of its cases is incomplete, never a PASS).
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from fnmatch import fnmatchcase

from fusionspec.backend import BackendError, Limitation
from fusionspec.spec.catalog import CATALOG
from fusionspec.spec.dtypes import DataType

from .cases import CaseKind
from .selection import HEADLINE_DTYPES

__all__ = ["check_limitations", "covered_kinds"]

#: The data types a case's tensors can have.
_TYPES = frozenset(d.value for d in DataType if d is not DataType.undef)


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


def _unconditional(limitation: Limitation, device_kind: str | None) -> bool:
    """Whether `limitation` covers a case whatever its tensors and device are."""
    if limitation.device_kind and (device_kind is None or
                                   not fnmatchcase(device_kind, limitation.device_kind)):
        return False
    return not limitation.tensor_dtypes or all(
        any(fnmatchcase(t, glob) for glob in limitation.tensor_dtypes) for t in _TYPES)


def covered_kinds(limitations: Sequence[Limitation],
                  device_kind: str | None = None) -> list[tuple[str, list[Limitation]]]:
    """The case kinds every case of which, over the whole catalog, `limitations` cover (see the
    module docstring), each with the limitations that cover it."""
    found = []
    cells = [(entry.id, dtype) for entry in CATALOG for dtype in HEADLINE_DTYPES]
    for kind in CaseKind:
        users = [lim for lim in limitations if _unconditional(lim, device_kind)]

        def covering(cell: tuple[str, str], kind: str = kind.value,
                     users: list[Limitation] = users) -> list[Limitation]:
            return [lim for lim in users if lim.covers(
                pattern=cell[0], dtype=cell[1], device_kind=device_kind or "", case_kind=kind,
                tensor_dtypes=_TYPES)]

        by_cell = [covering(cell) for cell in cells]
        if all(by_cell):
            used = {id(lim) for found_here in by_cell for lim in found_here}
            found.append((kind.value, [lim for lim in users if id(lim) in used]))
    return found


def _describe(limitation: Limitation, number: int) -> str:
    fields = ", ".join(f"{name}={getattr(limitation, name)!r}" for name in (
        "pattern", "dtype", "device_kind", "case_kind", "tensor_dtypes")
        if getattr(limitation, name))
    return f"limitation {number} ({limitation.reason!r}: {fields})"


def check_limitations(limitations: object, *,
                      device_kind: str | None = None) -> tuple[Limitation, ...]:
    """The backend's ``limitations`` as a tuple, each checked (see the module docstring);
    `BackendError` lists every limitation that is not a `Limitation` or can match nothing, or
    names the case kind the set leaves without a single case to judge on a device of
    `device_kind` (None: the device is not known yet, so a limitation naming a device kind
    is taken to be conditional)."""
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
    covered = covered_kinds(found, device_kind)
    if covered:
        numbers = {id(lim): n for n, lim in enumerate(found, 1)}
        users = {id(lim): lim for _, used in covered for lim in used}
        kinds = [kind for kind, _ in covered]
        shown = ", ".join(_describe(lim, numbers[key]) for key, lim in sorted(
            users.items(), key=lambda item: numbers[item[0]]))
        raise BackendError(f"the backend declares limitations that cover every "
                           f"{' and every '.join(kinds)} case of the catalog ({shown}), so a "
                           "run could judge none of them and its PASS would say nothing about "
                           "the backend; declare the patterns, dtypes or tensor data types it "
                           "does not support instead")
    return found
