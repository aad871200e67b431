"""The one dtype policy of the OpenCL backend: how each `DataType` is stored, loaded into a
register and stored back, on the device and on the host.

Registers. Floating-point values are computed in ``float`` (f32), as the reference computes
them; integer values (s8, u8, s32, boolean) are held exactly in ``long`` (kind ``int``) and
become float only when a float op consumes them (`as_float`, exact for 8-bit values, nearest
even for s32 as NumPy's ``astype(float32)``). A loaded integer input also gets an f32 twin read
straight from its storage type (`load_float`), which float ops such as Dequantize take; the
compiler drops whichever of the two no op reads.

Storage, per type:

====== ======================== ================================================================
type   buffer element           load -> register / register -> store
====== ======================== ================================================================
f32    ``float``                as is
f16    ``half``                 native ``convert_float``/``convert_half_rte`` with cl_khr_fp16,
                                else ``vload_half``/``vstore_half_rte`` (legal without it)
bf16   ``ushort`` (16 bits)     ``fs_bf16_to_f32`` (a shift) / ``fs_f32_to_bf16``: round to
                                nearest even on the bits, NaN kept quiet, overflow to inf
s8     ``char``                 ``convert_char_sat_rte``: nearest even, saturated; NaN -> 0
                                explicitly (PoCL's conversion saturates NaN to INT_MIN)
u8     ``uchar``                ``convert_uchar_sat_rte``
s32    ``int``                  ``convert_int_sat_rte``
bool   ``uchar``                0 or 1; any non-zero value stores as 1
====== ======================== ================================================================

These are exactly the conversions of `fusionspec.reference.dtypes.cast_to`. `round_to` rounds
an f32 register to bf16/f16 and back (TypeCast inside a partition). The host side (`to_host`,
`from_host`) reinterprets NumPy arrays as the buffer element types: bf16 travels as its 16-bit
pattern, boolean as bytes.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Literal

import ml_dtypes
import numpy as np

from fusionspec.spec.dtypes import DataType

from ..errors import UnsupportedPartitionError
from .mathfn import MATH_DEPS, MATH_HELPERS

__all__ = ["Kind", "TypePolicy", "HELPERS", "STORAGE", "HOST", "is_float", "is_integer",
           "c_float", "to_host", "from_host", "check_supported"]

#: A register's kind: f32 ``float`` or exact integer ``long``.
Kind = Literal["float", "int"]

#: Buffer element type per data type (f16 is ``half`` whatever the device supports).
STORAGE: dict[DataType, str] = {
    DataType.f32: "float", DataType.f16: "half", DataType.bf16: "ushort",
    DataType.s8: "char", DataType.u8: "uchar", DataType.s32: "int", DataType.boolean: "uchar",
}

#: The NumPy dtype a buffer holds on the host, per data type.
HOST: dict[DataType, np.dtype[Any]] = {
    DataType.f32: np.dtype(np.float32), DataType.f16: np.dtype(np.float16),
    DataType.bf16: np.dtype(np.uint16), DataType.s8: np.dtype(np.int8),
    DataType.u8: np.dtype(np.uint8), DataType.s32: np.dtype(np.int32),
    DataType.boolean: np.dtype(np.uint8),
}

_INT_RANGE: dict[DataType, tuple[int, int]] = {
    DataType.s8: (-128, 127), DataType.u8: (0, 255), DataType.s32: (-(2 ** 31), 2 ** 31 - 1),
    DataType.boolean: (0, 1),
}

#: Helper functions a program may need, by name; `Preamble` emits the ones used.
HELPERS: dict[str, str] = {
    "fs_bf16_to_f32": """\
inline float fs_bf16_to_f32(ushort bits) { return as_float(((uint)bits) << 16); }""",
    "fs_f32_to_bf16": """\
inline ushort fs_f32_to_bf16(float value) {
    uint bits = as_uint(value);
    if ((bits & 0x7fffffffu) > 0x7f800000u) return (ushort)((bits >> 16) | 0x0040u); /* NaN */
    bits += 0x7fffu + ((bits >> 16) & 1u); /* round to nearest, ties to even */
    return (ushort)(bits >> 16);
}""",
    "fs_round_bf16": """\
inline float fs_round_bf16(float value) { return fs_bf16_to_f32(fs_f32_to_bf16(value)); }""",
    "fs_round_f16": """\
inline float fs_round_f16(float value) {
    ushort bits;
    vstore_half_rte(value, 0, (__private half *)&bits);
    return vload_half(0, (__private const half *)&bits);
}""",
    "fs_nan_to_zero": """\
inline float fs_nan_to_zero(float value) { return value != value ? 0.0f : value; }""",
    # Division by a kernel argument, for 0 <= n < 2**31: d holds (divisor, multiplier, shift, 0)
    # from `fusionspec.accel.codegen.args.divisor_magic`.
    "fs_div": """\
/* n / d.x for 0 <= n < 2**31 as a multiply and a shift (d from the host: divisor, multiplier,
   shift): vectorises like a division by a constant, where a division by an argument does not */
