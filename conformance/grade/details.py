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
models stay in ``extra`` and are written back. Every record is read field by field as its
fields' types say and written back by the one mechanism of records
(`fusionspec.conformance.records`), which also generates their definitions in
``results.schema.json`` (each under its `DEF` name), so the reader, the writer and the schema
cannot disagree.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, ClassVar

from .results_format import ResultsRecord

__all__ = ["PartitionRef", "CutFacts", "WrongIO", "FusionFacts", "WorstElement",
           "NumericFacts", "RejectionFacts", "ErrorFacts", "UnsupportedFacts", "ExtensionFacts",
           "AcceptedFacts", "ContractFacts", "Facts", "FACT_KINDS",
           "PartitionDescription", "OutputSummary", "BoundRecord", "Triage", "SignatureMatch",
           "Culprit", "DepartureRef", "Details", "DETAIL_RECORDS"]

Figure = float | str
"""A measured value: NaN and the infinities are written as text (``"nan"``, ``"inf"``)."""


# -- facts ----------------------------------------------------------------------------------

@dataclass(frozen=True)
class PartitionRef(ResultsRecord):
    """A partition by its op ids and their kinds, in id order."""

    DEF: ClassVar[str | None] = "partition_ref"

    ops: list[int] = field(default_factory=list)
    kinds: list[str] = field(default_factory=list)


@dataclass(frozen=True)
class CutFacts(ResultsRecord):
    """Where a promised partition is first cut: the kinds on either side, the kinds of the
    partition it cuts, the case's rule where it names one."""

    DEF: ClassVar[str | None] = "cut"

    before: str
    after: str
    partition: list[str] = field(default_factory=list)
    rule: str | None = None


@dataclass(frozen=True)
class WrongIO(ResultsRecord):
    """A partition's external tensors against the spec's."""

    DEF: ClassVar[str | None] = "wrong_io"

    inputs: list[int] = field(default_factory=list)
    outputs: list[int] = field(default_factory=list)
    want_inputs: list[int] = field(default_factory=list)
    want_outputs: list[int] = field(default_factory=list)


@dataclass(frozen=True)
class _Facts(ResultsRecord):
    """What every kind of fact shares: its kind (`WHAT`), written as ``what``."""


@dataclass(frozen=True)
class FusionFacts(_Facts):
    """A fusion mismatch: the expected partitions not formed, the partitions formed instead,
    the first cut, or the partition (`kinds`) whose inputs or outputs differ (`wrong_io`)."""

    WHAT: ClassVar[str] = "fusion"
    DEF: ClassVar[str | None] = "facts_fusion"
    expected: list[PartitionRef] = field(default_factory=list)
    formed: list[PartitionRef] = field(default_factory=list)
    cut: CutFacts | None = None
    wrong_io: WrongIO | None = None
    kinds: list[str] | None = None

    OMIT_NONE = ("kinds",)


@dataclass(frozen=True)
class WorstElement(ResultsRecord):
    """One failing element: its index, the reference's value and the bound around it, the
    backend's value and, once diagnosed, the float64 value there."""

    DEF: ClassVar[str | None] = "worst"

    index: list[int] = field(default_factory=list)
    expected: Figure | None = None
    actual: Figure | None = None
    bound: Figure | None = None
    high_precision: Figure | None = None

    OMIT_NONE = ("high_precision",)


@dataclass(frozen=True)
class NumericFacts(_Facts):
    """A numeric mismatch: the failing output, the op kinds computing it, its dtype, whether
    NaN/inf disagree, the comparison's summary, the worst elements and the kinds of the
    culprit (None: none found, or not diagnosed)."""

    WHAT: ClassVar[str] = "numeric"
    DEF: ClassVar[str | None] = "facts_numeric"
    tensor: int | None = None
    chain: list[str] = field(default_factory=list)
    dtype: str | None = None
    nonfinite: bool = False
    summary: str = ""
    worst: list[WorstElement] | None = None
    culprit: list[str] | None = None

    OMIT_NONE = ("worst",)


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
    DEF: ClassVar[str | None] = "facts_rejection"


@dataclass(frozen=True)
class ErrorFacts(_Raised):
    """Anything else went wrong (the backend raised, crashed or hung; or the suite failed)."""

    WHAT: ClassVar[str] = "error"
    DEF: ClassVar[str | None] = "facts_error"


@dataclass(frozen=True)
class UnsupportedFacts(_Facts):
    """A partition the backend marks unsupported: its kinds."""

    WHAT: ClassVar[str] = "unsupported"
    DEF: ClassVar[str | None] = "facts_unsupported"
    kinds: list[str] = field(default_factory=list)


@dataclass(frozen=True)
class ExtensionFacts(_Facts):
    """A near miss fused and computed right: the merged partitions' kinds, the rule."""

    WHAT: ClassVar[str] = "extension"
    DEF: ClassVar[str | None] = "facts_extension"
    merged: list[list[str]] = field(default_factory=list)
    rule: str | None = None


