"""The results of a conformance run as a versioned JSON document, and failure artifacts.

`ResultsCollector` gathers (case, verdict) pairs for one backend and device and produces the
document the HTML report is rendered from (`to_dict`, `write`; `load_document` reads one back
into the typed model of `fusionspec.conformance.grade.document`, which also checks it and
brings older schema versions up to date).
Every record of a case names it ``case_id``. Its top-level keys:

- ``schema`` (`SCHEMA_VERSION`), ``suite_version`` (fusionspec's version,
  `fusionspec.spec.release.VERSION`), ``suite_commit`` (the git commit the suite ran from, with
  ``+dirty`` for local changes, or null for an installed copy; absent from older documents),
  ``spec_version`` (`SPEC_VERSION`: the oneDNN documentation pages and their digests) and
  ``spec_pages``;
- ``backend`` (the backend's own name), ``backend_spec`` (the backend as the run was given it:
  a registered name or ``module:attr``, what replay commands use), ``device`` (every `Device`
  field), ``environment`` (Python, NumPy, ml_dtypes, platform, hypothesis and pytest when
  installed), ``seed``, ``profile``, ``selection`` (what was asked for), ``shard`` (``"K/N"``
  or null): the run's `fusionspec.conformance.selection.RunSettings`, the ones its cases were
  drawn and judged with (an unavailable run's document records its seed only), ``planned``
  (cases the selection drew; a shard's, in its own draws), ``started``, ``finished``;
- ``totals``: cases per status;
- ``patterns``: per catalog pattern, counts by status, by case kind, by dtype and by rule, and
  the grammar coverage (`Case.features`: feature -> value -> number of cases);
- ``rules``: per rule (catalog, structural or schema rule id), counts by status and patterns;
- ``verdicts``: every case in one line (case_id, pattern, kind, rule, dtype, status, reason, its
  ``index`` in the plan, its wall time in ``seconds``, and ``expected`` when an expectations
  entry expects it to fail);
- ``failures``: each failing case with its description, the verdict's details and how to
  replay it (``replay``: ``path``, the failure folder relative to the document's folder;
  ``commands``, to run from the document's folder; ``rerun``, which draws the case afresh by
  its id); an expected failure carries ``expected`` (the expectations entry and its reason);
  ``limitations``: each ``unsupported`` case, with whether it passed anyway;
  ``extensions``: each ``extension`` case (a near miss the backend fused and computed right),
  recorded like a failure so that it can be replayed too;
- ``device_problems``: the backend's other devices that could not be used, and why (a compiler
  that failed its probe); ``backend_counters``: what the backend reported doing (the OpenCL
  backend: programs built and taken from its caches), summed over the run's worker processes;
- ``departures``: the known departures the backend declares (`fusionspec.backend.Departure`
  as plain data); a verdict's ``details.departures`` names those it matched;
- ``unavailable``: present (with the reason) only in the document of a run that could not
  start because the backend had no usable device; it has no cases;
- ``incomplete``: present (with the reason) when the run did not judge everything it was asked
  to (stopped with Ctrl-C, or no case at all): such a run is never a PASS;
- ``expectations``: present when the run had an expectations file
  (`fusionspec.conformance.expectations`): the file and its digest, ``strict``,
  ``expected_failures`` (how many), ``unexpected_passes`` (cases an entry expected to fail that
  did not: the entry cited, ``status`` the status the case got and ``expected_status`` the
  entry's) and ``skipped`` (cases an entry kept from running, with the reason).

Lists of cases are in plan order (``index``) and counts in sorted order, so documents of the
same run compare equal however its cases were spread over jobs, shards or pytest workers
(`fusionspec.conformance.grade.merge` joins such parts).

With an output folder, each failing case also gets ``failures/<case id>/`` (an extension
``extensions/<case id>/``) holding ``graph.json`` (oneDNN graph JSON), ``inputs.npz`` (the filled
inputs, from the case's value domains, keyed by tensor id, in `fusionspec.reference.arrays`'
encoding), ``case.json`` (the case, its value domains, the verdict, the backend as given and the
device) and ``replay.txt`` (the commands that replay it, run from that folder: every path in
them is relative to it); a numeric mismatch whose culprit was isolated also gets
``culprit.json`` (the smallest failing piece as oneDNN graph JSON, for
``benchdnn --graph --case=culprit.json``, also in ``replay.txt``); `load_failure` turns
such a folder back into the case and its seed.
"""

