"""A backend's answers as the suite holds them: data, never the backend's own objects.

What a backend raised is a `Failure` (its type, message, rule id, whether the backend declares
it a rejection, the end of its traceback, its structured fields), built by `describe_exception`
wherever the exception is caught: in a worker process, or in the grading process for a backend
run in-process. What it returned that the suite does not take is a `Foreign`. Grading reads
these records; the worker protocol (`fusionspec.conformance.transport`) carries them.
"""

from __future__ import annotations

import reprlib
import traceback
from collections.abc import Sequence
from dataclasses import dataclass, field

from fusionspec.backend import error_fields
from fusionspec.spec.errors import GraphError

__all__ = ["Failure", "Foreign", "BackendFailure", "Abandoned", "clip", "describe_exception",
           "short_traceback", "rejection_types", "TRACEBACK_LINES"]

#: How many lines of a backend's traceback a failure keeps.
TRACEBACK_LINES = 8


@dataclass(frozen=True)
class Failure:
    """An exception a backend raised, described (the runner never unpickles the exception)."""

    stage: str
    type_name: str
    message: str
    rule: str | None = None
    is_rejection: bool = False
    traceback: str = ""
    #: For a backend without a usable device (stage "unavailable"): why.
    reason: str = ""
    #: The structured fields the exception carries (`fusionspec.backend.error_fields`): the
    #: API call, its status, the op kind; plain strings, read instead of the message.
    fields: dict[str, str] = field(default_factory=dict)


@dataclass(frozen=True)
class Foreign:
    """An object of a type the suite does not take (where a backend returned something other
    than a partition or an array): its type and a short repr."""

    type_name: str
    text: str

    @staticmethod
    def of(obj: object) -> Foreign:
        # reprlib bounds the depth and width it shows, so a structure shared a billion times
        # over costs a few hundred characters, not a hang.
        return Foreign(type(obj).__name__, clip(reprlib.repr(obj), 200))


class BackendFailure(Exception):
    """Raised in the runner for a backend call that failed in the worker: carries the
    `Failure` the worker described (grading reads it as it would read the exception)."""

    def __init__(self, failure: Failure) -> None:
        super().__init__(failure.message)
        self.failure = failure


class Abandoned(Exception):
    """A diagnosis after the verdict (culprit isolation) ran out of its time or lost the
    worker: the runner stopped the worker and the verdict stands without the diagnosis."""


def clip(text: str, limit: int) -> str:
    """`text`, cut to `limit` characters with a note saying how much was left out."""
    if len(text) <= limit:
        return text
    return f"{text[:limit]} ... ({len(text) - limit} more characters cut)"


def rejection_types(backend: object) -> tuple[type[BaseException], ...]:
    """GraphError plus the exception types the backend declares as rejections."""
    declared = getattr(backend, "rejection_errors", ()) or ()
    extra = tuple(t for t in declared if isinstance(t, type) and issubclass(t, BaseException))
    return (GraphError, *extra)


def short_traceback(exc: BaseException) -> str:
    """The last `TRACEBACK_LINES` lines of `exc`'s traceback."""
    lines = "".join(traceback.format_exception(exc)).rstrip().splitlines()
    return "\n".join(lines[-TRACEBACK_LINES:])


def describe_exception(stage: str, exc: BaseException,
                       rejections: Sequence[type[BaseException]] = (),
                       message_limit: int | None = None) -> Failure:
    """`exc`, raised by a backend at `stage`, as a `Failure`; a rejection when it is one of
    `rejections`. A backend that calls ``sys.exit`` is described as having done so."""
    rule = getattr(exc, "rule", None)  # a str subclass (`GraphRule`) sent as a plain str
    text = f"the backend called sys.exit({exc.code!r})" if isinstance(exc, SystemExit) \
        else str(exc)
    return Failure(stage=stage, type_name=type(exc).__name__,
                   message=text if message_limit is None else clip(text, message_limit),
                   rule=str(rule) if isinstance(rule, str) else None,
                   is_rejection=isinstance(exc, tuple(rejections)),
                   traceback=short_traceback(exc), fields=error_fields(exc))
