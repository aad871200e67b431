"""The expectations file: its schema and errors, how entries match cases, what expected
failures, unexpected passes and skips do to a run, and the CI loop it serves: a broken backend
made green by its expectations, then a new regression caught by ``fusionspec diff``."""

from __future__ import annotations

import json
import tomllib
from pathlib import Path

import pytest
from testkit import toy_backends as toy
from testkit.cli import fusionspec

from fusionspec.conformance.cases import FAILING, CaseKind
from fusionspec.conformance.expectations import (
    Expectations,
    ExpectationsError,
    expectations_toml,
    load_schema,
)
from fusionspec.conformance.grade.results import ResultsCollector
from fusionspec.conformance.grade.verdicts import judge
from fusionspec.conformance.selection import HEADLINE_DTYPES
from fusionspec.reference.backend import NUMPY_DEVICE

HEAD = 'schema = "fusionspec-expectations/1"\n'
VALID = toy.valid_case("fp.matmul_post_ops", 3)


def test_the_schema_lists_what_the_suite_knows() -> None:
    defs = load_schema()["$defs"]
    kinds = defs["entry"]["properties"]["kind"]["oneOf"][0]["enum"]
    dtypes = defs["entry"]["properties"]["dtype"]["oneOf"][0]["enum"]
    assert kinds == [k.value for k in CaseKind], f"the schema's case kinds: {kinds}"
    assert dtypes == list(HEADLINE_DTYPES), f"the schema's dtypes: {dtypes}"
    assert set(defs["failing"]["enum"]) == {s.value for s in FAILING}, \
        f"the schema's failing statuses: {defs['failing']['enum']}"


@pytest.mark.parametrize("text,where", [
    ("", "schema"),
    ('schema = "fusionspec-expectations/9"\n', "schema"),
    (HEAD + '[[expect]]\nstatus = "fial"\nreason = "x"\n', "expect[1].status"),
    (HEAD + '[[expect]]\nstatus = "fail"\n', "expect[1]"),
    (HEAD + '[[expect]]\nstatus = "fail"\nreason = "x"\npatern = "fp.*"\n', "patern"),
    (HEAD + '[[expect]]\nstatus = "fail"\nreason = "x"\nkind = "valid"\n'
            '[[expect]]\nstatus = "skip"\nreason = "y"\nkind = "sideways"\n', "expect[2].kind"),
    (HEAD + '[[expect]]\nstatus = "fail"\nreason = "x"\npattern = "int9.*"\n', "int9"),
    (HEAD + '[[expect]]\nstatus = "fail"\nreason = "x"\nrule = "no.such"\n', "no.such"),
    (HEAD + '[[expect]]\nstatus = "skip"\nreason = "x"\nverdicts = "error"\n', "verdicts"),
    (HEAD + '[[expect]\n', "not valid TOML"),
])
def test_a_bad_file_is_one_clear_error(text: str, where: str) -> None:
    with pytest.raises(ExpectationsError) as caught:
        Expectations.parse(text, "ci/exp.toml")
    message = str(caught.value)
    assert message.startswith("ci/exp.toml: ") and where in message, \
        f"the error names the file and the place ({where}): {message}"
    assert "\n" not in message, f"the error is one line: {message!r}"


def test_the_first_matching_entry_decides() -> None:
    exp = Expectations.parse(HEAD + '''
[[expect]]
status = "skip"
pattern = "fp.matmul_*"
device = "gpu*"
reason = "hangs the GPU"

[[expect]]
status = "fail"
pattern = ["int8.*", "fp.matmul_post_ops"]
kind = "valid"
reason = "no fused post-ops yet"
link = "https://example.org/issues/1"
''')
    match = exp.match(VALID, NUMPY_DEVICE)
    assert match is not None and match.number == 2, \
        f"on the numpy device the GPU skip does not match, the second entry does: {match}"
    assert match.citation().to_json() == {
        "entry": 2, "status": "fail", "reason": "no fused post-ops yet",
        "link": "https://example.org/issues/1"}, \
        f"the results cite the entry with its reason and link: {match.citation()}"
    assert exp.match(toy.near_miss_case(), NUMPY_DEVICE) is None, \
        "a near miss is of another kind than the entry names"


