"""How one failing record is explained when no departure, culprit or cut does: who is right
decides a numeric failure (the float64 evaluation), and an accepted ill-formed graph is
explained by the rule it breaks."""

from __future__ import annotations

from typing import Any

from fusionspec.conformance.grade.document import FailureRecord
from fusionspec.reports.causes import cause


def _record(data: dict[str, Any]) -> FailureRecord:
    return FailureRecord.from_json({"case_id": "c", **data}, "record")


def _numeric(triage: dict[str, Any]) -> FailureRecord:
    return _record({"status": "numeric-mismatch", "pattern": "fp.conv_post_ops",
                    "dtype": "bf16", "details": {
                        "facts": {"what": "numeric", "tensor": 5,
                                  "chain": ["Convolution", "Subtract"], "dtype": "bf16",
                                  "nonfinite": False},
                        "triage": triage}})


def test_a_numeric_failure_the_reference_wins_on_every_element_is_a_bug() -> None:
    _, explained = cause(_numeric({"closer": "reference", "reference_closer": 6,
                                   "backend_closer": 0, "failing": 6, "reference_off": 0}))
    assert explained is not None and explained.startswith("Bug:") and "6 failing" in explained, \
        f"the reference nearer to float64 on all 6 failing elements blames the backend: " \
        f"{explained}"


def test_a_numeric_failure_with_a_split_diagnosis_stays_unexplained() -> None:
    for triage in ({"closer": "reference", "reference_closer": 4, "failing": 6},
                   {"closer": "neither", "reference_closer": 0, "failing": 6}, {}):
        _, explained = cause(_numeric(triage))
        assert explained is None, \
            f"triage {triage} does not say the backend is wrong everywhere: {explained}"


def test_an_accepted_ill_formed_graph_is_explained_by_its_rule() -> None:
    record = _record({"status": "accepted-invalid", "pattern": "fp.conv_post_ops",
                      "rule": "graph.tensor.one_producer",
                      "details": {"facts": {"what": "accepted"}}})
    group, explained = cause(record)
    assert "graph.tensor.one_producer" in group, f"grouped by the rule: {group}"
    assert explained is not None and explained.startswith("Bug:") and \
        "graph.tensor.one_producer" in explained, \
        f"the rule the backend does not check is the explanation: {explained}"
