"""The element-wise formula table (`fusionspec.accel.codegen.formulas`): one entry per op kind,
and both kernel forms render every entry.

An entry's text is matched in what each form generates as a pattern: every operand and
temporary may take any name, but the same name wherever the formula repeats it, and the rest of
the text must be there as written. So an op whose form spells its math anywhere but from the
table fails here. Code generation needs no OpenCL device.
"""

from __future__ import annotations

import re
from typing import Any

import pytest

from fusionspec.accel.codegen.access import Domain
from fusionspec.accel.codegen.args import KernelArgs
from fusionspec.accel.codegen.epilogue import emit_epilogue, supported_kinds
from fusionspec.accel.codegen.formulas import FORMULAS, INT_SATURATE, ByAttribute, Formula
from fusionspec.accel.codegen.op_checks import INT_BINARY_KINDS
from fusionspec.accel.codegen.source import Preamble
from fusionspec.accel.codegen.table_epilogue import interpreter
from fusionspec.accel.codegen.table_instructions import OPCODES, STATEMENTS
from fusionspec.accel.codegen.table_translate import translate_ops
from fusionspec.accel.codegen.types import TypePolicy
from fusionspec.accel.devices import DeviceInfo
from fusionspec.accel.families import BuildContext, training
from fusionspec.spec.dtypes import DataType
from fusionspec.spec.graph import LogicalTensor, Op, Partition

F32, S8, S32, BF16 = DataType.f32, DataType.s8, DataType.s32, DataType.bf16
SHAPE = (2, 3)
_QUANT = {"scales": [0.5], "zps": [3], "qtype": "per_tensor", "axis": 1}
#: One op of every kind (and case) of the table: (label, kind, input dtypes, output dtype,
#: attributes, per-channel inputs).
CASES: list[tuple[str, str, tuple[DataType, ...], DataType, dict[str, Any], int]] = [
    ("Abs", "Abs", (F32,), F32, {}, 0),
    ("Clamp", "Clamp", (F32,), F32, {"min": -1.5, "max": 2.25}, 0),
    ("Elu", "Elu", (F32,), F32, {"alpha": 0.7}, 0),
    ("Exp", "Exp", (F32,), F32, {}, 0),
    ("GELU_erf", "GELU", (F32,), F32, {"mode": "gelu_erf"}, 0),
    ("GELU_tanh", "GELU", (F32,), F32, {"mode": "gelu_tanh"}, 0),
    ("HardSwish", "HardSwish", (F32,), F32, {}, 0),
    ("LeakyReLU", "LeakyReLU", (F32,), F32, {"alpha": 0.01}, 0),
    ("Log", "Log", (F32,), F32, {}, 0),
    ("Pow", "Pow", (F32,), F32, {"beta": -0.5}, 0),
    ("ReLU", "ReLU", (F32,), F32, {}, 0),
    ("Reciprocal", "Reciprocal", (F32,), F32, {}, 0),
    ("Round", "Round", (F32,), F32, {}, 0),
    ("Sigmoid", "Sigmoid", (F32,), F32, {}, 0),
    ("SoftPlus", "SoftPlus", (F32,), F32, {"beta": -2.0}, 0),
    ("Sqrt", "Sqrt", (F32,), F32, {}, 0),
    ("Square", "Square", (F32,), F32, {}, 0),
    ("Tanh", "Tanh", (F32,), F32, {}, 0),
    *((kind, kind, (F32, F32), F32, {}, 0)
      for kind in ("Add", "Subtract", "Multiply", "Divide", "Maximum", "Minimum")),
    *((f"int {kind}", kind, (S32, S32), S32, {}, 0) for kind in sorted(INT_BINARY_KINDS)),
    ("BiasAdd", "BiasAdd", (F32,), F32, {"data_format": "NXC"}, 1),
    ("BatchNormInference", "BatchNormInference", (F32,), F32,
     {"epsilon": 1e-5, "data_format": "NXC"}, 4),
    ("Dequantize", "Dequantize", (S8,), F32, _QUANT, 0),
    ("Quantize", "Quantize", (F32,), S8, _QUANT, 0),
    ("TypeCast", "TypeCast", (F32,), BF16, {}, 0),
    ("Reorder", "Reorder", (F32,), F32, {}, 0),
]


def _op(kind: str, dtypes: tuple[DataType, ...], out: DataType, attrs: dict[str, Any],
        channels: int) -> Op:
    inputs = [LogicalTensor(i, dtype, SHAPE) for i, dtype in enumerate(dtypes)]
    inputs += [LogicalTensor(len(inputs) + c, F32, (SHAPE[-1],)) for c in range(channels)]
    return Op(0, kind, inputs=tuple(inputs), outputs=(LogicalTensor(9, out, SHAPE),),
              attrs=attrs)


def _formula(op: Op) -> Formula:
    entry = FORMULAS[op.kind]
    if isinstance(entry, ByAttribute):
        return entry.pick(op.attrs[entry.attribute])
    return entry


#: An operand in generated code: a name, a call or an indexed load (spaces only inside
#: brackets and parentheses).
_OPERAND = r"(?:[^\s;()\[\]]|\[[^;]*?\]|\([^;]*?\))+?"


