"""Declared departures travel as plain data and come back checked: a round trip keeps every
field, and a declaration that matches everything, repeats an id or is not a Departure is
refused with a `BackendError` naming the field."""

from __future__ import annotations

import pytest

from fusionspec.backend import BackendError, Departure, OpMatch, error_fields
from fusionspec.backend.checks import checked_departures, declared_departures
from fusionspec.backend.departures import departure_data

FULL = Departure("avgpool-ceil", "AvgPool with ceil rounding is unsupported", "the docs",
                 label="Limitation", statuses=("rejected-valid",), patterns=("fp.*",),
                 rules=("*post_op_count",), dtypes=("bf16",), cut=("Unary", "*"),
                 ops=(OpMatch("AvgPool", (("rounding_type", "ceil"),), inputs=1),),
                 unsupported=("AvgPool",), error_kinds=("rejection",),
                 error_fields=(("function", "compile"),), substitute="select-max",
                 notes=(("since", "3.2"),))


class _Declares:
    departures = (FULL,)


def test_a_departure_survives_the_round_trip_as_plain_data() -> None:
    data = declared_departures(_Declares())
    assert all(isinstance(d, dict) for d in data), "departures travel as plain dicts"
    assert checked_departures("toy", data) == (FULL,), \
        "checking the plain data rebuilds the very departure declared"
    assert len({FULL, *checked_departures("toy", data)}) == 1, "departures are hashable values"


@pytest.mark.parametrize(("data", "says"), [
    ([{"id": "x", "statement": "y"}], "matches every case"),
    ([departure_data(FULL), departure_data(FULL)], "declared twice"),
    ([{"not_a_departure": "str"}], "not a Departure"),
    ([{**departure_data(FULL), "label": "Excuse"}], "label must be one of"),
    ([{**departure_data(FULL), "cut": ["A"]}], "two kinds"),
    ([{**departure_data(FULL), "statuses": "fusion-mismatch"}], "short list of strings"),
    ([{**departure_data(FULL), "statuses": ["numeric_mismatch"]}], "names no status"),
    ([{**departure_data(FULL), "ops": [{"kind": "Add", "inputs": -1}]}], "whole number"),
    ("nan-select-max", "sequence of Departure"),
])
def test_bad_declarations_are_refused_by_name(data: object, says: str) -> None:
    with pytest.raises(BackendError, match=says):
        checked_departures("toy", data)


def test_declarations_that_are_not_departures_are_named() -> None:
    class Odd:
        departures = ("nan-select-max",)
    with pytest.raises(BackendError, match=r"departures\[0\] is a str"):
        checked_departures("toy", declared_departures(Odd()))


def test_error_fields_are_short_strings_or_nothing() -> None:
    said = Exception("m")
    said.fields = {"function": "add_op", "status": 3, "log": ["x"],  # type: ignore[attr-defined]
                   "big": "y" * 1000}
    got = error_fields(said)
    assert got == {"function": "add_op", "status": "3", "big": "y" * 200}, \
        f"strings and numbers kept as clipped text, anything else dropped: {got}"
    assert error_fields(ValueError("plain")) == {}, "an exception without fields has none"
