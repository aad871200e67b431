"""The results document as typed records, with JSON in (`ResultsDocument.from_json`) and out
(`ResultsDocument.to_json`) here and nowhere else.

`results.schema.json` describes the same document for other tools: it is generated from these
records (`fusionspec.conformance.records.schema`; ``python -m fusionspec.conformance.schemas``
writes it again), what it checks beyond the fields' types (required members, the statuses,
minimums, the ``schema`` constant) declared in the fields' metadata.
`load_document` and everything that reads a document (the report, findings, merge, diff, the
pytest plugin, replay) go through `ResultsDocument`, so a document is checked once, and one of an
older schema version is brought up to this one on the way in (`UPGRADES`); a version this
fusionspec does not know is refused with a message naming it.

Every list of cases holds records with the same key for the case: ``case_id`` (version 1 wrote
``id`` in the verdict lines and the skipped cases). A record keeps the keys it does not model
(an expectations entry's citation, say) in ``extra``, written back beside its own.

A judged case's status (verdict lines, failures, extensions) is one of the suite's
(`fusionspec.conformance.cases.Status`), and so is every key of ``totals``: a status the suite
does not know (``"PASS"``) would read as neither passing nor failing, so it is refused, with the
JSON path of the field.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any, ClassVar, Self

from ..cases import Status
from ..records.fields import member
from .details import Details
from .results_format import ResultsFormatError, ResultsRecord

__all__ = ["SCHEMA_VERSION", "READABLE_VERSIONS", "ResultsFormatError", "DeviceRecord",
           "SpecPage", "PatternCounts", "RuleCounts", "DepartureRecord", "VerdictLine",
           "ReplayRecord", "FailureRecord", "LimitationRecord", "CaseRecord", "ExpectationsSummary",
           "ResultsDocument", "RECORDS", "STATUSES"]

#: The results document's format, as this fusionspec writes it.
SCHEMA_VERSION = "fusionspec-results/4"

#: The statuses a case can have.
STATUSES: tuple[str, ...] = tuple(s.value for s in Status)

Json = dict[str, Any]


#: The metadata of a field of counts (none negative), and of a case's place in the plan.
_COUNTS = member(minimum=0)
_INDEX = member(minimum=0)
#: The metadata of a member every document holds (``results.schema.json`` requires it),
#: though a record read in code may leave it out.
_KEPT = member(required=True)


# -- the records --------------------------------------------------------------------------------

@dataclass(frozen=True)
class DeviceRecord(ResultsRecord):
    """The device the run graded (every `fusionspec.backend.Device` field)."""

    DEF: ClassVar[str | None] = "device"

    id: str
    kind: str = ""
    name: str = ""
    driver: str = ""
    runtime: str = ""
    extras: dict[str, str] = field(default_factory=dict)


@dataclass(frozen=True)
class SpecPage(ResultsRecord):
    """One documentation page the suite's spec comes from."""

    DEF: ClassVar[str | None] = "spec_page"

    file: str
    title: str
    sha256: str


@dataclass(frozen=True)
class PatternCounts(ResultsRecord):
    """A catalog pattern's cases: by status, and by status per case kind, dtype and rule; and
    its grammar coverage (feature -> value -> cases)."""

    DEF: ClassVar[str | None] = "pattern"

    counts: dict[str, int] = field(default_factory=dict, metadata=_COUNTS)
    by_kind: dict[str, dict[str, int]] = field(default_factory=dict, metadata=_COUNTS)
    by_dtype: dict[str, dict[str, int]] = field(default_factory=dict, metadata=_COUNTS)
    rules: dict[str, dict[str, int]] = field(default_factory=dict, metadata=_COUNTS)
    coverage: dict[str, dict[str, int]] = field(default_factory=dict, metadata=_COUNTS)


@dataclass(frozen=True)
class RuleCounts(ResultsRecord):
    """A rule's statement, its cases by status and by pattern."""

    DEF: ClassVar[str | None] = "rule"

    statement: str = ""
    counts: dict[str, int] = field(default_factory=dict, metadata=_COUNTS)
    patterns: dict[str, int] = field(default_factory=dict, metadata=_COUNTS)


@dataclass(frozen=True)
class DepartureRecord(ResultsRecord):
    """A known departure the backend declares (`fusionspec.backend.departure_data`): its id and
    statement; what it matches is in `extra`."""

    DEF: ClassVar[str | None] = "departure"

    id: str
    statement: str
    extra: dict[str, Any] = field(default_factory=dict)


