"""A verdict's details as typed records: what a failing case (or an extension) carries in a
results document beside its reason.

- `Details.facts`: the verdict's facts, one record per kind of fact (`FusionFacts`,
  `NumericFacts`, `RejectionFacts`, `ErrorFacts`, `UnsupportedFacts`, `ExtensionFacts`,
  `AcceptedFacts`, `ContractFacts`), told apart by ``what`` in JSON. Findings and departures
  are computed from these, never from the reason sentence
  (`fusionspec.conformance.grade.facts` renders that sentence from the same facts).
- the diagnosis of a numeric mismatch: who is right (`Triage`), the signature of a common
  mistake its values show (`SignatureMatch`), the smallest failing piece (`Culprit`), and the
  text of any of these that failed (``*_error``);
- the partitions (`PartitionDescription`) the spec expects and the backend formed, the
  numerics summary (`OutputSummary` per graph output), the failing output against its bound
  (`BoundRecord`, the worst elements as `WorstElement`), the kernel source;
- an exception's stage, type, message and traceback; a declared limitation's reason and the
  outcome it hid; the known departures the verdict matched (`DepartureRef`);
- ``unreadable_details``: where a value a backend made was of the wrong type, the collector
  kept only the facts and says why here (`fusionspec.conformance.grade.results`).

The JSON layout is flat, as a verdict's details have always been written; keys no field
models stay in ``extra`` and are written back. `Details.read` is the one reader, `to_json` the
one writer.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, ClassVar, Literal

from .record_io import Reader, Record, ResultsFormatError

__all__ = ["PartitionRef", "CutFacts", "WrongIO", "FusionFacts", "WorstElement",
           "NumericFacts", "RejectionFacts", "ErrorFacts", "UnsupportedFacts", "ExtensionFacts",
           "AcceptedFacts", "ContractFacts", "Facts", "FACT_KINDS", "read_facts",
           "PartitionDescription", "OutputSummary", "BoundRecord", "Triage", "SignatureMatch",
           "Culprit", "DepartureRef", "Details", "DETAIL_RECORDS"]

Figure = float | str
"""A measured value: NaN and the infinities are written as text (``"nan"``, ``"inf"``)."""


# -- facts ----------------------------------------------------------------------------------

@dataclass(frozen=True)
class PartitionRef(Record):
    """A partition by its op ids and their kinds, in id order."""

    ops: list[int] = field(default_factory=list)
    kinds: list[str] = field(default_factory=list)

    @staticmethod
    def read(r: Reader) -> PartitionRef:
        return PartitionRef(r.whole_numbers("ops"), r.texts("kinds"))


@dataclass(frozen=True)
class CutFacts(Record):
    """Where a promised partition is first cut: the kinds on either side, the kinds of the
    partition it cuts, the case's rule where it names one."""

    before: str
    after: str
    partition: list[str] = field(default_factory=list)
    rule: str | None = None

    @staticmethod
    def read(r: Reader) -> CutFacts:
        return CutFacts(r.text("before"), r.text("after"), r.texts("partition"),
                        r.opt_text("rule"))


@dataclass(frozen=True)
class WrongIO(Record):
    """A partition's external tensors against the spec's."""

    inputs: list[int] = field(default_factory=list)
    outputs: list[int] = field(default_factory=list)
    want_inputs: list[int] = field(default_factory=list)
    want_outputs: list[int] = field(default_factory=list)

    @staticmethod
    def read(r: Reader) -> WrongIO:
        return WrongIO(r.whole_numbers("inputs"), r.whole_numbers("outputs"),
                       r.whole_numbers("want_inputs"), r.whole_numbers("want_outputs"))


@dataclass(frozen=True)
class _Facts(Record):
    WHAT: ClassVar[str] = ""

    def to_json(self) -> dict[str, Any]:
        return {"what": self.WHAT, **super().to_json()}