def _pattern(formula: Formula, *, exact: bool = False) -> re.Pattern[str]:
    """`formula` as a pattern: its temporaries declared (``const float <name> = ...;``), then
    its result, each operand any `_OPERAND`, the same at every use."""
    seen: set[str] = set()

    def text(template: str) -> str:
        out, pos = [], 0
        for m in re.finditer(r"\{(\w+)\}", template):
            out.append(re.escape(template[pos:m.start()]))
            name = m.group(1)
            out.append(f"(?P={name})" if name in seen else rf"(?P<{name}>{_OPERAND})")
            seen.add(name)
            pos = m.end()
        return "".join(out) + re.escape(template[pos:])

    parts = []
    for name, expr in formula.lets:
        body = text(expr)
        parts.append(rf"const float (?P<{name}>\w+) = {body};")
        seen.add(name)
    assert not exact or formula.exact is not None, "an exact pattern needs an integer form"
    parts.append(text(INT_SATURATE.format(formula.exact) if exact else formula.result))
    return re.compile(".*?".join(parts), re.DOTALL)


def _specialised(op: Op) -> str:
    preamble = Preamble(TypePolicy())
    code = emit_epilogue([op], domain=Domain(SHAPE, KernelArgs(preamble)), policy=TypePolicy(),
                         preamble=preamble, outputs=op.outputs)
    return code.body


def _table(op: Op) -> str:
    """The statements of the instructions the table form runs for `op`, and the interpreter's
    functions (Quantize's rounding is there)."""
    table = translate_ops([op], op.outputs, SHAPE)
    assert table is not None, f"{op.kind} does not fit the interpreter"
    used = set(table.code[::8])
    preamble = Preamble(TypePolicy())
    interpreter(preamble, noinline=False)
    return "\n".join([*(text for code, text in STATEMENTS if code in used), preamble.render()])


def test_every_op_kind_has_one_formula() -> None:
    kinds = supported_kinds() | {"ReLUBackward"}
    assert set(FORMULAS) == kinds, \
        (f"op kinds without a formula: {sorted(kinds - set(FORMULAS))}; formulas of no op "
         f"kind: {sorted(set(FORMULAS) - kinds)}")
    tested = {kind for _, kind, *_ in CASES} | {"ReLUBackward"}
    assert tested == set(FORMULAS), f"formulas not tested here: {sorted(set(FORMULAS) - tested)}"
    gelu = FORMULAS["GELU"]
    assert isinstance(gelu, ByAttribute), "GELU's formula depends on its mode"
    assert {label for label, kind, *_ in CASES if kind == "GELU"} == \
        {f"GELU_{case.removeprefix('gelu_')}" for case in gelu.cases}, "every GELU case is tested"


@pytest.mark.parametrize(("kind", "dtypes", "out", "attrs", "channels"),
                         [case[1:] for case in CASES], ids=[case[0] for case in CASES])
def test_both_forms_render_the_formula(kind: str, dtypes: tuple[DataType, ...], out: DataType,
                                       attrs: dict[str, Any], channels: int) -> None:
    op = _op(kind, dtypes, out, attrs, channels)
    formula = _formula(op)
    exact = all(dtype is S32 for dtype in dtypes)
    pattern = _pattern(formula, exact=exact)
    if formula.is_identity:  # the value is passed on: the table form runs no instruction
        table = translate_ops([op], op.outputs, SHAPE)
        assert table is not None, f"{kind} does not fit the interpreter"
        names = {OPCODES[name] for name in ("load", "store")}
        assert set(table.code[::8]) <= names, f"the table form computes something for {kind}"
        return
    specialised, table_text = _specialised(op), _table(op)
    assert pattern.search(specialised), \
        f"the specialised form of {kind} does not spell its formula:\n{specialised}"
    assert pattern.search(table_text), \
        f"the table form of {kind} does not spell its formula:\n{table_text}"


def test_the_training_family_renders_the_relu_backward_formula() -> None:
    formula = FORMULAS["ReLUBackward"]
    assert isinstance(formula, Formula), "ReLUBackward has one formula"
    src, diff = LogicalTensor(0, F32, SHAPE), LogicalTensor(1, F32, SHAPE)
    out = LogicalTensor(2, F32, SHAPE)
    op = Op(0, "ReLUBackward", inputs=(src, diff), outputs=(out,))
    device = DeviceInfo(
        id="test-cpu", kind="cpu", name="made-up", platform="none", vendor="none", driver="0",
        opencl_version="OpenCL 3.0", opencl_c_version="OpenCL C 1.2", max_work_group_size=1024,
        max_work_item_sizes=(1024, 1024, 64), compute_units=8, local_mem_size=65536,
        local_mem_dedicated=False, global_mem_size=1 << 32, extensions=frozenset(), fp16=False,
        fp64=False, correctly_rounded_divide_sqrt=True, native_vector_width=8)
    plan = training.FAMILY.build(Partition(0, [op], [src, diff], [out]),
                                 BuildContext(device, TypePolicy(), form="specialised"))
    assert _pattern(formula).search(plan.source), \
        f"the specialised ReLUBackward kernel does not spell its formula:\n{plan.source}"
    assert _pattern(formula).search(_table(op)), \
        "the table form's ReLUBackward instruction does not spell its formula"