def _collect(backend: object, expectations: Expectations, *, strict: bool = False,
             ) -> ResultsCollector:
    collector = ResultsCollector("toy", NUMPY_DEVICE, expectations=expectations,
                                 strict=strict)
    for index, case in enumerate((VALID, toy.near_miss_case())):
        verdict = judge(case, backend, NUMPY_DEVICE)  # type: ignore[arg-type]
        entry = expectations.match(case, NUMPY_DEVICE)
        collector.add(case, verdict, index=index, expectation=entry)
    return collector


EXPECT_MATMUL = Expectations.parse(HEAD + '''
[[expect]]
status = "fail"
case = "fp.matmul_post_ops/*"
kind = "valid"
verdicts = "numeric-mismatch"
reason = "known"
''')


def test_an_expected_failure_does_not_fail_the_run() -> None:
    collector = _collect(toy.WrongMath(), EXPECT_MATMUL)
    document = collector.to_dict()
    assert len(collector.failures) == 2 and len(collector.unexpected_failures) == 1, \
        "the valid case fails as expected; the near miss's failure is news"
    assert document["failures"][0]["expected"]["entry"] == 1, \
        f"the expected failure cites its entry: {document['failures'][0]}"
    assert document["verdicts"][0]["expected"]["reason"] == "known", \
        "the verdict line says the failure is expected"
    assert document["expectations"]["expected_failures"] == 1, document["expectations"]


def test_another_failing_status_than_expected_is_a_failure() -> None:
    collector = _collect(toy.NeverFuses(), EXPECT_MATMUL)
    first = collector.failures[0]
    assert first.status == "fusion-mismatch", first
    assert first.expected is None and collector.failed, \
        "the entry expects numeric-mismatch: a fusion-mismatch is not covered"
    assert (first.unexpected_status or {}).get("entry") == 1, \
        "the failure says which entry it slipped past"


def test_an_expected_failure_that_passes_fails_only_in_strict_mode() -> None:
    lenient = _collect(toy.Faithful(), EXPECT_MATMUL)
    strict = _collect(toy.Faithful(), EXPECT_MATMUL, strict=True)
    assert [p.case_id for p in lenient.unexpected_passes] == [VALID.id], \
        f"the stale entry is reported: {lenient.unexpected_passes}"
    assert not lenient.failed and strict.failed, \
        "an unexpected pass is a note, and an error in strict mode"


def test_an_unexpected_pass_records_the_status_it_got() -> None:
    """The record cites the entry, but its status is the case's (pass), not the entry's
    (fail), which is kept as expected_status, in the collector and the written document."""
    collector = _collect(toy.Faithful(), EXPECT_MATMUL)
    section = collector.to_dict()["expectations"]
    for where, record in (("collector", collector.unexpected_passes[0].to_json()),
                          ("document", section["unexpected_passes"][0])):
        assert record["status"] == "pass", \
            f"{where}: the case passed, so its status is pass, not the entry's: {record}"
        assert record["expected_status"] == "fail", \
            f"{where}: what the entry expected is kept apart: {record}"
        assert (record["entry"], record["reason"]) == (1, "known"), \
            f"{where}: the entry is still cited with its reason: {record}"


def test_a_written_file_reads_back_and_expects_the_failures() -> None:
    collector = _collect(toy.WrongMath(), Expectations.parse(HEAD))
    text = expectations_toml(collector.document().failures, title="from a test")
    tomllib.loads(text)  # valid TOML
    again = Expectations.parse(text)
    assert all(again.match(c, NUMPY_DEVICE) for c in (VALID, toy.near_miss_case())), \
        f"every failure of the run is expected by the written file:\n{text}"
    assert text.startswith("# fusionspec expectations"), "the file explains itself"


# -- the CI loop, through the command line ---------------------------------------------------

SMALL = ["--patterns", "fp.conv_post_ops,fp.matmul_post_ops", "--kinds", "valid"]