@dataclass(frozen=True)
class FusionFacts(_Facts):
    """A fusion mismatch: the expected partitions not formed, the partitions formed instead,
    the first cut, or the partition (`kinds`) whose inputs or outputs differ (`wrong_io`)."""

    WHAT: ClassVar[str] = "fusion"
    expected: list[PartitionRef] = field(default_factory=list)
    formed: list[PartitionRef] = field(default_factory=list)
    cut: CutFacts | None = None
    wrong_io: WrongIO | None = None
    kinds: list[str] | None = None

    OMIT_NONE = ("kinds",)

    @staticmethod
    def read(r: Reader) -> FusionFacts:
        return FusionFacts(r.records("expected", PartitionRef.read),
                           r.records("formed", PartitionRef.read), r.record("cut", CutFacts.read),
                           r.record("wrong_io", WrongIO.read), r.opt_texts("kinds"))


@dataclass(frozen=True)
class WorstElement(Record):
    """One failing element: its index, the reference's value and the bound around it, the
    backend's value and, once diagnosed, the float64 value there."""

    index: list[int] = field(default_factory=list)
    expected: Figure | None = None
    actual: Figure | None = None
    bound: Figure | None = None
    high_precision: Figure | None = None

    OMIT_NONE = ("high_precision",)

    @staticmethod
    def read(r: Reader) -> WorstElement:
        return WorstElement(r.whole_numbers("index"), r.figure("expected"), r.figure("actual"),
                            r.figure("bound"), r.figure("high_precision"))


@dataclass(frozen=True)
class NumericFacts(_Facts):
    """A numeric mismatch: the failing output, the op kinds computing it, its dtype, whether
    NaN/inf disagree, the comparison's summary, the worst elements and the kinds of the
    culprit (None: none found, or not diagnosed)."""

    WHAT: ClassVar[str] = "numeric"
    tensor: int | None = None
    chain: list[str] = field(default_factory=list)
    dtype: str | None = None
    nonfinite: bool = False
    summary: str = ""
    worst: list[WorstElement] | None = None
    culprit: list[str] | None = None

    OMIT_NONE = ("worst",)

    @staticmethod
    def read(r: Reader) -> NumericFacts:
        return NumericFacts(r.opt_number("tensor"), r.texts("chain"), r.opt_text("dtype"),
                            r.flag("nonfinite"), r.text("summary"),
                            r.opt_records("worst", WorstElement.read), r.opt_texts("culprit"))


@dataclass(frozen=True)
class _Raised(_Facts):
    """An exception: its kind (``rejection``, ``exception``, ``crash``, ``timeout``,
    ``suite``), the stage, its type, its message (or the process's last words), the rule it
    names, its structured fields, and whether it was raised for an ill-formed graph."""

    kind: str = ""
    stage: str | None = None
    type: str | None = None
    message: str = ""
    rule: str | None = None
    fields: dict[str, str] | None = None
    ill_formed: bool | None = None

    OMIT_NONE = ("stage", "type", "rule", "fields", "ill_formed")


@dataclass(frozen=True)
class RejectionFacts(_Raised):
    """The backend refused the graph."""

    WHAT: ClassVar[str] = "rejection"

    @staticmethod
    def read(r: Reader) -> RejectionFacts:
        return RejectionFacts(*_raised(r))


@dataclass(frozen=True)
class ErrorFacts(_Raised):
    """Anything else went wrong (the backend raised, crashed or hung; or the suite failed)."""

    WHAT: ClassVar[str] = "error"

    @staticmethod
    def read(r: Reader) -> ErrorFacts:
        return ErrorFacts(*_raised(r))


def _raised(r: Reader) -> tuple[Any, ...]:
    fields = None if r.data.get("fields") is None else r.strings("fields")
    return (r.text("kind"), r.opt_text("stage"), r.opt_text("type"), r.text("message"),
            r.opt_text("rule"), fields, r.opt_flag("ill_formed"))


@dataclass(frozen=True)
class UnsupportedFacts(_Facts):
    """A partition the backend marks unsupported: its kinds."""

    WHAT: ClassVar[str] = "unsupported"
    kinds: list[str] = field(default_factory=list)

    @staticmethod
    def read(r: Reader) -> UnsupportedFacts:
        return UnsupportedFacts(r.texts("kinds"))


