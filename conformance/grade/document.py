"""The results document as typed records, with JSON in (`ResultsDocument.from_json`) and out
(`ResultsDocument.to_json`) here and nowhere else.

`results.schema.json` describes the same document for other tools; a test keeps the two alike
(every field of these records is in the schema, and every property of the schema is a field).
`load_results` and everything that reads a document (the report, findings, merge, diff, the
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
from typing import Any

from .details import Details
from .record_io import STATUSES, Json, Reader, Record, ResultsFormatError, kind_of

__all__ = ["SCHEMA_VERSION", "READABLE_VERSIONS", "ResultsFormatError", "DeviceRecord",
           "SpecPage", "PatternCounts", "RuleCounts", "DepartureRecord", "VerdictLine",
           "ReplayRecord", "FailureRecord", "LimitationRecord", "CaseRecord", "ExpectationsSummary",
           "ResultsDocument", "RECORDS", "STATUSES"]

#: The results document's format, as this fusionspec writes it.
SCHEMA_VERSION = "fusionspec-results/4"


# -- the records --------------------------------------------------------------------------------

@dataclass(frozen=True)
class DeviceRecord(Record):
    """The device the run graded (every `fusionspec.backend.Device` field)."""

    id: str
    kind: str = ""
    name: str = ""
    driver: str = ""
    runtime: str = ""
    extras: dict[str, str] = field(default_factory=dict)

    @staticmethod
    def read(r: Reader) -> DeviceRecord:
        return DeviceRecord(r.text("id"), r.text("kind"), r.text("name"), r.text("driver"),
                            r.text("runtime"), r.strings("extras"))



@dataclass(frozen=True)
class SpecPage(Record):
    """One documentation page the suite's spec comes from."""

    file: str
    title: str
    sha256: str

    @staticmethod
    def read(r: Reader) -> SpecPage:
        return SpecPage(r.text("file"), r.text("title"), r.text("sha256"))



@dataclass(frozen=True)
class PatternCounts(Record):
    """A catalog pattern's cases: by status, and by status per case kind, dtype and rule; and
    its grammar coverage (feature -> value -> cases)."""

    counts: dict[str, int] = field(default_factory=dict)
    by_kind: dict[str, dict[str, int]] = field(default_factory=dict)
    by_dtype: dict[str, dict[str, int]] = field(default_factory=dict)
    rules: dict[str, dict[str, int]] = field(default_factory=dict)
    coverage: dict[str, dict[str, int]] = field(default_factory=dict)

    @staticmethod
    def read(r: Reader) -> PatternCounts:
        return PatternCounts(r.counts("counts"), r.count_table("by_kind"),
                             r.count_table("by_dtype"), r.count_table("rules"),
                             r.count_table("coverage"))



@dataclass(frozen=True)
class RuleCounts(Record):
    """A rule's statement, its cases by status and by pattern."""

    statement: str = ""
    counts: dict[str, int] = field(default_factory=dict)
    patterns: dict[str, int] = field(default_factory=dict)

    @staticmethod
    def read(r: Reader) -> RuleCounts:
        return RuleCounts(r.text("statement"), r.counts("counts"), r.counts("patterns"))



@dataclass(frozen=True)
class DepartureRecord(Record):
    """A known departure the backend declares (`fusionspec.backend.departure_data`): its id and
    statement; what it matches is in `extra`."""

    id: str
    statement: str
    extra: dict[str, Any] = field(default_factory=dict)

    @staticmethod
    def read(r: Reader) -> DepartureRecord:
        return DepartureRecord(r.text("id"), r.text("statement"), r.rest(DepartureRecord))



@dataclass(frozen=True)
class _JudgedCase(Record):
    """What a verdict line and a failure both say of their case: its id, pattern and status,
    its place in the plan, its kind, rule and dtype."""

    case_id: str
    pattern: str
    status: str
    index: int | None = None
    kind: str = ""
    rule: str | None = None
    dtype: str | None = None


