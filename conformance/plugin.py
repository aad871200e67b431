"""pytest plugin: the conformance suite as pytest tests, one test per case.

    pytest --pyargs fusionspec.conformance --fs-backend reference
    pytest --pyargs fusionspec.conformance --fs-backend mypkg:Mine --fs-patterns 'int8.*' \\
        --fs-expectations ci/expectations.toml -n 4 --junitxml junit.xml

Every option is the ``fusionspec conform`` option of the same name with the prefix ``--fs-``
(`fusionspec.conformance.options`: ``--fs-backend``, ``--fs-device``, ``--fs-profile``,
``--fs-seed``, ``--fs-patterns``, ``--fs-family``, ``--fs-kinds``, ``--fs-case``,
``--fs-rule``, ``--fs-dtype``, ``--fs-shard``, ``--fs-expectations``,
``--fs-strict-expectations``, ``--fs-out``, ``--fs-write-expectations``,
``--fs-prune-expectations``, ``--fs-memory-limit``), with the same values and meanings (but
for one: ``--fs-write-expectations`` writes one new entry per pattern and failing status, where
the command line writes one per cause as the findings report groups them). The options of the
command line that have a pytest counterpart are not repeated: ``--jobs`` is pytest-xdist's
``-n``, ``--junit`` pytest's ``--junitxml``, ``--json`` and ``--list`` have no use in a test
run, and a failure is replayed with the ``fusionspec conform --replay`` line its text prints.
The plugin adds nothing else to pytest: no unprefixed option, no fixture, no hook that acts
outside its own test module, so installing fusionspec changes no other project's test runs.
It is registered through the ``pytest11`` entry point under its module name; with
``PYTEST_DISABLE_PLUGIN_AUTOLOAD`` set, load it with ``-p fusionspec.conformance.plugin``.

A case the backend declares unsupported (a `Limitation`) is reported skipped with the
limitation's reason, so ``--junitxml`` shows it as a skip, not a pass; a failure's text lists
the worst elements. Each case is one test, ``test_conformance.py::test_conformance[<case id>]``,
so ``-k``, ``--lf``, ``--deselect``, ``--junitxml`` and pytest-xdist work case by case. A
failing case's text gives its status, reason and the commands that replay it. Cases an
expectations file expects to fail are marked ``xfail`` (an expected failure is XFAIL; one that
passes is XPASS, a failure in strict mode; a failure with a status the entry does not expect
fails), and cases it skips are skipped with its reason.

One results document is written whatever the parallelism: ``--fs-out`` (default
``results/conformance/<backend>-<device>``) gets ``results.json`` (atomically: a link there is
replaced, never followed) and the failure folders.
Under pytest-xdist each worker judges its share and hands its part to the controller, which
joins them (`fusionspec.conformance.grade.merge`) into the document a single process writes.
Without ``--fs-backend`` the conformance test is skipped. The thorough profile's search for
minimal failing cases is the command line's (``fusionspec conform --profile thorough``).

The session ends with ``fusionspec conform``'s exit codes where pytest's would hide them: 2 for a
bad ``--fs-*`` value (an unknown pattern, an unreadable ``--fs-case=@FILE``, an output that is
also an input, such as ``--fs-write-expectations`` naming the ``--fs-expectations`` file or the
results document), 3 for a backend that cannot run, and 1 for an incomplete run (one that judged
too few of its cases, `fusionspec.conformance.grade.emptiness`), which pytest alone would end
with 0 since every unsupported case is a skip.
"""

from __future__ import annotations

import json
import time
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any, NoReturn

import pytest

from fusionspec.backend import BackendError, Device
from fusionspec.spec.errors import FusionspecError
from fusionspec.spec.files import atomic_write_text

from .cases import Status
from .expectations import (
    ExpectationsError,
    check_target,
    groups_by_pattern_and_status,
    regenerate,
    stale_lines,
    unexpected_pass_note,
)
from .grade.document import FailureRecord, ResultsDocument
from .grade.merge import merge_documents
from .grade.results import ResultsCollector, artifact_name, replay_commands
from .options import RunOptions, add_flags, read_options, refused_value
from .outputs import OutputClashError, conform_outputs
from .replay import worst_lines
from .suite import PlannedCase, plan_cases, run_collector
from .workers import Runner