from __future__ import annotations

import functools
import json
import math
import platform
import re
import shlex
from collections import Counter, defaultdict
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import replace
from datetime import UTC, datetime
from importlib import resources
from importlib.metadata import PackageNotFoundError, version
from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol, TypeVar, cast, overload

from fusionspec.backend import Departure, Device
from fusionspec.backend.departures import departure_data
from fusionspec.reference.arrays import write_npz
from fusionspec.reference.execute import execute
from fusionspec.reference.filling import fill_inputs
from fusionspec.spec.errors import FusionspecError
from fusionspec.spec.files import atomic_write_text, safe_component
from fusionspec.spec.graph import Graph
from fusionspec.spec.onednn_json import dump, from_dict, load
from fusionspec.spec.pages import PAGES, SPEC_VERSION
from fusionspec.spec.release import VERSION, source_commit
from fusionspec.spec.text import clean_json

from ..cases import FAILING, Case, CaseKind, Status
from .culprit import CULPRIT_FILE, CULPRIT_INPUTS, culprit_inputs
from .details import Culprit
from .document import (
    SCHEMA_VERSION,
    CaseRecord,
    DepartureRecord,
    DeviceRecord,
    ExpectationsSummary,
    FailureRecord,
    LimitationRecord,
    PatternCounts,
    ReplayRecord,
    ResultsDocument,
    ResultsFormatError,
    RuleCounts,
    SpecPage,
    VerdictLine,
    upgrade,
)
from .schema_check import Predicate, Unsupported, compile_schema
from .verdict import Verdict
from .verdicts import rule_statement

if TYPE_CHECKING:
    from ..expectations_file import Expectation, Expectations
    from ..selection import RunSettings

__all__ = ["SCHEMA_VERSION", "SPEC_VERSION", "ResultsFormatError", "ResultsCollector",
           "load_document", "write_failure", "load_failure", "suite_version",
           "environment", "artifact_name", "replay_commands", "failure_origin",
           "canonical_counts", "by_index", "FAILING_STATUSES"]

#: The statuses that fail a case, as the document writes them.
FAILING_STATUSES = frozenset(s.value for s in Status if s in FAILING)

_REQUIRED_KEYS = ("schema", "suite_version", "spec_version", "backend", "device", "environment",
                  "started", "finished", "totals", "patterns", "rules", "verdicts", "failures")


def suite_version() -> str:
    """The suite's version: `fusionspec.spec.release.VERSION`, the one place it is written (an
    editable install's metadata keeps the version of the day it was installed)."""
    return VERSION


def environment() -> dict[str, str]:
    """Versions of what the numbers depend on (packages that are not installed are left out)."""
    env = {"python": platform.python_version(), "implementation": platform.python_implementation(),
           "platform": platform.platform(), "machine": platform.machine()}
    for package in ("numpy", "ml_dtypes", "hypothesis", "pytest"):
        try:
            env[package] = version(package)
        except PackageNotFoundError:
            continue
    return env


def _now() -> str:
    return datetime.now(UTC).isoformat(timespec="seconds")


def _jsonable(value: object) -> Any:
    """`value` with NaN/inf as strings and anything JSON lacks as its text (details come from
    backends and may hold anything)."""
    if isinstance(value, float):
        return value if math.isfinite(value) else str(value)
    if value is None or isinstance(value, str | int | bool):
        return value
    if isinstance(value, Mapping):
        return {str(k): _jsonable(v) for k, v in value.items()}
    if isinstance(value, list | tuple | set | frozenset):
        return [_jsonable(v) for v in value]
    return str(value)


