"""A draw cache entry the suite did not write for that draw never changes the suite: an entry
replaced by a pickle of an empty list or of strings, garbage, a FIFO, a symbolic link out of the
folder, or the entry of another draw is refused with a one-line warning and drawn again, giving
the cases an uncached draw gives; the oracle cache refuses the same files."""

from __future__ import annotations

import os
import pickle
import shutil
import threading
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import pytest
from testkit import toy_backends as toy

from fusionspec.conformance import draw_cache, suite
from fusionspec.conformance.cases import Case, CaseKind
from fusionspec.conformance.selection import Selection
from fusionspec.conformance.suite import PROFILES
from fusionspec.conformance.workers.oracle_cache import OracleCache
from fusionspec.spec.catalog import entry as catalog_entry

PATTERN = "fp.bn_relu"
CI = PROFILES["ci"]
#: How long reading a hostile entry may take: far more than a draw of a few cases needs, far
#: less than forever (a FIFO nobody writes to).
DEADLINE_S = 120.0


@dataclass(frozen=True)
class Drawn:
    """A cached draw: the draw, its entry, the ids an uncached draw gives, and a second
    draw's entry (the entry of another key)."""

    draw: suite._Draw
    entry: Path
    ids: list[str]
    other: Path


def _near_miss_draws() -> list[suite._Draw]:
    # Near-miss draws of one rule: a few cases each, drawn in well under a second.
    return suite._draws(catalog_entry(PATTERN), CaseKind.near_miss, CI, Selection())[:2]


def _entry(draw: suite._Draw) -> Path:
    key = suite._cache_key(draw, CI, 0, None)
    assert key is not None, f"the ci profile caches {draw}"
    return draw_cache.cache_dir() / f"{key}.pickle"


def _ids(cases: list[Case]) -> list[str]:
    return [case.id for case in cases]


@pytest.fixture
def drawn(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Drawn:
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "xdg"))
    monkeypatch.setenv("FUSIONSPEC_DRAW_CACHE", str(tmp_path / "draws"))
    first, second = _near_miss_draws()
    uncached = _ids(suite._draw_fresh(first, CI, 0, None))
    assert uncached, f"{first} draws some cases"
    assert _ids(suite._run_draw(first, CI, 0, None)) == uncached, \
        "a cached draw gives the cases an uncached one gives"
    suite._run_draw(second, CI, 0, None)
    found = Drawn(first, _entry(first), uncached, _entry(second))
    assert found.entry.is_file() and found.other.is_file(), "both draws keep an entry"
    return found


def _redrawn(drawn: Drawn) -> list[str]:
    """The ids `_run_draw` gives for the hostile entry, within `DEADLINE_S`; a read that
    blocks fails the test (and is then let go by opening the FIFO's other end)."""
    result: list[list[str]] = []
    reader = threading.Thread(
        target=lambda: result.append(_ids(suite._run_draw(drawn.draw, CI, 0, None))),
        daemon=True)
    reader.start()
    reader.join(DEADLINE_S)
    if reader.is_alive():
        with open(drawn.entry, "wb"):  # the blocked reader sees end of file
            pass
        reader.join(DEADLINE_S)
        pytest.fail(f"reading the entry {drawn.entry.name} blocked for {DEADLINE_S:g} s")
    assert result, "the draw returned its cases"
    return result[0]


def _empty_list(drawn: Drawn) -> None:
    drawn.entry.write_bytes(pickle.dumps([]))


def _strings(drawn: Drawn) -> None:
    drawn.entry.write_bytes(pickle.dumps(["fp.bn_relu/valid/forged", "another"]))


def _garbage(drawn: Drawn) -> None:
    drawn.entry.write_bytes(b"\x80\x05garbage, not an entry\n" * 64)


def _fifo(drawn: Drawn) -> None:
    drawn.entry.unlink()
    os.mkfifo(drawn.entry)


def _link_out(drawn: Drawn) -> None:
    outside = drawn.entry.parent.parent / "elsewhere.pickle"
    outside.write_bytes(pickle.dumps([]))
    drawn.entry.unlink()
    drawn.entry.symlink_to(outside)