__all__ = ["judge_case"]

_PREFIX = "fs-"
_TEST_ARG = "fs_case"
#: The exit status of a run whose backend cannot be loaded or has no usable device (as
#: ``fusionspec conform``'s; pytest itself never ends with it but for an internal error).
UNAVAILABLE_EXIT = 3
#: The exit status of a bad ``--fs-*`` value (``fusionspec conform``'s usage error).
USAGE_EXIT = 2
#: The exit status of an incomplete run (``fusionspec conform``'s).
INCOMPLETE_EXIT = 1
#: What a worker hands the controller (pytest-xdist's workeroutput keys): its results
#: document, and how many cases it collected.
_OUTPUT_KEY = "fusionspec_results"
_COLLECTED_KEY = "fusionspec_collected"
#: Where an xdist worker tells the controller that the backend cannot run.
_PROBLEM_KEY = "fusionspec_problem"


@dataclass(frozen=True)
class _Part:
    """One process's share of the run: its results document, the cases it collected."""

    document: ResultsDocument
    collected: int


class _NeverRaised(Exception):
    """Given as the xfail marks' ``raises``: only an imperative xfail (an expected failing
    status) makes a case XFAIL, never another failure."""


@dataclass
class _State:
    """The plugin's state in one pytest process."""

    options: RunOptions | None = None
    runner: Runner | None = None
    problem: str = ""
    collector: ResultsCollector | None = None
    out: Path | None = None
    collected: int = 0
    parts: list[_Part] = field(default_factory=list)
    lost: list[str] = field(default_factory=list)
    summary: list[str] = field(default_factory=list)
    #: Why the written document is incomplete, when it is.
    incomplete: str = ""
    #: A usage error found once the results' folder was known (nothing was written).
    usage: str = ""


_STATE = pytest.StashKey[_State]()


def _state(config: pytest.Config) -> _State:
    if _STATE not in config.stash:
        config.stash[_STATE] = _State()
    return config.stash[_STATE]


def _get(config: pytest.Config, name: str) -> Any:
    return config.getoption(f"fs_{name}")


def pytest_addoption(parser: pytest.Parser) -> None:
    group = parser.getgroup("fusionspec", "fusionspec conformance suite (pytest --pyargs "
                                          "fusionspec.conformance --fs-backend NAME)")
    # A bad value is kept for pytest_configure, which ends with exit 2 (pytest's parser would
    # end the session with its own usage error, 4).
    add_flags(group.addoption, prefix=_PREFIX, deferred=True)


def _usage_error(message: str) -> NoReturn:
    pytest.exit(f"fusionspec: usage error: {message}", returncode=USAGE_EXIT)


def _junit_path(config: pytest.Config) -> str | None:
    path = getattr(config.option, "xmlpath", None)
    return path if isinstance(path, str) and path else None


def _source(options: RunOptions | None) -> str | Path | None:
    """The ``--fs-expectations`` file the run reads, if any."""
    source = getattr(options.expectations, "source", None) if options is not None else None
    return source if isinstance(source, str | Path) else None


def pytest_configure(config: pytest.Config) -> None:
    bad = refused_value(lambda name: _get(config, name))
    if bad is not None:
        _usage_error(bad)
    if _get(config, "backend") is None:
        return
    try:
        options = read_options(lambda name: _get(config, name))
        conform_outputs(out_dir=options.out, junit=_junit_path(config),
                        write_expectations=options.write_expectations,
                        expectations=_source(options))
    except FusionspecError as exc:
        _usage_error(f"--fs-* options: {exc}")
    else:
        _state(config).options = options


def _is_worker(config: pytest.Config) -> bool:
    return hasattr(config, "workerinput")


def _worker_id(config: pytest.Config) -> str:
    workerinput: dict[str, Any] = getattr(config, "workerinput", {})
    return str(workerinput.get("workerid", ""))