@dataclass(frozen=True)
class _JudgedCase(ResultsRecord):
    """What a verdict line and a failure both say of their case: its id, pattern and status,
    its place in the plan, its kind, rule and dtype."""

    case_id: str
    pattern: str
    status: str = field(metadata=member(enum=STATUSES))
    index: int | None = field(default=None, metadata=_INDEX)
    kind: str = ""
    rule: str | None = None
    dtype: str | None = None


@dataclass(frozen=True)
class VerdictLine(_JudgedCase):
    """One judged case in one line: ``expected`` is the expectations entry that expects its
    failure (when one does), ``seconds`` its wall time."""

    DEF: ClassVar[str | None] = "verdict"

    reason: str = ""
    seconds: float | None = field(default=None, metadata=member(minimum=0))
    expected: dict[str, Any] | None = None
    extra: dict[str, Any] = field(default_factory=dict)

    OMIT_NONE = ("index", "seconds", "expected")


@dataclass(frozen=True)
class ReplayRecord(ResultsRecord):
    """What replays a failing case: the run's seed, the case, the command that draws it afresh,
    and (with ``--out``) its saved folder, that folder relative to the results file, and the
    commands that replay it from the folder."""

    DEF: ClassVar[str | None] = "replay"

    seed: int = 0
    case_id: str = ""
    rerun: str = ""
    dir: str | None = None
    path: str | None = None
    commands: list[str] = field(default_factory=list)
    extra: dict[str, Any] = field(default_factory=dict)

    OMIT_NONE = ("dir", "path")


@dataclass(frozen=True)
class FailureRecord(_JudgedCase):
    """A failing case (or an extension), with what replays it: ``details`` are the verdict's
    (its ``facts`` among them), ``replay`` the seed, the saved folder and the commands;
    ``expected`` the expectations entry it meets, ``unexpected_status`` the entry it slipped
    past, ``minimal_of`` the case a shrunk copy stands for."""

    DEF: ClassVar[str | None] = "failure"

    description: str = ""
    features: dict[str, Any] = field(default_factory=dict)
    values: dict[str, str] = field(default_factory=dict)
    reason: str = ""
    details: Details = field(default_factory=Details)
    replay: ReplayRecord = field(default_factory=ReplayRecord)
    expected: dict[str, Any] | None = None
    unexpected_status: dict[str, Any] | None = None
    minimal_of: str | None = None
    extra: dict[str, Any] = field(default_factory=dict)

    OMIT_NONE = ("index", "expected", "unexpected_status", "minimal_of")


@dataclass(frozen=True)
class LimitationRecord(ResultsRecord):
    """An ``unsupported`` case: the limitation's reason, and whether it passed anyway."""

    DEF: ClassVar[str | None] = "limitation"

    case_id: str
    pattern: str
    index: int | None = field(default=None, metadata=_INDEX)
    dtype: str | None = None
    reason: str = ""
    limitation_passed: bool = False
    observed_status: str | None = None
    extra: dict[str, Any] = field(default_factory=dict)

    OMIT_NONE = ("index",)


@dataclass(frozen=True)
class CaseRecord(ResultsRecord):
    """A case an expectations entry kept from running, or one it expected to fail that did
    not: the case, and in `extra` the entry's citation (entry number, reason, link). `status`
    is the case's (``skip`` for a skipped case, what it got for an unexpected pass);
    `expected_status` the entry's, where it differs (an unexpected pass)."""

    DEF: ClassVar[str | None] = "case"

    case_id: str
    pattern: str
    index: int | None = field(default=None, metadata=_INDEX)
    kind: str | None = None
    rule: str | None = None
    dtype: str | None = None
    status: str | None = None
    expected_status: str | None = None
    occurrence: int | None = field(default=None, metadata=member(minimum=1))
    extra: dict[str, Any] = field(default_factory=dict)

    OMIT_NONE = ("index", "kind", "dtype", "status", "expected_status", "occurrence")


@dataclass(frozen=True)
class ExpectationsSummary(ResultsRecord):
    """The expectations file a run had and what came of it."""

    DEF: ClassVar[str | None] = "expectations"

    file: str | None = None
    sha256: str | None = None
    entries: int | None = field(default=None, metadata=member(minimum=0))
    strict: bool = False
    expected_failures: int = 0
    unexpected_passes: list[CaseRecord] = field(default_factory=list)
    skipped: list[CaseRecord] = field(default_factory=list)
    extra: dict[str, Any] = field(default_factory=dict)