def test_expectations_turn_a_known_broken_backend_green_and_diff_catches_a_regression(
        tmp_path: Path) -> None:
    first = fusionspec(["conform", "--backend", "testkit.toy_backends:WrongConv", *SMALL,
                        "--out", "run1", "--write-expectations", "exp.toml"], tmp_path)
    assert first.returncode == 1, f"the broken backend fails: {first.stdout[-800:]}"
    green = fusionspec(["conform", "--backend", "testkit.toy_backends:WrongConv", *SMALL,
                        "--out", "run2", "--expectations", "exp.toml"], tmp_path)
    assert green.returncode == 0 and "expected failure(s)" in green.stdout, \
        f"with its expectations the same backend passes: {green.stdout[-800:]}"
    red = fusionspec(["conform", "--backend", "testkit.toy_backends:WrongConvAndMatMul", *SMALL,
                      "--out", "run3", "--expectations", "exp.toml"], tmp_path)
    assert red.returncode == 1, f"a new failure is not expected: {red.stdout[-800:]}"
    gate = fusionspec(["diff", "run2/results.json", "run3/results.json", "--markdown",
                       "summary.md", "--json"], tmp_path)
    said = json.loads(gate.stdout)
    assert gate.returncode == 1 and said["regressions"] > 0 and not said["ok"], \
        f"fusionspec diff exits 1 on new failures: {said}"
    assert all(c.startswith("fp.matmul_post_ops/") for c in said["new_failures"]), \
        f"the new failures are the MatMul cases: {said['new_failures'][:5]}"
    summary = (tmp_path / "summary.md").read_text()
    assert "regression" in summary and "fp.matmul_post_ops/" in summary, summary[:600]
    same = fusionspec(["diff", "run2/results.json", "run2/results.json"], tmp_path)
    assert same.returncode == 0 and "no regression" in same.stdout, same.stdout


def test_skipped_cases_are_not_run_and_are_recorded(tmp_path: Path) -> None:
    (tmp_path / "exp.toml").write_text(HEAD + '[[expect]]\nstatus = "skip"\n'
                                       'pattern = "fp.conv_post_ops"\nreason = "not yet"\n')
    done = fusionspec(["conform", "--backend", "testkit.toy_backends:WrongConv", *SMALL,
                       "--out", "out", "--expectations", "exp.toml", "--json"], tmp_path)
    said = json.loads(done.stdout)
    assert done.returncode == 0 and said["skipped"] > 0, f"the conv cases are skipped: {said}"
    document = json.loads((tmp_path / "out" / "results.json").read_text())
    skipped = document["expectations"]["skipped"]
    assert skipped and {s["pattern"] for s in skipped} == {"fp.conv_post_ops"}, skipped[:2]
    assert skipped[0]["reason"] == "not yet", f"each skip says why: {skipped[0]}"
    assert not any(v["pattern"] == "fp.conv_post_ops" for v in document["verdicts"]), \
        "skipped cases have no verdict"


def test_a_bad_expectations_file_is_a_usage_error(tmp_path: Path) -> None:
    (tmp_path / "exp.toml").write_text(HEAD + '[[expect]]\nstatus = "maybe"\nreason = "x"\n')
    done = fusionspec(["conform", "--expectations", "exp.toml"], tmp_path)
    assert done.returncode == 2 and "expect[1].status" in done.stderr, done.stderr
    assert "Traceback" not in done.stderr, done.stderr


def test_every_problem_of_a_bad_file_is_listed_at_once() -> None:
    schema_bad = (HEAD + '[[expect]]\nstatus = "fial"\nreason = "x"\n'
                  '[[expect]]\nstatus = "fail"\n'
                  '[[expect]]\nstatus = "skip"\nreason = "y"\nkind = "sideways"\n')
    with pytest.raises(ExpectationsError) as caught:
        Expectations.parse(schema_bad, "ci/exp.toml")
    message = str(caught.value)
    assert all(where in message for where in ("expect[1].status", "expect[2]",
                                              "expect[3].kind")), \
        f"each schema problem is named, not the first only: {message}"
    assert "more problem" not in message and "3 problems" in message, message
    names_bad = (HEAD + '[[expect]]\nstatus = "fail"\nreason = "x"\npattern = "int9.*"\n'
                 '[[expect]]\nstatus = "fail"\nreason = "x"\nrule = "no.such"\n')
    with pytest.raises(ExpectationsError) as caught:
        Expectations.parse(names_bad, "ci/exp.toml")
    message = str(caught.value)
    assert "expect[1].pattern: 'int9.*'" in message and "expect[2].rule: 'no.such'" in message, \
        f"each name that matches nothing is named: {message}"