def _start(config: pytest.Config, state: _State) -> None:
    """Start the runner and the collector (once per process)."""
    options = state.options
    assert options is not None and options.backend is not None
    base = options.out
    worker = _worker_id(config)
    log_name = f"worker.{worker}.log" if worker else "worker.log"
    try:
        if base is None:
            # The default folder names the device the backend picks: start first, log beside.
            state.runner = Runner(options.backend, options.device,
                                  options.profile.timeout_s, run_settings=options.run_settings,
                                  memory_limit=options.memory_limit)
            base = config.invocation_params.dir / "results" / "conformance" / artifact_name(
                f"{state.runner.backend_name}-{state.runner.device.id}")
        else:
            state.runner = Runner(options.backend, options.device, options.profile.timeout_s,
                                  run_settings=options.run_settings,
                                  memory_limit=options.memory_limit, log_path=base / log_name)
    except BackendError as exc:
        state.problem = str(exc)
        return
    state.out = base
    runner = state.runner
    state.collector = run_collector(runner, options.backend, base,
                                    expectations=options.expectations, strict=options.strict)


def pytest_generate_tests(metafunc: pytest.Metafunc) -> None:
    if _TEST_ARG not in metafunc.fixturenames:
        return
    config = metafunc.config
    state = _state(config)
    if state.options is None:
        metafunc.parametrize(_TEST_ARG, [None], ids=["no-backend"])
        return
    if state.runner is None and not state.problem:
        _start(config, state)
    if state.runner is None or state.collector is None:
        metafunc.parametrize(_TEST_ARG, [None], ids=["backend-unavailable"])
        return
    options = state.options
    plan = plan_cases(state.runner.run_settings, expectations=options.expectations,
                      device=state.runner.device)
    state.collector.planned = plan.selected
    params = []
    for planned in sorted((*plan.cases, *plan.skipped), key=lambda p: p.index):
        ident = planned.case.id + (f"~{planned.occurrence}" if planned.occurrence > 1 else "")
        marks = []
        entry = planned.expectation
        if entry is not None and entry.status == "fail":
            marks.append(pytest.mark.xfail(reason=entry.citation().text(), strict=options.strict,
                                           raises=_NeverRaised))
        params.append(pytest.param(planned, id=ident, marks=marks))
    metafunc.parametrize(_TEST_ARG, params)


@pytest.hookimpl(trylast=True)
def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    # What is left after -k, --deselect and --lf: the run is complete when all of it ran.
    _state(config).collected = sum(1 for item in items if _TEST_ARG in
                                   getattr(item, "fixturenames", ()))


def judge_case(planned: PlannedCase | None, config: pytest.Config) -> None:
    """The body of one conformance test: judge the case, record it, and end as pytest should
    (pass, fail with the replay commands, xfail, skip)."""
    state = _state(config)
    if planned is None:
        if state.problem:
            pytest.fail(f"the backend cannot run: {state.problem}", pytrace=False)
        pytest.skip("the conformance tests grade a backend: pass --fs-backend NAME")
    collector, runner = state.collector, state.runner
    assert collector is not None and runner is not None
    entry = planned.expectation
    if entry is not None and entry.status == "skip":
        collector.skip(planned.case, index=planned.index, occurrence=planned.occurrence,
                       expectation=entry)
        pytest.skip(entry.citation().text())
    start = time.perf_counter()
    verdict = runner.run(planned.case)
    seconds = time.perf_counter() - start
    collector.add(planned.case, verdict, index=planned.index, occurrence=planned.occurrence,
                  seconds=seconds, expectation=entry)
    if verdict.status is Status.unsupported:
        # Not a pass: the backend declared it does not do this (JUnit shows it skipped).
        pytest.skip(f"unsupported: {verdict.reason}")
    if not verdict.failed:
        return
    text = _failure_text(collector, collector.failures[-1])
    if entry is not None and entry.expects(verdict.status.value):
        pytest.xfail(f"{entry.citation().text()}; {text}")
    pytest.fail(text, pytrace=False)