def _departure_record(departure: Departure) -> DepartureRecord:
    """A declared departure as the document lists it: id and statement, and what it matches."""
    data = departure_data(departure)
    return DepartureRecord(id=departure.id, statement=departure.statement,
                           extra={k: v for k, v in data.items() if k not in ("id", "statement")})


def artifact_name(case_id: str) -> str:
    """A folder name for a case id: letters, digits, '.', '_' and '-' only."""
    return safe_component(case_id, fallback="case", limit=120)


def _tally() -> defaultdict[str, Counter[str]]:
    return defaultdict(Counter)


def _natural(key: str) -> tuple[object, ...]:
    """A sort key that puts "2" before "10" (coverage values are often counts)."""
    return tuple((0, int(part), "") if part.isdigit() else (1, 0, part)
                 for part in re.split(r"(\d+)", key))


@overload
def canonical_counts(counts: Mapping[str, int]) -> dict[str, int]: ...


@overload
def canonical_counts(counts: Mapping[str, Mapping[str, int]]) -> dict[str, dict[str, int]]: ...


def canonical_counts(counts: Mapping[str, int] | Mapping[str, Mapping[str, int]],
                     ) -> dict[str, int] | dict[str, dict[str, int]]:
    """`counts` (a status or value -> count object, or an object of them) with its keys in
    sorted order at every level, so two tallies of the same cases print alike."""
    order = sorted(counts, key=lambda k: _natural(str(k)))
    if all(isinstance(v, Mapping) for v in counts.values()):
        tables = cast(Mapping[str, Mapping[str, int]], counts)
        return {k: _sorted_counts(tables[k]) for k in order}
    return _sorted_counts(cast(Mapping[str, int], counts))


def _sorted_counts(counts: Mapping[str, int]) -> dict[str, int]:
    return {k: counts[k] for k in sorted(counts, key=lambda k: _natural(str(k)))}


class _Indexed(Protocol):
    @property
    def index(self) -> int | None: ...


R = TypeVar("R", bound=_Indexed)


def by_index(records: Iterable[R]) -> list[R]:
    """`records` in plan order (their ``index``; a record without one first), which is how every
    list of cases of a document is ordered."""
    return sorted(records, key=lambda r: r.index or 0)