@dataclass(frozen=True)
class ExtensionFacts(_Facts):
    """A near miss fused and computed right: the merged partitions' kinds, the rule."""

    WHAT: ClassVar[str] = "extension"
    merged: list[list[str]] = field(default_factory=list)
    rule: str | None = None

    @staticmethod
    def read(r: Reader) -> ExtensionFacts:
        merged = r.opt_list("merged", lambda v: isinstance(v, list) and all(
            isinstance(k, str) for k in v), "a list of lists of strings") or []
        return ExtensionFacts(merged, r.opt_text("rule"))


@dataclass(frozen=True)
class AcceptedFacts(_Facts):
    """An ill-formed graph accepted: the rule it breaks."""

    WHAT: ClassVar[str] = "accepted"
    rule: str | None = None

    @staticmethod
    def read(r: Reader) -> AcceptedFacts:
        return AcceptedFacts(r.opt_text("rule"))


@dataclass(frozen=True)
class ContractFacts(_Facts):
    """The backend broke the interface: the problem's id and its sentence."""

    WHAT: ClassVar[str] = "contract"
    problem: str = ""
    message: str = ""

    @staticmethod
    def read(r: Reader) -> ContractFacts:
        return ContractFacts(r.text("problem"), r.text("message"))


Facts = (FusionFacts | NumericFacts | RejectionFacts | ErrorFacts | UnsupportedFacts
         | ExtensionFacts | AcceptedFacts | ContractFacts)
FactKind = Literal["fusion", "numeric", "rejection", "error", "unsupported", "extension",
                   "accepted", "contract"]

#: Each kind of fact by its ``what``.
FACT_KINDS: dict[str, type[_Facts]] = {c.WHAT: c for c in (
    FusionFacts, NumericFacts, RejectionFacts, ErrorFacts, UnsupportedFacts, ExtensionFacts,
    AcceptedFacts, ContractFacts)}


def read_facts(r: Reader) -> Facts:
    """The facts in `r`, by their ``what``; `ResultsFormatError` for a kind the suite does not
    write."""
    what = r.text("what")
    kind = FACT_KINDS.get(what)
    if kind is None:
        raise ResultsFormatError(f"{r.where}.what is {what[:80]!r}, not a kind of fact "
                                 f"({', '.join(FACT_KINDS)})")
    found: Facts = kind.read(r)  # type: ignore[attr-defined]
    return found


# -- the rest of the details ------------------------------------------------------------------

@dataclass(frozen=True)
class PartitionDescription(Record):
    """A partition as the drill-down shows it (or, for what a broken backend returned in its
    place, ``not_a_partition`` with what it was)."""

    ops: list[int] | None = None
    kinds: list[str] | None = None
    inputs: list[int] | None = None
    outputs: list[int] | None = None
    pattern: str | None = None
    supported: bool | None = None
    not_a_partition: str | None = None

    OMIT_NONE = ("ops", "kinds", "inputs", "outputs", "supported", "not_a_partition")

    @staticmethod
    def read(r: Reader) -> PartitionDescription:
        return PartitionDescription(r.opt_whole_numbers("ops"), r.opt_texts("kinds"),
                                    r.opt_whole_numbers("inputs"), r.opt_whole_numbers("outputs"),
                                    r.opt_text("pattern"), r.opt_flag("supported"),
                                    r.opt_text("not_a_partition"))


@dataclass(frozen=True)
class OutputSummary(Record):
    """One graph output compared with the reference's."""

    tensor: int | None = None
    dtype: str = ""
    passed: bool = False
    max_abs_error: Figure | None = None
    max_rel_error: Figure | None = None
    max_excess: Figure | None = None
    max_radius: Figure | None = None

    @staticmethod
    def read(r: Reader) -> OutputSummary:
        return OutputSummary(r.opt_number("tensor"), r.text("dtype"), r.flag("passed"),
                             r.figure("max_abs_error"), r.figure("max_rel_error"),
                             r.figure("max_excess"), r.figure("max_radius"))


