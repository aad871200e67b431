"""A backend's replies are data from someone else's process: the runner checks every name a
reply's pickle gives against an exact allowlist before importing anything, and bounds a reply's
bytes and the values it holds, so no reply runs code, forges an exit code or hangs the runner."""

from __future__ import annotations

import multiprocessing
import pickle
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st
from testkit import toy_backends as toy
from testkit.fuzz import FUZZ, hostile_text
from testkit.hostile_backends import FORGED, bomb

from fusionspec.conformance.answers import Foreign, describe_exception
from fusionspec.conformance.cases import Status
from fusionspec.conformance.workers import Runner
from fusionspec.conformance.workers.transport import (
    Reply,
    UnsafeReplyError,
    dumps,
    loads_reply,
    receive_reply,
)
from fusionspec.reference.dtypes import numpy_dtype
from fusionspec.spec.dtypes import DataType

TESTS = str(Path(__file__).resolve().parents[1])  # holds the testkit package
#: What a terminal acts on rather than shows.
TERMINAL_CONTROLS = "\x1b\x9b\u202a\u202b\u202c\u202d\u202e\u2066\u2067\u2068\u2069"
VALID = toy.valid_case("fp.matmul_post_ops", 3)


def test_a_name_is_refused_before_its_module_is_imported() -> None:
    probe = ("from fusionspec.conformance.workers.transport import loads_reply, UnsafeReplyError\n"
             "import sys\n"
             f"try:\n    loads_reply({FORGED!r})\nexcept UnsafeReplyError as exc:\n"
             "    print('refused', exc)\n"
             "print('imported' if 'numpy.f2py' in sys.modules else 'clean')\n")
    done = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True,
                          timeout=120, check=False)
    assert done.returncode == 0 and "refused" in done.stdout, \
        f"the forged reply is refused: {done.stdout} {done.stderr[-600:]}"
    assert done.stdout.strip().endswith("clean"), \
        f"numpy.f2py is never imported to check the name: {done.stdout}"


@pytest.mark.parametrize(("module", "name"), [
    ("os", "system"), ("numpy", "load"), ("numpy.f2py.__main__", "main"),
    ("ml_dtypes", "finfo"), ("numpy", "float32.__init__"), ("builtins", "eval"),
])
def test_names_outside_the_allowlist_are_refused(module: str, name: str) -> None:
    with pytest.raises(UnsafeReplyError, match="does not accept"):
        loads_reply(f"c{module}\n{name}\n.".encode())


@pytest.mark.parametrize("dtype", [d for d in DataType if d is not DataType.undef])
def test_arrays_of_every_spec_dtype_still_travel(dtype: DataType) -> None:
    array = np.zeros((2, 3), numpy_dtype(dtype))
    reply = loads_reply(dumps(Reply(value={7: array, 8: array[0, 0]})))
    assert isinstance(reply, Reply), f"{dtype}: a reply comes back"
    assert reply.value[7].dtype == array.dtype and reply.value[7].shape == (2, 3), \
        f"{dtype}: the array arrives as sent"


def test_a_shared_structure_bomb_is_refused() -> None:
    data = dumps(Reply(value=bomb()))
    assert len(data) < 1000, f"the bomb is small on the wire: {len(data)} bytes"
    with pytest.raises(UnsafeReplyError, match="more than"):
        loads_reply(data)


def test_a_self_referencing_reply_is_refused() -> None:
    loop: list[object] = []
    loop.append(loop)
    with pytest.raises(UnsafeReplyError, match="more than"):
        loads_reply(dumps(Reply(value=loop)))


def test_a_reply_past_the_byte_limit_is_refused() -> None:
    ours, theirs = multiprocessing.Pipe()
    theirs.send_bytes(dumps(Reply(value=b"x" * 5000)))
    with pytest.raises(UnsafeReplyError, match="longer than 1000 bytes"):
        receive_reply(ours, 1000)


@FUZZ
@given(data=st.binary(max_size=400), cut=st.integers(0, 400))
def test_mangled_replies_are_refused_cleanly(data: bytes, cut: int) -> None:
    sound = dumps(Reply(value={1: np.ones(3, np.float32), 2: ("a", 1.5, None)}))
    for blob in (data, sound[:cut] + data, sound[:cut] + sound[cut + 1:]):
        try:
            loads_reply(blob)  # any exception but UnsafeReplyError fails the test
        except UnsafeReplyError as exc:
            assert "reply" in str(exc), f"a refusal says what was refused: {exc}"


def test_a_forged_reply_is_an_error_verdict() -> None:
    with Runner("testkit.hostile_backends:ForgesReply", None, 30.0, sys_path=[TESTS]) as run:
        verdict = run.run(VALID)
        after = run.run(VALID)
    assert verdict.status is Status.error and "refuses" in verdict.reason, \
        f"the reply is refused and the case fails: {verdict.status} {verdict.reason}"
    assert after.status is Status.error, f"the next case gets a fresh worker: {after.reason}"


def test_a_bomb_in_place_of_partitions_fails_the_case_quickly() -> None:
    with Runner("testkit.hostile_backends:RepliesWithBomb", None, 30.0,
                sys_path=[TESTS]) as run:
        verdict = run.run(VALID)
    assert verdict.failed and verdict.status is not Status.timeout, \
        f"the bomb is described, not walked: {verdict.status} {verdict.reason}"
    assert len(verdict.reason) < 5000, f"its reason is short: {len(verdict.reason)}"


def test_bomb_counters_are_dropped() -> None:
    with Runner("testkit.hostile_backends:BombCounters", None, 60.0, sys_path=[TESTS]) as run:
        verdict = run.run(VALID)
    assert verdict.status is Status.passed, f"the case itself passes: {verdict.reason}"
    assert run.counters == {}, f"counters that cannot be read are dropped: {run.counters}"


def test_pickled_requests_do_not_travel_back() -> None:
    """The worker's own request pickling is not the reply path: a plain pickle of a foreign
    class is refused by the reply reader."""
    with pytest.raises(UnsafeReplyError):
        loads_reply(pickle.dumps(Runner))


class _Unprintable(Exception):
    """An exception whose every text is the backend's: its message and its fields."""


@FUZZ
@given(message=hostile_text(120), field=hostile_text(30), stage=st.sampled_from(
    ("partition", "compile", "execute")), limit=st.one_of(st.none(), st.integers(10, 400)))
def test_what_a_backend_raises_is_described_in_writable_text(
        message: str, field: str, stage: str, limit: int | None) -> None:
    exc = _Unprintable(message)
    exc.api_call = field  # type: ignore[attr-defined]
    exc.rule = field  # type: ignore[attr-defined]
    try:
        raise exc
    except _Unprintable as caught:
        failure = describe_exception(stage, caught, (), limit)
    texts = [failure.type_name, failure.message, failure.traceback, failure.rule or "",
             *failure.fields, *failure.fields.values()]
    for text in texts:
        text.encode("utf-8")  # a lone surrogate would raise
        assert not any(c in text for c in TERMINAL_CONTROLS), \
            f"no terminal control in what is kept: {text!r}"
    foreign = Foreign.of({message: [field, message]})
    (foreign.text + foreign.type_name).encode("utf-8")
    assert not any(c in foreign.text for c in TERMINAL_CONTROLS), f"clean repr: {foreign.text!r}"
