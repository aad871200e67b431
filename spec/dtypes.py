"""Data types of the oneDNN Graph API, spelled as its graph JSON spells them.

The spec pages use f32, bf16, f16, s8, u8, s32 and boolean; f8_e4m3 and f8_e5m2 appear where
Quantize/Dequantize allow them. s64, s4, u4 and undef exist only so that graphs using ops
outside the pages (Dropout, DynamicDequantize, End) load and dump without loss.
"""

from __future__ import annotations

from enum import StrEnum

__all__ = ["DataType", "FLOAT_TYPES", "INT8_TYPES", "FP8_TYPES", "parse_dtype"]


class DataType(StrEnum):
    """A logical tensor's element type; the value is oneDNN's JSON spelling."""

    f32 = "f32"
    bf16 = "bf16"
    f16 = "f16"
    s8 = "s8"
    u8 = "u8"
    s32 = "s32"
    boolean = "boolean"
    f8_e4m3 = "f8_e4m3"
    f8_e5m2 = "f8_e5m2"
    s64 = "s64"
    s4 = "s4"
    u4 = "u4"
    undef = "undef"

    @property
    def bits(self) -> int:
        """Storage size of one element in bits (0 for undef)."""
        return _BITS[self]

    @property
    def is_float(self) -> bool:
        return self in FLOAT_TYPES or self in FP8_TYPES

    @property
    def is_integer(self) -> bool:
        return self in (DataType.s8, DataType.u8, DataType.s32, DataType.s64,
                        DataType.s4, DataType.u4)


_BITS: dict[DataType, int] = {
    DataType.f32: 32, DataType.bf16: 16, DataType.f16: 16, DataType.s8: 8, DataType.u8: 8,
    DataType.s32: 32, DataType.boolean: 8, DataType.f8_e4m3: 8, DataType.f8_e5m2: 8,
    DataType.s64: 64, DataType.s4: 4, DataType.u4: 4, DataType.undef: 0,
}

#: The floating-point types every compute op of the pages accepts.
FLOAT_TYPES: frozenset[DataType] = frozenset({DataType.f32, DataType.bf16, DataType.f16})
#: The quantized types of the int8 patterns ("int8" on the Softmax page means these).
INT8_TYPES: frozenset[DataType] = frozenset({DataType.s8, DataType.u8})
FP8_TYPES: frozenset[DataType] = frozenset({DataType.f8_e4m3, DataType.f8_e5m2})


def parse_dtype(text: str) -> DataType:
    """Return the DataType spelled `text`; raise ValueError naming the known spellings."""
    try:
        return DataType(text)
    except ValueError:
        known = ", ".join(d.value for d in DataType)
        raise ValueError(f"unknown data type {text!r} (known: {known})") from None