@dataclass(frozen=True)
class BoundRecord(Record):
    """The error bound of the failing output: its dtype, the op chain, what it is built from,
    the largest finite radius and how many elements have an infinite one."""

    dtype: str = ""
    chain: str = ""
    basis: list[str] = field(default_factory=list)
    max_radius: Figure | None = None
    uncertain: int = 0

    @staticmethod
    def read(r: Reader) -> BoundRecord:
        return BoundRecord(r.text("dtype"), r.text("chain"), r.texts("basis"),
                           r.figure("max_radius"), r.number("uncertain"))


@dataclass(frozen=True)
class Triage(Record):
    """Who the float64 evaluation sides with on the failing elements."""

    closer: str = ""
    reference_closer: int = 0
    backend_closer: int = 0
    failing: int = 0
    max_reference_deviation: Figure | None = None
    max_backend_deviation: Figure | None = None
    reference_off: int = 0
    extra: dict[str, Any] = field(default_factory=dict)

    @staticmethod
    def read(r: Reader) -> Triage:
        return Triage(r.text("closer"), r.number("reference_closer"),
                      r.number("backend_closer"), r.number("failing"),
                      r.figure("max_reference_deviation"), r.figure("max_backend_deviation"),
                      r.number("reference_off"), r.rest(Triage))


@dataclass(frozen=True)
class SignatureMatch(Record):
    """A common mistake whose signature the failing values show."""

    id: str
    statement: str = ""
    matched: int = 0
    failing: int = 0

    @staticmethod
    def read(r: Reader) -> SignatureMatch:
        return SignatureMatch(r.text("id"), r.text("statement"), r.number("matched"),
                              r.number("failing"))


@dataclass(frozen=True)
class Culprit(Record):
    """The smallest piece of the graph that still fails on the backend: its kinds
    (``A->B``), signature, summary and reason, its graph (oneDNN JSON) and inputs, whether it
    fails only fused, and the benchdnn line that runs it."""

    kinds: str = ""
    signature: str = ""
    summary: str = ""
    reason: str = ""
    graph: dict[str, Any] | None = None
    fused_only: bool = False
    simplified: list[str] = field(default_factory=list)
    calls: int = 0
    inputs: dict[str, Any] | None = None
    benchdnn: str = ""
    extra: dict[str, Any] = field(default_factory=dict)

    @staticmethod
    def read(r: Reader) -> Culprit:
        return Culprit(r.text("kinds"), r.text("signature"), r.text("summary"),
                       r.text("reason"), r.opt_obj("graph"), r.flag("fused_only"),
                       r.texts("simplified"), r.number("calls"), r.opt_obj("inputs"),
                       r.text("benchdnn"), r.rest(Culprit))

    @property
    def kind_list(self) -> list[str]:
        return self.kinds.split("->") if self.kinds else []


@dataclass(frozen=True)
class DepartureRef(Record):
    """A known departure of the backend that the verdict matched: its id, statement, where it
    is documented and the label findings give it."""

    id: str
    statement: str = ""
    source: str = ""
    label: str = ""
    extra: dict[str, Any] = field(default_factory=dict)

    @staticmethod
    def read(r: Reader) -> DepartureRef:
        return DepartureRef(r.text("id"), r.text("statement"), r.text("source"),
                            r.text("label"), r.rest(DepartureRef))


