"""A backend's answers as the suite holds them: data, never the backend's own objects.

What a backend raised is a `Failure` (its type, message, rule id, whether the backend declares
it a rejection, the end of its traceback, its structured fields), built by `describe_exception`
wherever the exception is caught: in a worker process, or in the grading process for a backend
run in-process. What it returned that the suite does not take is a `Foreign`. Grading reads
these records; the worker protocol (`fusionspec.conformance.transport`) carries them.

Every text in them is the backend's (its exception's type name, message, traceback and fields,
the repr of what it returned): each is cleaned where the record is built (`clean_text`: no
escape sequence, control character, bidirectional override, lone surrogate or noncharacter)
and bounded, so nothing downstream (a terminal, a results document, JUnit XML, an expectations
file) meets text it cannot write.
"""

from __future__ import annotations

import abc
import os
import reprlib
import traceback
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from fusionspec.backend import error_fields
from fusionspec.spec.errors import GraphError
from fusionspec.spec.text import MESSAGE_LIMIT, clean_text

__all__ = ["Failure", "Foreign", "BackendFailure", "Abandoned", "Trip", "OneTrip", "clip",
           "describe_exception",
           "short_traceback", "rejection_types", "TRACEBACK_LINES", "WHOLE_TRACEBACK_ENV"]

#: How many frames of a backend's traceback a failure keeps: the first ones below the suite
#: (the backend's own code, where it went wrong) and the innermost ones (where it raised).
TRACEBACK_LINES = 8
_HEAD_FRAMES = 4
#: Set (to anything but "" or "0") to keep every frame: replays do, to show all of it.
WHOLE_TRACEBACK_ENV = "FUSIONSPEC_WHOLE_TRACEBACK"
#: The suite's own plumbing, whose frames say nothing about the backend's bug.
_SUITE = tuple(str(Path(__file__).resolve().parents[i] / name) + os.sep for i, name in
               ((0, ""), (1, "backend")))


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
        return Foreign(clean_text(type(obj).__name__, 200), clean_text(_repr(obj), 200))


class BackendFailure(Exception):
    """Raised in the runner for a backend call that failed in the worker: carries the
    `Failure` the worker described (grading reads it as it would read the exception)."""

    def __init__(self, failure: Failure) -> None:
        super().__init__(failure.message)
        self.failure = failure


class Trip:
    """A partition compiled and executed in one call, each step's outcome kept for grading to
    read in turn: `compiled()` returns what compile returned or raises its `BackendFailure`,
    `outputs()` likewise for execute (None where compile failed: execute never ran)."""

    def __init__(self, compiled: object, compile_failure: Failure | None,
                 outputs: object = None, execute_failure: Failure | None = None) -> None:
        self._compiled, self._compile_failure = compiled, compile_failure
        self._outputs, self._execute_failure = outputs, execute_failure

    def compiled(self) -> object:
        if self._compile_failure is not None:
            raise BackendFailure(self._compile_failure)
        return self._compiled

    def outputs(self) -> object:
        if self._execute_failure is not None:
            raise BackendFailure(self._execute_failure)
        return self._outputs


class OneTrip(abc.ABC):
    """A backend whose compile and execute of one partition can be asked for at once: the
    runner's view of a backend in a worker process, where each call is a round trip. Grading
    uses it where nothing is checked between the two calls."""

    @abc.abstractmethod
    def compile_and_execute(self, partition: Any, device: Any, inputs: Any) -> Trip:
        """Compile `partition` for `device`, then (when that succeeded) execute it on
        `inputs`."""


class Abandoned(Exception):
    """A diagnosis after the verdict (culprit isolation) ran out of its time or lost the
    worker: the runner stopped the worker and the verdict stands without the diagnosis."""


#: The longest traceback a failure keeps (characters): its frames are few, but the exception's
#: own line repeats its message.
TRACEBACK_LIMIT = 8 * MESSAGE_LIMIT


def _repr(obj: object) -> str:
    try:
        return reprlib.repr(obj)
    except Exception as exc:  # a foreign __repr__ may raise anything
        return f"<{type(obj).__name__}: repr raised {type(exc).__name__}>"


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


def short_traceback(exc: BaseException, whole: bool | None = None) -> str:
    """`exc`'s traceback without the suite's own frames, and, unless `whole` (by default:
    unless `WHOLE_TRACEBACK_ENV` is set), cut to `TRACEBACK_LINES` frames: the first
    `_HEAD_FRAMES` below the suite (the backend's own code, which a library's frames would
    otherwise push out) and the innermost ones; then the exception itself."""
    frames = [f for f in traceback.extract_tb(exc.__traceback__)
              if not f.filename.startswith(_SUITE)]
    if whole is None:
        whole = os.environ.get(WHOLE_TRACEBACK_ENV, "") not in ("", "0")
    kept: list[str] = traceback.format_list(frames)
    if not whole and len(frames) > TRACEBACK_LINES:
        left_out = len(frames) - TRACEBACK_LINES
        kept = [*traceback.format_list(frames[:_HEAD_FRAMES]),
                f"  ... {left_out} frame(s) left out ...\n",
                *traceback.format_list(frames[-(TRACEBACK_LINES - _HEAD_FRAMES):])]
    text = "Traceback (most recent call last):\n" + "".join(kept) if frames else ""
    text += "".join(traceback.format_exception_only(exc))
    cause = exc.__cause__ or exc.__context__
    if cause is not None and not exc.__suppress_context__:
        text += f"(raised while handling {type(cause).__name__}: {cause})\n"
    return text.rstrip()


def describe_exception(stage: str, exc: BaseException,
                       rejections: Sequence[type[BaseException]] = (),
                       message_limit: int | None = None) -> Failure:
    """`exc`, raised by a backend at `stage`, as a `Failure`; a rejection when it is one of
    `rejections`. A backend that calls ``sys.exit`` is described as having done so."""
    rule = getattr(exc, "rule", None)  # a str subclass (`GraphRule`) sent as a plain str
    text = f"the backend called sys.exit({exc.code!r})" if isinstance(exc, SystemExit) \
        else clean_text(exc, None if message_limit is None else 4 * message_limit)
    return Failure(stage=stage, type_name=clean_text(type(exc).__name__, 200),
                   message=clean_text(text, message_limit),
                   rule=clean_text(rule, 200) if isinstance(rule, str) else None,
                   is_rejection=isinstance(exc, tuple(rejections)),
                   traceback=clean_text(short_traceback(exc), TRACEBACK_LIMIT),
                   fields={clean_text(k, 200): clean_text(v, MESSAGE_LIMIT)
                           for k, v in error_fields(exc).items()})
