"""The pool starts the workers a run can use, not the ones it was allowed: a run of one case
with many jobs starts one worker (each worker imports the backend and holds its memory)."""

from __future__ import annotations

from fusionspec.conformance.cases import CaseKind
from fusionspec.conformance.suite import PROFILES, draw_cases
from fusionspec.conformance.workers import RunnerPool
from fusionspec.spec.catalog import entry


def test_workers_start_as_the_cases_need_them() -> None:
    cases = draw_cases(entry("fp.binary_post_ops"), CaseKind.valid, PROFILES["ci"])[:4]
    with RunnerPool("reference", None, 30.0, jobs=8, start=1) as pool:
        assert len(pool.runners) == 1, f"one worker before the plan, not {len(pool.runners)}"
        pool.ensure(1)
        assert len(pool.runners) == 1, "one case needs one worker"
        pool.ensure(3)
        assert len(pool.runners) == 3, f"three cases, three workers: {len(pool.runners)}"
        pool.ensure(100)
        assert len(pool.runners) == 8, f"never more than --jobs: {len(pool.runners)}"
        verdicts = list(pool.run_many(cases))
    assert [v.case_id for v in verdicts] == [c.id for c in cases], \
        "the verdicts come back in the cases' order after the pool grew"


def test_a_pool_started_whole_keeps_its_workers() -> None:
    with RunnerPool("reference", None, 30.0, jobs=2) as pool:
        assert len(pool.runners) == 2, "without start=, every job's worker starts at once"
        pool.ensure(1)
        assert len(pool.runners) == 2, "ensure never stops a worker"