@dataclass(frozen=True)
class Details(Record):
    """Everything a verdict records beside its reason (see the module docstring); every field
    is absent from the JSON when None."""

    facts: Facts | None = None
    departures: list[DepartureRef] | None = None
    # partitions and numerics
    expected_partitions: list[PartitionDescription] | None = None
    actual_partitions: list[PartitionDescription] | None = None
    numerics: list[OutputSummary] | str | None = None
    # the failing output of a numeric mismatch
    reason: str | None = None
    tensor: int | None = None
    tensors: list[int] | None = None
    dtype: str | None = None
    actual_dtype: str | None = None
    shape: list[int] | None = None
    bound: BoundRecord | None = None
    max_abs_error: Figure | None = None
    max_rel_error: Figure | None = None
    max_excess: Figure | None = None
    mismatches: int | None = None
    total: int | None = None
    worst: list[WorstElement] | None = None
    kernel_source: str | None = None
    # its diagnosis
    triage: Triage | None = None
    reproduced: list[str] | None = None
    signature: SignatureMatch | None = None
    culprit: Culprit | None = None
    diagnosis_error: str | None = None
    signature_error: str | None = None
    culprit_error: str | None = None
    # an exception
    stage: str | None = None
    error_type: str | None = None
    message: str | None = None
    traceback: str | None = None
    suite_error: bool | None = None
    timeout_s: float | None = None
    error_rule: str | None = None
    expected_rule: str | None = None
    rule_matches: bool | None = None
    # a declared limitation
    limitation: str | None = None
    limitation_passed: bool | None = None
    observed_status: str | None = None
    observed_reason: str | None = None
    #: Why the rest of what the verdict recorded was dropped (a value of the wrong type).
    unreadable_details: str | None = None
    extra: dict[str, Any] = field(default_factory=dict)

    OMIT_NONE = ("*",)

    @staticmethod
    def read(r: Reader) -> Details:
        return Details(
            facts=r.record("facts", read_facts), departures=_departures(r),
            expected_partitions=r.opt_records("expected_partitions", PartitionDescription.read),
            actual_partitions=r.opt_records("actual_partitions", PartitionDescription.read),
            numerics=r.text("numerics") if isinstance(r.data.get("numerics"), str)
            else r.opt_records("numerics", OutputSummary.read),
            reason=r.opt_text("reason"), tensor=r.opt_number("tensor"),
            tensors=r.opt_whole_numbers("tensors"), dtype=r.opt_text("dtype"),
            actual_dtype=r.opt_text("actual_dtype"), shape=r.opt_whole_numbers("shape"),
            bound=r.record("bound", BoundRecord.read), max_abs_error=r.figure("max_abs_error"),
            max_rel_error=r.figure("max_rel_error"), max_excess=r.figure("max_excess"),
            mismatches=r.opt_number("mismatches"), total=r.opt_number("total"),
            worst=r.opt_records("worst", WorstElement.read),
            kernel_source=r.opt_text("kernel_source"), triage=r.record("triage", Triage.read),
            reproduced=r.opt_texts("reproduced"),
            signature=r.record("signature", SignatureMatch.read),
            culprit=r.record("culprit", Culprit.read),
            diagnosis_error=r.opt_text("diagnosis_error"),
            signature_error=r.opt_text("signature_error"),
            culprit_error=r.opt_text("culprit_error"), stage=r.opt_text("stage"),
            error_type=r.opt_text("error_type"), message=r.opt_text("message"),
            traceback=r.opt_text("traceback"), suite_error=r.opt_flag("suite_error"),
            timeout_s=r.real("timeout_s"), error_rule=r.opt_text("error_rule"),
            expected_rule=r.opt_text("expected_rule"), rule_matches=r.opt_flag("rule_matches"),
            limitation=r.opt_text("limitation"), limitation_passed=r.opt_flag(
                "limitation_passed"), observed_status=r.opt_text("observed_status"),
            observed_reason=r.opt_text("observed_reason"),
            unreadable_details=r.opt_text("unreadable_details"), extra=r.rest(Details))

    @staticmethod
    def of(data: object, where: str = "details") -> Details:
        """The details in `data` (a verdict's, as JSON-ready data)."""
        return Details.read(Reader(data, where))


def _departures(r: Reader) -> list[DepartureRef] | None:
    return r.opt_records("departures", DepartureRef.read)


#: The records of a verdict's details, by the name the results schema gives their definition.
DETAIL_RECORDS: dict[str, type] = {
    "details": Details, "partition_ref": PartitionRef, "cut": CutFacts, "wrong_io": WrongIO,
    "worst": WorstElement, "partition": PartitionDescription, "output": OutputSummary,
    "bound": BoundRecord, "triage": Triage, "signature": SignatureMatch, "culprit": Culprit,
    "departure_ref": DepartureRef, **{f"facts_{k}": v for k, v in FACT_KINDS.items()}}
