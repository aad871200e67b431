"""The instruction set of the table form (`fusionspec.accel.codegen.table_translate`):
opcodes and the OpenCL C statement each runs.

An instruction is 8 ints: opcode, destination register ``r``, operands ``a``, ``b``, ``k``,
``m``, ``n`` (registers, a slot, a table index or a domain axis, by opcode) and ``q`` (a dtype
code). Float registers are ``rf[]``, exact integer registers ``ri[]`` (`Kind` ``int``). The
formulas are copied from the op table of the specialised form (`fusionspec.accel.codegen.ops`)
with the operands renamed, one C expression per op as there, so both forms round alike; a
test compares the two on every op.
"""

from __future__ import annotations

import math

from fusionspec.spec.dtypes import DataType

from .ops import EXP_OVERFLOW_BOUND
from .types import c_float

__all__ = ["DTYPE_CODES", "OPCODES", "STATEMENTS", "FLOAT_UNARY", "FLOAT_BINARY", "INT_BINARY",
           "WITH_ATTR", "HELPERS_USED"]

#: The dtype code of each storage type an instruction can name.
DTYPE_CODES: dict[DataType, int] = {
    DataType.f32: 0, DataType.f16: 1, DataType.bf16: 2, DataType.s8: 3, DataType.u8: 4,
    DataType.s32: 5, DataType.boolean: 6,
}

_BOUND = EXP_OVERFLOW_BOUND
_K_TANH = c_float(math.sqrt(2.0 / math.pi))  # as the specialised form spells it
_OFFSET = "long o = 0; for (int d = 0; d < FS_RANK; ++d) o += c[d] * st[{s} * FS_RANK + d];"
_OWNED = ("long o = 0; int own = 1; for (int d = 0; d < FS_RANK; ++d) "
          "{{ const long s = st[{s} * FS_RANK + d]; o += c[d] * s; own &= s != 0 || c[d] == 0; }}")

#: Unary f32 ops: op kind -> C expression over ``x``.
FLOAT_UNARY: dict[str, str] = {
    "Abs": "fabs(x)",
    "Exp": "exp(x)",
    "HardSwish": "x == -INFINITY ? -0.0f : x * (clamp(x + 3.0f, 0.0f, 6.0f) / 6.0f)",
    "Log": "log(x)",
    "ReLU": "x > 0.0f ? x : (x == -INFINITY ? -0.0f : x * 0.0f)",
    "Reciprocal": "1.0f / x",
    "Round": "rint(x)",
    "Sigmoid": f"-x >= {_BOUND} ? 0.0f : 1.0f / (1.0f + exp(-x))",
    "Sqrt": "sqrt(x)",
    "Square": "x * x",
    "Tanh": "tanh(x)",
    "GELU_erf": "x == -INFINITY ? -0.0f : 0.5f * x * fs_erfc(-x * M_SQRT1_2_F)",
    "RoundBf16": "fs_round_bf16(x)",
    "RoundF16": "fs_round_f16(x)",
    "Copy": "x",
}
#: Binary f32 ops over ``x`` and ``y`` (NaN propagation as in the specialised form).
FLOAT_BINARY: dict[str, str] = {
    "Add": "x + y", "Subtract": "x - y", "Multiply": "x * y", "Divide": "x / y",
    "Maximum": "(x > y || x != x) ? x : y", "Minimum": "(x < y || x != x) ? x : y",
}
#: Binary integer ops, exact in long then saturated to s32.
INT_BINARY: dict[str, str] = {
    "Add": "x + y", "Subtract": "x - y", "Multiply": "x * y", "Maximum": "max(x, y)",
    "Minimum": "min(x, y)",
}
#: f32 ops with one attribute operand ``p`` (a register holding its f32 value).
WITH_ATTR: dict[str, str] = {
    "Elu": "x > 0.0f ? x : p * expm1(x)",
    "LeakyReLU": "x > 0.0f ? x : x * p",
    "Pow": "pow(x, p)",
}

#: The helpers the statements call (the preamble emits them with their dependencies).
HELPERS_USED = ("fs_erfc", "fs_round_bf16", "fs_round_f16", "fs_quantize_rne", "fs_nan_to_zero",
                "fs_bf16_to_f32", "fs_f32_to_bf16")


def _build() -> tuple[dict[str, int], list[tuple[int, str]]]:
    statements: dict[str, str] = {
        "load": _OFFSET.format(s="a") + " rf[r] = fs_tload(slot[a], o, q);",
        "load_int": _OFFSET.format(s="a") + " ri[r] = fs_tload_int(slot[a], o, q);",
        "store": _OWNED.format(s="b") + " if (own) fs_tstore(slot[b], o, q, rf[a]);",
        "store_int": _OWNED.format(s="b") + " if (own) fs_tstore_int(slot[b], o, q, ri[a]);",
        # A table entry: fa[a], or fa[a + index along domain axis b] when b >= 0.
        "const": "rf[r] = fa[a + (b >= 0 ? c[b] : 0)];",
        "to_float": "rf[r] = convert_float(ri[a]);",
        "copy_int": "ri[r] = ri[a];",
        "Clamp": "const float x = rf[a], lo = rf[b], hi = rf[k]; "
                 "const float low = x > lo ? x : lo; rf[r] = low < hi ? low : hi;",
        "SoftPlus": "const float x = rf[a], p = rf[b]; const float v = x * p; "
                    f"rf[r] = v < {_BOUND} ? log1p(exp(v)) / p : x;",
        "GELU_tanh": f"const float x = rf[a]; const float u = {_K_TANH} * "
                     "(x + 0.044715f * x * x * x); "
                     "rf[r] = x == -INFINITY ? -0.0f : x / (1.0f + exp(-2.0f * u));",
        "BatchNormInference": "rf[r] = rf[b] * (rf[a] - rf[m]) / sqrt(rf[n] + rf[q]) + rf[k];",
        "Dequantize": "rf[r] = (rf[a] - rf[k]) * rf[b];",
        "Quantize": "ri[r] = fs_tquant(rf[a], rf[b], rf[k], q);",
        # The training family's lone ReLUBackward: diff_dst where src > 0, else 0.
        "ReLUBackward": "rf[r] = rf[a] > 0.0f ? rf[b] : 0.0f;",
    }
    for kind, expr in FLOAT_UNARY.items():
        statements[kind] = f"const float x = rf[a]; rf[r] = {expr};"
    for kind, expr in FLOAT_BINARY.items():
        statements[kind] = f"const float x = rf[a], y = rf[b]; rf[r] = {expr};"
    for kind, expr in INT_BINARY.items():
        statements[f"int_{kind}"] = (f"const long x = ri[a], y = ri[b]; "
                                     f"ri[r] = clamp({expr}, -2147483648L, 2147483647L);")
    for kind, expr in WITH_ATTR.items():
        statements[kind] = f"const float x = rf[a], p = rf[b]; rf[r] = {expr};"
    opcodes = {name: code for code, name in enumerate(statements, start=1)}
    return opcodes, [(opcodes[name], text) for name, text in statements.items()]


#: Opcode by name, and (opcode, C statement) pairs for the interpreter's switch.
OPCODES, STATEMENTS = _build()
