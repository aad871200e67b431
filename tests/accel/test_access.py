"""Specialised tensor access in generated kernels (`fusionspec.accel.codegen.access`): the
offsets a lazy domain spells from its linear index, which tensors count as dense, and what the
elementwise family makes of them: no division for a dense chain, one per run of dims for a
broadcast operand, runtime strides for anything else; and on the device, exact agreement with
the reference for every kind of operand layout, fused and op by op."""

from __future__ import annotations

import math
import re
from typing import Any

import numpy as np
import pytest
from testkit.accel import first_device, requires_device

from fusionspec.accel.backend import AccelBackend
from fusionspec.accel.codegen.access import Domain, is_dense
from fusionspec.accel.codegen.args import KernelArgs
from fusionspec.accel.codegen.source import Preamble
from fusionspec.accel.codegen.types import TypePolicy
from fusionspec.accel.devices import DeviceInfo
from fusionspec.accel.families import BuildContext, family_for
from fusionspec.accel.plan import ScalarArg, StrideArg
from fusionspec.reference import execute
from fusionspec.reference.partitioner import partition
from fusionspec.spec.dtypes import DataType
from fusionspec.spec.graph import Graph, LogicalTensor, Op, Partition
from fusionspec.spec.types import Array

F32 = DataType.f32
RNG = np.random.default_rng(11)


def _device(kind: str = "cpu", compute_units: int = 2) -> DeviceInfo:
    return DeviceInfo(
        id=f"test-{kind}", kind=kind, name="made-up", platform="none", vendor="none",
        driver="0", opencl_version="OpenCL 3.0", opencl_c_version="OpenCL C 1.2",
        max_work_group_size=1024, max_work_item_sizes=(1024, 1024, 64),
        compute_units=compute_units, local_mem_size=65536, local_mem_dedicated=True,
        global_mem_size=1 << 32, extensions=frozenset(), fp16=False, fp64=False,
        correctly_rounded_divide_sqrt=True)


def _scalars(args: KernelArgs) -> dict[str, Any]:
    """The integer and divisor arguments `args` recorded, by name (what the executor would
    pass)."""
    return {p.decl.split()[-1]: p.binding.value for p in args.params
            if isinstance(p.binding, ScalarArg)}


def _fs_div(n: int, d: tuple[int, int, int, int]) -> int:
    """The generated code's ``fs_div``: a multiply and a shift by the divisor's magic."""
    return (n * d[1]) >> d[2]


def _fs_mod(n: int, d: tuple[int, int, int, int]) -> int:
    return n - _fs_div(n, d) * d[0]


def _evaluate(expr: str, declarations: list[str], i: int, values: dict[str, Any]) -> int:
    """The value of a generated C index expression at linear index `i`, given the kernel's
    argument values (all operands are non-negative, so C's integer division is Python's floor
    division)."""
    scope: dict[str, Any] = {"i": i, "fs_div": _fs_div, "fs_mod": _fs_mod, **values}
    for line in declarations:
        match = re.fullmatch(r"const (?:int|long) (\w+) = (.+);", line)
        assert match, f"unexpected axis declaration {line!r}"
        scope[match[1]] = eval(match[2].replace(" / ", " // "), {}, dict(scope))
    value: int = eval(expr.replace(" / ", " // "), {}, scope)
    return value


OFFSET_CASES = [
    ((6, 5), (6, 5)), ((6, 5), (5,)), ((6, 5), (6, 1)), ((6, 5), (1, 1)), ((6, 5), ()),
    ((2, 3, 4, 5), (1, 3, 1, 1)), ((2, 3, 4, 5), (2, 1, 4, 5)), ((2, 3, 4, 5), (2, 1, 1, 5)),
    ((2, 3, 4, 5), (3, 4, 1)), ((2, 1, 4, 5), (2, 1, 1, 5)), ((1, 7, 1), (7, 1)),
    ((4, 1, 3), (1, 1, 3)), ((3, 4), (1, 4)),
]


@pytest.mark.parametrize(("domain_shape", "shape"), OFFSET_CASES,
                         ids=[f"{d}<-{s}" for d, s in OFFSET_CASES])