@dataclass(frozen=True)
class ResultsDocument(ResultsRecord):
    """A whole results document (see `fusionspec.conformance.grade.results` for what each
    part means). ``unavailable``, ``incomplete`` and ``expectations`` are written only when
    set."""

    SCHEMA: ClassVar[Mapping[str, Any]] = {
        "$id": "https://fusionspec.invalid/results.schema.json",
        "title": f"fusionspec results document ({SCHEMA_VERSION})",
        "description": "The shape every reader of a results document (report, findings, "
                       "diff, merge) relies on, generated from the typed model in "
                       "fusionspec.conformance.grade.document (one definition per record, "
                       "each with the record's fields). Checked when a document is read: "
                       "results files are untrusted input (CI artifacts, another team's "
                       "runs). Members not named here are allowed, for newer writers."}

    backend: str
    device: DeviceRecord
    schema: str = field(default=SCHEMA_VERSION, metadata=member(const=SCHEMA_VERSION))
    suite_version: str | None = field(default=None, metadata=_KEPT)
    suite_commit: str | None = None
    spec_version: str | None = field(default=None, metadata=_KEPT)
    spec_pages: list[SpecPage] = field(default_factory=list)
    backend_spec: str | None = None
    environment: dict[str, str] = field(default_factory=dict, metadata=_KEPT)
    seed: int = 0
    profile: str | None = None
    selection: dict[str, Any] | None = None
    shard: str | None = field(default=None, metadata=member(
        pattern="^[1-9][0-9]{0,5}/[1-9][0-9]{0,5}$"))
    planned: int | None = field(default=None, metadata=member(minimum=0))
    started: str | None = field(default=None, metadata=_KEPT)
    finished: str | None = field(default=None, metadata=_KEPT)
    totals: dict[str, int] = field(default_factory=dict, metadata=member(
        required=True, minimum=0, key_enum=STATUSES))
    patterns: dict[str, PatternCounts] = field(default_factory=dict, metadata=_KEPT)
    rules: dict[str, RuleCounts] = field(default_factory=dict, metadata=_KEPT)
    verdicts: list[VerdictLine] = field(default_factory=list, metadata=_KEPT)
    failures: list[FailureRecord] = field(default_factory=list, metadata=_KEPT)
    limitations: list[LimitationRecord] = field(default_factory=list)
    extensions: list[FailureRecord] = field(default_factory=list)
    device_problems: dict[str, str] = field(default_factory=dict)
    backend_counters: dict[str, int] = field(default_factory=dict, metadata=_COUNTS)
    departures: list[DepartureRecord] = field(default_factory=list)
    unavailable: str | None = None
    incomplete: str | None = None
    expectations: ExpectationsSummary | None = None

    OMIT_NONE = ("unavailable", "incomplete", "expectations")

    @classmethod
    def from_json(cls, data: object, source: str = "results document") -> Self:
        """The document in `data` (parsed JSON), brought up to `SCHEMA_VERSION`;
        `ResultsFormatError` naming `source` and the JSON path of anything else."""
        return cls.read(upgrade(data, source), source, "$")

    @property
    def unexpected_failures(self) -> list[FailureRecord]:
        """The failing cases no expectations entry expects (shrunk copies left out)."""
        return [f for f in self.failures if not f.expected and not f.minimal_of]

    @property
    def unexpected_passes(self) -> list[CaseRecord]:
        """Cases an expectations entry expected to fail that did not."""
        return self.expectations.unexpected_passes if self.expectations is not None else []

    @property
    def skipped(self) -> list[CaseRecord]:
        """Cases an expectations entry kept from running."""
        return self.expectations.skipped if self.expectations is not None else []

    @property
    def strict(self) -> bool:
        return self.expectations is not None and self.expectations.strict

    @property
    def verdict(self) -> str:
        """The run's verdict: INCOMPLETE when it could not run or did not judge what it was
        asked to, FAIL on a failure no expectations entry expects (or, in strict mode, an
        expected failure that passed), PASS otherwise."""
        if self.incomplete or self.unavailable:
            return "INCOMPLETE"
        if self.unexpected_failures or (self.strict and self.unexpected_passes):
            return "FAIL"
        return "PASS"

    def totals_text(self) -> str:
        """The totals as ``N status, ...`` (``no case`` for none)."""
        return ", ".join(f"{n} {s}" for s, n in self.totals.items()) or "no case"