class ResultsCollector:
    """Collects verdicts of one run; see the module docstring for the document it builds."""

    def __init__(self, backend: str, device: Device, *, run_settings: RunSettings | None = None,
                 out_dir: str | Path | None = None,
                 device_problems: Mapping[str, str] | None = None,
                 departures: Sequence[Departure] = (),
                 unavailable: str | None = None, backend_spec: str | None = None,
                 expectations: Expectations | None = None, strict: bool = False) -> None:
        self.backend = backend
        #: The backend as the run was given it (what replay commands name).
        self.backend_spec = backend_spec or backend
        self.device = device
        #: The run's settings, shared with its planner and runners (None: verdicts recorded
        #: outside a suite run, seed 0): the document's ``seed``, ``profile``, ``selection``
        #: and ``shard`` are read from them, never kept apart.
        self.run_settings = run_settings
        #: How many cases the selection drew before sharding (None: not planned by the suite).
        self.planned: int | None = None
        #: The expectations file the run had (None: none).
        self.expectations = expectations
        self.strict = strict
        self.device_problems = dict(device_problems or {})
        #: The backend's declared known departures (what verdicts' ``departures`` refer to).
        self.departures = [_departure_record(d) for d in departures]
        self.unavailable = unavailable
        self.counters: dict[str, int] = {}
        #: Seconds each step of the run took (starting, drawing, judging), and how many cases'
        #: reference side came from the oracle cache: for the command's closing time line,
        #: not part of the document (two runs of the same cases stay equal).
        self.timings: dict[str, float] = {}
        self.oracle: dict[str, int] = {}
        #: Why the run did not judge everything it was asked to (Ctrl-C, no case at all).
        self.incomplete: str | None = None
        self.interrupted = False
        self.out_dir = Path(out_dir) if out_dir is not None else None
        self.started = _now()
        self.finished: str | None = None
        self.totals: Counter[str] = Counter()
        self._pattern: defaultdict[str, dict[str, Any]] = defaultdict(lambda: {
            "counts": Counter(), "by_kind": _tally(), "by_dtype": _tally(), "rules": _tally(),
            "coverage": defaultdict(Counter)})
        self._rules: defaultdict[str, dict[str, Counter[str]]] = defaultdict(
            lambda: {"counts": Counter(), "patterns": Counter()})
        self.verdicts: list[VerdictLine] = []
        self.failures: list[FailureRecord] = []
        self.extensions: list[FailureRecord] = []
        self.limitations: list[LimitationRecord] = []
        #: Cases an expectations entry expected to fail that did not fail.
        self.unexpected_passes: list[CaseRecord] = []
        #: Cases an expectations entry kept from running.
        self.skipped: list[CaseRecord] = []
        self._used_names: set[str] = set()

    @property
    def seed(self) -> int:
        """The seed the cases' inputs were filled from: every failure's replay seed."""
        return self.run_settings.seed if self.run_settings is not None else 0

    @property
    def profile(self) -> str | None:
        """The profile's name; None for verdicts not drawn by a run, or a run that could not
        start (unavailable: nothing was drawn, so only the seed asked for is recorded)."""
        drawn = self._drawn()
        return drawn.profile.name if drawn is not None else None

    def _selection(self) -> dict[str, Any] | None:
        """The selection as the document records it (None as for `profile`)."""
        drawn = self._drawn()
        return drawn.selection.to_dict() if drawn is not None else None

    @property
    def shard(self) -> str | None:
        """``"K/N"`` for a shard's run, else None."""
        drawn = self._drawn()
        return str(drawn.shard) if drawn is not None and drawn.shard is not None else None

    def _drawn(self) -> RunSettings | None:
        return self.run_settings if self.unavailable is None else None

    @property
    def cases(self) -> int:
        """How many cases have been recorded."""
        return len(self.verdicts)

    @property
    def unexpected_failures(self) -> list[FailureRecord]:
        """The failing cases no expectations entry expects (shrunk copies left out)."""
        return [f for f in self.failures if not f.expected and not f.minimal_of]

    @property
    def failed(self) -> bool:
        """Whether the run fails: a failing case that no expectations entry expects
        (extension and unsupported do not fail), or in strict mode an expected failure that
        did not happen."""
        return bool(self.unexpected_failures) or (self.strict and bool(self.unexpected_passes))

    def skip(self, case: Case, *, index: int, occurrence: int = 1,
             expectation: Expectation | None = None) -> None:
        """Record that `case` was not run because of the expectations entry `expectation`."""
        cited = expectation.citation().to_json() if expectation is not None else {}
        status = cited.pop("status", None)
        self.skipped.append(CaseRecord(
            case_id=case.id, pattern=case.pattern, index=index, kind=case.kind.value,
            rule=case.rule, dtype=case.dtype, status=None if status is None else str(status),
            occurrence=occurrence if occurrence > 1 else None, extra=cited))

    def add(self, case: Case, verdict: Verdict, *, index: int | None = None,
            occurrence: int = 1, seconds: float | None = None,
            expectation: Expectation | None = None) -> None:
        """Record `verdict` on `case`, judged with the run's seed; a failing one is listed (and
        saved under out_dir).

        `index` is the case's position in the plan (default: after the cases recorded so far),
        `seconds` its wall time, `expectation` the expectations entry matching it (it is met
        when the verdict is the failure it expects)."""
        status = verdict.status.value
        if index is None:
            index = len(self.verdicts) + len(self.skipped)
        met = expectation is not None and verdict.failed and expectation.expects(status)
        expected: dict[str, Any] = expectation.citation().to_json() \
            if expectation is not None else {}
        self.totals[status] += 1
        entry = self._pattern[case.pattern]
        entry["counts"][status] += 1
        entry["by_kind"][case.kind.value][status] += 1
        entry["by_dtype"][case.dtype][status] += 1
        for feature, value in case.features.items():
            entry["coverage"][feature][str(value)] += 1
        if case.rule is not None:
            entry["rules"][case.rule][status] += 1
            self._rules[case.rule]["counts"][status] += 1
            self._rules[case.rule]["patterns"][case.pattern] += 1
        self.verdicts.append(VerdictLine(
            case_id=case.id, pattern=case.pattern, status=status, index=index,
            kind=case.kind.value, rule=case.rule, dtype=case.dtype, reason=verdict.reason,
            seconds=None if seconds is None else round(seconds, 4),
            expected=expected if met else None))
        if verdict.status is Status.unsupported:
            self.limitations.append(LimitationRecord(
                case_id=case.id, pattern=case.pattern, index=index, dtype=case.dtype,
                reason=verdict.reason,
                limitation_passed=verdict.details.limitation_passed is True,
                observed_status=verdict.details.observed_status))
        if verdict.failed:
            record = self._failure(case, verdict, index=index, occurrence=occurrence)
            # An entry that matched but expects another failing status makes this failure
            # news: it says which entry it slipped past.
            self.failures.append(replace(
                record, expected=expected if met else None,
                unexpected_status=expected if expectation is not None and not met else None))
        elif verdict.status is Status.extension:
            self.extensions.append(self._failure(case, verdict, folder="extensions",
                                                 index=index, occurrence=occurrence))
        if expectation is not None and not verdict.failed:
            # The entry is cited, but the status is the one the case got: the entry's own
            # (the failure it expected) is kept apart.
            cited = {k: v for k, v in expected.items() if k != "status"}
            wanted = expected.get("status")
            self.unexpected_passes.append(CaseRecord(
                case_id=case.id, pattern=case.pattern, index=index, status=status,
                expected_status=None if wanted is None else str(wanted), extra=cited))

    def add_minimal(self, case: Case, verdict: Verdict, *, of_case: str) -> None:
        """Record a shrunk case that stands for the failure `of_case`: saved and listed with
        the failures (``minimal_of``), but not counted again in the totals."""
        if not verdict.failed:
            return
        original = next((f for f in self.failures if f.case_id == of_case), None)
        index = original.index or 0 if original is not None else len(self.verdicts)
        record = self._failure(case, verdict, index=index)
        self.failures.append(replace(
            record, minimal_of=of_case,
            expected=original.expected if original is not None and original.expected else None))

    def _failure(self, case: Case, verdict: Verdict, *, index: int, occurrence: int = 1,
                 folder: str = "failures") -> FailureRecord:
        replay = ReplayRecord(seed=self.seed, case_id=case.id,
                              rerun=shlex.join(self._rerun(case.id)))
        if self.out_dir is not None:
            # Named after the case (and its occurrence), so any process judging it picks the
            # same folder: shards and pytest workers write side by side without clashing.
            name = artifact_name(case.id) + (f"-{occurrence}" if occurrence > 1 else "")
            base, n = name, 2
            while name in self._used_names:
                name, n = f"{base}-{n}", n + 1
            self._used_names.add(name)
            saved = write_failure(self.out_dir / folder / name, case, verdict,
                                  backend=self.backend_spec, device_id=self.device.id,
                                  seed=self.seed, backend_name=self.backend)
            inputs = (saved / "inputs.npz").exists()
            replay = replace(replay, dir=str(saved), path=f"{folder}/{name}",
                             commands=replay_commands(Path(folder, name), self.backend_spec,
                                                      self.device.id, inputs))
        return FailureRecord(
            case_id=case.id, pattern=case.pattern, status=verdict.status.value, index=index,
            kind=case.kind.value, rule=case.rule, dtype=case.dtype,
            description=case.description, features=_jsonable(case.features),
            values={str(k): str(v) for k, v in case.values.items()}, reason=verdict.reason,
            details=verdict.details, replay=replay)

    def _rerun(self, case_id: str) -> list[str]:
        """The command that draws `case_id` afresh and judges it (no saved folder needed)."""
        args = ["fusionspec", "conform", "--backend", self.backend_spec, "--device",
                self.device.id]
        if self.profile is not None:
            args += ["--profile", self.profile]
        return [*args, "--seed", str(self.seed), "--case", case_id]

    def finish(self) -> None:
        """Stamp the end time (done by `to_dict` if not called)."""
        self.finished = _now()

    def to_dict(self) -> dict[str, Any]:
        """The document as JSON data (`document`, written out): a non-finite number a record
        still holds becomes its text, as JSON has no token for it."""
        found: dict[str, Any] = _jsonable(self.document().to_json())
        return found

    def document(self) -> ResultsDocument:
        """The results document so far, as the typed records every reader reads."""
        if self.finished is None:
            self.finish()
        device = DeviceRecord(id=self.device.id, kind=self.device.kind, name=self.device.name,
                              driver=self.device.driver, runtime=self.device.runtime,
                              extras={str(k): str(v) for k, v in self.device.extras.items()})
        patterns = {pid: PatternCounts(
            counts=canonical_counts(e["counts"]), by_kind=canonical_counts(e["by_kind"]),
            by_dtype=canonical_counts(e["by_dtype"]), rules=canonical_counts(e["rules"]),
            coverage=canonical_counts(e["coverage"]))
            for pid, e in sorted(self._pattern.items())}
        rules = {rid: RuleCounts(statement=_statement(rid), counts=canonical_counts(r["counts"]),
                                 patterns=canonical_counts(r["patterns"]))
                 for rid, r in sorted(self._rules.items())}
        expectations = None
        if self.expectations is not None:
            expectations = ExpectationsSummary(
                file=self.expectations.source, sha256=self.expectations.sha256,
                entries=len(self.expectations.entries), strict=self.strict,
                expected_failures=sum(1 for f in self.failures if f.expected
                                      and not f.minimal_of),
                unexpected_passes=by_index(self.unexpected_passes),
                skipped=by_index(self.skipped))
        return ResultsDocument(
            backend=self.backend, device=device, suite_version=suite_version(),
            suite_commit=source_commit(), spec_version=SPEC_VERSION,
            spec_pages=[SpecPage(file=p.file, title=p.title, sha256=p.sha256) for p in PAGES],
            backend_spec=self.backend_spec, environment=environment(), seed=self.seed,
            profile=self.profile, selection=self._selection(), shard=self.shard,
            planned=self.planned, started=self.started, finished=self.finished,
            totals=canonical_counts(self.totals), patterns=patterns, rules=rules,
            verdicts=by_index(self.verdicts), failures=by_index(self.failures),
            limitations=by_index(self.limitations), extensions=by_index(self.extensions),
            device_problems=dict(self.device_problems), backend_counters=dict(self.counters),
            departures=list(self.departures), unavailable=self.unavailable,
            incomplete=self.incomplete, expectations=expectations)

    def write(self, path: str | Path) -> Path:
        """Write the document as JSON (strict: no NaN tokens) and return its path."""
        target = Path(path)
        target.parent.mkdir(parents=True, exist_ok=True)
        atomic_write_text(target, json.dumps(self.to_dict(), indent=1, allow_nan=False) + "\n")
        return target


