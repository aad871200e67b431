"""The command line as a CI job uses it: replay lines that work when pasted anywhere, usage
errors for every bad value, clean standard output with ``--json``, progress lines in a log,
the report's verdict and exit code, ``fusionspec --version``."""

from __future__ import annotations

import json
import shlex
import subprocess
from pathlib import Path

import pytest
from testkit.cli import env, fusionspec
from testkit.material import spec_docs

from fusionspec.cli.main import main
from fusionspec.spec.pages import PAGES

BROKEN = ["--backend", "testkit.toy_backends:WrongConv", "--patterns", "fp.conv_post_ops",
          "--kinds", "valid"]


def test_a_printed_replay_line_pasted_elsewhere_reproduces_the_failure(tmp_path: Path) -> None:
    run_dir, elsewhere = tmp_path / "ci", tmp_path / "somewhere" / "else"
    run_dir.mkdir()
    elsewhere.mkdir(parents=True)
    done = fusionspec(["conform", *BROKEN], run_dir)
    assert done.returncode == 1, f"the planted failures fail the run: {done.stdout[-600:]}"
    lines = [line.split("replay: ", 1)[1] for line in done.stdout.splitlines()
             if "replay: " in line]
    assert lines and "--backend testkit.toy_backends:WrongConv" in lines[0], \
        f"the replay line names the backend as it was given (module:attr): {lines[:1]}"
    assert (run_dir / "results" / "conformance" / "broken-numpy" / "results.json").is_file(), \
        "without --out the results go to results/conformance/<backend>-<device>"
    pasted = subprocess.run(["bash", "-c", lines[0]], cwd=elsewhere, env=env(),
                            capture_output=True, text=True, timeout=300, check=False)
    assert pasted.returncode == 1 and "numeric-mismatch" in pasted.stdout, \
        f"pasted as is in another folder, it reproduces the failure: {pasted.stdout} " \
        f"{pasted.stderr[-600:]}"
    assert shlex.split(lines[0])[:2] == ["fusionspec", "conform"], "it is one command"


def test_replay_txt_runs_from_its_folder_after_the_artifact_moved(tmp_path: Path) -> None:
    done = fusionspec(["conform", *BROKEN, "--out", "out"], tmp_path)
    assert done.returncode == 1, done.stdout[-600:]
    moved = tmp_path / "downloaded-artifact"
    (tmp_path / "out").rename(moved)
    folder = next((moved / "failures").iterdir())
    command = next(line for line in (folder / "replay.txt").read_text().splitlines()
                   if line.startswith("fusionspec conform"))
    again = subprocess.run(["bash", "-c", command], cwd=folder, env=env(),
                           capture_output=True, text=True, timeout=300, check=False)
    assert again.returncode == 1 and "numeric-mismatch" in again.stdout, \
        f"replay.txt's paths are relative to its folder: {again.stdout} {again.stderr[-400:]}"


@pytest.mark.parametrize("args", [
    ["--patterns", "nope"], ["--patterns", "int9.*"], ["--family", "cubist"],
    ["--rule", "no.such.rule"], ["--dtype", "f64"], ["--case", "nope/valid/0000"],
    ["--shard", "4/3"], ["--shard", "half"], ["--seed", "-1"], ["--profile", "fast"],
    ["--patterns", "fp.bn_relu", "--family", "softmax"],
])
def test_bad_values_are_one_line_usage_errors(args: list[str]) -> None:
    done = fusionspec(["conform", *args], Path.cwd())
    assert done.returncode == 2, f"{args}: exit {done.returncode}: {done.stderr[-400:]}"
    assert "Traceback" not in done.stderr and "error:" in done.stderr, done.stderr
    assert len([line for line in done.stderr.splitlines() if "error:" in line]) == 1, \
        f"one error line: {done.stderr}"


def test_a_case_id_that_is_not_drawn_is_a_usage_error(tmp_path: Path) -> None:
    done = fusionspec(["conform", "--case", "fp.bn_relu/valid/00000000"], tmp_path)
    assert done.returncode == 2 and "not among the cases" in done.stderr, done.stderr[-400:]


def test_json_keeps_stdout_clean_and_progress_goes_to_the_log(tmp_path: Path) -> None:
    done = fusionspec(["conform", "--patterns", "fp.bn_relu", "--kinds", "valid", "--json",
                       "--out", "out"], tmp_path)
    said = json.loads(done.stdout)  # nothing else on standard output
    assert done.returncode == 0 and said["ok"] and said["verdict"] == "PASS", said
    assert "judging" in done.stderr and "judged" in done.stderr, \
        f"off a terminal, plain progress lines go to standard error: {done.stderr}"


def test_report_says_ok_only_for_a_pass_and_fails_when_asked(tmp_path: Path) -> None:
    done = fusionspec(["conform", *BROKEN, "--out", "out"], tmp_path)
    assert done.returncode == 1, done.stdout[-400:]
    shown = fusionspec(["report", "out/results.json", "-o", "r.html", "--json"], tmp_path)
    said = json.loads(shown.stdout)
    assert shown.returncode == 0 and said["written"], \
        f"by default the report exits 0 once written: {said}"
    assert said["verdict"] == "FAIL" and said["ok"] is False, \
        f"ok is never true next to FAIL: {said}"
    gated = fusionspec(["report", "out/results.json", "-o", "r.html", "--fail-on-failures"],
                       tmp_path)
    assert gated.returncode == 1, f"--fail-on-failures exits 1 on FAIL: {gated.stdout}"
    same = fusionspec(["report", "out/results.json", "--baseline", "out/results.json", "-o",
                       "r.html", "--fail-on-regressions"], tmp_path)
    assert same.returncode == 0, f"no regression against itself: {same.stdout}"


def test_version_names_suite_spec_python_and_backends(capsys: pytest.CaptureFixture[str],
                                                      ) -> None:
    with pytest.raises(SystemExit) as ended:
        main(["--version"])
    text = capsys.readouterr().out
    assert ended.value.code == 0, f"--version exits 0: {ended.value.code}"
    assert text.startswith("fusionspec ") and "release: not stated by the pages" in text, text
    assert all(p.title in text and p.sha256[:16] in text for p in PAGES), text
    assert "python: 3." in text and "reference" in text, text


def test_the_recorded_page_digests_are_the_pages() -> None:
    import hashlib

    folder = spec_docs()
    for page in PAGES:
        digest = hashlib.sha256((folder / page.file).read_bytes()).hexdigest()
        assert digest == page.sha256, f"{page.file} changed: the spec version must follow"
