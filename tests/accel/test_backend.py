"""AccelBackend as a whole: the family registry, fused versus op-by-op execution, transfers only
for partition inputs and outputs, unsupported partitions, the epilogue API as a new family would
use it, and the conformance suite on the elementwise patterns."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest
from testkit.accel import OnDevice, first_device, first_info, requires_device

from fusionspec.accel.backend import AccelBackend, AccelOpByOpBackend
from fusionspec.accel.codegen.access import Domain
from fusionspec.accel.codegen.args import KernelArgs
from fusionspec.accel.codegen.epilogue import Value, emit_epilogue
from fusionspec.accel.compiled import AccelCompiledPartition
from fusionspec.accel.errors import UnsupportedPartitionError
from fusionspec.accel.families import FAMILIES, BuildContext, KernelFamily, family_for
from fusionspec.accel.plan import BufferArg, KernelPlan, Launch
from fusionspec.accel.runtime import runtime_for
from fusionspec.reference import execute
from fusionspec.reference.dtypes import cast_to
from fusionspec.spec.dtypes import DataType
from fusionspec.spec.graph import Graph, LogicalTensor, Op, Partition

pytestmark = [requires_device, pytest.mark.filterwarnings("ignore::RuntimeWarning")]

F32, BF16 = DataType.f32, DataType.bf16


def _chain() -> Graph:
    """bf16 Multiply -> Exp, then f32 + bf16 Add -> Clamp: fp.binary_post_ops with bf16
    intermediates."""
    s = (2, 3, 8)
    t = [LogicalTensor(i, BF16 if i in (0, 1, 2, 4) else F32, s) for i in range(8)]
    return Graph([Op(0, "Multiply", inputs=(t[0], t[1]), outputs=(t[2],)),
                  Op(1, "Exp", inputs=(t[2],), outputs=(t[4],)),
                  Op(2, "Add", inputs=(t[3], t[4]), outputs=(t[5],)),
                  Op(3, "Clamp", inputs=(t[5],), outputs=(t[6],),
                     attrs={"min": -1.0, "max": 5.0})])


def _feeds(graph: Graph) -> dict[int, Any]:
    rng = np.random.default_rng(1)
    g = graph.finalize()
    return {t.id: cast_to(rng.standard_normal(t.shape or ()), t.dtype)
            for t in g.input_tensors}


def test_registry_picks_elementwise_and_names_what_it_cannot() -> None:
    assert FAMILIES[0].name == "elementwise", "the elementwise family is registered"
    graph = _chain().finalize()
    on = OnDevice(graph)
    assert family_for(on.parts[0]).name == "elementwise", "an elementwise chain -> elementwise"
    # Two MatMuls in one partition: no family (the GEMM family takes one main op) matches.
    a, b = LogicalTensor(0, F32, (2, 3)), LogicalTensor(1, F32, (3, 4))
    c, d, e = (LogicalTensor(2, F32, (2, 4)), LogicalTensor(3, F32, (4, 5)),
               LogicalTensor(4, F32, (2, 5)))
    part = Partition(0, (Op(0, "MatMul", inputs=(a, b), outputs=(c,)),
                         Op(1, "MatMul", inputs=(c, d), outputs=(e,))), (a, b, d), (e,))
    with pytest.raises(UnsupportedPartitionError, match="MatMul"):
        AccelBackend().compile(part, first_device())
    never = KernelFamily("never", lambda p: False,
                         lambda p, c: (_ for _ in ()).throw(AssertionError))
    with pytest.raises(UnsupportedPartitionError, match="families: never"):
        family_for(on.parts[0], (never,))


def test_fused_is_one_kernel_without_intermediate_buffers() -> None:
    on = OnDevice(_chain(), form="specialised")
    assert len(on.parts) == 1 and len(on.compiled[0].plans) == 1, "one partition, one plan"
    plan = on.compiled[0].plans[0]
    assert len(plan.launches) == 1, "one kernel launch"
    buffers = {p.binding.tensor_id for p in plan.launches[0].params
               if isinstance(p.binding, BufferArg)}
    assert buffers == {0, 1, 3, 6} and \
        sum("__global" in p.decl for p in plan.launches[0].params) == len(buffers), \
        f"only the partition's inputs and output are global buffers: {buffers}"
    on.check(_feeds(_chain()), label="fused chain")


def test_op_by_op_matches_and_keeps_intermediates_on_device(monkeypatch: pytest.MonkeyPatch
                                                            ) -> None:
    import pyopencl as cl

    graph = _chain().finalize()
    feeds = _feeds(graph)
    fused, unfused = OnDevice(graph), OnDevice(graph, fused=False)
    assert len(unfused.compiled[0].plans) == 4, "op-by-op: one kernel per op"
    copies: list[object] = []
    real = cl.enqueue_copy

    def spy(*a: object, **k: object) -> object:
        if isinstance(a[1], np.ndarray):  # device -> host: a read-back
            copies.append(a)
        return real(*a, **k)

    monkeypatch.setattr(cl, "enqueue_copy", spy)
    got = unfused.run(feeds)
    assert len(copies) == 1, f"only the partition output is read back ({len(copies)} copies)"
    unfused.check(feeds, label="op-by-op chain")  # bf16 intermediates are within tolerance
    want = fused.run(feeds)
    scale = float(np.abs(want[6]).max())
    assert np.allclose(got[6], want[6], rtol=0, atol=2 ** -6 * scale), \
        "fused and op-by-op differ at most by the bf16 roundings of the intermediates"
    assert AccelOpByOpBackend().fused is False and AccelOpByOpBackend.name == "accel-opbyop"


def test_compiled_partition_exposes_source_and_validates_inputs() -> None:
    graph = _chain().finalize()
    on = OnDevice(graph, form="specialised")
    source = on.compiled[0].kernel_source
    assert "__kernel void fs_elementwise" in source and "exp(" in source, \
        "kernel_source is the generated OpenCL C"
    from fusionspec.reference.errors import InputMismatchError

    feeds = _feeds(graph)
    with pytest.raises(InputMismatchError, match="no array"):
        on.compiled[0].execute({})
    with pytest.raises(InputMismatchError, match="dtype"):
        on.compiled[0].execute({**feeds, 0: feeds[0].astype(np.float64)})
    with pytest.raises(InputMismatchError, match="shape"):
        on.compiled[0].execute({**feeds, 0: feeds[0][:1]})


def _scale_family_build(partition: Partition, ctx: BuildContext) -> KernelPlan:
    """A toy 'main op' (acc = 2 * x, the partition's Add(x, x)) with the shared epilogue
    after it, as the GEMM/conv families use it: the template computes acc, the epilogue
    finishes and stores."""
    main, *post = partition.ops
    x, dst = main.inputs[0], main.outputs[0]
    preamble = ctx.preamble()
    args = KernelArgs(preamble)
    src = args.read(x)
    domain = Domain(dst.shape or (), args)
    code = emit_epilogue(post, domain=domain, policy=ctx.policy, preamble=preamble,
                         given={dst.id: Value("acc")}, outputs=partition.outputs, acc="acc",
                         linear="i")
    size = domain.size_arg()
    body = "\n        ".join(code.body.splitlines())
    source = (f"{preamble.render()}\n__kernel void toy({', '.join(args.decls())}) {{\n"
              f"    for (int i = get_global_id(0); i < {size}; i += get_global_size(0))"
              f" {{\n        int idx[1]; idx[0] = i;\n        float acc = 2.0f * {src}[i];\n"
              f"        {body}\n    }}\n}}\n")
    launch = Launch("toy", args.params, *ctx.launch_1d(domain.size))
    return KernelPlan("toy", source, (launch,), tuple(partition.inputs),
                      tuple(partition.outputs))


def test_epilogue_api_for_a_main_op_family() -> None:
    n = 16
    x, m, b, y, z = (LogicalTensor(i, F32, (n,)) for i in range(5))
    ops = (Op(0, "Add", inputs=(x, x), outputs=(m,)),  # stands for the main op
           Op(1, "Subtract", inputs=(b, m), outputs=(y,)),  # chain on src_1
           Op(2, "Sigmoid", inputs=(y,), outputs=(z,)))
    part = Partition(0, ops, (x, b), (z,))
    info = first_info()
    plan = _scale_family_build(part, BuildContext.for_device(info))
    assert "acc = v2;" in plan.source, "the epilogue writes the final value back to acc"
    compiled = AccelCompiledPartition(part, runtime_for(info), [plan])
    xs = np.linspace(-3, 3, n, dtype=np.float32)
    bs = np.linspace(1, -1, n, dtype=np.float32)
    got = compiled.execute({0: xs, 2: bs})[4]
    want = 1 / (1 + np.exp(-(bs.astype(np.float64) - 2 * xs)))
    assert np.allclose(got, want, rtol=1e-6), f"toy family + epilogue: {got} vs {want}"


def test_reference_and_backend_agree_on_a_graph_of_two_partitions() -> None:
    """A graph the partitioner splits (GELU, then Subtract with the chain on src_1) runs
    partition by partition, values passing between them in their declared dtypes."""
    x, g = LogicalTensor(0, BF16, (2, 3, 4)), LogicalTensor(1, BF16, (2, 3, 4))
    b, y = LogicalTensor(2, F32, (3, 1)), LogicalTensor(3, F32, (2, 3, 4))
    graph = Graph([Op(0, "GELU", inputs=(x,), outputs=(g,)),
                   Op(1, "Subtract", inputs=(b, g), outputs=(y,))]).finalize()
    on = OnDevice(graph)
    assert len(on.parts) == 2, "Subtract does not take the chain through src_1"
    feeds = _feeds(graph)
    on.check(feeds, label="two partitions")
    want = execute(graph, feeds)[3]
    assert on.run(feeds)[3].shape == want.shape, "output shape"