def test_lazy_dense_offsets_are_numpy_broadcasting(domain_shape: tuple[int, ...],
                                                   shape: tuple[int, ...]) -> None:
    args = KernelArgs(Preamble(TypePolicy()))
    domain = Domain(domain_shape, args, linear="i")
    tensor = LogicalTensor(3, F32, shape)
    expr = domain.dense_offset(tensor)
    declarations = domain.axis_declarations()
    want = np.broadcast_to(np.arange(math.prod(shape)).reshape(shape), domain_shape).ravel()
    got = [_evaluate(expr, declarations, i, _scalars(args)) for i in range(domain.size)]
    assert got == want.tolist(), \
        f"offsets of {shape} in {domain_shape} from {expr!r} ({declarations}): {got}"
    lead, runs, live_before = len(domain_shape) - len(shape), 0, False
    for k, extent in enumerate(domain_shape):
        if extent != 1:
            live = k >= lead and shape[k - lead] != 1
            runs += live and not live_before
            live_before = live
    assert expr.count("fs_div") <= runs and expr.count("fs_mod") <= runs and \
        "/" not in expr and "%" not in expr and not declarations, \
        f"{expr!r} ({declarations}) takes more than one division and one remainder per " \
        f"run of the {runs} runs of dims {shape} does not broadcast in {domain_shape}"
    if math.prod(shape) == domain.size:
        assert expr == "i" and not declarations, \
            f"a dense tensor covering the domain is read at the linear index, not {expr!r}"


STRIDED_CASES = [((3, 4), (1, 3)), ((3, 4), (8, 1)), ((3, 4), (0, 1)), ((2, 3, 2), (1, 0, 2)),
                 ((2, 3, 4), (12, 1, 3))]


@pytest.mark.parametrize(("shape", "strides"), STRIDED_CASES,
                         ids=[f"{s}@{st}" for s, st in STRIDED_CASES])
def test_lazy_strided_offsets_use_runtime_strides(shape: tuple[int, ...],
                                                  strides: tuple[int, ...]) -> None:
    args = KernelArgs(Preamble(TypePolicy()))
    domain = Domain(shape, args, linear="i")
    tensor = LogicalTensor(4, F32, shape, strides)
    assert not is_dense(tensor), f"strides {strides} of {shape} are not row-major"
    expr = domain.read_offset(tensor)
    declarations = domain.axis_declarations()
    bound = {p.decl.split()[-1]: strides[p.binding.dim] for p in args.params
             if isinstance(p.binding, StrideArg)}
    assert len(bound) == sum(1 for d in shape if d != 1), \
        f"one runtime stride per dim of extent > 1, got {args.decls()}"
    index = np.indices(shape).reshape(len(shape), -1).T
    want = [int(np.dot(ix, strides)) for ix in index]
    got = [_evaluate(expr, declarations, i, {**bound, **_scalars(args)})
           for i in range(domain.size)]
    assert got == want, f"strided offsets of {shape}@{strides} from {expr!r}: {got}"


@pytest.mark.parametrize(("shape", "strides", "dense"), [
    ((3, 4), None, True), ((3, 4), (4, 1), True), ((3, 1, 4), (4, 99, 1), True),
    ((1, 4), (0, 1), True), ((3, 4), (1, 3), False), ((3, 4), (8, 1), False),
    ((3, 4), (0, 1), False), ((3, 4), (4,), False),
])
def test_is_dense(shape: tuple[int, ...], strides: tuple[int, ...] | None,
                  dense: bool) -> None:
    got = is_dense(LogicalTensor(0, F32, shape, strides))
    assert got == dense, f"is_dense({shape}, strides {strides}) is {got}, want {dense}"


def _chain(shape: tuple[int, ...], x_strides: tuple[int, ...] | None = None,
           b_shape: tuple[int, ...] | None = None, c_shape: tuple[int, ...] | None = None
           ) -> Graph:
    """Add(x, b) -> Multiply(., c) -> ReLU -> Maximum(., d), one fp.binary_post_ops
    partition; b and c broadcast when given smaller shapes."""
    x = LogicalTensor(0, F32, shape, x_strides)
    b, c = LogicalTensor(1, F32, b_shape or shape), LogicalTensor(2, F32, c_shape or shape)
    d = LogicalTensor(3, F32, shape)
    s, m, r, y = (LogicalTensor(i, F32, shape) for i in range(4, 8))
    return Graph([Op(0, "Add", inputs=(x, b), outputs=(s,)),
                  Op(1, "Multiply", inputs=(s, c), outputs=(m,)),
                  Op(2, "ReLU", inputs=(m,), outputs=(r,)),
                  Op(3, "Maximum", inputs=(r, d), outputs=(y,))]).finalize()


def _kernel_of(graph: Graph, device: DeviceInfo) -> str:
    part, = partition(graph)
    source = family_for(part).build(part, BuildContext.for_device(device)).source
    return source[source.index("__kernel"):]


