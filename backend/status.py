"""The outcomes a case can have: one `Status` per outcome, with everything the project says
about it (whether it fails a run, how serious it is, its definition) in this one place.

It sits on the bottom floor, beside the backend interface, so that everything above reads the
same names: the suite's verdicts and results documents, a backend's declared departures (which
match verdicts by status), the conform log and the report's legend.

>>> Status("numeric-mismatch").failing
True
>>> [s.value for s in SEVERITY][:2]
['numeric-mismatch', 'error']
"""

from __future__ import annotations

from collections.abc import Mapping
from enum import StrEnum

__all__ = ["Status", "FAILING", "SEVERITY", "DEFINITIONS"]


class Status(StrEnum):
    """The outcome of one case (results documents count them in this order)."""

    passed = "pass"
    fusion_mismatch = "fusion-mismatch"
    numeric_mismatch = "numeric-mismatch"
    rejected_valid = "rejected-valid"
    accepted_invalid = "accepted-invalid"
    extension = "extension"
    unsupported = "unsupported"
    error = "error"
    timeout = "timeout"

    @property
    def failing(self) -> bool:
        """Whether this outcome fails a conformance run."""
        return self in FAILING

    @property
    def definition(self) -> str:
        return DEFINITIONS[self]


#: Statuses that make a conformance run fail (extension and unsupported are reported only).
FAILING: frozenset[Status] = frozenset({
    Status.fusion_mismatch, Status.numeric_mismatch, Status.rejected_valid,
    Status.accepted_invalid, Status.error, Status.timeout,
})

#: The failing statuses, most serious first: wrong values (and crashes, which give none) before
#: graphs handled the wrong way, before fusions missed. Findings and the conform log list
#: failures in this order, so the bug that computes wrong numbers is never buried under
#: fusion gaps.
SEVERITY: tuple[Status, ...] = (Status.numeric_mismatch, Status.error, Status.timeout,
                                Status.accepted_invalid, Status.rejected_valid,
                                Status.fusion_mismatch)

#: Each status in one sentence (the report's legend shows these).
DEFINITIONS: Mapping[Status, str] = {
    Status.passed: "The backend did what the spec requires for the case: the right partitions, "
                   "outputs within their error bounds, or a typed rejection of an ill-formed "
                   "graph.",
    Status.extension: "On a near-miss graph the backend fused more than the spec allows and "
                      "computed the result right: reported, not a failure.",
    Status.unsupported: "The backend declares the case a limitation, with a reason; it is still "
                        "run, and the report says whether it would have passed.",
    Status.fusion_mismatch: "The backend's partitions differ from the spec's: a pattern instance "
                            "not fused into one partition of exactly its ops, or wrong partition "
                            "inputs/outputs.",
    Status.numeric_mismatch: "The partitions are right but an output differs from the reference "
                             "beyond the error bound, or has the wrong data type or shape.",
    Status.rejected_valid: "The backend refused a graph the spec declares valid (raised on "
                           "partition or compile, or marked a partition unsupported).",
    Status.accepted_invalid: "The backend accepted an ill-formed graph that the spec requires to "
                             "be rejected with a typed error.",
    Status.error: "The backend raised an unexpected exception or its process crashed (or, when "
                  "the details say so, the suite itself failed on the case).",
    Status.timeout: "No verdict came within the profile's time limit; the backend's process was "
                    "killed and restarted.",
}
