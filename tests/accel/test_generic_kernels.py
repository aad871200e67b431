"""Generic kernels (`fusionspec.accel.codegen.args`): partitions that differ only in shapes,
attribute values or tensor and op ids generate the same OpenCL program, which then computes each
partition's reference result from its own arguments; per-channel values travel in table
arguments uploaded once per compiled partition; and the registry itself names, types and
rounds what it is given."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

import numpy as np
import pytest
from testkit.accel import OnDevice, first_device, requires_device

from fusionspec.accel import compiled as compiled_module
from fusionspec.accel.backend import AccelBackend
from fusionspec.accel.codegen.args import KernelArgs, divisor_magic
from fusionspec.accel.codegen.source import Preamble
from fusionspec.accel.codegen.types import TypePolicy
from fusionspec.accel.devices import DeviceInfo, select_device
from fusionspec.accel.families import BuildContext, family_for
from fusionspec.accel.plan import BufferArg, ScalarArg, StrideArg, TableArg
from fusionspec.accel.runtime import runtime_for
from fusionspec.reference.dtypes import cast_to
from fusionspec.reference.partitioner import external_tensors
from fusionspec.spec.dtypes import DataType
from fusionspec.spec.graph import AttrValue, Graph, LogicalTensor, Op, Partition

F32, U8 = DataType.f32, DataType.u8

#: A graph factory: (variant, id offset) -> graph. Variant 0 and 1 differ in shapes and
#: attribute values only, the offset moves every tensor and op id.
Factory = Callable[[int, int], Graph]


def _device() -> DeviceInfo:
    return DeviceInfo(
        id="test-cpu", kind="cpu", name="made-up", platform="none", vendor="none", driver="0",
        opencl_version="OpenCL 3.0", opencl_c_version="OpenCL C 1.2", max_work_group_size=1024,
        max_work_item_sizes=(1024, 1024, 1024), compute_units=2, local_mem_size=65536,
        local_mem_dedicated=False, global_mem_size=1 << 32, extensions=frozenset(), fp16=False,
        fp64=False, correctly_rounded_divide_sqrt=True)


def _whole(graph: Graph) -> Partition:
    """All of the graph's ops as one partition (whatever the patterns say)."""
    g = graph.finalize()
    ins, outs = external_tensors(g, g.ops)
    return Partition(0, g.ops, tuple(ins), tuple(outs))


def _t(tid: int, shape: tuple[int, ...] | None, dtype: DataType = F32) -> LogicalTensor:
    return LogicalTensor(tid, dtype, shape)


def _elementwise(variant: int, base: int) -> Graph:
    """Clamp -> Add of a per-channel operand -> Elu -> Multiply, rank 4."""
    shape, channels = [((2, 3, 4, 5), 3), ((3, 7, 2, 9), 7)][variant]
    lo, hi, alpha = [(-1.0, 2.0, 0.5), (-0.25, 1.5, 1.25)][variant]
    t = [_t(base + i, shape) for i in range(7)]
    b = _t(base + 7, (1, channels, 1, 1))
    return Graph([Op(base, "Clamp", inputs=(t[0],), outputs=(t[1],),
                     attrs={"min": lo, "max": hi}),
                  Op(base + 1, "Add", inputs=(t[1], b), outputs=(t[2],)),
                  Op(base + 2, "Elu", inputs=(t[2],), outputs=(t[3],), attrs={"alpha": alpha}),
                  Op(base + 3, "Multiply", inputs=(t[3], t[4]), outputs=(t[5],))])


def _per_channel(variant: int, base: int) -> Graph:
    """u8 -> Dequantize per channel -> ReLU -> Quantize per tensor."""
    shape = [(2, 3, 4), (3, 5, 2)][variant]
    rng = np.random.default_rng(variant)
    scales = [float(s) for s in rng.uniform(0.01, 0.5, shape[1])]
    zps = [int(z) for z in rng.integers(0, 9, shape[1])]
    q, d, r, out = _t(base, shape, U8), _t(base + 1, shape), _t(base + 2, shape), \
        _t(base + 3, shape, U8)
    return Graph([Op(base, "Dequantize", inputs=(q,), outputs=(d,),
                     attrs={"qtype": "per_channel", "axis": 1, "scales": scales, "zps": zps}),
                  Op(base + 1, "ReLU", inputs=(d,), outputs=(r,)),
                  Op(base + 2, "Quantize", inputs=(r,), outputs=(out,),
                     attrs={"qtype": "per_tensor", "scales": [[0.1, 0.3][variant]],
                            "zps": [[2, 7][variant]]})])


