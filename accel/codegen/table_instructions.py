"""The instruction set of the table form (`fusionspec.accel.codegen.table_translate`):
opcodes and the OpenCL C statement each runs.

An instruction is 8 ints: opcode, destination register ``r``, operands ``a``, ``b``, ``k``,
``m``, ``n`` (registers, a slot, a table index or a domain axis, by opcode) and ``q`` (a dtype
code, or a sixth operand). Float registers are ``rf[]``, exact integer registers ``ri[]``
(`Kind` ``int``). An op's statement is its formula (`fusionspec.accel.codegen.formulas`),
the one the specialised form renders too, with its operands bound to the instruction's
registers in the formula's order; so both forms spell the same expression and round alike.

The opcode of an instruction is its place in `INSTRUCTIONS`; the interpreter's switch and every
translated table depend on it, so new instructions go at the end.
"""

from __future__ import annotations

from dataclasses import replace

from fusionspec.spec.dtypes import DataType

from .formulas import FORMULAS, ByAttribute, Formula
from .types import TypePolicy

__all__ = ["DTYPE_CODES", "OPCODES", "STATEMENTS", "INSTRUCTIONS", "ON_INPUT", "BINARY",
           "CASE_INSTRUCTIONS", "SAME_INSTRUCTION", "QUANTIZE_ROUNDED", "HELPERS_USED"]

#: The dtype code of each storage type an instruction can name.
DTYPE_CODES: dict[DataType, int] = {
    DataType.f32: 0, DataType.f16: 1, DataType.bf16: 2, DataType.s8: 3, DataType.u8: 4,
    DataType.s32: 5, DataType.boolean: 6,
}

_OFFSET = "long o = 0; for (int d = 0; d < FS_RANK; ++d) o += c[d] * st[{s} * FS_RANK + d];"
_OWNED = ("long o = 0; int own = 1; for (int d = 0; d < FS_RANK; ++d) "
          "{{ const long s = st[{s} * FS_RANK + d]; o += c[d] * s; own &= s != 0 || c[d] == 0; }}")

#: The op kinds whose instruction takes input 0 (``a``) and the formula's attribute operands
#: (``b``, ``k``: table constants), in the order of `Formula.operands`.
ON_INPUT = ("Abs", "Exp", "HardSwish", "Log", "ReLU", "Reciprocal", "Round", "Sigmoid", "Sqrt",
            "Square", "Tanh", "Elu", "LeakyReLU", "Pow", "Clamp", "SoftPlus")
#: The binary op kinds (inputs 0 and 1 in ``a`` and ``b``); those with an exact integer form
#: also have an instruction ``int_<kind>`` over integer registers.
BINARY = ("Add", "Subtract", "Multiply", "Divide", "Maximum", "Minimum")
#: The instruction of each case of an op whose formula depends on an attribute.
CASE_INSTRUCTIONS: dict[tuple[str, str], str] = {
    ("GELU", "gelu_tanh"): "GELU_tanh", ("GELU", "gelu_erf"): "GELU_erf"}
#: Op kinds that run another kind's instruction, their formulas being the same.
SAME_INSTRUCTION = {"BiasAdd": "Add"}
#: The ops whose statements use the registers in place rather than naming them first (the
#: spelling the interpreter has always had: renaming would change its program text, and so
#: every cached program that contains it).
_IN_PLACE = frozenset({"BatchNormInference", "Dequantize", "ReLUBackward"})
_REGISTERS = ("a", "b", "k", "m", "n", "q")
#: The interpreter is compiled for no device in particular, so it rounds to f16 in arithmetic
#: even where the device has half-precision conversions.
_ROUNDING = TypePolicy(native_fp16=False)
_TYPECAST_ROUNDS = {"RoundBf16": DataType.bf16, "RoundF16": DataType.f16}


def _formula(kind: str) -> Formula:
    formula = FORMULAS[kind]
    assert isinstance(formula, Formula), f"{kind}'s formula depends on an attribute"
    return formula


def _exact(kind: str) -> bool:
    return _formula(kind).exact is not None


assert all(_formula(kind) == replace(_formula(other), exact=None)
           for kind, other in SAME_INSTRUCTION.items()), "an instruction serves one formula"


#: Instruction names in opcode order (opcode = place + 1).
INSTRUCTIONS = (
    "load", "load_int", "store", "store_int", "const", "to_float", "copy_int",
    "Clamp", "SoftPlus", "GELU_tanh", "BatchNormInference", "Dequantize", "Quantize",
    "ReLUBackward",
    "Abs", "Exp", "HardSwish", "Log", "ReLU", "Reciprocal", "Round", "Sigmoid", "Sqrt",
    "Square", "Tanh", "GELU_erf", "RoundBf16", "RoundF16", "Copy",
    *BINARY,
    *(f"int_{kind}" for kind in BINARY if _exact(kind)),
    "Elu", "LeakyReLU", "Pow",
)

