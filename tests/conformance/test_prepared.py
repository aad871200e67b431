"""The reference's side of a case prepared ahead (grade.prepared, workers.ahead) changes no
verdict: a case judged with its preparation gets the verdict it gets without one, for a
conforming backend, a numerically wrong one and one whose partitions round differently; a
preparation of another case or seed is ignored; a run that prepares ahead in processes of its
own writes the document a run without them writes."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from testkit import mutants
from testkit.cli import comparable

from fusionspec.backend import Backend
from fusionspec.conformance.cases import Case, CaseKind
from fusionspec.conformance.grade import prepared as prepared_module
from fusionspec.conformance.grade.prepared import prepare
from fusionspec.conformance.grade.verdicts import judge
from fusionspec.conformance.suite import PROFILES, draw_cases, run_suite
from fusionspec.conformance.workers import ahead, pool
from fusionspec.reference.backend import NUMPY_DEVICE, ReferenceBackend
from fusionspec.spec.catalog import entry

TESTS = str(Path(__file__).resolve().parents[1])  # holds the testkit package
PATTERNS = ("fp.conv_post_ops", "fp.matmul_post_ops", "int8.matmul_post_ops",
            "softmax.post_ops")


def _cases(per_pattern: int = 6) -> list[Case]:
    found: list[Case] = []
    for pattern in PATTERNS:
        for kind in CaseKind:
            found += draw_cases(entry(pattern), kind, PROFILES["ci"])[:per_pattern]
    return found


@pytest.fixture(scope="module")
def cases() -> list[Case]:
    return _cases()


def _backends() -> Iterator[tuple[str, Backend]]:
    yield "reference", ReferenceBackend()
    yield "drops the last post-op", mutants.DropsLastPostOp()
    yield "never fuses", mutants.NeverFuses()
    yield "truncates narrow outputs", mutants.TruncatesNarrowOutputs()


@pytest.mark.parametrize("name", [name for name, _ in _backends()])
def test_a_prepared_case_gets_the_verdict_it_gets_without(name: str,
                                                          cases: list[Case]) -> None:
    backend = dict(_backends())[name]
    compared = 0
    for case in cases:
        ready = prepare(case, 0)
        assert (ready is None) == (case.kind is CaseKind.ill_formed), \
            f"{case.id}: a well-formed case is prepared, an ill-formed one is not"
        alone = judge(case, backend, NUMPY_DEVICE, seed=0)
        helped = judge(case, backend, NUMPY_DEVICE, seed=0, prepared=ready)
        assert repr(helped) == repr(alone), \
            f"{case.id} on {name}: the prepared verdict differs from the verdict without it"
        compared += ready is not None
    assert compared > 20, f"only {compared} prepared cases compared on {name}"


def test_a_preparation_of_another_case_or_seed_is_ignored(cases: list[Case],
                                                          monkeypatch: pytest.MonkeyPatch,
                                                          ) -> None:
    valid = [c for c in cases if c.kind is CaseKind.valid]
    first, second = valid[0], valid[1]
    other = prepare(second, 0)
    same_other_seed = prepare(first, 1)
    assert other is not None and same_other_seed is not None
    assert not other.serves(first, 0) and not same_other_seed.serves(first, 0), \
        "a preparation serves only its own case and seed"
    used: list[object] = []
    real = prepared_module.Prepared.serves

    def spy(self: prepared_module.Prepared, case: Case, seed: int) -> bool:
        used.append(self.case_id)
        return real(self, case, seed)

    monkeypatch.setattr(prepared_module.Prepared, "serves", spy)
    backend = ReferenceBackend()
    for wrong in (other, same_other_seed):
        verdict = judge(first, backend, NUMPY_DEVICE, seed=0, prepared=wrong)
        assert verdict == judge(first, backend, NUMPY_DEVICE, seed=0), \
            f"a preparation of {wrong.case_id} (seed {wrong.seed}) changed {first.id}'s verdict"
    assert len(used) == 2, "each preparation was checked against the case before use"


def test_a_case_the_reference_cannot_prepare_is_judged_as_before(
        cases: list[Case], monkeypatch: pytest.MonkeyPatch) -> None:
    case = next(c for c in cases if c.kind is CaseKind.valid)

    def broken(*_: object, **__: object) -> object:
        raise RuntimeError("planted")

    monkeypatch.setattr(prepared_module, "fill_inputs", broken)
    assert prepare(case, 0) is None, "a preparation that fails is no preparation"


def _document(monkeypatch: pytest.MonkeyPatch, tmp_path: Path, *, ahead_on: bool,
              backend: str) -> dict[str, Any]:
    monkeypatch.setattr(pool, "MIN_CASES", 1 if ahead_on else 10**9)
    out = tmp_path / ("ahead" if ahead_on else "plain")
    collector = run_suite(backend, patterns=["fp.matmul_post_ops"], kinds=list(CaseKind), jobs=2,
                          sys_path=[TESTS], out_dir=out)
    return comparable(collector.write(out / "results.json"))


@pytest.mark.parametrize("backend", ["reference", "testkit.mutants:DropsLastPostOp"])
def test_a_run_preparing_ahead_writes_the_same_document(backend: str, tmp_path: Path,
                                                        monkeypatch: pytest.MonkeyPatch,
                                                        ) -> None:
    started: list[int] = []
    real = ahead.Ahead.__init__

    def counting(self: ahead.Ahead, *args: Any, **kwargs: Any) -> None:
        real(self, *args, **kwargs)
        started.append(len(self.cases))

    monkeypatch.setattr(ahead.Ahead, "__init__", counting)
    with_ahead = _document(monkeypatch, tmp_path, ahead_on=True, backend=backend)
    assert started, "the run with a threshold of one case prepared its cases ahead"
    started.clear()
    without = _document(monkeypatch, tmp_path, ahead_on=False, backend=backend)
    assert not started, "the run with a threshold above its cases prepared nothing"
    for key in without:
        assert with_ahead.get(key) == without[key], \
            f"{backend}: preparing ahead changed the document's {key!r}"
    failing = sum(1 for v in without["verdicts"] if v["status"] != "pass")
    assert (failing > 0) == (backend != "reference"), \
        f"{backend}: {failing} failing case(s); the mutant must fail some, the reference none"