inline int fs_div(int n, uint4 d) { return (int)(((ulong)(uint)n * d.y) >> d.z); }""",
    "fs_mod": """\
inline int fs_mod(int n, uint4 d) { return n - fs_div(n, d) * (int)d.x; }""",
    "fs_rint": """\
inline float fs_rint(float x) {
    /* rint as arithmetic (PoCL's rint, trunc and fabs are library calls that keep a kernel
       from being vectorised: its Quantize ran at 10 ns an element): adding and taking away
       2**23 (8388608) leaves no fraction bits, rounding to nearest even; from 2**23 up x is
       whole, and NaN fails the test and stays. The sign goes back on: -0.3 gives -0. */
    const uint sign = as_uint(x) & 2147483648u;
    const float ax = as_float(as_uint(x) ^ sign);
    const float r = (ax + 8388608.0f) - 8388608.0f;
    return ax < 8388608.0f ? as_float(as_uint(r) | sign) : x;
}""",
    "fs_trunc": """\
inline float fs_trunc(float x) {
    /* trunc as arithmetic (see fs_rint): |x| rounded to nearest, less one where that went up */
    const uint sign = as_uint(x) & 2147483648u;
    const float ax = as_float(as_uint(x) ^ sign);
    const float r = (ax + 8388608.0f) - 8388608.0f;
    const float t = r > ax ? r - 1.0f : r;
    return ax < 8388608.0f ? as_float(as_uint(t) | sign) : x;
}""",
    "fs_quantize_rne": """\
