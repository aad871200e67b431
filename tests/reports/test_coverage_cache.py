"""The coverage model the report shows, kept in the draw cache's folder
(`fusionspec.conformance.coverage_cache`): a report with the model read back is the report with
it computed; an entry that is not one this code wrote is refused, deleted and computed again;
a changed suite never reads an older entry; ``FUSIONSPEC_DRAW_CACHE=off`` keeps nothing."""

from __future__ import annotations

import json
import os
import re
from pathlib import Path

import pytest
from testkit import toy_backends as toy

from fusionspec.cli.main import main
from fusionspec.conformance import coverage_cache, draw_cache
from fusionspec.conformance.cache_files import folder_key, seal
from fusionspec.conformance.coverage_cache import CoverageModel
from fusionspec.conformance.grade.results import ResultsCollector
from fusionspec.conformance.grade.verdicts import judge
from fusionspec.conformance.selection import RunSettings
from fusionspec.reference.backend import NUMPY_DEVICE

_STAMP = re.compile(r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d(?:\.\d+)?(?:[+-]\d\d:\d\d|Z)?")


@pytest.fixture(scope="module")
def model() -> CoverageModel:
    computed = coverage_cache.compute()
    assert computed is not None, "hypothesis is installed where the tests run"
    return computed


@pytest.fixture(scope="module")
def results_file(tmp_path_factory: pytest.TempPathFactory) -> Path:
    collector = ResultsCollector("toy", NUMPY_DEVICE, run_settings=RunSettings(seed=5))
    for case in (toy.valid_case("fp.matmul_post_ops", 3), toy.ill_formed_case()):
        collector.add(case, judge(case, toy.WrongMath(), NUMPY_DEVICE, seed=5))
    return collector.write(tmp_path_factory.mktemp("run") / "results.json")


@pytest.fixture
def cache(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    folder = tmp_path / "cache"
    monkeypatch.setenv(draw_cache.ENV, str(folder))
    return folder


def _report(results: Path, out: Path, capsys: pytest.CaptureFixture[str]) -> tuple[str, str]:
    """The report's HTML with its timestamps blanked, and what it said on standard error."""
    code = main(["report", str(results), "-o", str(out)])
    err = capsys.readouterr().err
    assert code == 0, f"the report is written: exit {code}, {err}"
    return _STAMP.sub("TIME", out.read_text(encoding="utf-8")), err


def _no_compute(monkeypatch: pytest.MonkeyPatch) -> None:
    def refuse() -> CoverageModel | None:
        raise AssertionError("the coverage model was computed, not read back")

    monkeypatch.setattr(coverage_cache, "compute", refuse)


def _entry(cache: Path) -> Path:
    found = sorted(cache.glob("coverage-*.json"))
    assert len(found) == 1, f"one entry of the coverage model in the cache: {found}"
    return found[0]


def test_the_report_from_the_cache_is_the_computed_one(
        cache: Path, results_file: Path, tmp_path: Path, model: CoverageModel,
        capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch) -> None:
    cold, _ = _report(results_file, tmp_path / "cold.html", capsys)
    entry = _entry(cache)
    assert os.stat(entry).st_mode & 0o077 == 0, "the entry is its owner's alone"
    _no_compute(monkeypatch)
    warm, err = _report(results_file, tmp_path / "warm.html", capsys)
    assert "refused" not in err, f"the entry written is read back: {err}"
    assert warm == cold, "the report with the model read back is the one with it computed"
    monkeypatch.undo()
    monkeypatch.setenv(draw_cache.ENV, "off")
    uncached, _ = _report(results_file, tmp_path / "off.html", capsys)
    assert uncached == cold, "the report without the cache is the same report"


def test_the_cache_is_off_with_the_draw_cache(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch, model: CoverageModel) -> None:
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "home"))
    monkeypatch.setenv(draw_cache.ENV, "off")
    assert coverage_cache.coverage_model() == model, "the model is computed"
    assert not (tmp_path / "home").exists(), "nothing is kept with FUSIONSPEC_DRAW_CACHE=off"


def _signed(cache: Path, key: str, payload: bytes) -> bytes:
    return seal(folder_key(cache), payload, key.encode())


@pytest.mark.parametrize("damage", ["garbage", "truncated", "unsigned", "other key",
                                    "wrong shape", "missing pattern", "method without items",
                                    "not json", "a folder", "a link"])
def test_a_bad_entry_is_refused_and_computed_again(
        cache: Path, model: CoverageModel, damage: str, tmp_path: Path,
        capsys: pytest.CaptureFixture[str]) -> None:
    key = coverage_cache.model_key()
    coverage_cache.store(key, model)
    path = coverage_cache.entry_path(key)
    good = path.read_bytes()
    payload = json.dumps(model.to_json()).encode()
    if damage == "garbage":
        path.write_bytes(os.urandom(200))
    elif damage == "truncated":
        path.write_bytes(good[:len(good) // 2])
    elif damage == "unsigned":
        path.write_bytes(payload)
    elif damage == "other key":
        path.write_bytes(_signed(cache, "0" * 64, payload))
    elif damage == "wrong shape":
        path.write_bytes(_signed(cache, key, json.dumps(
            {**model.to_json(), "required": {k: "items" for k in model.required}}).encode()))
    elif damage == "missing pattern":
        data = model.to_json()
        data["required"].pop(next(iter(model.required)))
        path.write_bytes(_signed(cache, key, json.dumps(data).encode()))
    elif damage == "method without items":
        data = model.to_json()
        data["methods"][0]["items"] = [["one part"]]
        path.write_bytes(_signed(cache, key, json.dumps(data).encode()))
    elif damage == "not json":
        path.write_bytes(_signed(cache, key, b"\x80not json"))
    elif damage == "a folder":
        path.unlink()
        path.mkdir()
    elif damage == "a link":
        elsewhere = tmp_path / "elsewhere.json"
        elsewhere.write_bytes(good)
        path.unlink()
        path.symlink_to(elsewhere)
    capsys.readouterr()
    assert coverage_cache.coverage_model() == model, f"{damage}: the model is computed again"
    err = capsys.readouterr().err
    assert "coverage model's cache entry" in err and "refused" in err \
        and err.count("\n") == 1, f"{damage}: one line says the entry is refused: {err!r}"
    if damage != "a folder":
        assert coverage_cache.load(key) == model, \
            f"{damage}: the refused entry is replaced by a good one"


def test_a_corrupt_entry_does_not_change_the_report(
        cache: Path, results_file: Path, tmp_path: Path, model: CoverageModel,
        capsys: pytest.CaptureFixture[str]) -> None:
    cold, _ = _report(results_file, tmp_path / "cold.html", capsys)
    entry = _entry(cache)
    entry.write_bytes(entry.read_bytes()[:-100] + b"x" * 100)
    again, err = _report(results_file, tmp_path / "again.html", capsys)
    assert "refused" in err, f"the report says the entry was refused: {err}"
    assert again == cold, "a corrupt entry changes nothing in the report"


def test_a_changed_suite_does_not_read_an_older_entry(
        cache: Path, model: CoverageModel, monkeypatch: pytest.MonkeyPatch) -> None:
    coverage_cache.store(coverage_cache.model_key(), model)
    monkeypatch.setattr(draw_cache, "code_digest", lambda: "another suite")
    assert coverage_cache.load(coverage_cache.model_key()) is None, \
        "another code digest is another key: the older entry is not read"
