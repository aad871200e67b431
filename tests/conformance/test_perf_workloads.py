"""The performance workloads: every pattern covered, every graph the pattern it claims, and the
FLOP and byte counts of the roofline figures."""

from __future__ import annotations

import pytest

from fusionspec.conformance.perf.graphs import WorkloadGraphError, build_graph
from fusionspec.conformance.perf.roofline import (
    op_flops,
    opbyop_bytes,
    partition_bytes,
    partition_flops,
)
from fusionspec.conformance.perf.workloads import (
    SIZES,
    WORKLOADS,
    UnknownWorkloadError,
    workload,
)
from fusionspec.reference.partitioner import partition
from fusionspec.spec.catalog import CATALOG


def test_every_catalog_pattern_has_a_workload() -> None:
    covered = {w.pattern for w in WORKLOADS}
    missing = [e.id for e in CATALOG if e.id not in covered]
    assert not missing, f"catalog patterns without a performance workload: {missing}"


def test_workload_ids_are_unique_and_sourced() -> None:
    ids = [w.id for w in WORKLOADS]
    assert len(ids) == len(set(ids)), f"a workload id appears twice: {sorted(ids)}"
    unsourced = [w.id for w in WORKLOADS if len(w.source) < 20]
    assert not unsourced, f"workloads without a source naming their network: {unsourced}"


@pytest.mark.parametrize("size", SIZES)
@pytest.mark.parametrize("w", WORKLOADS, ids=lambda w: w.id)
def test_workload_graph_is_one_partition_of_its_pattern(w: object, size: str) -> None:
    from fusionspec.conformance.perf.workloads import Workload

    assert isinstance(w, Workload)
    graph = w.graph(size)
    parts = partition(graph)
    found = [(p.pattern, [op.kind for op in p.ops]) for p in parts]
    assert len(parts) == 1 and parts[0].pattern == w.pattern, \
        f"{w.id} at {size}: the reference forms {found}, not one {w.pattern} partition"
    assert len(parts[0].ops) == len(graph.ops) >= 2, \
        f"{w.id} at {size}: a workload fuses at least two ops, the partition has {found}"


def test_small_is_smaller_than_full() -> None:
    for w in WORKLOADS:
        small = partition_bytes(partition(w.graph("small"))[0])
        full = partition_bytes(partition(w.graph("full"))[0])
        assert small < full, f"{w.id}: small moves {small} bytes, full {full}"


def test_quantized_workloads_are_int8() -> None:
    for w in WORKLOADS:
        if w.pattern.startswith("int8.") or w.pattern == "convtranspose.int8":
            kinds = [op.kind for op in w.graph("small").ops]
            assert w.dtype == "int8" and "Dequantize" in kinds, \
                f"{w.id} instantiates a quantized pattern but is {w.dtype} with ops {kinds}"


def test_unknown_names_are_typed_errors() -> None:
    with pytest.raises(UnknownWorkloadError, match="no workload 'nope'"):
        workload("nope")
    with pytest.raises(UnknownWorkloadError, match="no workload size 'huge'"):
        WORKLOADS[0].graph("huge")
    with pytest.raises(WorkloadGraphError, match="no workload head 'fft'"):
        build_graph("fft", {}, ())
    with pytest.raises(WorkloadGraphError, match="needs the size 'oc'"):
        build_graph("conv", {"n": 1, "c": 4, "h": 4, "w": 4, "k": 3}, ())
    with pytest.raises(WorkloadGraphError, match="no post-op 'Swish'"):
        build_graph("matmul", {"m": 2, "k": 2, "n": 2}, ("Swish",))


def test_gemm_flops_count_each_multiply_add_twice() -> None:
    mm = build_graph("matmul", {"m": 8, "k": 16, "n": 4}, ("BiasAdd",))
    assert op_flops(mm.ops[0]) == 2 * 8 * 16 * 4, "MatMul: 2 * M * K * N"
    assert partition_flops(mm.ops) == 2 * 8 * 16 * 4 + 8 * 4, \
        "BiasAdd adds one FLOP per output element"
    conv = build_graph("conv", {"n": 2, "c": 8, "h": 6, "w": 6, "oc": 4, "k": 3, "pad": 1,
                                "groups": 2}, ())
    assert op_flops(conv.ops[0]) == 2 * (4 * 4 * 3 * 3) * (2 * 6 * 6), \
        "grouped convolution: 2 * weights (OC x C/groups x k x k) * N * OH * OW"
    deconv = build_graph("convtranspose", {"n": 1, "c": 4, "h": 5, "w": 5, "oc": 2, "k": 4,
                                           "s": 2, "pad": 1}, ())
    assert op_flops(deconv.ops[0]) == 2 * (4 * 2 * 4 * 4) * 25, \
        "ConvTranspose: 2 * weights * input positions"


def test_bytes_fused_and_op_by_op() -> None:
    graph = build_graph("add", {"n": 1, "c": 2, "h": 4, "w": 4}, ("ReLU",))
    (part,) = partition(graph)
    plane = 2 * 4 * 4 * 4
    assert partition_bytes(part) == 3 * plane, "fused Add + ReLU: two inputs, one output"
    assert opbyop_bytes(graph.ops) == 5 * plane, \
        "op by op: the intermediate is written and read back"
