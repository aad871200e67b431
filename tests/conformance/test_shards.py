"""Sharded runs: ``--shard 1/3 ... 3/3`` merged with ``fusionspec merge`` is the unsharded
run's results document; a missing, doubled or foreign part is caught; ``--jobs 2`` writes the
same document as ``--jobs 1``."""

from __future__ import annotations

import json
from dataclasses import replace
from pathlib import Path

import pytest
from testkit.cli import comparable, fusionspec

from fusionspec.conformance.grade.merge import merge_documents
from fusionspec.conformance.grade.results import ResultsFormatError, load_document

#: A selection with valid, near-miss and ill-formed cases, and failures (the backend's
#: Convolution partitions are wrong), small enough for four runs.
RUN = ["--backend", "testkit.toy_backends:WrongConv", "--patterns",
       "fp.conv_post_ops,fp.bn_relu", "--kinds", "valid,near-miss,ill-formed"]


@pytest.fixture(scope="module")
def runs(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """One unsharded run (two jobs) and its three shards, side by side."""
    root = tmp_path_factory.mktemp("shards")
    whole = fusionspec(["conform", *RUN, "--jobs", "2", "--out", "whole"], root)
    assert whole.returncode == 1, f"the planted failures fail the run: {whole.stdout[-600:]}"
    for k in (1, 2, 3):
        part = fusionspec(["conform", *RUN, "--shard", f"{k}/3", "--out", f"shard-{k}"], root)
        assert part.returncode in (0, 1), f"shard {k}/3 ran: {part.stderr[-600:]}"
    return root


def test_merged_shards_equal_the_unsharded_run(runs: Path) -> None:
    merged = fusionspec(["merge", *[f"shard-{k}/results.json" for k in (1, 2, 3)], "-o",
                         "merged/results.json"], runs)
    assert merged.returncode == 1 and "3 part(s) merged" in merged.stdout, \
        f"the merged run fails like the whole one: {merged.stdout} {merged.stderr}"
    whole = comparable(runs / "whole" / "results.json")
    joined = comparable(runs / "merged" / "results.json")
    for key in whole:
        assert joined.get(key) == whole[key], f"the merged document differs in {key!r}"
    assert joined == whole, "the merged document is the unsharded run's"
    shards = [len(load_document(runs / f"shard-{k}" / "results.json").verdicts)
              for k in (1, 2, 3)]
    assert all(shards) and sum(shards) == len(whole["verdicts"]), \
        f"each shard judged a part, together all of it: {shards}"


def test_merged_failures_are_replayable_from_the_merged_folder(runs: Path) -> None:
    fusionspec(["merge", *[f"shard-{k}/results.json" for k in (1, 2, 3)], "-o",
                "copy/results.json"], runs)
    document = load_document(runs / "copy" / "results.json")
    failure = document.failures[0]
    assert failure.replay.path is not None, f"a merged failure keeps its folder: {failure}"
    folder = runs / "copy" / failure.replay.path
    assert (folder / "graph.json").is_file(), f"the failure folder is copied: {folder}"
    replay = fusionspec(["conform", "--backend", RUN[1], "--replay", str(folder)], runs)
    assert replay.returncode == 1 and failure.status in replay.stdout, \
        f"it replays on the named backend: {replay.stdout} {replay.stderr}"


def test_a_missing_shard_leaves_the_merge_incomplete(runs: Path) -> None:
    done = fusionspec(["merge", "shard-1/results.json", "shard-3/results.json", "-o",
                       "partial/results.json", "--json"], runs)
    said = json.loads(done.stdout)
    assert done.returncode == 1 and said["verdict"] == "INCOMPLETE", said
    assert "shard 2/3 is missing" in said["incomplete"], said["incomplete"]


def test_parts_of_different_runs_are_refused(runs: Path) -> None:
    one = load_document(runs / "shard-1" / "results.json")
    other = replace(load_document(runs / "shard-2" / "results.json"), seed=7)
    with pytest.raises(ResultsFormatError, match="seed"):
        merge_documents([one, other], ["a", "b"])
    with pytest.raises(ResultsFormatError, match="twice"):
        merge_documents([one, one], ["a", "a again"])


def test_jobs_do_not_change_the_document(runs: Path) -> None:
    single = fusionspec(["conform", *RUN, "--jobs", "1", "--out", "single"], runs)
    assert single.returncode == 1, single.stderr[-600:]
    assert comparable(runs / "single" / "results.json") == \
        comparable(runs / "whole" / "results.json"), "one job and two jobs: the same document"
    seconds = [v.seconds for v in load_document(runs / "single" / "results.json").verdicts]
    assert all(s is not None and s > 0 for s in seconds), "every verdict records its wall time"