def _failure_text(collector: ResultsCollector, failure: FailureRecord) -> str:
    lines = [f"{failure.status}: {failure.case_id}"
             + (f" ({failure.description})" if failure.description else ""),
             f"  {failure.reason}"]
    slipped = failure.unexpected_status
    if slipped:
        lines.append(f"  expectations entry {slipped['entry']} expects another failing status")
    worst = worst_lines(failure.details)
    if worst:
        lines.append("  worst elements (index: reference vs backend):")
        lines += [f"    {line}" for line in worst]
    replay = failure.replay
    if collector.out_dir is not None and replay.path:
        folder = (collector.out_dir / replay.path).resolve()
        lines.append("  replay: " + replay_commands(folder, collector.backend_spec,
                                                    collector.device.id, False)[0])
    lines.append(f"  rerun:  {replay.rerun}")
    return "\n".join(lines)


@pytest.hookimpl(optionalhook=True)
def pytest_testnodedown(node: Any, error: Any) -> None:
    """pytest-xdist, on the controller: a worker is done; keep its part of the results."""
    state = _state(node.config)
    output = getattr(node, "workeroutput", {}) or {}
    part = output.get(_OUTPUT_KEY)
    if part:
        document = ResultsDocument.from_json(json.loads(part), f"part {len(state.parts) + 1}")
        state.parts.append(_Part(document, int(output.get(_COLLECTED_KEY) or 0)))
    problem = output.get(_PROBLEM_KEY)
    if isinstance(problem, str) and problem and not state.problem:
        state.problem = problem
    if error:
        state.lost.append(f"worker {output.get('workerid', '?')} went down: {error}")


def pytest_sessionfinish(session: pytest.Session, exitstatus: int) -> None:
    config = session.config
    state = _state(config)
    try:
        if state.collector is not None:
            _finish_part(config, state, interrupted=exitstatus == pytest.ExitCode.INTERRUPTED)
        elif state.problem and _is_worker(config):
            workeroutput: dict[str, Any] = getattr(config, "workeroutput")  # noqa: B009
            workeroutput[_PROBLEM_KEY] = state.problem
        if state.parts and not _is_worker(config):
            _write_merged(config, state)
        elif state.problem and not _is_worker(config):
            _write_unavailable(config, state)
    finally:
        if state.runner is not None:
            state.runner.close()
            state.runner = None
    if exitstatus == pytest.ExitCode.INTERRUPTED:
        return
    if state.usage:
        session.exitstatus = USAGE_EXIT
    elif state.problem:
        # As ``fusionspec conform``: a backend that cannot run is not a failing backend.
        session.exitstatus = UNAVAILABLE_EXIT
    elif state.incomplete and session.exitstatus == pytest.ExitCode.OK:
        # Every unsupported case is a pytest skip: without this, a run that judged too
        # little would end as a success.
        session.exitstatus = INCOMPLETE_EXIT


def _finish_part(config: pytest.Config, state: _State, *, interrupted: bool) -> None:
    collector = state.collector
    assert collector is not None
    collector.finish()
    ran = collector.cases + len(collector.skipped)
    if interrupted:
        collector.interrupted = True
        collector.incomplete = f"interrupted after {collector.cases} case(s)"
    document = collector.document()
    if _is_worker(config):
        workeroutput: dict[str, Any] = getattr(config, "workeroutput")  # noqa: B009
        workeroutput[_OUTPUT_KEY] = json.dumps(document.to_json())
        workeroutput[_COLLECTED_KEY] = state.collected
        return
    if ran < state.collected and collector.incomplete is None:
        document = replace(document, incomplete=f"{state.collected - ran} of the "
                           f"{state.collected} collected case(s) did not run")
    state.parts.append(_Part(document, state.collected))