def _conv(variant: int, base: int) -> Graph:
    """Convolution + BiasAdd + ReLU, NCX/OIX; grouping, strides, pads and dilations vary."""
    src, wei, groups, strides, pads, dil = [
        ((1, 4, 7, 7), (6, 2, 3, 3), 2, [2, 1], ([1, 1], [0, 1]), [1, 1]),
        ((2, 6, 9, 5), (5, 6, 2, 3), 1, [1, 2], ([0, 2], [1, 0]), [2, 1]),
    ][variant]
    conv = Op(base, "Convolution", inputs=(_t(base, src), _t(base + 1, wei)),
              outputs=(_t(base + 2, None),),
              attrs={"strides": strides, "pads_begin": pads[0], "pads_end": pads[1],
                     "dilations": dil, "groups": groups, "data_format": "NCX",
                     "weights_format": "OIX"})
    return Graph([conv, Op(base + 1, "BiasAdd", inputs=(_t(base + 2, None),
                                                        _t(base + 3, (wei[0],))),
                           outputs=(_t(base + 4, None),), attrs={"data_format": "NCX"}),
                  Op(base + 2, "ReLU", inputs=(_t(base + 4, None),),
                     outputs=(_t(base + 5, None),))])


def _matmul(variant: int, base: int) -> Graph:
    """A batched MatMul with transposed weights and a broadcast bias; M, N, K vary."""
    sa, sb, bias = [((2, 20, 30), (2, 40, 30), (40,)), ((3, 70, 9), (3, 13, 9), (13,))][variant]
    return Graph([Op(base, "MatMul", inputs=(_t(base, sa), _t(base + 1, sb), _t(base + 2, bias)),
                     outputs=(_t(base + 3, None),), attrs={"transpose_b": True})])


def _pool(variant: int, base: int) -> Graph:
    """AvgPool (padding counted) over NXC, then an Add."""
    shape, kernel, strides, pads = [((2, 7, 6, 3), [3, 2], [2, 1], [1, 0]),
                                    ((1, 9, 5, 4), [2, 3], [1, 2], [0, 1])][variant]
    pool = Op(base, "AvgPool", inputs=(_t(base, shape),), outputs=(_t(base + 1, None),),
              attrs={"kernel": kernel, "strides": strides, "pads_begin": pads,
                     "pads_end": pads, "exclude_pad": False, "data_format": "NXC"})
    return Graph([pool, Op(base + 1, "Add", inputs=(_t(base + 1, None), _t(base + 2, (1,))),
                           outputs=(_t(base + 3, None),))])


def _softmax(variant: int, base: int) -> Graph:
    shape = [(4, 3, 100), (2, 5, 250)][variant]
    return Graph([Op(base, "SoftMax", inputs=(_t(base, shape),), outputs=(_t(base + 1, shape),),
                     attrs={"axis": -1})])


def _reduction(variant: int, base: int) -> Graph:
    shape = [(3, 40, 5), (2, 50, 7)][variant]
    return Graph([Op(base, "ReduceMean", inputs=(_t(base, shape),),
                     outputs=(_t(base + 1, None),), attrs={"axes": [1], "keep_dims": True})])


def _interpolate(variant: int, base: int) -> Graph:
    shape, size = [((1, 2, 5, 4), {"sizes": [7, 3]}), ((2, 3, 3, 6), {"scales": [1.5, 0.5]})][
        variant]
    attrs: dict[str, AttrValue] = {"mode": "bilinear", "data_format": "NCX", **size}
    return Graph([Op(base, "Interpolate", inputs=(_t(base, shape),),
                     outputs=(_t(base + 1, None),), attrs=attrs)])


def _batchnorm_backward(variant: int, base: int) -> Graph:
    shape, eps = [((4, 3, 5, 6), 1e-3), ((2, 5, 4, 9), 1e-5)][variant]
    channels = shape[1]
    ins = (_t(base, shape), _t(base + 1, shape), _t(base + 2, (channels,)),
           _t(base + 3, (channels,)), _t(base + 4, (channels,)))
    outs = (_t(base + 5, shape), _t(base + 6, (channels,)), _t(base + 7, (channels,)))
    return Graph([Op(base, "BatchNormTrainingBackward", inputs=ins, outputs=outs,
                     attrs={"epsilon": eps, "data_format": "NCX"})])


