"""The oracle cache: the reference's side of a case is read back on the next run (the same
verdicts, none of it computed again), and an entry whose signature does not verify is never
unpickled."""

from __future__ import annotations

import pickle
from pathlib import Path

import pytest
from testkit import toy_backends as toy
from testkit.cli import comparable

from fusionspec.conformance.cases import CaseKind
from fusionspec.conformance.suite import run_suite
from fusionspec.conformance.workers.oracle_cache import ENV, OracleCache

VALID = toy.valid_case("fp.matmul_post_ops", 3)


def test_an_entry_reads_back_only_with_its_signature(tmp_path: Path,
                                                     monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(ENV, str(tmp_path / "oracle"))
    cache = OracleCache()
    payload = pickle.dumps({"the reference's side": 1})
    cache.store(VALID, 7, payload)
    assert cache.load(VALID, 7) == payload, "a stored entry reads back"
    assert cache.load(VALID, 8) is None, "another seed is another entry"
    assert cache.folder is not None, "the cache has a folder"
    (entry,) = list(cache.folder.iterdir())
    forged = bytearray(entry.read_bytes())
    forged[-1] ^= 1
    entry.write_bytes(bytes(forged))
    assert cache.load(VALID, 7) is None, "an entry changed after it was signed is not read"
    assert not entry.exists(), "the forged entry is deleted, to be computed again"
    cache.store(VALID, 7, payload)
    assert OracleCache().load(VALID, 7) == payload, "a new cache object reads the same key"
    (tmp_path / "oracle" / "key").write_bytes(b"x" * 32)
    assert OracleCache().load(VALID, 7) is None, \
        "an entry signed under another key (another installation's) is not read"


def test_a_second_run_reads_the_reference_side_back(tmp_path: Path,
                                                    monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(ENV, str(tmp_path / "oracle"))
    runs = [run_suite("reference", patterns=["fp.unary_binary"], kinds=[CaseKind.valid],
                      jobs=2, out_dir=tmp_path / f"run{i}") for i in (1, 2)]
    first, second = runs
    # Drawing checks each case's values on the reference with the default seed and keeps
    # what that computed: the first run reads most cases' side back already, and computes
    # only the rest (corners, whose values are not checked).
    assert first.oracle.get("read back", 0) > first.oracle.get("computed", 0) > 0, \
        f"the first run reads back what drawing computed, and computes the rest: {first.oracle}"
    assert second.oracle.get("computed") == 0 and second.oracle.get("read back") == \
        first.oracle["computed"] + first.oracle["read back"], \
        f"the second run reads every case's back: {second.oracle}"
    paths = [run.write(tmp_path / f"run{i}" / "results.json") for i, run in enumerate(runs)]
    assert comparable(paths[0]) == comparable(paths[1]), \
        "the same cases get the same verdicts whether their reference side was read back"


def test_drawing_keeps_only_the_default_seed(tmp_path: Path,
                                             monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(ENV, str(tmp_path / "oracle"))
    run = run_suite("reference", patterns=["fp.unary_binary"], kinds=[CaseKind.valid],
                    jobs=2, seed=5, out_dir=tmp_path / "run")
    assert run.oracle.get("read back") == 0 and run.oracle.get("computed", 0) > 0, \
        f"drawing checks values with seed 0: a run with --seed 5 computes its own: {run.oracle}"