@dataclass(frozen=True)
class VerdictLine(_JudgedCase):
    """One judged case in one line: ``expected`` is the expectations entry that expects its
    failure (when one does), ``seconds`` its wall time."""

    reason: str = ""
    seconds: float | None = None
    expected: dict[str, Any] | None = None
    extra: dict[str, Any] = field(default_factory=dict)

    @staticmethod
    def read(r: Reader) -> VerdictLine:
        return VerdictLine(r.text("case_id"), r.text("pattern"), r.status(),
                           r.opt_number("index"), r.text("kind"), r.opt_text("rule"),
                           r.opt_text("dtype"), r.text("reason"), r.real("seconds"),
                           r.opt_obj("expected"), r.rest(VerdictLine))

    OMIT_NONE = ("index", "seconds", "expected")


@dataclass(frozen=True)
class ReplayRecord(Record):
    """What replays a failing case: the run's seed, the case, the command that draws it afresh,
    and (with ``--out``) its saved folder, that folder relative to the results file, and the
    commands that replay it from the folder."""

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

    @staticmethod
    def read(r: Reader) -> FailureRecord:
        return FailureRecord(
            r.text("case_id"), r.text("pattern"), r.status(), r.opt_number("index"),
            r.text("kind"), r.opt_text("rule"), r.opt_text("dtype"), r.text("description"),
            r.obj("features"), r.strings("values"), r.text("reason"),
            r.record("details", Details.read) or Details(),
            r.record("replay", ReplayRecord.read) or ReplayRecord(), r.opt_obj("expected"),
            r.opt_obj("unexpected_status"),
            r.opt_text("minimal_of"), r.rest(FailureRecord))

    OMIT_NONE = ("index", "expected", "unexpected_status", "minimal_of")


@dataclass(frozen=True)
class LimitationRecord(Record):
    """An ``unsupported`` case: the limitation's reason, and whether it passed anyway."""

    case_id: str
    pattern: str
    index: int | None = None
    dtype: str | None = None
    reason: str = ""
    limitation_passed: bool = False
    observed_status: str | None = None
    extra: dict[str, Any] = field(default_factory=dict)

    @staticmethod
    def read(r: Reader) -> LimitationRecord:
        return LimitationRecord(r.text("case_id"), r.text("pattern"), r.opt_number("index"),
                                r.opt_text("dtype"), r.text("reason"),
                                r.flag("limitation_passed"), r.opt_text("observed_status"),
                                r.rest(LimitationRecord))

    OMIT_NONE = ("index",)


@dataclass(frozen=True)
class CaseRecord(Record):
    """A case an expectations entry kept from running, or one it expected to fail that did
    not: the case, and in `extra` the entry's citation (entry number, reason, link). `status`
    is the case's (``skip`` for a skipped case, what it got for an unexpected pass);
    `expected_status` the entry's, where it differs (an unexpected pass)."""

    case_id: str
    pattern: str
    index: int | None = None
    kind: str | None = None
    rule: str | None = None
    dtype: str | None = None
    status: str | None = None
    expected_status: str | None = None
    occurrence: int | None = None
    extra: dict[str, Any] = field(default_factory=dict)

    @staticmethod
    def read(r: Reader) -> CaseRecord:
        return CaseRecord(r.text("case_id"), r.text("pattern"), r.opt_number("index"),
                          r.opt_text("kind"), r.opt_text("rule"), r.opt_text("dtype"),
                          r.opt_text("status"), r.opt_text("expected_status"),
                          r.opt_number("occurrence"), r.rest(CaseRecord))

    OMIT_NONE = ("index", "kind", "dtype", "status", "expected_status", "occurrence")


@dataclass(frozen=True)
class ExpectationsSummary(Record):
    """The expectations file a run had and what came of it."""

    file: str | None = None
    sha256: str | None = None
    entries: int | None = None
    strict: bool = False
    expected_failures: int = 0
    unexpected_passes: list[CaseRecord] = field(default_factory=list)
    skipped: list[CaseRecord] = field(default_factory=list)
    extra: dict[str, Any] = field(default_factory=dict)

    @staticmethod
    def read(r: Reader) -> ExpectationsSummary:
        return ExpectationsSummary(r.opt_text("file"), r.opt_text("sha256"),
                                   r.opt_number("entries"), r.flag("strict"),
                                   r.number("expected_failures"),
                                   r.records("unexpected_passes", CaseRecord.read),
                                   r.records("skipped", CaseRecord.read),
                                   r.rest(ExpectationsSummary))



