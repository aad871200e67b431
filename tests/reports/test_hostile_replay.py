"""``conform --replay DIR`` reads a failure folder someone else saved: the folder is data, so it
never chooses the code that runs, and the replay is bounded like ``run``."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest
from testkit.cli import env
from testkit.report import copy_results, load

from fusionspec.cli.main import main

#: A module a hostile failure folder carries: importing it leaves a mark.
EVIL = "from pathlib import Path\nPath('{mark}').write_text('ran')\nBackend = object\n"


def _folder(results: Path, root: Path, backend: str) -> Path:
    """A copy of one failure folder of `results` recording `backend`, holding evilmod.py."""
    copy = copy_results(results, root / "run")
    folder = copy.parent / load(copy)["failures"][0]["replay"]["path"]
    record = json.loads((folder / "case.json").read_text())
    record["backend"] = backend
    (folder / "case.json").write_text(json.dumps(record))
    (folder / "evilmod.py").write_text(EVIL.format(mark=root / "mark"))
    return folder


def _module_cli(folder: Path, *argv: str) -> subprocess.CompletedProcess[str]:
    """``python -m fusionspec.cli ARGV`` run inside `folder`."""
    return subprocess.run([sys.executable, "-m", "fusionspec.cli", *argv], cwd=folder,
                          env=env(), capture_output=True, text=True, timeout=300, check=False,
                          stdin=subprocess.DEVNULL)


@pytest.mark.parametrize("backend", ["evilmod:Backend", "os:getcwd", "subprocess:Popen",
                                     "no such backend\x1b[2K"])
def test_a_failure_folder_does_not_choose_the_backend(backend: str, gelu_results: Path,
                                                      tmp_path: Path) -> None:
    folder = _folder(gelu_results, tmp_path, backend)
    done = _module_cli(folder, "conform", "--replay", ".")
    assert done.returncode == 2, f"{backend!r}: a usage error, got {done.returncode} " \
        f"{done.stdout} {done.stderr[-600:]}"
    assert "not a registered backend" in done.stderr and "--backend" in done.stderr, \
        f"{backend!r}: it says why and which command would run it: {done.stderr}"
    assert "\x1b" not in done.stderr, "no escape sequence from the folder reaches the terminal"
    assert not (tmp_path / "mark").exists(), f"{backend!r}: the folder's module never ran"


def test_the_current_folder_is_not_on_the_import_path(gelu_results: Path,
                                                      tmp_path: Path) -> None:
    folder = _folder(gelu_results, tmp_path, "reference")
    done = _module_cli(folder, "conform", "--backend", "evilmod:Backend", "--replay", ".",
                       "--no-isolate")
    assert done.returncode != 0 and "Traceback" not in done.stderr, \
        f"evilmod is not found: {done.returncode} {done.stderr[-600:]}"
    assert not (tmp_path / "mark").exists(), "a module in the current folder is never imported"


def test_a_registered_backend_replays_without_being_named(gelu_results: Path, tmp_path: Path,
                                                          capsys: pytest.CaptureFixture[str],
                                                          ) -> None:
    folder = _folder(gelu_results, tmp_path, "reference")
    code = main(["conform", "--replay", str(folder), "--no-isolate", "--json"])
    said = json.loads(capsys.readouterr().out)
    assert code == 0 and said["backend"] == "reference", f"the reference passes: {said}"


def test_replay_refuses_a_graph_past_the_memory_budget(
        gelu_results: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str],
        monkeypatch: pytest.MonkeyPatch) -> None:
    folder = _folder(gelu_results, tmp_path, "reference")
    monkeypatch.setenv("FUSIONSPEC_MEMORY_BUDGET", "0.000001")
    code = main(["conform", "--replay", str(folder), "--no-isolate"])
    err = capsys.readouterr().err
    assert code == 1 and "needs about" in err, f"refused before filling inputs: {code} {err}"


@pytest.mark.parametrize("value", ["1e300", "1e-320", "0.00001", "nan", "-1"])
def test_memory_limit_out_of_range_is_a_usage_error(value: str, gelu_results: Path,
                                                    tmp_path: Path,
                                                    capsys: pytest.CaptureFixture[str]) -> None:
    folder = _folder(gelu_results, tmp_path, "reference")
    with pytest.raises(SystemExit) as stopped:
        main(["conform", "--replay", str(folder), "--memory-limit", value])
    err = capsys.readouterr().err
    assert stopped.value.code == 2 and "--memory-limit" in err, f"{value}: usage error: {err}"
    assert "Traceback" not in err, f"{value}: one line, no traceback: {err}"


def test_conform_leaves_no_hypothesis_folder_in_the_current_folder(tmp_path: Path) -> None:
    work = tmp_path / "work"
    work.mkdir()
    done = subprocess.run(
        [sys.executable, "-m", "fusionspec.cli", "conform", "--patterns", "fp.bn_relu",
         "--kinds", "valid,near-miss", "--out", str(tmp_path / "out")], cwd=work,
        env=env({"XDG_CACHE_HOME": str(tmp_path / "cache")}), capture_output=True, text=True,
        timeout=300, check=False, stdin=subprocess.DEVNULL)
    assert done.returncode == 0, f"the run passes: {done.stdout[-400:]} {done.stderr[-400:]}"
    assert not list(work.iterdir()), f"nothing written in the current folder: " \
        f"{[p.name for p in work.iterdir()]}"


def test_a_folder_s_text_reaches_the_terminal_without_escapes(
        gelu_results: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    folder = _folder(gelu_results, tmp_path, "reference")
    record = json.loads((folder / "case.json").read_text())
    record["description"] = "\x1b[2K\x1b[1A\rall good" + "y" * 100_000
    (folder / "case.json").write_text(json.dumps(record))
    code = main(["conform", "--replay", str(folder), "--no-isolate"])
    out = capsys.readouterr().out
    assert code == 0 and "\x1b" not in out and "\r" not in out, f"cleaned: {out[:200]!r}"
    assert len(out) < 10_000, f"clipped: {len(out)} characters"
