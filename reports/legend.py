"""The report's vocabulary: statuses, metrics and pattern families, each defined in a sentence.

The statuses, their definitions and their order of severity are `fusionspec.backend.status`'s;
this module adds how the report shows them (label, CSS class, order). The report reads them as
strings, so a document from a newer suite with a status this report does not know still
renders: the status is shown as failing, with a legend entry saying it is unknown here.

>>> status_info("numeric-mismatch").failing
True
>>> [s.name for s in STATUSES][:3]
['pass', 'extension', 'unsupported']
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

from fusionspec.backend.status import SEVERITY as STATUS_SEVERITY
from fusionspec.backend.status import Status
from fusionspec.spec.catalog import PatternFamily

__all__ = ["StatusInfo", "STATUSES", "SEVERITY", "status_info", "status_order", "severity",
           "METRICS", "FAMILY_TITLES", "family_title"]


@dataclass(frozen=True)
class StatusInfo:
    """A status: its name in the results, a short label, whether it fails a run, its CSS class
    and its definition."""

    name: str
    label: str
    failing: bool
    css: str
    definition: str


#: Each status's short label and CSS class, in the order the report lists them: the good
#: outcomes first, then the failures. What a status means and whether it fails come from
#: `fusionspec.backend.status`.
_SHOWN: tuple[tuple[Status, str, str], ...] = (
    (Status.passed, "pass", "st-pass"),
    (Status.extension, "extension", "st-extension"),
    (Status.unsupported, "unsupported", "st-unsupported"),
    (Status.fusion_mismatch, "fusion", "st-fusion"),
    (Status.numeric_mismatch, "numeric", "st-numeric"),
    (Status.rejected_valid, "rejected", "st-rejected"),
    (Status.accepted_invalid, "accepted", "st-accepted"),
    (Status.error, "error", "st-error"),
    (Status.timeout, "timeout", "st-timeout"),
)

STATUSES: tuple[StatusInfo, ...] = tuple(
    StatusInfo(status.value, label, status.failing, css, status.definition)
    for status, label, css in _SHOWN)

_BY_NAME: Mapping[str, StatusInfo] = {s.name: s for s in STATUSES}


def status_info(name: str) -> StatusInfo:
    """The status called `name`; one this report does not know counts as failing."""
    known = _BY_NAME.get(name)
    if known is not None:
        return known
    return StatusInfo(name, name, True, "st-unknown",
                      "A status this version of the report does not know (the results come from "
                      "a newer suite); counted as failing.")


#: The failing statuses, most serious first (`fusionspec.backend.status.SEVERITY`).
SEVERITY: tuple[str, ...] = tuple(s.value for s in STATUS_SEVERITY)


def severity(name: str) -> int:
    """A sort key for failures by `SEVERITY` (an unknown status after the known failing ones,
    what does not fail after every failure)."""
    if name in SEVERITY:
        return SEVERITY.index(name)
    return len(SEVERITY) + (0 if status_info(name).failing else 1)


def status_order(name: str) -> tuple[int, str]:
    """A sort key that lists statuses in `STATUSES` order, unknown ones last."""
    for index, status in enumerate(STATUSES):
        if status.name == name:
            return index, name
    return len(STATUSES), name


#: The numbers the report shows, each in one sentence.
METRICS: tuple[tuple[str, str], ...] = (
    ("cases", "How many generated graphs were graded for a pattern on a backend and device "
              "(valid instances, near-misses and ill-formed graphs together)."),
    ("conforming", "Cases that pass or are extensions, as a share of the cases not declared "
                   "unsupported; unsupported cases are counted apart, never as passes."),
    ("grammar coverage", "The share of the pattern's required grammar items (each repetition "
                         "count, alternative, category member, dtype row and attribute variant), "
                         "coverage-model items (each value class of each attribute and each "
                         "optional port of the ops it can hold, from the op schemas) and "
                         "near-miss rules that at least one case exercised."),
    ("spec coverage per op", "The same coverage-model items gathered per op kind over every "
                             "pattern: an item counts once any case of any pattern drew it."),
    ("error bound", "Each element has its own bound, computed with the reference from each "
                    "op's accuracy (correctly rounded operations: none; transcendental "
                    "functions: a few ulp) and the chain's conditioning; a rounded result may "
                    "be the other neighbour only where its interval holds the tie. NaN and inf "
                    "must match; an uncertain element (its interval crosses a pole or a domain "
                    "edge) accepts any value."),
    ("max abs / rel error", "The largest absolute and relative difference between backend and "
                            "reference over the finite elements of the failing output."),
    ("worst elements", "The elements furthest past their bound, with their index, the "
                       "reference's value, the backend's and the bound."),
    ("culprit", "For a numeric mismatch, the smallest piece of the graph (one op, or a short "
                "chain, with the reference's values as its inputs) that the backend still gets "
                "wrong alone; findings are grouped by it."),
)

FAMILY_TITLES: Mapping[str, str] = {
    PatternFamily.float_inference.value: "Float inference",
    PatternFamily.quantized.value: "Quantized inference",
    PatternFamily.training.value: "Training",
    PatternFamily.quantized_convtranspose.value: "Quantized ConvTranspose",
    PatternFamily.softmax.value: "Softmax",
}


def family_title(family: str) -> str:
    return FAMILY_TITLES.get(family, family or "Other patterns")
