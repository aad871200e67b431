"""The draw cache: a second plan of the same derandomized profile reads its cases from disk,
the same cases; a shard keeps the entries of its own draws, which any later run reads; an
unreadable entry is drawn again; random profiles and the off switch never touch it."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path
from typing import Any

import pytest

from fusionspec.conformance import draw_cache, suite
from fusionspec.conformance.cases import Case, CaseKind
from fusionspec.conformance.selection import RunSettings, Selection, Shard
from fusionspec.conformance.suite import PROFILES, plan_cases
from fusionspec.spec.catalog import entry as catalog_entry

PATTERN = "fp.bn_relu"


@pytest.fixture
def cached(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path))
    monkeypatch.setenv("FUSIONSPEC_DRAW_CACHE", "on")
    return tmp_path / "fusionspec" / "draws"


def _plan() -> list[tuple[str, str]]:
    selection = Selection(patterns=(PATTERN,), kinds=(CaseKind.valid, CaseKind.ill_formed))
    plan = plan_cases(RunSettings(selection, PROFILES["ci"]))
    return [(p.case.id, repr(p.case)) for p in plan.cases]


def test_a_second_plan_reads_the_same_cases_from_disk(cached: Path,
                                                      monkeypatch: pytest.MonkeyPatch) -> None:
    first = _plan()
    entries = sorted(cached.glob("*.pickle"))
    assert entries, f"the first plan keeps its draws under {cached}"

    def no_drawing(*_: object) -> list[object]:
        raise AssertionError("a cached draw was drawn again")

    monkeypatch.setattr(suite, "_draw_fresh", no_drawing)
    assert _plan() == first, "the cached cases are the cases drawn, in the same order"


def test_a_shard_keeps_its_own_draws_for_the_runs_after_it(
        cached: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    selection = Selection(patterns=(PATTERN,)).validate()
    shard = Shard(2, 3)
    part = plan_cases(RunSettings(selection, PROFILES["ci"], shard=shard))
    draws = [d for kind in selection.kinds
             for d in suite._draws(catalog_entry(PATTERN), kind, PROFILES["ci"], selection)]
    own = [d for _, d in suite._own_draws(draws, shard)]
    assert 0 < len(own) < len(draws), f"shard {shard} makes some of the {len(draws)} draws"
    def key(draw: suite._Draw) -> str:
        found = suite._cache_key(draw, PROFILES["ci"], 0, None)
        assert found is not None, f"the ci profile caches {draw}"
        return f"{found}.pickle"

    # Entries of draws only: the catalog's rule x setting cases (an entry of their own, kept
    # by whichever process first probes for them) may sit beside them.
    kept = {p.name for p in cached.glob("*.pickle")} & {key(d) for d in draws}
    assert kept == {key(d) for d in own}, \
        "the shard keeps one entry per draw of its own, and none of the others'"
    fresh: list[suite._Draw] = []
    drawing = suite._draw_fresh

    def recorded(draw: suite._Draw, *rest: Any) -> list[Case]:
        fresh.append(draw)
        return drawing(draw, *rest)

    monkeypatch.setattr(suite, "_draw_fresh", recorded)
    whole = plan_cases(RunSettings(selection, PROFILES["ci"]))
    assert sorted(map(repr, fresh)) == sorted(repr(d) for d in draws if d not in own), \
        "the whole run reads the shard's draws from disk and draws only the others"
    assert {(p.index, p.case.id) for p in part.cases} <= \
        {(p.index, p.case.id) for p in whole.cases}, \
        "the shard's cases are the whole run's, with the same indices"


def test_an_unreadable_entry_is_drawn_again(cached: Path) -> None:
    first = _plan()
    for entry in cached.glob("*.pickle"):
        entry.write_bytes(b"not a pickle")
    assert _plan() == first, "broken entries are dropped and the cases drawn again"
    # The draws' entries: the catalog's rule x setting entry beside them is read only by a
    # process that has not probed for those cases yet.
    selection = Selection(patterns=(PATTERN,), kinds=(CaseKind.valid, CaseKind.ill_formed))
    keys = {f"{suite._cache_key(d, PROFILES['ci'], 0, None)}.pickle" for kind in selection.kinds
            for d in suite._draws(catalog_entry(PATTERN), kind, PROFILES["ci"], selection)}
    drawn = [e for e in cached.glob("*.pickle") if e.name in keys]
    assert drawn and all(e.read_bytes() != b"not a pickle" for e in drawn), \
        "each broken entry is replaced by a fresh one"


def test_random_profiles_and_the_off_switch_leave_the_cache_alone(
        cached: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    draw = suite._Draw(PATTERN, CaseKind.valid, None, 4)
    random_profile = replace(PROFILES["ci"], derandomize=False)
    assert suite._cache_key(draw, random_profile, 0, None) is None, \
        "a random profile's draws differ from run to run: never cached"
    with_database = replace(PROFILES["ci"], database=True)
    assert suite._cache_key(draw, with_database, 0, cached) is None, \
        "a profile that replays hypothesis' database is never cached"
    key = suite._cache_key(draw, PROFILES["ci"], 0, None)
    assert key is not None and key != suite._cache_key(draw, PROFILES["ci"], 1, None), \
        "the run's seed is part of the key"
    monkeypatch.setenv("FUSIONSPEC_DRAW_CACHE", "off")
    assert not draw_cache.enabled() and suite._cache_key(draw, PROFILES["ci"], 0, None) is None
    _plan()
    assert not cached.exists(), "with the cache off nothing is written"


def test_a_folder_named_in_the_switch_holds_the_entries(tmp_path: Path,
                                                         monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "xdg"))
    monkeypatch.setenv("FUSIONSPEC_DRAW_CACHE", str(tmp_path / "draws"))
    assert draw_cache.enabled(), "a folder in the switch turns the cache on"
    first = _plan()
    assert sorted((tmp_path / "draws").glob("*.pickle")), \
        "the entries are written in the folder the switch names"
    assert not (tmp_path / "xdg").exists(), "nothing is written under XDG_CACHE_HOME"
    assert _plan() == first, "the entries in that folder are read back"