def _statement(rule_id: str) -> str:
    text = rule_statement(rule_id)
    return text.split(": ", 1)[1] if ": " in text else ""


def load_document(path: str | Path) -> ResultsDocument:
    """Read a results document into the typed model; ResultsFormatError naming the file (and
    the schema version, for one this fusionspec cannot read) otherwise. Documents of an older
    readable version are brought up to `SCHEMA_VERSION`."""
    try:
        raw = clean_json(json.loads(Path(path).read_text(encoding="utf-8")))
    except (OSError, UnicodeDecodeError, json.JSONDecodeError, RecursionError) as exc:
        raise ResultsFormatError(f"{path}: cannot read a results document: "
                                 f"{type(exc).__name__}: {exc}") from None
    document = upgrade(raw, str(path))
    missing = [key for key in _REQUIRED_KEYS if key not in document]
    if missing:
        raise ResultsFormatError(f"{path}: results document lacks {', '.join(missing)}")
    _check_shape(document, path)
    return ResultsDocument.from_json(document, str(path))


@functools.cache
def _schema() -> dict[str, Any]:
    found: dict[str, Any] = json.loads(resources.files(__package__).joinpath(
        "results.schema.json").read_text(encoding="utf-8"))
    return found


@functools.cache
def _validator() -> Any:
    from jsonschema import Draft202012Validator

    return Draft202012Validator(_schema())