CASES: dict[str, tuple[Factory, str]] = {
    "elementwise": (_elementwise, "elementwise"),
    "per-channel": (_per_channel, "elementwise"),
    "convolution": (_conv, "gemm"),
    "matmul": (_matmul, "gemm"),
    "pool": (_pool, "pool"),
    "softmax": (_softmax, "softmax"),
    "reduction": (_reduction, "reduction"),
    "interpolate": (_interpolate, "interpolate"),
    "batchnorm-backward": (_batchnorm_backward, "training"),
}


def _feeds(graph: Graph, seed: int) -> dict[int, Any]:
    rng = np.random.default_rng(seed)
    feeds: dict[int, Any] = {}
    for t in graph.finalize().input_tensors:
        shape = t.shape or ()
        if t.dtype is U8:
            feeds[t.id] = rng.integers(0, 40, shape).astype(np.uint8)
        else:  # positive values keep a batch norm's variance meaningful
            feeds[t.id] = cast_to(rng.uniform(0.25, 2.0, shape) * rng.choice([-1, 1], shape)
                                  if len(shape) > 1 else rng.uniform(0.5, 2.0, shape), t.dtype)
    return feeds


@pytest.mark.parametrize("name", sorted(CASES))
def test_variants_share_one_source(name: str) -> None:
    """Other shapes, attribute values and ids: the same program text (code generation only)."""
    make, family = CASES[name]
    ctx = BuildContext.for_device(_device())
    parts = [_whole(make(0, 0)), _whole(make(1, 0)), _whole(make(0, 50))]
    assert all(family_for(p).name == family for p in parts), f"{name}: the {family} family"
    plans = [family_for(p).build(p, ctx) for p in parts]
    sources = [plan.source for plan in plans]
    assert sources[0] == sources[1], f"{name}: other shapes and attributes, another program"
    assert sources[0] == sources[2], f"{name}: other ids, another program"
    params = [[p.decl for launch in plan.launches for p in launch.params] for plan in plans]
    assert params[0] == params[1] == params[2], f"{name}: one signature"
    values = [[p.binding for launch in plan.launches for p in launch.params] for plan in plans]
    assert values[0] != values[1], f"{name}: the variants differ in their arguments"


@requires_device
@pytest.mark.parametrize("name", sorted(CASES))
def test_one_program_computes_every_variant(name: str) -> None:
    """The second variant reuses the first one's built program and still computes its own
    reference result (its values come in as arguments)."""
    make, _ = CASES[name]
    first = OnDevice(make(0, 0), whole=True)
    runtime = runtime_for(select_device(first_device().id))
    builds = runtime.stats.builds
    second = OnDevice(make(1, 50), whole=True)
    assert runtime.stats.builds == builds, f"{name}: the second variant built a new program"
    assert first.compiled[0].kernel_source == second.compiled[0].kernel_source
    first.check(_feeds(make(0, 0), 1), label=f"{name} variant 0")
    second.check(_feeds(make(1, 50), 2), label=f"{name} variant 1")


def test_per_channel_values_are_table_arguments() -> None:
    """Per-channel scales and zero points are f32 tables bound to the exact f32 values; the
    per-tensor ones are f32 scalars; nothing of them is in the text."""
    graph = _per_channel(1, 0)
    part = _whole(graph)
    plan = family_for(part).build(part, BuildContext.for_device(_device()))
    tables = [p.binding for p in plan.launches[0].params if isinstance(p.binding, TableArg)]
    dequantize = graph.ops[0]
    scales, zps = dequantize.attrs["scales"], dequantize.attrs["zps"]
    assert isinstance(scales, Sequence) and isinstance(zps, Sequence)
    want = [tuple(float(np.float32(v)) for v in values) for values in (scales, zps)]
    assert [t.values for t in tables] == want, f"tables {tables}, want {want}"
    floats = [p.binding.value for p in plan.launches[0].params
              if isinstance(p.binding, ScalarArg) and p.binding.ctype == "float"]
    assert floats == [float(np.float32(0.3)), 7.0], f"per-tensor scale and zero point {floats}"
    assert "0x" not in plan.source and "__constant" not in plan.source, plan.source