def _declared(formula: Formula, result: str | None = None) -> str:
    """The statement naming the operands first (``const float x = rf[a], ...;``), then the
    temporaries; `result` replaces the formula's (a value rounded after it)."""
    operands = ", ".join(f"{name} = rf[{reg}]" for name, reg in zip(formula.operands, _REGISTERS))
    lets: list[str] = []

    def let(name: str, expr: str) -> str:
        lets.append(f"const float {name} = {expr}; ")
        return name
    text = formula.spell({name: name for name in formula.operands}, let)
    return f"const float {operands}; {''.join(lets)}rf[r] = {result or text};"


def _in_place(formula: Formula) -> str:
    names = {name: f"rf[{reg}]" for name, reg in zip(formula.operands, _REGISTERS)}
    return f"rf[r] = {formula.spell(names)};"


def _exact_statement(formula: Formula) -> str:
    return (f"const long x = ri[a], y = ri[b]; "
            f"ri[r] = {formula.spell_exact({'x': 'x', 'y': 'y'})};")


def _statement(name: str) -> tuple[str, tuple[str, ...]]:
    """The C statement of instruction `name`, and the helpers it calls."""
    if name in _PLUMBING:
        return _PLUMBING[name], ()
    if name in _TYPECAST_ROUNDS:
        typecast = _formula("TypeCast")
        rounded, helpers = _ROUNDING.round_to(_TYPECAST_ROUNDS[name], typecast.spell({"x": "x"}))
        return _declared(typecast, rounded), (*typecast.helpers, *sorted(helpers))
    if name.startswith("int_"):
        formula = _formula(name.removeprefix("int_"))
        return _exact_statement(formula), formula.helpers
    if name == "Quantize":  # fs_tquant rounds (QUANTIZE_ROUNDED) and saturates to dtype q
        return "ri[r] = fs_tquant(rf[a], rf[b], rf[k], q);", _formula("Quantize").helpers
    case = next((kc for kc, instruction in CASE_INSTRUCTIONS.items() if instruction == name),
                None)
    if case is not None:
        cases = FORMULAS[case[0]]
        assert isinstance(cases, ByAttribute), f"{case[0]} has cases"
        formula = cases.cases[case[1]]
    else:
        formula = _formula(name)
    return (_in_place(formula) if name in _IN_PLACE else _declared(formula)), formula.helpers


_PLUMBING: dict[str, str] = {
    "load": _OFFSET.format(s="a") + " rf[r] = fs_tload(slot[a], o, q);",
    "load_int": _OFFSET.format(s="a") + " ri[r] = fs_tload_int(slot[a], o, q);",
    "store": _OWNED.format(s="b") + " if (own) fs_tstore(slot[b], o, q, rf[a]);",
    "store_int": _OWNED.format(s="b") + " if (own) fs_tstore_int(slot[b], o, q, ri[a]);",
    # A table entry: fa[a], or fa[a + index along domain axis b] when b >= 0.
    "const": "rf[r] = fa[a + (b >= 0 ? c[b] : 0)];",
    "to_float": "rf[r] = convert_float(ri[a]);",
    "copy_int": "ri[r] = ri[a];",
    # Moves a value to register 0, where the caller of the interpreter finds it.
    "Copy": "const float x = rf[a]; rf[r] = x;",
}

#: Quantize's rounding over the interpreter's ``x``, ``scale`` and ``zp``: the body of
#: ``fs_tquant``, which then saturates it to the output's dtype with the conversion builtins.
#: (The specialised form saturates an 8-bit result with a clamp, faster on PoCL; spelling
#: the interpreter alike would change its program text.)
QUANTIZE_ROUNDED = _formula("Quantize").spell({"x": "x", "scale": "scale", "zp": "zp"})
#: Opcode by name, and (opcode, C statement) pairs for the interpreter's switch.
OPCODES = {name: code for code, name in enumerate(INSTRUCTIONS, start=1)}
_COMPILED = {name: _statement(name) for name in INSTRUCTIONS}
STATEMENTS = [(OPCODES[name], text) for name, (text, _) in _COMPILED.items()]
#: The helpers the interpreter calls (the preamble emits them with their dependencies): the
#: statements', and those its loads, stores and fs_tquant call.
HELPERS_USED = tuple(dict.fromkeys([
    *(helper for _, helpers in _COMPILED.values() for helper in helpers),
    "fs_bf16_to_f32", "fs_f32_to_bf16", "fs_nan_to_zero"]))
