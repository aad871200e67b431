"""The real-bug score: the suite (ci profile) catches each bug of the real-bug corpus
(testkit.real_bugs) with the status it deserves.

Each bug is one that a shipping implementation released and later fixed, re-created as a
broken backend and run on the patterns where it can show, in-process like the mutation tests.
A bug the suite misses stays in the corpus, marked as an expected failure that names the corner
no case reaches. With ``FUSIONSPEC_REAL_BUGS_OUT=path`` the outcomes are written there as a
small JSON document (`nox -s real-bugs` writes results/real_bugs.json).
"""

from __future__ import annotations

import importlib
import json
import os
from collections import Counter
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from testkit.mutation_runs import run_backend
from testkit.real_bugs import NOT_APPLICABLE, REAL_BUGS, RealBug

from fusionspec.conformance.cases import Status
from fusionspec.reports.findings import group_findings
from fusionspec.spec.catalog import pattern_ids

#: Bugs the suite does not catch yet, with the corner no ci case reaches (coverage work).
MISSED: dict[str, str] = {
}

_OUTCOMES: list[dict[str, Any]] = []


@pytest.fixture(scope="module", autouse=True)
def _score_document() -> Iterator[None]:
    """Write the real-bug score when asked (FUSIONSPEC_REAL_BUGS_OUT)."""
    yield
    target = os.environ.get("FUSIONSPEC_REAL_BUGS_OUT")
    if not target or not _OUTCOMES:
        return
    per_class: dict[str, dict[str, int]] = {}
    for outcome in _OUTCOMES:
        entry = per_class.setdefault(outcome["class"], {"caught": 0, "total": 0})
        entry["total"] += 1
        entry["caught"] += int(outcome["caught"])
    caught = sum(1 for o in _OUTCOMES if o["caught"])
    Path(target).parent.mkdir(parents=True, exist_ok=True)
    Path(target).write_text(json.dumps({
        "profile": "ci", "bugs": len(_OUTCOMES), "caught": caught,
        "score": caught / len(_OUTCOMES), "not_applicable": len(NOT_APPLICABLE),
        "per_class": per_class, "outcomes": _OUTCOMES}, indent=1) + "\n", encoding="utf-8")


def _params() -> list[Any]:
    return [pytest.param(bug, id=bug.id, marks=[pytest.mark.xfail(
        strict=True, reason=f"missed: {MISSED[bug.id]}")] if bug.id in MISSED else [])
        for bug in REAL_BUGS]


@pytest.mark.slow
@pytest.mark.parametrize("bug", _params())
def test_suite_catches_real_bug(bug: RealBug) -> None:
    results = run_backend(bug.backend, bug.patterns, bug.kinds)
    seen = Counter(results.totals)
    wrong = [f for f in results.failures if f.status not in (bug.status.value, "error")]
    caught = seen[bug.status.value] > 0 and results.failed and not wrong
    found = [f"{f.signature} ({len(f.records)})" for f in group_findings(results.document())]
    _OUTCOMES.append({"bug": bug.id, "class": bug.bug_class, "source": bug.source,
                      "fixed_in": bug.fixed_in, "expected": bug.status.value,
                      "caught": caught, "statuses": dict(seen), "findings": found,
                      "corner": MISSED.get(bug.id, "")})
    where = f"{bug.id} ({bug.source}, fixed in {bug.fixed_in})"
    assert seen[bug.status.value] > 0, \
        f"{where}: the suite never reported {bug.status.value}; statuses seen: {dict(seen)}"
    assert results.failed, f"{where}: the broken backend passed the run: {dict(seen)}"
    assert not wrong, f"{where}: unexpected failure kinds {[f['status'] for f in wrong]}: " \
                      f"{[f['reason'] for f in wrong[:3]]}"


def test_the_corpus_holds_at_least_30_sourced_applicable_bugs() -> None:
    assert len(REAL_BUGS) >= 30, f"only {len(REAL_BUGS)} applicable real bugs in the corpus"
    ids = [bug.id for bug in REAL_BUGS]
    assert len(set(ids)) == len(ids), f"a bug id is listed twice: {sorted(ids)}"
    known = set(pattern_ids())
    for bug in REAL_BUGS:
        assert bug.source.startswith("https://github.com/"), \
            f"{bug.id}: the source must be a GitHub issue, pull request or commit: {bug.source}"
        assert bug.fixed_in.strip(), f"{bug.id}: no fixed-in version or release"
        assert bug.patterns and set(bug.patterns) <= known, \
            f"{bug.id}: patterns outside the catalog: {sorted(set(bug.patterns) - known)}"
        assert isinstance(bug.status, Status) and bug.kinds, \
            f"{bug.id}: needs an expected status and the case kinds to run"
        module, _, name = bug.backend.partition(":")
        cls = getattr(importlib.import_module(module), name, None)
        assert isinstance(cls, type), f"{bug.id}: no class {name} in {module}"
        assert cls.__doc__ and len(cls.__doc__.split()) >= 20, \
            f"{bug.id}: {name} needs a docstring naming its source and what went wrong"
    assert all(line.strip() for line in NOT_APPLICABLE), "an empty not-applicable line"
    assert set(MISSED) <= set(ids), f"missed bugs not in the corpus: {set(MISSED) - set(ids)}"
