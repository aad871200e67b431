"""Fused == op-by-op: for every catalog pattern, running an instance as its one fused partition
gives exactly what running its ops one by one gives, when every intermediate tensor is f32 (the
fused semantics keeps f32 between ops, so with f32 intermediates there is nothing to differ).

The instances are the catalog's (`fusionspec.conformance.generate.instances`): every category member
and repetition count, in f32 or int8 (whose intermediates after Dequantize are f32 too; a Quantize
or TypeCast inside a partition rounds in both semantics).
"""

from __future__ import annotations

import numpy as np
import pytest

from fusionspec.conformance.generate.instance_build import build_instance
from fusionspec.conformance.generate.instance_plans import instance_plans
from fusionspec.reference import execute, fill_inputs, single_op_partitions
from fusionspec.reference.partitioner import partition
from fusionspec.spec.catalog import CATALOG, PatternEntry
from fusionspec.spec.dtypes import DataType


@pytest.mark.parametrize("entry", CATALOG, ids=lambda e: e.id)
def test_fused_partition_equals_its_ops_one_by_one(entry: PatternEntry) -> None:
    for plan in instance_plans(entry):
        graph = build_instance(entry, plan).finalize()
        outputs = {t.id for t in graph.output_tensors}
        # Quantize and TypeCast are conversion points: they round in both semantics.
        inner = [t for op in graph.ops if op.kind not in ("Quantize", "TypeCast")
                 for t in op.outputs if t.id not in outputs]
        assert all(t.dtype is DataType.f32 for t in inner), \
            f"{plan.describe()}: an intermediate is not f32, the premise of this test"
        (fused,) = partition(graph)
        inputs = fill_inputs(graph, seed=3)
        got = execute(fused, inputs)
        want = execute(graph, inputs, partitioner=single_op_partitions)
        for tid in outputs:
            a, b = np.asarray(got[tid]), np.asarray(want[tid])
            assert a.dtype == b.dtype, f"{plan.describe()}: tensor {tid} dtype {a.dtype} vs " \
                                       f"{b.dtype}"
            same = (a == b) | (np.isnan(a.astype(np.float64)) & np.isnan(b.astype(np.float64)))
            assert same.all(), \
                f"{entry.id} {plan.describe()}: fused and op-by-op differ at tensor {tid} " \
                f"({int((~same).sum())} elements)"
