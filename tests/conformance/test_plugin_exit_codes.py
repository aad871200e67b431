"""The pytest plugin ends a session with ``fusionspec conform``'s exit codes where pytest's own
would hide the outcome: 1 for an incomplete run (every case unsupported is all skips to pytest),
2 for a bad ``--fs-*`` value (an unreadable ``--fs-case=@FILE``, an output that is also an
input), with and without pytest-xdist; and it writes its results document atomically."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest
from testkit.cli import pytest_run

SUITE = ["--pyargs", "fusionspec.conformance"]
#: Declares the MatMul pattern unsupported: a run of its valid cases judges nothing.
ALL_UNSUPPORTED = ["--fs-backend", "testkit.toy_backends:LimitedFaithful", "--fs-patterns",
                   "fp.matmul_post_ops", "--fs-kinds", "valid"]
SMALL = ["--fs-backend", "reference", "--fs-patterns", "fp.bn_relu", "--fs-kinds", "valid"]
EXPECTATIONS = '''schema = "fusionspec-expectations/2"

[[expect]]
status = "skip"
pattern = "fp.matmul_post_ops"
reason = "not ours"
'''


@pytest.mark.parametrize("workers", ["0", "2"])
def test_a_run_where_every_case_is_unsupported_exits_1(workers: str, tmp_path: Path) -> None:
    done = pytest_run(["-q", "-n", workers, *SUITE, *ALL_UNSUPPORTED, "--fs-out", "out"],
                      tmp_path)
    assert done.returncode == 1, f"-n {workers}: all skipped is no success, got " \
                                 f"{done.returncode}:\n{done.stdout[-1200:]}"
    assert "INCOMPLETE" in done.stdout, f"the summary says so:\n{done.stdout[-1200:]}"
    document = json.loads((tmp_path / "out" / "results.json").read_text())
    assert document.get("incomplete"), f"the document says so too: {document.get('totals')}"


@pytest.mark.parametrize("value", ["@missing.txt", "@/dev/zero", "@fifo", "@."],
                         ids=["missing", "device", "fifo", "folder"])
def test_an_unreadable_case_list_is_a_usage_error(value: str, tmp_path: Path) -> None:
    os.mkfifo(tmp_path / "fifo")
    done = pytest_run(["-q", *SUITE, *SMALL, f"--fs-case={value}"], tmp_path, timeout=120)
    assert done.returncode == 2, f"--fs-case={value}: exit 2 as conform's usage error, got " \
                                 f"{done.returncode}:\n{done.stderr[-800:]}"
    assert "--fs-case" in done.stderr and "Traceback" not in done.stdout + done.stderr, \
        f"one line naming the option:\n{done.stderr[-800:]}"


def test_a_bad_value_is_exit_2_under_xdist_too(tmp_path: Path) -> None:
    done = pytest_run(["-q", "-n", "2", *SUITE, *SMALL, "--fs-exclude=@missing.txt"], tmp_path)
    assert done.returncode == 2 and "--fs-exclude" in done.stderr, \
        f"exit 2 naming the option:\n{done.stderr[-800:]}"


def test_writing_the_expectations_file_in_use_is_refused(tmp_path: Path) -> None:
    used = tmp_path / "ci" / "exp.toml"
    used.parent.mkdir()
    used.write_text(EXPECTATIONS)
    for target in ("ci/exp.toml", "ci/../ci/exp.toml"):
        done = pytest_run(["-q", *SUITE, *SMALL, "--fs-expectations", "ci/exp.toml",
                           "--fs-write-expectations", target], tmp_path)
        assert done.returncode == 2 and "--write-expectations" in done.stderr, \
            f"{target}: a usage error naming the clash:\n{done.stderr[-800:]}"
        assert used.read_text() == EXPECTATIONS, f"{target}: the file in use is left alone"


def test_writing_expectations_over_the_results_is_refused(tmp_path: Path) -> None:
    done = pytest_run(["-q", *SUITE, *SMALL, "--fs-out", "out", "--fs-write-expectations",
                       "out/results.json"], tmp_path)
    assert done.returncode == 2 and "results document" in done.stderr, \
        f"a usage error naming the clash:\n{done.stderr[-800:]}"
    assert not (tmp_path / "out" / "results.json").exists(), "nothing was run or written"


def test_the_results_document_replaces_a_link_never_follows_it(tmp_path: Path) -> None:
    victim = tmp_path / "victim.txt"
    victim.write_text("keep me")
    (tmp_path / "out").mkdir()
    (tmp_path / "out" / "results.json").symlink_to(victim)
    done = pytest_run(["-q", *SUITE, *SMALL, "--fs-case", "fp.bn_relu/valid/*",
                       "--fs-out", "out"], tmp_path)
    written = tmp_path / "out" / "results.json"
    assert done.returncode == 0, done.stdout[-800:]
    assert victim.read_text() == "keep me", "the link's target is untouched"
    assert not written.is_symlink() and json.loads(written.read_text())["totals"], \
        "the link was replaced by the document"
