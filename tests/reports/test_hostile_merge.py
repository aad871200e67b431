"""``fusionspec merge`` reads shard artifacts that someone else's code produced: each case here
once deleted, replaced or copied something outside the merged output, overwrote an input, left
a torn document, or called a run that judged nothing a PASS."""

from __future__ import annotations

import json
import os
import resource
import signal
import subprocess
from pathlib import Path
from typing import Any

import pytest
from testkit.cli import BIN, env
from testkit.fuzz import snapshot
from testkit.report import copy_results, load, save

from fusionspec.cli.main import main


def _merge(capsys: pytest.CaptureFixture[str], *argv: str | Path) -> tuple[int, str, str]:
    code = main(["merge", *map(str, argv)])
    out, err = capsys.readouterr()
    assert "Traceback" not in err, f"merge printed a traceback: {err}"
    return code, out, err


def _workspace(results: Path, root: Path) -> tuple[Path, dict[str, Any]]:
    """``root/art/s1`` holding a copy of the run, and a victim folder beside it."""
    shard = copy_results(results, root / "art" / "s1")
    (root / "victim").mkdir()
    (root / "victim" / "keep.txt").write_text("mine")
    return shard, load(shard)


def _outside(root: Path) -> dict[str, bytes]:
    return {name: data for name, data in snapshot(root).items()
            if not name.startswith("out" + os.sep)}


@pytest.mark.parametrize("path", ["..", "../..", "../../victim", ".", "/", "/tmp",
                                  "failures/../..", "failures/../../../victim", "",
                                  "a\\..\\..\\b"])
def test_replay_path_never_reaches_outside_the_output(
        path: str, gelu_results: Path, tmp_path: Path,
        capsys: pytest.CaptureFixture[str]) -> None:
    shard, doc = _workspace(gelu_results, tmp_path)
    doc["failures"][0]["replay"]["path"] = path
    save(shard, doc)
    before = _outside(tmp_path)
    code, _, err = _merge(capsys, shard, "-o", tmp_path / "out" / "results.json")
    assert _outside(tmp_path) == before, f"replay.path {path!r}: files outside out/ changed"
    if path:
        assert code == 1 and "replay.path" in err, f"replay.path {path!r}: refused, got {err}"


def test_a_linked_failure_folder_is_refused(gelu_results: Path, tmp_path: Path,
                                            capsys: pytest.CaptureFixture[str]) -> None:
    shard, doc = _workspace(gelu_results, tmp_path)
    folder = shard.parent / doc["failures"][0]["replay"]["path"]
    secret = tmp_path / "secret"
    secret.mkdir()
    (secret / "id_rsa").write_text("private")
    for child in folder.iterdir():
        child.unlink()
    folder.rmdir()
    folder.symlink_to(secret, target_is_directory=True)
    code, _, err = _merge(capsys, shard, "-o", tmp_path / "out" / "results.json")
    assert code == 1 and "link" in err, f"a linked failure folder is refused: {code} {err}"
    copied = [p for p in (tmp_path / "out").rglob("*") if p.name == "id_rsa"]
    assert not copied, f"nothing behind the link is copied: {copied}"


def test_links_inside_a_failure_folder_are_not_followed(
        gelu_results: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    shard, doc = _workspace(gelu_results, tmp_path)
    folder = shard.parent / doc["failures"][0]["replay"]["path"]
    (tmp_path / "secret.txt").write_text("private")
    (folder / "case.json").unlink()
    (folder / "case.json").symlink_to(tmp_path / "secret.txt")
    code, _, err = _merge(capsys, shard, "-o", tmp_path / "out" / "results.json")
    assert code == 1, f"the merged run fails as its shard does: {err}"
    copy = tmp_path / "out" / doc["failures"][0]["replay"]["path"]
    assert (copy / "graph.json").is_file(), f"the folder's own files are copied: {copy}"
    assert not (copy / "case.json").exists() and not (copy / "case.json").is_symlink(), \
        "a link inside the failure folder is left out"
    texts = [p.read_text(errors="replace") for p in (tmp_path / "out").rglob("*") if p.is_file()]
    assert not any("private" in t for t in texts), "the linked file's content is not copied"


def test_an_existing_folder_in_the_output_is_never_replaced(
        gelu_results: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    shard, doc = _workspace(gelu_results, tmp_path)
    mine = tmp_path / "out" / doc["failures"][-1]["replay"]["path"]
    mine.mkdir(parents=True)
    (mine / "notes.txt").write_text("mine")
    code, _, err = _merge(capsys, shard, "-o", tmp_path / "out" / "results.json")
    assert code == 1 and "already exists" in err, f"refused, not replaced: {code} {err}"
    assert (mine / "notes.txt").read_text() == "mine", "the existing folder is untouched"
    assert not (tmp_path / "out" / "results.json").exists(), "nothing is written on refusal"
    left = [p for p in (tmp_path / "out").rglob("*") if p.is_dir() and p != mine and
            p.name.startswith(".")]
    assert not left, f"no temporary folder is left behind: {left}"


@pytest.mark.parametrize("same", ["itself", "link"])
def test_the_output_is_never_an_input(same: str, gelu_results: Path, tmp_path: Path,
                                      capsys: pytest.CaptureFixture[str]) -> None:
    shard, _ = _workspace(gelu_results, tmp_path)
    out = shard
    if same == "link":
        out = tmp_path / "alias.json"
        out.symlink_to(shard)
    before = shard.read_bytes()
    code, _, err = _merge(capsys, shard, "-o", out)
    assert code == 2 and "is also an input" in err, f"-o {same}: usage error, got {code} {err}"
    assert shard.read_bytes() == before, "the input is untouched"


def test_a_failed_write_leaves_the_old_document_whole(gelu_results: Path,
                                                      tmp_path: Path) -> None:
    shard, _ = _workspace(gelu_results, tmp_path)
    out = tmp_path / "out" / "results.json"
    out.parent.mkdir()
    out.write_text('{"old": true}\n')

    def small_files() -> None:  # a write past 64 KiB fails with EFBIG instead of a signal
        signal.signal(signal.SIGXFSZ, signal.SIG_IGN)
        resource.setrlimit(resource.RLIMIT_FSIZE, (64 * 1024, 64 * 1024))

    done = subprocess.run([str(BIN / "fusionspec"), "merge", str(shard), "-o", str(out)],
                          cwd=tmp_path, env=env(), capture_output=True, text=True, timeout=120,
                          check=False, preexec_fn=small_files)
    assert done.returncode == 1 and "Traceback" not in done.stderr, \
        f"a failed write is one line: {done.returncode} {done.stderr[-400:]}"
    assert json.loads(out.read_text()) == {"old": True}, "the old document is still whole"
    assert [p.name for p in out.parent.iterdir()] == ["results.json"], \
        "no temporary file is left behind"


def test_a_merged_run_that_judged_nothing_is_incomplete(
        gelu_results: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    shard, doc = _workspace(gelu_results, tmp_path)
    for name in ("verdicts", "failures", "limitations", "extensions"):
        doc[name] = []
    doc["totals"], doc["patterns"], doc["rules"] = {}, {}, {}
    save(shard, doc)
    code, out, err = _merge(capsys, shard, "-o", tmp_path / "out" / "results.json", "--json")
    said = json.loads(out)
    assert code == 1 and said["verdict"] == "INCOMPLETE", f"never a PASS: {said} {err}"
    assert "no case was judged" in said["incomplete"], said
