"""Hypothesis over hostile self-descriptions: a backend class whose name, devices, limitations,
device problems and counters are drawn from well-formed and ill-formed values either loads, or
is refused with one `BackendError` naming what is wrong; nothing else escapes the runner, and a
backend that loads can judge a case."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st
from testkit import hostile_backends, toy_backends

from fusionspec.backend import BackendError, Device, Limitation
from fusionspec.conformance.workers import Runner

TESTS = str(Path(__file__).resolve().parents[1])
CASE = toy_backends.valid_case("fp.unary_binary", 0)

_junk = st.one_of(st.none(), st.integers(), st.floats(allow_nan=True), st.binary(max_size=8),
                  st.lists(st.integers(), max_size=3), st.dictionaries(st.text(max_size=3),
                                                                      st.integers(), max_size=2))
_texts = st.one_of(st.text(max_size=40), st.text(alphabet="\x1b[2K\r\n\x00ab", max_size=20))
_devices = st.lists(st.one_of(
    st.builds(Device, id=st.one_of(_texts, _junk), kind=st.one_of(_texts, _junk)),  # type: ignore[arg-type]
    _junk), max_size=3)
_limitations = st.lists(st.one_of(
    st.builds(Limitation, reason=_texts, pattern=st.sampled_from(["fp.*", "int8.conv*", "x"]),
              case_kind=st.sampled_from([None, "valid", "near-miss"])),
    _texts, _junk), max_size=3)


def _backend(name: Any, devices: Any, limitations: Any, problems: Any, counters: Any) -> str:
    """A reference-backed class with these answers, registered where `load_backend` finds it
    (in-process runner: the class never needs to be importable by a fresh process)."""
    cls = type("Drawn", (toy_backends._Toy,), {
        "name": name, "limitations": limitations,
        "devices": lambda self: devices,
        "device_problems": lambda self: problems,
        "counters": lambda self: counters})
    hostile_backends.Drawn = cls  # type: ignore[attr-defined]
    return "testkit.hostile_backends:Drawn"


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@example(name="fine", devices=[Device(id="cpu", kind="cpu")], limitations=[], problems={},
         counters={"calls": 1})
@example(name="fine", devices=[Device(id="cpu", kind="cpu")], limitations=[], problems={},
         counters=None)
@given(name=st.one_of(_texts, _junk), devices=st.one_of(_devices, _junk),
       limitations=st.one_of(_limitations, _junk),
       problems=st.one_of(st.dictionaries(_texts, _texts, max_size=2), _junk),
       counters=st.one_of(st.dictionaries(st.text(max_size=5), st.integers(), max_size=3),
                          _junk))
def test_a_drawn_self_description_loads_or_is_one_backend_error(
        name: Any, devices: Any, limitations: Any, problems: Any, counters: Any) -> None:
    spec = _backend(name, devices, limitations, problems, counters)
    try:
        runner = Runner(spec, None, 30.0, isolate=False, sys_path=[TESTS])
    except BackendError as exc:
        assert str(exc).strip(), "a refusal says why"
        assert "\x1b" not in str(exc), f"terminal escapes reach the message: {str(exc)!r}"
        return
    try:
        assert isinstance(runner.backend_name, str) and isinstance(runner.device.id, str), \
            f"a loaded backend's identity is text: {runner.backend_name!r} {runner.device!r}"
        verdict = runner.run(CASE)
        assert verdict.status is not None, "a loaded backend is judged"
    finally:
        runner.close()
