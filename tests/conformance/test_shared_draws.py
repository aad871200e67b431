"""Runs side by side on one cache folder (the main job runs its backends together) share their
draws and never trip over each other: the folder's signing key is made once, whole, however
many processes ask for it at once; a draw another process holds is left for later (or waited
for) and then read back, not drawn twice; and two runs drawing together give the cases a run
alone gives; a run drawing in one process beside another does not wait on a draw the other
holds while later draws are free."""

from __future__ import annotations

import contextlib
import multiprocessing
import multiprocessing.synchronize
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest
from testkit import draw_sharing as sharing

from fusionspec.conformance import draw_cache, suite
from fusionspec.conformance.cache_files import MAC_BYTES
from fusionspec.conformance.cases import Case
from fusionspec.conformance.suite import PROFILES

CI = PROFILES["ci"]
#: How long two runs drawing a few dozen cases may take: far more than they need.
DRAW_S = 600.0

_SPAWN = multiprocessing.get_context("spawn")


@pytest.fixture
def cache(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "xdg"))
    monkeypatch.setenv("FUSIONSPEC_DRAW_CACHE", str(tmp_path / "draws"))
    return tmp_path / "draws"


def _key(draw: suite._Draw) -> str:
    key = suite._cache_key(draw, CI, 0, None)
    assert key is not None, f"the ci profile caches {draw}"
    return key


# -- the folder's key ----------------------------------------------------------------------

def test_processes_asking_at_once_get_one_whole_key(tmp_path: Path) -> None:
    processes = 4
    with _SPAWN.Manager() as manager:
        start = manager.Barrier(processes)
        with _SPAWN.Pool(processes) as pool:
            keys = pool.starmap_async(sharing.key_of, [(str(tmp_path), start)] * processes
                                      ).get(DRAW_S)
    assert all(len(k) == MAC_BYTES for k in keys), \
        f"every process reads a whole key of {MAC_BYTES} bytes: {[len(k) for k in keys]}"
    assert len(set(keys)) == 1, \
        f"{processes} processes making the key at once agree on one, got {len(set(keys))}"
    assert (tmp_path / "key").read_bytes() == keys[0], "the key they agree on is the one kept"
    assert not [p.name for p in tmp_path.iterdir() if p.name != "key"], \
        "no temporary key file is left behind"


# -- claiming a draw -----------------------------------------------------------------------

@pytest.fixture
def held_elsewhere(cache: Path) -> Iterator[multiprocessing.synchronize.Event]:
    """The draw's claim held by another process until the event it yields is set."""
    held, release = _SPAWN.Event(), _SPAWN.Event()
    holder = _SPAWN.Process(target=sharing.hold,
                            args=(_key(sharing.first_draw()), str(cache), held, release))
    holder.start()
    try:
        assert held.wait(DRAW_S), "the other process holds the draw"
        yield release
    finally:
        release.set()
        holder.join(DRAW_S)
    assert holder.exitcode == 0, f"the holding process ended cleanly ({holder.exitcode})"


def test_a_draw_another_process_holds_is_left_for_later(
        held_elsewhere: multiprocessing.synchronize.Event) -> None:
    draw = sharing.first_draw()
    assert suite._claimed_draw(draw, CI, 0, None, wait=False) is None, \
        "a draw another run holds is left (None), not drawn a second time beside it"
    assert not draw_cache.entry_path(_key(draw)).exists(), "leaving it stores nothing"
    with draw_cache.claim(_key(draw), wait=False) as mine:
        assert not mine, "a second claim without waiting is refused while the first is held"


def test_a_draw_made_while_waiting_is_read_back(cache: Path) -> None:
    draw = sharing.first_draw()
    drawn = [case.id for case in suite._draw_fresh(draw, CI, 0, None)]
    with draw_cache.claim(_key(draw), wait=True) as mine:
        assert mine, "an unheld draw is claimed"
        # What the run holding it does before letting go: store it.
        suite._draw_and_keep(draw, CI, 0, None, _key(draw))
    entry = draw_cache.entry_path(_key(draw))
    made = entry.stat().st_mtime_ns
    found = suite._claimed_draw(draw, CI, 0, None, wait=True)
    assert found is not None and [c.id for c in found] == drawn, \
        "the waiting run gets the cases the other run drew"
    assert entry.stat().st_mtime_ns == made, "and reads them back instead of drawing again"