@functools.cache
def _quick_check() -> Predicate | None:
    """The schema as a plain predicate (`schema_check`), None if it uses a keyword that module
    does not check."""
    try:
        return compile_schema(_schema())
    except Unsupported:
        return None


def _check_shape(document: dict[str, Any], path: str | Path) -> None:
    """Every member a reader relies on has the type `results.schema.json` gives it."""
    # The quick check answers as jsonschema does, in a fraction of the time; jsonschema walks
    # the document only to say what is wrong with one the quick check refused.
    quick = _quick_check()
    if quick is not None and quick(document):
        return
    from jsonschema.exceptions import best_match

    error = best_match(_validator().iter_errors(document))
    if error is not None:
        where = "".join(f"[{p}]" if isinstance(p, int) else f".{p}" for p in error.absolute_path)
        message = error.message if len(error.message) <= 200 else error.message[:200] + "..."
        raise ResultsFormatError(f"{path}: ${where}: {message}")


# -- failure artifacts -------------------------------------------------------------------------

def replay_commands(folder: str | Path, backend: str, device_id: str, has_inputs: bool,
                    ) -> list[str]:
    """The commands that replay the failure saved in `folder` (as the caller will run them:
    relative to where they are run from, or absolute), shell-quoted."""
    where = str(folder)
    lines = [shlex.join(["fusionspec", "conform", "--backend", backend, "--device", device_id,
                         "--replay", where])]
    if has_inputs:
        run = ["fusionspec", "run", str(Path(where, "graph.json")), "--inputs",
               str(Path(where, "inputs.npz"))]
        lines.append(shlex.join(run))
        # The same graph and inputs on the backend, outside the suite: its outputs to compare.
        lines.append(shlex.join([*run, "--backend", backend, "--device", device_id, "--out",
                                 str(Path(where, "actual.npz"))]))
    return lines


