"""The `Verdict` record: the suite's conclusion on one case for one backend and device.

`fusionspec.conformance.grade.verdicts.judge` makes verdicts, the runners hand them on, and the
results collector (`fusionspec.conformance.grade.results`) writes them into the results
document. A verdict's `details` are the typed `Details` record the document stores, built
field by field where the grading learns them, so nothing between the grading and the document
is a mapping of string keys.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from ..cases import FAILING, CaseKind, Status
from .details import Details

__all__ = ["Verdict"]


@dataclass(frozen=True)
class Verdict:
    """The suite's conclusion on `case_id` for one backend/device.

    `reason` says why in a sentence (`dst dtype f16, spec requires f32 [SoftMax->Add]`);
    `details` carries the facts the reason is rendered from and what the report's drill-down
    shows (expected vs actual partitions, worst elements, error vs tolerance, the backend's
    message).
    """

    case_id: str
    pattern: str
    kind: CaseKind
    status: Status
    reason: str = ""
    rule: str | None = None
    details: Details = field(default_factory=Details)

    @property
    def failed(self) -> bool:
        return self.status in FAILING