def test_claims_are_released_with_the_block(cache: Path) -> None:
    key = _key(sharing.first_draw())
    with draw_cache.claim(key, wait=False) as first:
        assert first, "an unheld draw is claimed"
    with draw_cache.claim(key, wait=False) as again:
        assert again, "a claim is let go when its block ends"


def test_a_folder_that_cannot_hold_locks_draws_as_before(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    blocked = tmp_path / "file"
    blocked.write_text("not a folder")
    monkeypatch.setenv("FUSIONSPEC_DRAW_CACHE", str(blocked / "draws"))
    with draw_cache.claim("k", wait=False) as mine:
        assert mine, "where no lock can be taken, each run draws for itself"


# -- two runs drawing together ---------------------------------------------------------------

def test_two_runs_drawing_together_give_what_one_alone_gives(
        cache: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    draws = sharing.shared_draws()
    assert len(draws) >= 4, \
        f"{sharing.PATTERN} and fp.unary_binary have enough near-miss draws for drawing processes"
    monkeypatch.setenv("FUSIONSPEC_DRAW_CACHE", str(tmp_path / "alone"))
    alone = [case.id for d in draws for case in suite._run_draw(d, CI, 0, None)]
    start, out = _SPAWN.Barrier(2), _SPAWN.Queue()
    # Not a pool: a run's drawing processes are children of its own.
    runs = [_SPAWN.Process(target=sharing.plan_ids, args=(str(cache), start, i, out))
            for i in range(2)]
    for run in runs:
        run.start()
    together = dict(out.get(timeout=DRAW_S) for _ in runs)
    for run in runs:
        run.join(DRAW_S)
    assert [run.exitcode for run in runs] == [0, 0], "both runs end cleanly"
    for index, ids in sorted(together.items()):
        assert ids == alone, f"run {index + 1} of two drawing together gives the cases, in " \
            f"order, that a run alone gives ({len(ids)} against {len(alone)})"
    entries = sorted(p.name for p in cache.glob("*.pickle"))
    assert entries == sorted(f"{_key(d)}.pickle" for d in draws), \
        f"every draw is kept, each under its own key: {len(entries)} entries for " \
        f"{len(draws)} draws"


# -- a run drawing in one process beside another does not trail it --------------------------

@contextlib.contextmanager
def _held_here(key: str) -> Iterator[Callable[[], None]]:
    """The claim of `key` held as another run would hold it (a lock of a file opened apart
    from the run's own, which the system treats as another holder, even in this process);
    yields a function that lets it go early."""
    with contextlib.ExitStack() as stack:
        assert stack.enter_context(draw_cache.claim(key, wait=False)), "the draw is unheld"
        yield stack.close


def _spying(monkeypatch: pytest.MonkeyPatch,
            then: Callable[[suite._Draw], None] = lambda _: None) -> list[suite._Draw]:
    """The draws the run makes (or reads back), in the order it asks for them; `then` is
    called after each."""
    asked: list[suite._Draw] = []

    def spy(draw: suite._Draw, *_: object) -> list[Case]:
        asked.append(draw)
        then(draw)
        return [Case(f"{draw.pattern}/{draw.kind.value}/{draw.rule}/{len(asked):08x}",
                     draw.kind, draw.pattern, None, draw.rule)]  # type: ignore[arg-type]

    monkeypatch.setattr(suite, "_run_draw", spy)
    return asked


def test_a_run_in_one_process_draws_on_while_another_run_holds_a_draw(
        cache: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    draws = sharing.shared_draws()[:3]
    asked = _spying(monkeypatch)
    with _held_here(_key(draws[0])):
        made = list(suite._drawn(draws, CI, 0, None, jobs=1))
    assert asked == [draws[1], draws[2], draws[0]], \
        "the draws another run holds are asked for last, the free ones made meanwhile " \
        f"(asked in the order {[draws.index(d) for d in asked]}, not [1, 2, 0])"
    assert [cases[0].rule for cases in made] == [d.rule for d in draws], \
        "the cases still come in the draws' order"


def test_a_held_draw_is_looked_at_again_after_each_draw_made_meanwhile(
        cache: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    draws = sharing.shared_draws()[:3]
    with _held_here(_key(draws[0])) as let_go:
        asked = _spying(monkeypatch, lambda draw: let_go() if draw == draws[1] else None)
        list(suite._drawn(draws, CI, 0, None, jobs=1))
    assert asked == [draws[1], draws[0], draws[2]], \
        "once the other run lets the held draw go it is read back before the later draws " \
        f"(asked in the order {[draws.index(d) for d in asked]}, not [1, 0, 2])"