@dataclass(frozen=True)
class AcceptedFacts(_Facts):
    """An ill-formed graph accepted: the rule it breaks."""

    WHAT: ClassVar[str] = "accepted"
    DEF: ClassVar[str | None] = "facts_accepted"
    rule: str | None = None


@dataclass(frozen=True)
class ContractFacts(_Facts):
    """The backend broke the interface: the problem's id and its sentence."""

    WHAT: ClassVar[str] = "contract"
    DEF: ClassVar[str | None] = "facts_contract"
    problem: str = ""
    message: str = ""


Facts = (FusionFacts | NumericFacts | RejectionFacts | ErrorFacts | UnsupportedFacts
         | ExtensionFacts | AcceptedFacts | ContractFacts)

#: Each kind of fact by its ``what``.
FACT_KINDS: dict[str, type[_Facts]] = {c.WHAT: c for c in (
    FusionFacts, NumericFacts, RejectionFacts, ErrorFacts, UnsupportedFacts, ExtensionFacts,
    AcceptedFacts, ContractFacts)}


# -- the rest of the details ------------------------------------------------------------------

@dataclass(frozen=True)
class PartitionDescription(ResultsRecord):
    """A partition as the drill-down shows it (or, for what a broken backend returned in its
    place, ``not_a_partition`` with what it was)."""

    DEF: ClassVar[str | None] = "partition"

    ops: list[int] | None = None
    kinds: list[str] | None = None
    inputs: list[int] | None = None
    outputs: list[int] | None = None
    pattern: str | None = None
    supported: bool | None = None
    not_a_partition: str | None = None

    OMIT_NONE = ("ops", "kinds", "inputs", "outputs", "supported", "not_a_partition")


@dataclass(frozen=True)
class OutputSummary(ResultsRecord):
    """One graph output compared with the reference's."""

    DEF: ClassVar[str | None] = "output"

    tensor: int | None = None
    dtype: str = ""
    passed: bool = False
    max_abs_error: Figure | None = None
    max_rel_error: Figure | None = None
    max_excess: Figure | None = None
    max_radius: Figure | None = None


@dataclass(frozen=True)
class BoundRecord(ResultsRecord):
    """The error bound of the failing output: its dtype, the op chain, what it is built from,
    the largest finite radius and how many elements have an infinite one."""

    DEF: ClassVar[str | None] = "bound"

    dtype: str = ""
    chain: str = ""
    basis: list[str] = field(default_factory=list)
    max_radius: Figure | None = None
    uncertain: int = 0


@dataclass(frozen=True)
class Triage(ResultsRecord):
    """Who the float64 evaluation sides with on the failing elements."""

    DEF: ClassVar[str | None] = "triage"

    closer: str = ""
    reference_closer: int = 0
    backend_closer: int = 0
    failing: int = 0
    max_reference_deviation: Figure | None = None
    max_backend_deviation: Figure | None = None
    reference_off: int = 0
    extra: dict[str, Any] = field(default_factory=dict)


@dataclass(frozen=True)
class SignatureMatch(ResultsRecord):
    """A common mistake whose signature the failing values show."""

    DEF: ClassVar[str | None] = "signature"

    id: str
    statement: str = ""
    matched: int = 0
    failing: int = 0


@dataclass(frozen=True)
class Culprit(ResultsRecord):
    """The smallest piece of the graph that still fails on the backend: its kinds
    (``A->B``), signature, summary and reason, its graph (oneDNN JSON) and inputs, whether it
    fails only fused, and the benchdnn line that runs it."""

    DEF: ClassVar[str | None] = "culprit"

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


@dataclass(frozen=True)
class DepartureRef(ResultsRecord):
    """A known departure of the backend that the verdict matched: its id, statement, where it
    is documented and the label findings give it."""

    DEF: ClassVar[str | None] = "departure_ref"

    id: str
    statement: str = ""
    source: str = ""
    label: str = ""
    extra: dict[str, Any] = field(default_factory=dict)


@dataclass(frozen=True)
class Details(ResultsRecord):
    """Everything a verdict records beside its reason (see the module docstring); every field
    is absent from the JSON when None."""

    DEF: ClassVar[str | None] = "details"

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
    def of(data: object, where: str = "details") -> Details:
        """The details in `data` (a verdict's, as JSON-ready data); `ResultsFormatError`
        naming `where` and the JSON path of a member of the wrong type."""
        return Details.from_json(data, where)


#: The records of a verdict's details, by the name the results schema gives their definition.
DETAIL_RECORDS: dict[str, type[ResultsRecord]] = {
    "details": Details, "partition_ref": PartitionRef, "cut": CutFacts, "wrong_io": WrongIO,
    "worst": WorstElement, "partition": PartitionDescription, "output": OutputSummary,
    "bound": BoundRecord, "triage": Triage, "signature": SignatureMatch, "culprit": Culprit,
    "departure_ref": DepartureRef, **{f"facts_{k}": v for k, v in FACT_KINDS.items()}}