@dataclass(frozen=True)
class ResultsDocument(Record):
    """A whole results document (see `fusionspec.conformance.grade.results` for what each
    part means). ``unavailable``, ``incomplete`` and ``expectations`` are written only when
    set."""

    backend: str
    device: DeviceRecord
    schema: str = SCHEMA_VERSION
    suite_version: str | None = None
    suite_commit: str | None = None
    spec_version: str | None = None
    spec_pages: list[SpecPage] = field(default_factory=list)
    backend_spec: str | None = None
    environment: dict[str, str] = field(default_factory=dict)
    seed: int = 0
    profile: str | None = None
    selection: dict[str, Any] | None = None
    shard: str | None = None
    planned: int | None = None
    started: str | None = None
    finished: str | None = None
    totals: dict[str, int] = field(default_factory=dict)
    patterns: dict[str, PatternCounts] = field(default_factory=dict)
    rules: dict[str, RuleCounts] = field(default_factory=dict)
    verdicts: list[VerdictLine] = field(default_factory=list)
    failures: list[FailureRecord] = field(default_factory=list)
    limitations: list[LimitationRecord] = field(default_factory=list)
    extensions: list[FailureRecord] = field(default_factory=list)
    device_problems: dict[str, str] = field(default_factory=dict)
    backend_counters: dict[str, int] = field(default_factory=dict)
    departures: list[DepartureRecord] = field(default_factory=list)
    unavailable: str | None = None
    incomplete: str | None = None
    expectations: ExpectationsSummary | None = None

    @staticmethod
    def from_json(data: object, source: str = "results document") -> ResultsDocument:
        """The document in `data` (parsed JSON), brought up to `SCHEMA_VERSION`;
        `ResultsFormatError` naming `source` and the field for anything else."""
        r = Reader(upgrade(data, source), source)
        device = r.data.get("device")
        if not isinstance(device, Mapping) or not isinstance(device.get("id"), str):
            raise ResultsFormatError(f"{source}.device is not an object with a string id")
        if not isinstance(r.data.get("backend"), str):
            raise ResultsFormatError(f"{source}.backend is {kind_of(r.data.get('backend'))}, "
                                     "not a string")
        expectations = r.data.get("expectations")
        return ResultsDocument(
            backend=r.text("backend"), device=DeviceRecord.read(Reader(device, "device")),
            schema=SCHEMA_VERSION, suite_version=r.opt_text("suite_version"),
            suite_commit=r.opt_text("suite_commit"), spec_version=r.opt_text("spec_version"),
            spec_pages=r.records("spec_pages", SpecPage.read),
            backend_spec=r.opt_text("backend_spec"), environment=r.strings("environment"),
            seed=r.number("seed"), profile=r.opt_text("profile"),
            selection=r.opt_obj("selection"), shard=r.opt_text("shard"),
            planned=r.opt_number("planned"), started=r.opt_text("started"),
            finished=r.opt_text("finished"), totals=r.status_counts("totals"),
            patterns={k: PatternCounts.read(Reader(v, f"{source}.patterns.{k}"))
                      for k, v in r.obj("patterns").items()},
            rules={k: RuleCounts.read(Reader(v, f"{source}.rules.{k}"))
                   for k, v in r.obj("rules").items()},
            verdicts=r.records("verdicts", VerdictLine.read),
            failures=r.records("failures", FailureRecord.read),
            limitations=r.records("limitations", LimitationRecord.read),
            extensions=r.records("extensions", FailureRecord.read),
            device_problems=r.strings("device_problems"),
            backend_counters=r.counts("backend_counters"),
            departures=r.records("departures", DepartureRecord.read),
            unavailable=r.opt_text("unavailable"), incomplete=r.opt_text("incomplete"),
            expectations=None if expectations is None else ExpectationsSummary.read(
                Reader(expectations, f"{source}.expectations")))

    OMIT_NONE = ("unavailable", "incomplete", "expectations")

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
RECORDS: Mapping[str, type] = {
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
                                 f"{kind_of(data)}")
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
