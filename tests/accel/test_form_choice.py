"""Each kernel family decides its form before building and builds only that form; both forms
reject an invalid partition with the same error, found by the checks they share
(`fusionspec.accel.codegen.op_checks`), not by generating the other form.

Code generation needs no OpenCL device: the plans are built for made-up device descriptions.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest

from fusionspec.accel.codegen.access import Domain
from fusionspec.accel.codegen.args import KernelArgs
from fusionspec.accel.codegen.epilogue import emit_epilogue
from fusionspec.accel.codegen.op_checks import OP_CHECKS, check_chain
from fusionspec.accel.codegen.ops import OP_TABLE
from fusionspec.accel.codegen.source import Preamble
from fusionspec.accel.codegen.types import TypePolicy
from fusionspec.accel.devices import DeviceInfo
from fusionspec.accel.families import (
    BuildContext,
    elementwise,
    family_for,
    gemm,
    interpolate,
    pool,
    post_ops,
    reduction,
    softmax,
    table_gather,
    training,
)
from fusionspec.accel.families.elementwise_table import TABLE_KERNEL
from fusionspec.accel.plan import KernelPlan
from fusionspec.spec.dtypes import DataType
from fusionspec.spec.errors import FusionspecError
from fusionspec.spec.graph import AttrValue, LogicalTensor, Op, Partition

F32, F16 = DataType.f32, DataType.f16
#: The kernels of the table form's shared programs.
_TABLE_KERNELS = {TABLE_KERNEL, table_gather.GATHER_KERNEL, table_gather.GEMM_KERNEL,
                  table_gather.WINDOW_KERNEL, table_gather.SOFTMAX_KERNEL,
                  table_gather.BN_STATS_KERNEL, table_gather.BN_SRC_KERNEL}


def _device(*, cpu: bool) -> DeviceInfo:
    return DeviceInfo(
        id="test-cpu" if cpu else "test-gpu", kind="cpu" if cpu else "gpu", name="made-up",
        platform="none", vendor="none", driver="0",
        opencl_version="OpenCL 3.0", opencl_c_version="OpenCL C 1.2",
        max_work_group_size=1024, max_work_item_sizes=(1024, 1024, 64), compute_units=8,
        local_mem_size=65536, local_mem_dedicated=not cpu, global_mem_size=1 << 32,
        extensions=frozenset(), fp16=False, fp64=False,
        correctly_rounded_divide_sqrt=True, native_vector_width=8 if cpu else 1)


def _ctx(form: str, *, cpu: bool = True) -> BuildContext:
    return BuildContext(_device(cpu=cpu), TypePolicy(), form=form)


def _t(tid: int, shape: tuple[int, ...], dtype: DataType = F32) -> LogicalTensor:
    return LogicalTensor(tid, dtype, shape)


def _part(ops: list[Op]) -> Partition:
    produced = {t.id for op in ops for t in op.outputs}
    read = {t.id for op in ops for t in op.inputs}
    inputs = {t.id: t for op in ops for t in op.inputs if t.id not in produced}
    outputs = {t.id: t for op in ops for t in op.outputs if t.id not in read}
    return Partition(0, ops, list(inputs.values()), list(outputs.values()))


def _elementwise() -> Partition:
    return _part([Op(0, "Add", inputs=(_t(0, (2, 3)), _t(1, (1, 3))), outputs=(_t(2, (2, 3)),)),
                  Op(1, "ReLU", inputs=(_t(2, (2, 3)),), outputs=(_t(3, (2, 3)),))])


def _gemm() -> Partition:
    return _part([Op(0, "MatMul", inputs=(_t(0, (4, 8)), _t(1, (8, 5))),
                     outputs=(_t(2, (4, 5)),)),
                  Op(1, "ReLU", inputs=(_t(2, (4, 5)),), outputs=(_t(3, (4, 5)),))])


def _softmax() -> Partition:
    return _part([Op(0, "SoftMax", inputs=(_t(0, (2, 6)),), outputs=(_t(1, (2, 6)),),
                     attrs={"axis": 1}),
                  Op(1, "Exp", inputs=(_t(1, (2, 6)),), outputs=(_t(2, (2, 6)),))])


def _pool() -> Partition:
    attrs: dict[str, AttrValue] = {"kernel": [2, 2], "strides": [2, 2], "pads_begin": [0, 0],
                                   "pads_end": [0, 0], "data_format": "NCX"}
    return _part([Op(0, "MaxPool", inputs=(_t(0, (1, 2, 4, 4)),),
                     outputs=(_t(1, (1, 2, 2, 2)),), attrs=attrs),
                  Op(1, "Tanh", inputs=(_t(1, (1, 2, 2, 2)),), outputs=(_t(2, (1, 2, 2, 2)),))])


def _reduction() -> Partition:
    return _part([Op(0, "ReduceSum", inputs=(_t(0, (2, 3)),), outputs=(_t(1, (2,)),),
                     attrs={"axes": [1]})])


def _interpolate() -> Partition:
    return _part([Op(0, "Interpolate", inputs=(_t(0, (1, 2, 3, 3)),),
                     outputs=(_t(1, (1, 2, 6, 6)),),
                     attrs={"mode": "nearest", "data_format": "NCX", "sizes": [6, 6]})])


def _training() -> Partition:
    return _part([Op(0, "BiasAddBackward", inputs=(_t(0, (2, 3, 4, 5)),),
                     outputs=(_t(1, (3,)),), attrs={"data_format": "NCX"})])


#: Per family: a small partition of it, the module, the name of its specialised builder and
#: the name of the table-form builder it calls.
FAMILIES: list[tuple[str, Callable[[], Partition], Any, str, str]] = [
    ("elementwise", _elementwise, elementwise, "_specialised", "build_table"),
    ("gemm", _gemm, gemm, "_build_specialised", "build_gemm_table"),
    ("softmax", _softmax, softmax, "_specialised", "softmax_plan"),
    ("pool", _pool, pool, "_specialised", "window_plan"),
    ("reduction", _reduction, reduction, "_specialised", "window_plan"),
    ("interpolate", _interpolate, interpolate, "_specialised", "window_plan"),
    ("training", _training, training, "_specialised", "training_table_plan"),
]


def _forbid(monkeypatch: pytest.MonkeyPatch, module: Any, name: str) -> None:
    def refuse(*args: object, **kwargs: object) -> KernelPlan:
        raise AssertionError(f"{module.__name__}.{name} was called for the other form")
    monkeypatch.setattr(module, name, refuse)


def _is_table(plan: KernelPlan) -> bool:
    return all(launch.kernel in _TABLE_KERNELS for launch in plan.launches)


@pytest.mark.parametrize("family,make,module,specialised,table", FAMILIES,
                         ids=[f[0] for f in FAMILIES])
@pytest.mark.parametrize("cpu", [True, False], ids=["cpu", "gpu"])
def test_table_form_does_not_build_the_specialised_plan(
        monkeypatch: pytest.MonkeyPatch, family: str, make: Callable[[], Partition],
        module: Any, specialised: str, table: str, cpu: bool) -> None:
    part = make()
    assert family_for(part).name == family, f"the test partition goes to {family}"
    _forbid(monkeypatch, module, specialised)
    plan = family_for(part).build(part, _ctx("table", cpu=cpu))
    assert plan.launches and _is_table(plan), \
        f"{family} asked for the table form built {[x.kernel for x in plan.launches]}"


@pytest.mark.parametrize("family,make,module,specialised,table", FAMILIES,
                         ids=[f[0] for f in FAMILIES])
@pytest.mark.parametrize("form", ["specialised", "auto"])
def test_specialised_form_does_not_build_the_table_plan(
        monkeypatch: pytest.MonkeyPatch, family: str, make: Callable[[], Partition],
        module: Any, specialised: str, table: str, form: str) -> None:
    part = make()
    _forbid(monkeypatch, module, table)
    ctx = _ctx(form)
    if form == "auto":  # every test partition is small: "auto" takes the table form ...
        monkeypatch.setattr("fusionspec.accel.families.forms.TABLE_LIMIT", 0)
    plan = family_for(part).build(part, ctx)
    assert plan.launches and not _is_table(plan), \
        f"{family} under form={form} built {[x.kernel for x in plan.launches]}"


def test_table_post_ops_do_not_render_the_specialised_epilogue(
        monkeypatch: pytest.MonkeyPatch) -> None:
    """A specialised GEMM kernel whose post-ops take the table form (the table form of the
    whole partition does not fit) never generates the specialised epilogue."""
    _forbid(monkeypatch, post_ops, "emit_epilogue")
    monkeypatch.setattr(gemm, "build_gemm_table", lambda *args: None)
    part = _gemm()
    plan = family_for(part).build(part, _ctx("table"))
    assert "fs_table_run(" in plan.source and not _is_table(plan), \
        "the specialised GEMM kernel runs its post-ops in the table form"


def test_every_op_of_the_generator_has_a_check() -> None:
    assert set(OP_CHECKS) == set(OP_TABLE), \
        (f"ops without a check: {sorted(set(OP_TABLE) - set(OP_CHECKS))}; checks without a "
         f"formula: {sorted(set(OP_CHECKS) - set(OP_TABLE))}")


def _bad_chains() -> list[tuple[str, list[Op]]]:
    x, y, z = _t(0, (2, 3)), _t(1, (2, 3)), _t(2, (2, 3))
    return [
        ("SoftPlus beta 0", [Op(0, "SoftPlus", inputs=(x,), outputs=(y,),
                                attrs={"beta": 0.0})]),
        ("auto_broadcast none", [Op(0, "Add", inputs=(x, _t(3, (1, 3))), outputs=(y,),
                                    attrs={"auto_broadcast": "none"})]),
        ("Clamp without bounds", [Op(0, "Clamp", inputs=(x,), outputs=(y,))]),
        ("Quantize to f16", [Op(0, "Quantize", inputs=(x,), outputs=(_t(4, (2, 3), F16),),
                                attrs={"scales": [0.5], "zps": [0]})]),
        ("per-channel scales off the axis", [
            Op(0, "Dequantize", inputs=(_t(5, (2, 3), DataType.s8),), outputs=(y,),
               attrs={"qtype": "per_channel", "axis": 1, "scales": [1.0, 2.0],
                      "zps": [0, 0]})]),
        ("integer Divide", [Op(0, "Divide", inputs=(_t(6, (2, 3), DataType.s32),
                                                    _t(7, (2, 3), DataType.s32)),
                               outputs=(_t(8, (2, 3), DataType.s32),))]),
        ("BiasAdd with a 2-D bias", [Op(0, "BiasAdd", inputs=(x, _t(9, (2, 3))),
                                        outputs=(y,), attrs={"data_format": "NXC"})]),
        ("an operand that does not broadcast", [
            Op(0, "Add", inputs=(x, y), outputs=(z,)),
            Op(1, "Multiply", inputs=(z, _t(10, (4, 3))), outputs=(_t(11, (2, 3)),))]),
    ]


def _error(build: Callable[[], object]) -> str:
    try:
        build()
    except FusionspecError as exc:
        return f"{type(exc).__name__}: {exc}"
    return "no error"


@pytest.mark.parametrize("label,ops", _bad_chains(), ids=[c[0] for c in _bad_chains()])
def test_both_forms_reject_a_bad_chain_alike(label: str, ops: list[Op]) -> None:
    part = _part(ops)
    specialised = _error(lambda: family_for(part).build(part, _ctx("specialised")))
    table = _error(lambda: family_for(part).build(part, _ctx("table")))
    assert specialised != "no error", f"{label}: the specialised form accepts it"
    assert table == specialised, f"{label}: table form says {table!r}, specialised {specialised!r}"
    checked = _error(lambda: check_chain(ops, (2, 3), outputs=part.outputs))
    assert checked == specialised, f"{label}: the check says {checked!r}, not {specialised!r}"


@pytest.mark.parametrize("label,ops", _bad_chains(), ids=[c[0] for c in _bad_chains()])
def test_a_main_op_rejects_bad_post_ops_alike_in_both_forms(label: str, ops: list[Op]) -> None:
    """The same chains after a SoftMax (its output is the chain's first operand)."""
    first = ops[0].inputs[0]
    main = Op(100, "SoftMax", inputs=(_t(101, first.shape or (), F32),), outputs=(first,),
              attrs={"axis": -1})
    if first.dtype is not F32:
        return  # a SoftMax gives f32: the chain reads an integer tensor of its own
    part = _part([main, *ops])
    specialised = _error(lambda: family_for(part).build(part, _ctx("specialised")))
    table = _error(lambda: family_for(part).build(part, _ctx("table")))
    assert specialised != "no error", f"{label}: the specialised form accepts it"
    assert table == specialised, f"{label}: table form says {table!r}, specialised {specialised!r}"


@pytest.mark.parametrize("label,ops", _bad_chains(), ids=[c[0] for c in _bad_chains()])
def test_emit_epilogue_raises_what_the_check_raises(label: str, ops: list[Op]) -> None:
    """The generator runs the checks first: its error is the check's."""
    outputs = _part(ops).outputs
    preamble = Preamble(TypePolicy())
    generated = _error(lambda: emit_epilogue(ops, domain=Domain((2, 3), KernelArgs(preamble)),
                                             policy=TypePolicy(), preamble=preamble,
                                             outputs=outputs))
    checked = _error(lambda: check_chain(ops, (2, 3), outputs=outputs))
    assert generated == checked != "no error", \
        f"{label}: the generator says {generated!r}, the check {checked!r}"
