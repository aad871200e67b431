"""oneDNN's known departures are declared by the adapter, as data the suite checks, and its
errors carry the API call, status and op kind as fields (nothing parses their message)."""

from __future__ import annotations

from fusionspec.backend.checks import checked_departures, declared_departures
from fusionspec.conformance.grade.triage import SUBSTITUTES
from fusionspec.onednn import OnednnBackend, OnednnRejection
from fusionspec.onednn.departures import DEPARTURES


def test_the_adapter_declares_departures_the_suite_accepts() -> None:
    checked = checked_departures("onednn", declared_departures(OnednnBackend))
    assert checked == DEPARTURES, "oneDNN's declarations pass the suite's checks unchanged"
    unknown = [d.id for d in DEPARTURES if d.substitute and d.substitute not in SUBSTITUTES]
    assert not unknown, f"numeric departures name substitutes the suite evaluates: {unknown}"
    assert all(d.source for d in DEPARTURES), "each departure says where it is documented"


def test_errors_carry_structured_fields() -> None:
    error = OnednnRejection("dnnl_graph_add_op", "invalid_graph_op", "adding op 3 (Pow)",
                            op_kind="Pow")
    assert error.fields == {"function": "dnnl_graph_add_op", "status": "invalid_graph_op",
                            "op_kind": "Pow"}, f"the call, status and op kind: {error.fields}"
    assert "adding op 3 (Pow)" in str(error), "the message still reads as before"
