"""oneDNN's known departures are declared by the adapter, as data the suite checks, and its
errors carry the API call, status and op kind as fields (nothing parses their message)."""

from __future__ import annotations

from fusionspec.backend.checks import checked_departures, declared_departures
from fusionspec.conformance.cases import CaseKind
from fusionspec.conformance.grade.details import RejectionFacts
from fusionspec.conformance.grade.triage import SUBSTITUTES
from fusionspec.conformance.suite import run_suite
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


def test_a_run_names_the_departures_it_shows(onednn: OnednnBackend) -> None:
    # In worker processes: on some processors oneDNN 3.2 aborts the process on a binary
    # primitive it cannot create (SIGABRT from an uncaught dnnl::error), which the runner
    # records as a crash of that case instead of losing the test process.
    results = run_suite("onednn", patterns=["fp.reciprocal_multiply", "fp.binary_post_ops"],
                        kinds=[CaseKind.near_miss], isolate=True)
    failing = [f for f in results.failures if f.status == "rejected-valid"]
    assert failing, f"oneDNN refuses some of these cases: {dict(results.totals)}"
    named = {d.id for f in failing for d in f.details.departures or ()}
    assert named, f"each refusal is explained by a declared departure: {failing[0].details}"
    refused = [f.details.facts for f in failing
               if isinstance(f.details.facts, RejectionFacts)]
    assert refused and all((r.fields or {}).get("function") for r in refused), \
        f"a refusal carries the API call as a field: {refused[:1]}"
    declared = [d["id"] for d in results.to_dict()["departures"]]
    assert declared == [d.id for d in DEPARTURES], "the results record the declarations"