def _write_unavailable(config: pytest.Config, state: _State) -> None:
    """As ``fusionspec conform`` does: a backend that cannot run leaves a results document
    that says why (and so is never mistaken for a run that judged nothing)."""
    options = state.options
    if options is None or options.backend is None:
        return
    device = options.device or "unavailable"
    out = state.out or options.out or (config.invocation_params.dir / "results" /
                                       "conformance" / artifact_name(f"{options.backend}-{device}"))
    collector = ResultsCollector(options.backend, Device(id=options.device or "none", kind=""),
                                 run_settings=options.run_settings, unavailable=state.problem,
                                 backend_spec=options.backend)
    collector.write(out / "results.json")


def _write_merged(config: pytest.Config, state: _State) -> None:
    collected = max(part.collected for part in state.parts)
    merged = _merge_workers([part.document for part in state.parts])
    ran = len(merged.verdicts) + len(merged.skipped)
    notes = [*state.lost]
    if ran < collected:
        notes.append(f"{collected - ran} of the {collected} collected case(s) did not run")
    if notes and merged.unavailable is None:
        merged = replace(merged, incomplete="; ".join(filter(None, [merged.incomplete, *notes])))
    chosen = state.options.out if state.options is not None else None
    out = state.out or chosen or (config.invocation_params.dir / "results" / "conformance" /
                                  artifact_name(f"{merged.backend}-{merged.device.id}"))
    path = out / "results.json"
    options = state.options
    try:
        # The folder is known only now when --fs-out was left to its default.
        conform_outputs(out_dir=out, junit=_junit_path(config),
                        write_expectations=options.write_expectations if options else None,
                        expectations=_source(options))
    except OutputClashError as exc:
        state.usage = str(exc)
        state.summary = [f"usage error: {exc}; nothing was written"]
        return
    state.incomplete = merged.incomplete or merged.unavailable or ""
    atomic_write_text(path, json.dumps(merged.to_json(), indent=1, allow_nan=False) + "\n")
    state.summary = [_verdict_line(merged),
                     *stale_lines(merged.unexpected_passes, merged.strict),
                     *([f"the run is incomplete: {state.incomplete}"] if state.incomplete
                       else []),
                     f"results: {path}"]
    if options is not None and options.write_expectations is not None:
        state.summary.append(_write_expectations(options, merged, path))


def _write_expectations(options: RunOptions, document: ResultsDocument, results: Path) -> str:
    """``--fs-write-expectations``: the file ``--write-expectations`` writes (atomically, never
    over the run's results); its summary line."""
    assert options.write_expectations is not None
    title = (f"Written from a run of {document.backend_spec} on {document.device.id} "
             f"(profile {document.profile}, seed {document.seed}).")
    target = options.write_expectations
    try:
        check_target(target, {"the results document": results})
        # The findings' grouping lives a layer above the suite: here one entry is written
        # per pattern and status (fusionspec conform groups by cause).
        written = regenerate(document, groups_by_pattern_and_status,
                             used=options.expectations, selection=options.selection,
                             prune=options.prune_expectations, title=title)
        atomic_write_text(target, written.text)
    except (ExpectationsError, OSError) as exc:
        return f"expectations: {target} NOT WRITTEN: {exc}"
    return written.summary(target)


def _merge_workers(documents: list[ResultsDocument]) -> ResultsDocument:
    """Join the workers' parts. Under ``--fs-shard`` every worker judges part of the same
    shard, so the parts are pieces of one shard, not shards to check against each other."""
    sources = [f"part {i + 1}" for i in range(len(documents))]
    shards = {doc.shard for doc in documents}
    shard = shards.pop() if len(shards) == 1 else None
    pieces = [replace(doc, shard=None) for doc in documents] if shard else documents
    merged = merge_documents(pieces, sources)
    return replace(merged, shard=shard) if shard else merged


def _verdict_line(document: ResultsDocument) -> str:
    note = unexpected_pass_note(document.unexpected_passes, document.strict)
    return (f"{document.verdict}: {document.backend} on {document.device.id}: "
            f"{document.totals_text()}{note}")


def pytest_terminal_summary(terminalreporter: pytest.TerminalReporter) -> None:
    state = _state(terminalreporter.config)
    if not state.summary:
        return
    terminalreporter.write_sep("=", "fusionspec conformance")
    for line in state.summary:
        terminalreporter.write_line(line)
