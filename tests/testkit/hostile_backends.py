"""Backends that attack the runner through what they send back, not through what they compute.

Each is the reference with one hostile habit: a reply written straight onto the worker's pipe
(naming a module the runner must never import), a structure that a few hundred pickled bytes
make billions of elements long, or counters of that kind.
"""

from __future__ import annotations

import gc
import pickle
from multiprocessing.connection import Connection
from typing import Any

from fusionspec.backend import Departure, Device, Limitation
from fusionspec.spec.graph import Graph, Partition

from .toy_backends import _Toy

#: A pickle that imports ``numpy.f2py.__main__`` and calls its ``main`` (what a hostile reply
#: to ``release`` sent to make the runner exit 0).
FORGED = b"cnumpy.f2py.__main__\nmain\n)R."


def bomb(levels: int = 8, width: int = 16) -> list[Any]:
    """A list whose repr has `width` ** `levels` elements, pickled in a few hundred bytes."""
    value: list[Any] = []
    for _ in range(levels):
        value = [value] * width
    return value


def _pipes() -> list[Connection]:
    return [o for o in gc.get_objects() if isinstance(o, Connection) and not o.closed]


class ForgesReply(_Toy):
    """Writes `FORGED` onto its worker's pipe before its partitions go back."""

    name = "forges-reply"

    def partition(self, graph: Graph) -> list[Partition]:
        for conn in _pipes():
            conn.send_bytes(FORGED)
        return super().partition(graph)


class RepliesWithBomb(_Toy):
    """Answers ``partition`` with `bomb()` in place of partitions."""

    name = "replies-with-bomb"

    def partition(self, graph: Graph) -> Any:
        return pickle.loads(pickle.dumps([bomb()]))[0]


class BombCounters(_Toy):
    """Reports `bomb()` as its counters."""

    name = "bomb-counters"

    def counters(self) -> Any:
        return {"calls": bomb()}


class DeviceIdNotText(_Toy):
    """A device whose id is a number."""

    name = "device-id-not-text"

    def devices(self) -> Any:
        return (Device(id=7),)  # type: ignore[arg-type]


class LimitationNotALimitation(_Toy):
    """Declares a string as its limitation."""

    name = "limitation-not-a-limitation"
    limitations = ("everything is hard",)


class DepartureNotADeparture(_Toy):
    """Declares a string as its known departure."""

    name = "departure-not-a-departure"
    departures = ("our Maximum drops NaN",)


class CatchAllDeparture(_Toy):
    """Declares one departure that matches every case (it would explain every finding)."""

    name = "catch-all-departure"
    departures = (Departure("everything", "whatever fails is known"),)


class CatchAllLimitation(_Toy):
    """Declares one limitation that covers every case."""

    name = "catch-all"
    limitations = (Limitation("nothing is supported"),)


class NameNotText(_Toy):
    """A name that is not a string."""

    name = ("not", "a", "name")  # type: ignore[assignment]


class AnsiName(_Toy):
    """A name and device carrying terminal escape sequences and megabytes of text."""

    name = "ansi\x1b[2K\x1b[1A\r"

    def devices(self) -> Any:
        return (Device(id="cpu\x1b]0;owned\x07", name="x" * 3_000_000),)


class RaisesAnsi(_Toy):
    """Raises with a message that would erase the FAIL line, megabytes long."""

    name = "raises-ansi"

    def partition(self, graph: Graph) -> list[Partition]:
        raise RuntimeError("\x1b[2K\x1b[1A\rPASS" + "x" * 3_000_000)