def write_failure(folder: str | Path, case: Case, verdict: Verdict, *, backend: str,
                  device_id: str, seed: int, backend_name: str | None = None) -> Path:
    """Save `case` and `verdict` in `folder` (see the module docstring) and return it.
    `backend` is the backend as the run was given it (a name or ``module:attr``), which the
    replay commands use; `backend_name` the name the backend gives itself.

    A graph that cannot be dumped or filled (an ill-formed one may not be) is noted in
    ``case.json`` instead of failing the run.
    """
    target = Path(folder)
    target.mkdir(parents=True, exist_ok=True)
    notes: list[str] = []
    try:
        dump(case.graph, target / "graph.json")
    except (FusionspecError, ValueError, TypeError) as exc:
        notes.append(f"graph.json not written: {type(exc).__name__}: {exc}")
    inputs = None
    try:
        graph = case.graph if case.graph.finalized else case.graph.finalize()
        inputs = fill_inputs(graph, seed, case.values)
        write_npz(target / "inputs.npz", inputs, graph.tensors)
    except (FusionspecError, ValueError, TypeError) as exc:
        notes.append(f"inputs.npz not written: {type(exc).__name__}: {exc}")
    culprit = verdict.details.culprit
    culprit_lines = []
    if culprit is not None and culprit.graph is not None:
        # The smallest failing piece, as oneDNN graph JSON (benchdnn's graph driver reads it
        # too), with the inputs the isolation fed it, so that fusionspec replays it alone.
        atomic_write_text(target / CULPRIT_FILE,
                          json.dumps(_jsonable(culprit.graph), indent=1, allow_nan=False)
                          + "\n")
        named = " ".join(culprit.signature.split())  # one line, whatever it holds
        culprit_lines.append(f"# the smallest failing piece: {named}".rstrip())
        if inputs is not None and _write_culprit_inputs(target, culprit, graph, inputs, notes):
            culprit_lines.append(shlex.join([
                "fusionspec", "run", CULPRIT_FILE, "--inputs", CULPRIT_INPUTS, "--backend",
                backend, "--device", device_id, "--compare"]))
        culprit_lines.append(f"benchdnn --graph --case={CULPRIT_FILE}")
    record = {"case_id": case.id, "kind": case.kind.value, "pattern": case.pattern,
              "rule": case.rule, "dtype": case.dtype, "features": case.features,
              "values": case.values, "description": case.description, "seed": seed,
              "backend": backend,
              "backend_name": backend_name or backend, "device": device_id,
              "status": verdict.status.value, "reason": verdict.reason,
              "details": verdict.details.to_json(), "notes": notes}
    atomic_write_text(target / "case.json",
                      json.dumps(_jsonable(record), indent=1, allow_nan=False) + "\n")
    lines = replay_commands(".", backend, device_id, (target / "inputs.npz").exists())
    lines += culprit_lines
    atomic_write_text(target / "replay.txt",
                      "# Replays this case: run from this folder (the paths are relative to "
                      "it).\n" + "\n".join(lines) + "\n")
    return target


