"""Backends whose words cannot be written as UTF-8: lone surrogates, noncharacters, control
characters and bidirectional overrides in their name, their device, their limitations and what
they raise. Each is the reference with one such habit, loaded by ``"testkit.unfit_backends:X"``.
"""

from __future__ import annotations

from typing import Any

from fusionspec.backend import BackendUnavailableError, Device, Limitation
from fusionspec.spec.graph import Graph, Partition

from .toy_backends import NeverFuses, _Toy

#: Text no UTF-8 encoder takes (a lone surrogate), noncharacters, a NUL, an escape sequence, a
#: C1 control and the bidirectional overrides that reorder what a terminal shows.
UNFIT = "\ud800x\udfff\ufffe\uffff\U0010ffff\x00\x1b[2K\x9b1A\u202eevil\u2066\u2069"


class UnfitName(_Toy):
    """Its name and every field of its device carry `UNFIT`."""

    name = "unfit" + UNFIT

    def devices(self) -> Any:
        return (Device(id="cpu" + UNFIT, name="dev" + UNFIT, driver=UNFIT, runtime=UNFIT,
                       extras={"k" + UNFIT: "v" + UNFIT}),)


class RaisesUnfit(_Toy):
    """Raises, at partitioning, an exception whose message carries `UNFIT`."""

    name = "raises-unfit"

    def partition(self, graph: Graph) -> list[Partition]:
        raise RuntimeError("bad" + UNFIT)


class UnfitFailures(NeverFuses):
    """Fails cases (it never fuses) under a name carrying `UNFIT`, and declares a limitation
    whose reason carries it."""

    name = "unfit-failures" + UNFIT
    limitations = (Limitation(reason="why" + UNFIT, pattern="fp.bn_relu", case_kind="valid"),)


class UnavailableUnfit(_Toy):
    """Has no usable device, and says why with `UNFIT`."""

    name = "unavailable" + UNFIT

    def devices(self) -> Any:
        raise BackendUnavailableError("no device" + UNFIT)
