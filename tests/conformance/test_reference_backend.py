"""The reference as a backend: registered, one NumPy device, and graded against itself it
passes every valid instance of every catalog pattern."""

from __future__ import annotations

from importlib.metadata import entry_points

import numpy as np
import pytest
from testkit.toy_backends import ill_formed_case, near_miss_case

from fusionspec.backend import (
    ENTRY_POINT_GROUP,
    Backend,
    BackendError,
    Device,
    available_backends,
    load_backend,
)
from fusionspec.conformance.cases import Case, CaseKind, Status
from fusionspec.conformance.generate.instance_build import build_instance
from fusionspec.conformance.generate.instance_plans import instance_plans
from fusionspec.conformance.grade.verdicts import judge
from fusionspec.reference import execute, fill_inputs
from fusionspec.reference.backend import NUMPY_DEVICE, ReferenceBackend
from fusionspec.spec.catalog import CATALOG, PatternEntry
from fusionspec.spec.errors import GraphError


def test_registered_as_an_entry_point() -> None:
    names = {ep.name: ep.value for ep in entry_points(group=ENTRY_POINT_GROUP)}
    assert names.get("reference") == "fusionspec.reference.backend:ReferenceBackend", \
        f"pyproject registers the reference backend; found {names}"
    assert available_backends()[0] == "reference", "reference is listed first"
    assert isinstance(load_backend("reference"), ReferenceBackend), \
        "load_backend('reference') gives the reference backend"


def test_protocol_and_device() -> None:
    backend = ReferenceBackend()
    assert isinstance(backend, Backend), "the reference implements the Backend protocol"
    devices = list(backend.devices())
    assert devices == [NUMPY_DEVICE], f"one device, numpy: {devices}"
    assert devices[0].kind == "cpu" and devices[0].id == "numpy", f"a CPU device: {devices[0]}"
    assert f"numpy {np.__version__}" == devices[0].driver, \
        f"the device records the NumPy version: {devices[0].driver}"
    assert "ml_dtypes" in devices[0].runtime, f"and ml_dtypes: {devices[0].runtime}"


def test_compile_refuses_a_foreign_device() -> None:
    backend = ReferenceBackend()
    part = backend.partition(near_miss_case().graph)[0]
    with pytest.raises(BackendError, match="no device 'gpu0'"):
        backend.compile(part, Device("gpu0", "gpu"))


def test_ill_formed_graph_is_rejected_with_the_rule() -> None:
    case = ill_formed_case()
    with pytest.raises(GraphError) as info:
        ReferenceBackend().partition(case.graph)
    assert info.value.rule == case.rule, f"rejected by {info.value.rule}, expected {case.rule}"


def test_compiled_partition_runs_the_reference() -> None:
    backend = ReferenceBackend()
    graph = near_miss_case().graph.finalize()
    inputs = fill_inputs(graph, 3)
    values = dict(inputs)
    for part in backend.partition(graph):
        values.update(backend.compile(part, NUMPY_DEVICE).execute(values))
    want = execute(graph, inputs)
    for tid, array in want.items():
        assert np.array_equal(values[tid], array), f"tensor {tid} differs from execute(graph)"


@pytest.mark.parametrize("entry", CATALOG, ids=lambda e: e.id)
def test_passes_every_valid_instance(entry: PatternEntry) -> None:
    backend = ReferenceBackend()
    for index, plan in enumerate(instance_plans(entry)):
        case = Case(f"{entry.id}/{index}", CaseKind.valid, entry.id, build_instance(entry, plan))
        verdict = judge(case, backend, NUMPY_DEVICE, seed=index)
        assert verdict.status is Status.passed, \
            f"{case.id} ({plan.describe()}): {verdict.status} {verdict.reason}"
        numerics = verdict.details.numerics
        assert isinstance(numerics, list) and numerics, f"{case.id}: numerics were compared"


def test_passes_its_own_near_miss_and_ill_formed_cases() -> None:
    backend = ReferenceBackend()
    for case in (near_miss_case(), ill_formed_case()):
        verdict = judge(case, backend, NUMPY_DEVICE)
        assert verdict.status is Status.passed, f"{case.id}: {verdict.status} {verdict.reason}"