def load_failure(folder: str | Path) -> tuple[Case, int]:
    """The case saved in a failure folder, and the seed its inputs were filled from."""
    target = Path(folder)
    try:
        record = clean_json(json.loads((target / "case.json").read_text(encoding="utf-8")))
        graph: Graph = load(target / "graph.json")
        case = Case(id=str(record["case_id"]), kind=CaseKind(record["kind"]),
                    pattern=str(record["pattern"]), graph=graph, rule=record.get("rule"),
                    dtype=str(record.get("dtype", "f32")),
                    features=dict(record.get("features") or {}),
                    description=str(record.get("description", "")),
                    values={int(k): str(v) for k, v in (record.get("values") or {}).items()})
        seed = int(record.get("seed", 0))
        if seed < 0:
            raise ValueError(f"seed {seed} is negative")
        return case, seed
    except (OSError, json.JSONDecodeError, KeyError, ValueError, TypeError, AttributeError,
            RecursionError, FusionspecError) as exc:
        raise ResultsFormatError(f"{target}: not a failure folder: {type(exc).__name__}: "
                                 f"{exc}") from None


def _write_culprit_inputs(target: Path, culprit: Culprit, graph: Graph,
                          inputs: Mapping[int, Any], notes: list[str]) -> bool:
    """Write ``culprit_inputs.npz``: the culprit's inputs, rebuilt from the reference's values
    of the case (`culprit_inputs`); a culprit they cannot be rebuilt for is noted instead."""
    try:
        piece = from_dict(culprit.graph or {}, source=CULPRIT_FILE).finalize()
        values = execute(graph, inputs, keep_intermediates=True)
        write_npz(target / CULPRIT_INPUTS, culprit_inputs(piece, values, culprit.inputs or {}),
                  piece.tensors)
    except (FusionspecError, ValueError, TypeError, KeyError) as exc:
        notes.append(f"{CULPRIT_INPUTS} not written: {type(exc).__name__}: {exc}")
        return False
    return True


def failure_origin(folder: str | Path) -> tuple[str | None, str | None]:
    """The backend (as its run was given it) and the device a failure folder was saved from
    (None for what ``case.json`` does not record)."""
    try:
        record = clean_json(json.loads((Path(folder) / "case.json").read_text(
            encoding="utf-8")))
    except (OSError, ValueError, RecursionError) as exc:
        raise ResultsFormatError(f"{folder}: not a failure folder: {type(exc).__name__}: "
                                 f"{exc}") from None
    if not isinstance(record, dict):
        raise ResultsFormatError(f"{folder}: not a failure folder: case.json is not an object")
    backend, device = record.get("backend"), record.get("device")
    return (str(backend) if backend else None, str(device) if device else None)