inline float fs_quantize_rne(float a, float zp) {
    /* round_half_even(a + zp) for an integral zp, without rounding a's fraction away first:
       the fraction is split off (exactly), and only an exact .5 lets the parity of the sum
       decide. An infinite a stays infinite (the store saturates it). */
    const float whole = fs_trunc(a);
    const float frac = a - whole;
    const float base = whole + zp;
    const float q = as_float(as_uint(frac) & 2147483647u) == 0.5f ? fs_rint(base + frac)
                                                               : base + fs_rint(frac);
    return (a == INFINITY || a == -INFINITY) ? a : q;
}""",
}

HELPERS.update(MATH_HELPERS)

_HELPER_DEPS: dict[str, tuple[str, ...]] = {
    "fs_mod": ("fs_div",),
    "fs_round_bf16": ("fs_bf16_to_f32", "fs_f32_to_bf16"),
    "fs_quantize_rne": ("fs_rint", "fs_trunc"),
    **MATH_DEPS,
}


def helper_closure(names: set[str]) -> list[str]:
    """`names` plus the helpers they call, dependencies first, in a stable order."""
    ordered: list[str] = []

    def visit(name: str) -> None:
        for dep in _HELPER_DEPS.get(name, ()):
            visit(dep)
        if name not in ordered:
            ordered.append(name)

    for name in sorted(names):
        visit(name)
    return ordered


def is_float(dtype: DataType) -> bool:
    return dtype in (DataType.f32, DataType.f16, DataType.bf16)


def is_integer(dtype: DataType) -> bool:
    return dtype in _INT_RANGE


def check_supported(dtype: DataType, what: str) -> None:
    """Raise `UnsupportedPartitionError` for a type the backend cannot store (f8, s4 ...)."""
    if dtype not in STORAGE:
        raise UnsupportedPartitionError(f"{what} has data type {dtype}, which the OpenCL "
                                        "backend does not support (it supports f32, f16, bf16, "
                                        "s8, u8, s32 and boolean)")


def c_float(value: float) -> str:
    """`value` rounded to f32 as an exact OpenCL C literal (hex float; INFINITY, NAN)."""
    v = float(np.float32(value))
    if v != v:
        return "NAN"
    if v in (float("inf"), float("-inf")):
        return "INFINITY" if v > 0 else "(-INFINITY)"
    mantissa, _, exponent = v.hex().partition("p")
    mantissa = mantissa.rstrip("0").rstrip(".")  # 0x1.8000000000000 -> 0x1.8, 0x1.0 -> 0x1
    text = f"{mantissa}p{exponent}f"
    return f"({text})" if v < 0 or text.startswith("-") else text


@dataclass(frozen=True)
class TypePolicy:
    """The conversions for one device; `native_fp16` when it has cl_khr_fp16."""

    native_fp16: bool = False

    def pragmas(self, dtypes: set[DataType]) -> list[str]:
        return ["#pragma OPENCL EXTENSION cl_khr_fp16 : enable"] \
            if self.native_fp16 and DataType.f16 in dtypes else []

    def storage(self, dtype: DataType) -> str:
        check_supported(dtype, "a tensor")
        return STORAGE[dtype]

    def kind(self, dtype: DataType) -> Kind:
        """The register kind a value of `dtype` loads into."""
        check_supported(dtype, "a tensor")
        return "int" if is_integer(dtype) else "float"

    def load(self, dtype: DataType, pointer: str, offset: str) -> tuple[str, set[str]]:
        """A C expression reading element `offset` of `pointer` into a register of
        `kind(dtype)`, and the helper functions it calls."""
        element = f"{pointer}[{offset}]"
        if dtype is DataType.f32:
            return element, set()
        if dtype is DataType.f16:
            return (f"convert_float({element})" if self.native_fp16
                    else f"vload_half({offset}, {pointer})"), set()
        if dtype is DataType.bf16:
            return f"fs_bf16_to_f32({element})", {"fs_bf16_to_f32"}
        if dtype is DataType.boolean:
            return f"(long)({element} != 0)", set()
        check_supported(dtype, "a tensor")
        return f"(long){element}", set()

    def load_float(self, dtype: DataType, pointer: str, offset: str
                   ) -> tuple[str, set[str]]:
        """A C expression reading element `offset` of `pointer` straight into an f32
        register (equal to `as_float` of `load`), and the helpers it calls. An integer element
        is cast from its storage type (`as_float` says why a cast)."""
        if dtype is DataType.boolean:
            return f"({pointer}[{offset}] != 0 ? 1.0f : 0.0f)", set()
        if is_integer(dtype):
            check_supported(dtype, "a tensor")
            return f"(float){pointer}[{offset}]", set()
        return self.load(dtype, pointer, offset)

    def store(self, dtype: DataType, pointer: str, offset: str, value: str, kind: Kind
              ) -> tuple[str, set[str]]:
        """A C statement writing register `value` (of `kind`) to element `offset` of `pointer`
        in `dtype`, rounding and saturating as `cast_to` does; and the helpers it calls."""
        check_supported(dtype, "a tensor")
        element = f"{pointer}[{offset}]"
        if dtype is DataType.boolean:
            return f"{element} = (uchar)({value} != 0);", set()
        if is_integer(dtype):
            ctype = STORAGE[dtype]
            if kind == "int":
                lo, hi = _INT_RANGE[dtype]
                return f"{element} = ({ctype})clamp((long)({value}), {lo}L, {hi}L);", set()
            return f"{element} = {self.float_to_int(dtype, value)};", {"fs_nan_to_zero"}
        fvalue = self.as_float(value, kind)
        if dtype is DataType.f32:
            return f"{element} = {fvalue};", set()
        if dtype is DataType.f16:
            if self.native_fp16:
                return f"{element} = convert_half_rte({fvalue});", set()
            return f"vstore_half_rte({fvalue}, {offset}, {pointer});", set()
        return f"{element} = fs_f32_to_bf16({fvalue});", {"fs_f32_to_bf16"}

    @staticmethod
    def float_to_int(dtype: DataType, value: str) -> str:
        """An expression converting f32 `value` to integer `dtype` as `cast_to` does: nearest
        even, saturated, NaN -> 0 (explicitly: some drivers saturate NaN to the minimum).
        Needs the helper ``fs_nan_to_zero``."""
        return f"convert_{STORAGE[dtype]}_sat_rte(fs_nan_to_zero({value}))"

    @staticmethod
    def as_float(value: str, kind: Kind) -> str:
        # Every integer register holds an int32 value (8- and 32-bit loads, saturated
        # Quantize, integer arithmetic clamped to int32), so the conversion goes through int,
        # and as a C cast (nearest even, as convert_float): Intel's CPU compiler leaves
        # convert_float of a long, and of an int8 load, scalar, and the int8 MaxPool with its
        # Dequantize folded into the window loads ran 5x slower through it than with casts.
        return value if kind == "float" else f"(float)(int)({value})"

    def round_to(self, dtype: DataType, value: str) -> tuple[str, set[str]]:
        """An f32 expression: `value` rounded to `dtype` (nearest even) and widened back."""
        if dtype is DataType.bf16:
            return f"fs_round_bf16({value})", {"fs_round_bf16"}
        if dtype is DataType.f16:
            if self.native_fp16:
                return f"convert_float(convert_half_rte({value}))", set()
            return f"fs_round_f16({value})", {"fs_round_f16"}
        if dtype is DataType.f32:
            return value, set()
        raise UnsupportedPartitionError(f"cannot round a float register to {dtype}")


# -- host side -------------------------------------------------------------------------------

def to_host(array: np.ndarray[Any, Any], dtype: DataType) -> np.ndarray[Any, Any]:
    """`array` (in `dtype`'s NumPy storage type) as a C-contiguous array of the buffer element
    type, ready to upload."""
    check_supported(dtype, "an input")
    dense = np.ascontiguousarray(array)
    if dtype is DataType.bf16:
        return dense.view(np.uint16)
    if dtype is DataType.boolean:
        return dense.astype(np.uint8)
    return dense


def from_host(raw: np.ndarray[Any, Any], dtype: DataType) -> np.ndarray[Any, Any]:
    """A downloaded buffer (element type `HOST[dtype]`) as `dtype`'s NumPy storage type."""
    if dtype is DataType.bf16:
        return raw.view(ml_dtypes.bfloat16)
    if dtype is DataType.boolean:
        flags: np.ndarray[Any, Any] = np.not_equal(raw, 0)
        return flags
    return raw