def _other_key(drawn: Drawn) -> None:
    shutil.copyfile(drawn.other, drawn.entry)


HOSTILE: dict[str, Callable[[Drawn], None]] = {
    "a pickle of an empty list": _empty_list, "a pickle of strings": _strings,
    "garbage bytes": _garbage, "a FIFO": _fifo, "a symbolic link out of the folder": _link_out,
    "the entry of another key": _other_key}


@pytest.mark.skipif(not hasattr(os, "mkfifo"), reason="needs FIFOs and symbolic links")
@pytest.mark.parametrize("hostile", list(HOSTILE))
def test_a_hostile_entry_is_drawn_again(hostile: str, drawn: Drawn,
                                        capsys: pytest.CaptureFixture[str]) -> None:
    HOSTILE[hostile](drawn)
    capsys.readouterr()
    assert _redrawn(drawn) == drawn.ids, \
        f"an entry replaced by {hostile} leaves the suite unchanged: the cases of an uncached draw"
    said = capsys.readouterr().err
    warnings = [line for line in said.splitlines() if drawn.entry.name in line]
    assert len(warnings) == 1 and "refused" in warnings[0] and "Traceback" not in said, \
        f"one line on standard error says the entry ({hostile}) was refused: {said!r}"
    assert drawn.entry.is_file() and not drawn.entry.is_symlink(), \
        f"the entry replaced by {hostile} is written again, a plain file"
    assert draw_cache.load_draw(drawn.entry.stem) is not None and not capsys.readouterr().err, \
        "the entry written again is read back without a warning"


def test_an_entry_past_the_size_limit_is_not_read(drawn: Drawn,
                                                  monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(draw_cache, "ENTRY_LIMIT", 16)
    assert draw_cache.load_draw(drawn.entry.stem) is None, \
        "an entry larger than the limit is refused unread"
    assert _redrawn(drawn) == drawn.ids, "and its cases are drawn again"


@pytest.mark.skipif(not hasattr(os, "mkfifo"), reason="needs FIFOs and symbolic links")
def test_the_oracle_cache_refuses_the_same_files(tmp_path: Path,
                                                 monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("FUSIONSPEC_ORACLE_CACHE", str(tmp_path / "oracle"))
    cache = OracleCache()
    case, other = toy.valid_case("fp.matmul_post_ops", 3), toy.valid_case("fp.matmul_post_ops", 4)
    cache.store(case, 1, b"one")
    cache.store(other, 1, b"two")
    assert cache.folder is not None, "the oracle cache has a folder"
    path, moved = (cache._path(c, 1) for c in (case, other))
    assert path is not None and moved is not None and cache.load(case, 1) == b"one", \
        "an entry stored reads back"
    shutil.copyfile(moved, path)
    assert cache.load(case, 1) is None, "an entry moved from another name is refused"
    os.mkfifo(path)
    result: list[bytes | None] = []
    reader = threading.Thread(target=lambda: result.append(cache.load(case, 1)), daemon=True)
    reader.start()
    reader.join(DEADLINE_S)
    if reader.is_alive():
        with open(path, "wb"):
            pass
        pytest.fail("the oracle cache blocked reading a FIFO")
    assert result == [None] and not path.exists(), "a FIFO is refused unread, and dropped"
    path.symlink_to(moved)
    assert cache.load(case, 1) is None and moved.exists(), \
        "a symbolic link is refused (and only the link dropped)"


def test_a_key_that_is_not_the_caches_own_turns_the_cache_off(
        drawn: Drawn, capsys: pytest.CaptureFixture[str]) -> None:
    key = drawn.entry.parent / "key"
    key.chmod(0o644)
    capsys.readouterr()
    assert _redrawn(drawn) == drawn.ids, "a key open to others is not used: the cases are drawn"
    assert _redrawn(drawn) == drawn.ids, "and drawn again on the next read"
    said = capsys.readouterr().err.splitlines()
    assert len(said) == 1 and "not used" in said[0], \
        f"one line says the cache is not used, once: {said}"
    assert drawn.entry.is_file(), "the entries are left alone, neither read nor deleted"