@requires_device
def test_tables_are_uploaded_once_and_buffers_pooled(monkeypatch: pytest.MonkeyPatch) -> None:
    """A compiled partition uploads its tables when it is created; its first execute allocates
    one buffer per input and output, the second none (they come back from the pool), and
    every execute computes the same result."""
    graph = _per_channel(0, 0)
    part = _whole(graph)
    backend = AccelBackend(form="specialised")
    compiled = backend.compile(part, backend.devices()[0])
    uploads: list[int] = []
    real = compiled_module._buffer

    def counting(context: Any, nbytes: int, host: Any) -> Any:
        uploads.append(nbytes)
        return real(context, nbytes, host)

    monkeypatch.setattr(compiled_module, "_buffer", counting)
    feeds = _feeds(graph, 4)
    assert compiled.allocations == 0, "compiling allocates no tensor buffer"
    first = compiled.execute(feeds)
    per_run = len(part.inputs) + len(part.outputs)
    assert compiled.allocations == per_run, \
        f"{compiled.allocations} buffers for the first run of {per_run} tensors"
    second = compiled.execute(feeds)
    assert compiled.allocations == per_run, \
        f"the second run allocated {compiled.allocations - per_run} more buffers"
    compiled.time_launches(feeds, 2)
    assert compiled.allocations == per_run, "timing kernels reuses the pooled buffers too"
    compiled.time_launches(feeds, 1, fresh=True)
    assert compiled.allocations == 2 * per_run, "a fresh timing allocates its own buffers"
    assert uploads == [], f"tables uploaded again: {uploads}"
    out = part.outputs[0].id
    assert np.array_equal(first[out], second[out]), "the same result on every execute"
    OnDevice(graph, whole=True).check(feeds, label="per-channel tables")


@requires_device
def test_pooled_buffers_serve_every_partition_shape() -> None:
    """A GEMM partition with scratch buffers (packed operands) keeps its allocations after the
    first run and still computes the reference result on new inputs."""
    graph = _conv(1, 0)
    part = _whole(graph)
    backend = AccelBackend()
    compiled = backend.compile(part, backend.devices()[0])
    compiled.execute(_feeds(graph, 1))
    count = compiled.allocations
    for seed in (2, 3):
        compiled.execute(_feeds(graph, seed))
    assert compiled.allocations == count, \
        f"{compiled.allocations - count} buffers allocated after the first run"
    on = OnDevice(graph, whole=True)
    on.compiled = [compiled]
    on.check(_feeds(graph, 5), label="pooled conv")


# -- the registry ---------------------------------------------------------------------------

def test_buffers_and_registers_are_named_by_first_use() -> None:
    args = KernelArgs(Preamble(TypePolicy()))
    x, y = _t(17, (4, 6)), _t(3, (4, 6), U8)
    assert args.read(x) == "t0" and args.write(y) == "t1" and args.read(x) == "t0"
    assert args.fresh("v") == "v0" and args.fresh("v") == "v1" and args.fresh("e") == "e0"
    assert args.stride(_t(9, (4, 6), F32), 1) == "t2_s1"
    assert args.dense_stride(x, 0) == "t0_s0"
    assert args.decls() == ["__global const float* restrict t0", "__global uchar* restrict t1",
                            "const long t2_s1", "const int t0_s0"]
    bindings = [p.binding for p in args.params]
    assert bindings == [BufferArg(17), BufferArg(3), StrideArg(9, 1), ScalarArg("int", 6)]


def test_integers_are_typed_as_their_literals_were() -> None:
    args = KernelArgs(Preamble(TypePolicy()))
    assert args.index("small", 2 ** 31 - 1) == "small"
    assert args.index("big", 2 ** 31) == "big"
    assert args.long("count", 5) == "count"
    narrow, wide = args.divisor("n1", 6), args.divisor("rows", 7, wide=True)
    assert (narrow.div("r"), narrow.mod("r")) == ("fs_div(r, n1_div)", "fs_mod(r, n1_div)")
    assert (wide.div("r"), wide.mod("r")) == ("(r) / rows_div", "(r) % rows_div"), \
        "long index arithmetic divides as it is"
    assert args.decls() == ["const int small", "const long big", "const long count",
                            "const uint4 n1_div", "const long rows_div"]
    assert args.params[3].binding == ScalarArg("uint4", divisor_magic(6))


def test_a_name_has_one_value() -> None:
    args = KernelArgs(Preamble(TypePolicy()))
    args.index("idx_n0", 4)
    assert args.index("idx_n0", 4) == "idx_n0", "asking again for the same value is fine"
    with pytest.raises(AssertionError, match="idx_n0"):
        args.index("idx_n0", 5)
    args.f32("eps", float("nan"))
    assert args.f32("eps", float("nan")) == "eps", "NaN is the same value as itself"


def test_no_parameter_after_the_signature() -> None:
    args = KernelArgs(Preamble(TypePolicy()))
    args.index("M", 3)
    assert [p.decl for p in args.params] == ["const int M"]
    assert args.index("M", 3) == "M", "an existing parameter may be named again"
    with pytest.raises(AssertionError, match="after the signature"):
        args.index("N", 4)