def test_dense_chain_has_no_division_no_strides_and_no_loop() -> None:
    kernel = _kernel_of(_chain((16, 1000)), _device())
    assert "/" not in kernel and "%" not in kernel, \
        f"a dense same-shape chain needs no index division:\n{kernel}"
    assert "_s0" not in kernel and "long" not in kernel, \
        f"dense operands take no runtime strides:\n{kernel}"
    assert "for (" not in kernel and "if (i < idx_size)" in kernel, \
        f"a launch that covers the domain runs each work item once:\n{kernel}"


def test_broadcast_operands_compute_only_their_index() -> None:
    kernel = _kernel_of(_chain((2, 3, 4, 5), b_shape=(1, 3, 1, 1), c_shape=(5,)), _device())
    assert "t1[fs_mod(fs_div(i, idx_in1_div), idx_n1_div)]" in kernel and \
        "t2[fs_mod(i, idx_n3_div)]" in kernel, \
        f"a (1,3,1,1) operand is one division and remainder, a (5,) one a remainder:\n{kernel}"
    assert "idx1 " not in kernel and "idx3 " not in kernel, \
        f"no axis index is needed by dense operands:\n{kernel}"


def test_capped_launch_keeps_the_grid_stride_loop() -> None:
    device = _device("gpu", compute_units=1)
    kernel = _kernel_of(_chain((1 << 20,)), device)
    assert "for (int i = get_global_id(0); i < idx_size; i += get_global_size(0))" in kernel, \
        f"a GPU launch capped below the element count loops over the rest:\n{kernel}"


LAYOUTS = [
    ("dense", (6, 7), None, None, None),
    ("channel-broadcast", (2, 3, 4, 5), None, (1, 3, 1, 1), (5,)),
    ("outer-broadcast", (2, 3, 4, 5), None, (2, 1, 1, 1), (2, 1, 4, 5)),
    ("scalar-and-row", (5, 9), None, (), (1, 9)),
    ("transposed", (7, 6), (1, 7), None, (6,)),
    ("padded-rows", (3, 5), (8, 1), (3, 1), None),
    ("zero-stride", (4, 3, 2), (0, 2, 1), (1, 3, 1), None),
]


def _inputs(part: Partition, flat: dict[int, int]) -> dict[int, Array]:
    out: dict[int, Array] = {}
    for t in part.inputs:
        shape = t.shape or ()
        length = flat.get(t.id)
        data = RNG.standard_normal(length if length is not None else shape)
        out[t.id] = np.asarray(data * 3, dtype=np.float32)
    return out


@requires_device
@pytest.mark.parametrize("fused", [True, False], ids=["fused", "op-by-op"])
@pytest.mark.parametrize(("name", "shape", "strides", "b_shape", "c_shape"), LAYOUTS,
                         ids=[case[0] for case in LAYOUTS])
def test_every_layout_is_exact_against_the_reference(
        name: str, shape: tuple[int, ...], strides: tuple[int, ...] | None,
        b_shape: tuple[int, ...] | None, c_shape: tuple[int, ...] | None,
        fused: bool) -> None:
    part, = partition(_chain(shape, strides, b_shape, c_shape))
    flat = {} if strides is None else {
        0: 1 + sum((d - 1) * s for d, s in zip(shape, strides))}
    feeds = _inputs(part, flat)
    want = execute(part, feeds)
    backend = AccelBackend(fused=fused)
    compiled = backend.compile(part, first_device())
    got = compiled.execute(feeds)
    for tid, value in want.items():
        assert np.array_equal(got[tid], value, equal_nan=True), \
            f"{name} ({'fused' if fused else 'op by op'}): output {tid} differs from the " \
            f"reference by {np.max(np.abs(got[tid] - value))}\n{compiled.kernel_source}"


def test_index_type_widens_when_work_item_ids_pass_int() -> None:
    """2**31 - 3 elements fit an int, but the launch rounds up to 2**31 work items, whose
    ids would wrap an int index: the kernel indexes with long."""
    x = LogicalTensor(0, F32, (2 ** 31 - 3,))
    y = LogicalTensor(1, F32, (2 ** 31 - 3,))
    part = Partition(0, (Op(0, "ReLU", inputs=(x,), outputs=(y,)),), (x,), (y,))
    plan = family_for(part).build(part, BuildContext.for_device(_device()))
    (items,) = plan.launches[0].global_size
    assert items > 2 ** 31 - 1, f"the test needs a launch past int range, got {items} items"
    assert "const long i = get_global_id(0);" in plan.source, \
        f"work-item ids up to {items} need a long index:\n{plan.source}"
