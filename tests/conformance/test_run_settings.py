"""A run's seed has one owner, its `RunSettings`: the planner draws with it, every runner of
the pool judges with it, the collector records it (the document's and every failure's replay
seed), and none of them takes or keeps a seed of its own."""

from __future__ import annotations

import inspect
import json
from dataclasses import replace
from pathlib import Path

import pytest
from testkit import toy_backends as toy

from fusionspec.conformance.cases import CaseKind, Status
from fusionspec.conformance.grade.results import (
    ResultsCollector,
    ResultsFormatError,
    load_failure,
    write_failure,
)
from fusionspec.conformance.grade.verdicts import judge
from fusionspec.conformance.options import add_flags, read_options
from fusionspec.conformance.selection import PROFILES, RunSettings, Selection
from fusionspec.conformance.suite import plan_cases, run_collector, run_suite
from fusionspec.conformance.workers import Runner, RunnerPool
from fusionspec.reference.backend import NUMPY_DEVICE

TESTS = str(Path(__file__).resolve().parents[1])  # holds the testkit package
WRONG_MATH = "testkit.toy_backends:WrongMath"
SETTINGS = RunSettings(Selection(patterns=("fp.reduction_post_ops",), kinds=(CaseKind.valid,)),
                       seed=5)


def test_the_seed_of_a_run_reaches_the_plan_the_document_and_every_replay(
        tmp_path: Path) -> None:
    collector = run_suite(WRONG_MATH, run_settings=SETTINGS, jobs=2, sys_path=[TESTS],
                          out_dir=tmp_path)
    document = json.loads(collector.write(tmp_path / "results.json").read_text())
    assert document["seed"] == 5 and document["profile"] == "ci", \
        f"the document records the run's settings: {document['seed']}, {document['profile']}"
    assert document["selection"] == SETTINGS.selection.to_dict()
    assert document["failures"], "WrongMath fails the valid cases"
    for failure in document["failures"]:
        replay = failure["replay"]
        assert replay["seed"] == 5, f"{failure['case_id']}: replay seed {replay['seed']}"
        assert "--seed 5" in replay["rerun"], replay["rerun"]
        _, saved_seed = load_failure(tmp_path / replay["path"])
        assert saved_seed == 5, f"{replay['path']} saved seed {saved_seed}"
    planned = [p.case.id for p in plan_cases(SETTINGS).cases]
    assert [v["case_id"] for v in document["verdicts"]] == planned, \
        "planning with the same settings draws the run's cases, in its order"


def test_every_runner_of_the_pool_and_the_collector_share_the_one_object() -> None:
    with RunnerPool(WRONG_MATH, None, 30.0, run_settings=SETTINGS, jobs=2,
                    sys_path=[TESTS]) as pool:
        assert len(pool.runners) == 2
        assert all(r.run_settings is SETTINGS for r in pool.runners), \
            "each runner reads the seed from the run's settings, not from a copy"
        collector = run_collector(pool, WRONG_MATH, None, expectations=None, strict=False)
        assert collector.run_settings is SETTINGS and collector.seed == 5
        case = next(p.case for p in plan_cases(SETTINGS).cases)
        verdicts = list(pool.run_many([case, case]))
    with_seed = judge(case, toy.WrongMath(), NUMPY_DEVICE, seed=5)
    other_seed = judge(case, toy.WrongMath(), NUMPY_DEVICE, seed=0)
    assert with_seed.status is Status.numeric_mismatch
    assert with_seed.details != other_seed.details, "the seed shows in a mismatch's details"
    assert all(v.details == with_seed.details for v in verdicts), \
        "every worker judged the case with the run's seed"


def test_no_party_takes_or_keeps_a_seed_of_its_own() -> None:
    for function in (Runner.__init__, Runner.run, RunnerPool.__init__, RunnerPool.run,
                     ResultsCollector.__init__, ResultsCollector.add, plan_cases, run_collector):
        names = set(inspect.signature(function).parameters)
        assert not names & {"seed", "run_seed"}, \
            f"{function.__qualname__} takes a seed apart from the run's settings: {names}"
    with Runner("reference", timeout_s=30, run_settings=SETTINGS) as runner:
        assert "seed" not in vars(runner), "a runner keeps no seed beside its settings"
        assert runner.run_settings is SETTINGS
    collector = ResultsCollector("reference", NUMPY_DEVICE, run_settings=SETTINGS)
    assert "seed" not in vars(collector) and collector.seed == 5
    with pytest.raises(AttributeError):
        collector.seed = 3  # type: ignore[misc]


def test_the_command_line_makes_one_settings_object() -> None:
    import argparse

    parser = argparse.ArgumentParser()
    add_flags(parser.add_argument)
    args = parser.parse_args(["--seed", "7", "--profile", "thorough", "--shard", "2/3"])
    options = read_options(lambda name: getattr(args, name))
    settings = options.run_settings
    assert (settings.seed, settings.profile, str(settings.shard)) == \
        (7, PROFILES["thorough"], "2/3")
    assert (options.seed, options.profile, options.shard) == \
        (settings.seed, settings.profile, settings.shard), "the options read their settings"


def test_run_suite_takes_the_settings_or_their_parts_not_both() -> None:
    with pytest.raises(TypeError, match="seed"):
        run_suite("reference", run_settings=SETTINGS, seed=3)


def test_a_seed_is_an_integer_zero_or_more() -> None:
    for wrong in (-1, 1.5, True):
        with pytest.raises(ValueError, match="seed"):
            RunSettings(seed=wrong)  # type: ignore[arg-type]
    assert replace(SETTINGS, seed=0).seed == 0


def test_a_failure_folder_with_a_negative_seed_is_refused(tmp_path: Path) -> None:
    case = toy.valid_case("fp.matmul_post_ops", 3)
    verdict = judge(case, toy.WrongMath(), NUMPY_DEVICE, seed=1)
    folder = write_failure(tmp_path / "f", case, verdict, backend="x", device_id="d", seed=1)
    record = json.loads((folder / "case.json").read_text())
    (folder / "case.json").write_text(json.dumps({**record, "seed": -1}))
    with pytest.raises(ResultsFormatError, match="negative"):
        load_failure(folder)