def test_f32_values_are_rounded_as_literals_were() -> None:
    args = KernelArgs(Preamble(TypePolicy()))
    args.numbered_f32("alpha", 0.1)
    args.numbered_f32("alpha", 1e40)
    args.table("scales", [1 / 3, -0.0])
    values = [p.binding for p in args.params]
    assert args.decls() == ["const float alpha0", "const float alpha1",
                            "__global const float* restrict scales0"]
    assert values[0] == ScalarArg("float", float(np.float32(0.1)))
    assert values[1] == ScalarArg("float", float("inf")), "f32 overflow rounds to infinity"
    assert isinstance(values[2], TableArg) and values[2].values == (float(np.float32(1 / 3)),
                                                                     -0.0)
    assert np.signbit(values[2].values[1]), "the sign of zero is kept"


def _divisors() -> list[int]:
    """Small divisors, and those next to powers of two, where the multiplier is largest."""
    near = [p + e for p in (1 << s for s in range(1, 31)) for e in (-1, 0, 1)]
    return sorted({*range(1, 2049), *near, 2 ** 31 - 1, 3 * 5 * 7 * 11 * 13 * 17 * 19})


def test_divisor_magic_divides_every_int_index() -> None:
    rng = np.random.default_rng(8)
    for d in _divisors():
        divisor, multiplier, shift, _ = divisor_magic(d)
        assert divisor == d and 0 < multiplier < 2 ** 32, f"divisor {d}: multiplier {multiplier}"
        top = 2 ** 31 - 1
        ns = [0, 1, d - 1, d, d + 1, top, top - top % d, top - top % d - 1,
              *(int(n) for n in rng.integers(0, top, 8))]
        for n in ns:
            if 0 <= n <= top:
                assert (n * multiplier) >> shift == n // d, f"{n} // {d}"
    with pytest.raises(ValueError):
        divisor_magic(0)


@requires_device
def test_divisor_helpers_on_the_device() -> None:
    """fs_div and fs_mod, as the kernels get them, against NumPy."""
    import pyopencl as cl

    rng = np.random.default_rng(9)
    preamble = Preamble(TypePolicy())
    args = KernelArgs(preamble)
    divisors = [*range(1, 40), 641, 65535, 65536, 65537, 1 << 30, (1 << 30) + 1, 2 ** 31 - 1]
    names = [args.divisor(f"d{j}", d) for j, d in enumerate(divisors)]
    n = np.concatenate([np.arange(0, 4096), [2 ** 31 - 1, 2 ** 31 - 2, 2 ** 30],
                        rng.integers(0, 2 ** 31 - 1, 4096)]).astype(np.int32)
    body = "\n".join(f"    q[{j} * {n.size} + i] = {div.div('x')}; "
                     f"r[{j} * {n.size} + i] = {div.mod('x')};" for j, div in enumerate(names))
    source = (f"{preamble.render()}\n__kernel void k(__global const int* restrict n, "
              f"__global int* restrict q, __global int* restrict r, {', '.join(args.decls())})"
              f" {{\n    const int i = get_global_id(0);\n    const int x = n[i];\n{body}\n}}\n")
    runtime = runtime_for(select_device(first_device().id))
    kernel = runtime.kernel(runtime.program(source), "k")
    flags = cl.mem_flags.READ_WRITE
    n_buf = cl.Buffer(runtime.context, flags | cl.mem_flags.COPY_HOST_PTR, hostbuf=n)
    q = np.empty(len(divisors) * n.size, np.int32)
    r = np.empty_like(q)
    q_buf, r_buf = (cl.Buffer(runtime.context, flags, size=a.nbytes) for a in (q, r))
    values = [np.asarray(p.binding.value, dtype=np.uint32) for p in args.params
              if isinstance(p.binding, ScalarArg)]
    kernel.set_args(n_buf, q_buf, r_buf, *values)
    cl.enqueue_nd_range_kernel(runtime.queue, kernel, (n.size,), None)
    cl.enqueue_copy(runtime.queue, q, q_buf)
    cl.enqueue_copy(runtime.queue, r, r_buf)
    runtime.queue.finish()
    for j, d in enumerate(divisors):
        part = slice(j * n.size, (j + 1) * n.size)
        assert np.array_equal(q[part], n // d) and np.array_equal(r[part], n % d), \
            f"fs_div/fs_mod by {d} differ from NumPy"