#: Every record of the document, by the name `results.schema.json` gives its definition.
RECORDS: Mapping[str, type[ResultsRecord]] = {
    "document": ResultsDocument, "device": DeviceRecord, "spec_page": SpecPage,
    "pattern": PatternCounts, "rule": RuleCounts, "departure": DepartureRecord,
    "verdict": VerdictLine, "failure": FailureRecord, "replay": ReplayRecord,
    "limitation": LimitationRecord,
    "case": CaseRecord, "expectations": ExpectationsSummary,
}


# -- older versions -----------------------------------------------------------------------------

def _from_v1(document: Json) -> Json:
    """Version 1 named the case ``id`` in verdict lines and skipped cases."""
    def renamed(record: object) -> object:
        if isinstance(record, dict) and "case_id" not in record and "id" in record:
            return {("case_id" if k == "id" else k): v for k, v in record.items()}
        return record

    out = dict(document)
    if isinstance(out.get("verdicts"), list):
        out["verdicts"] = [renamed(v) for v in out["verdicts"]]
    section = out.get("expectations")
    if isinstance(section, dict):
        section = dict(section)
        for name in ("skipped", "unexpected_passes"):
            if isinstance(section.get(name), list):
                section[name] = [renamed(v) for v in section[name]]
        out["expectations"] = section
    out["schema"] = "fusionspec-results/2"
    return out


def _from_v2(document: Json) -> Json:
    """Version 2 gave an unexpected pass the expectations entry's status (``fail``) instead
    of the one the case got: that one is the verdict line's at the same index (left out where
    no line matches), and the entry's becomes ``expected_status``."""
    got = {(v.get("index"), v.get("case_id")): v.get("status")
           for v in document.get("verdicts") or [] if isinstance(v, dict)}

    def corrected(record: object) -> object:
        if not isinstance(record, dict) or "expected_status" in record:
            return record
        out = {k: v for k, v in record.items() if k != "status"}
        out["expected_status"] = record.get("status")
        status = got.get((record.get("index"), record.get("case_id")))
        if status is not None:
            out["status"] = status
        return out

    out = dict(document)
    section = out.get("expectations")
    if isinstance(section, dict) and isinstance(section.get("unexpected_passes"), list):
        out["expectations"] = {**section, "unexpected_passes":
                               [corrected(r) for r in section["unexpected_passes"]]}
    out["schema"] = "fusionspec-results/3"
    return out


def _from_v3(document: Json) -> Json:
    """Version 3 left a verdict's details untyped: early runs named a matched departure by its
    bare id, which version 4 writes as a departure record (``{"id": ...}``)."""
    def typed(record: object) -> object:
        details = record.get("details") if isinstance(record, dict) else None
        if not isinstance(details, dict) or not isinstance(details.get("departures"), list):
            return record
        refs = [{"id": d} if isinstance(d, str) else d for d in details["departures"]]
        return {**record, "details": {**details, "departures": refs}}  # type: ignore[dict-item]

    out = dict(document)
    for name in ("failures", "extensions"):
        if isinstance(out.get(name), list):
            out[name] = [typed(r) for r in out[name]]
    out["schema"] = "fusionspec-results/4"
    return out


#: Schema version -> the step that brings a document of it one version up.
UPGRADES: Mapping[str, Callable[[Json], Json]] = {"fusionspec-results/1": _from_v1,
                                                  "fusionspec-results/2": _from_v2,
                                                  "fusionspec-results/3": _from_v3}
#: The versions this fusionspec reads.
READABLE_VERSIONS = (*UPGRADES, SCHEMA_VERSION)


def upgrade(data: object, source: str) -> Json:
    """`data` as a document of `SCHEMA_VERSION`; `ResultsFormatError` naming the version for
    one this fusionspec cannot read."""
    if not isinstance(data, Mapping):
        raise ResultsFormatError(f"{source}: a results document is a JSON object, got "
                                 f"{type(data).__name__}")
    document = dict(data)
    while document.get("schema") != SCHEMA_VERSION:
        version = document.get("schema")
        step = UPGRADES.get(version) if isinstance(version, str) else None
        if step is None:
            raise ResultsFormatError(
                f"{source}: results schema {version!r}, this fusionspec reads "
                + ", ".join(repr(v) for v in READABLE_VERSIONS))
        document = step(document)
    return document
