"""`dnnl_graph_logical_tensor_t` in ctypes, and the conversions to and from fusionspec's
`LogicalTensor`, with every enum value taken from the installed headers."""

from __future__ import annotations

import ctypes

from fusionspec.spec.dtypes import DataType
from fusionspec.spec.graph import LayoutType, LogicalTensor

from .errors import OnednnUnsupportedError
from .headers import Headers

__all__ = ["MAX_NDIMS", "NativeLogicalTensor", "to_native", "native_dims", "dtype_value",
           "dtype_of", "supported_dtypes"]

#: DNNL_MAX_NDIMS, fixed by the struct layout of every released version.
MAX_NDIMS = 12
#: DNNL_GRAPH_UNKNOWN_DIM (INT64_MIN); fusionspec writes an unknown dimension as -1.
UNKNOWN_DIM = -(2**63)

_Dims = ctypes.c_int64 * MAX_NDIMS


class _Layout(ctypes.Union):
    _fields_ = [("strides", _Dims), ("layout_id", ctypes.c_size_t)]


class NativeLogicalTensor(ctypes.Structure):
    """The C struct: id, ndims, dims, data type, property, layout type, strides/layout id."""

    _fields_ = [("id", ctypes.c_size_t), ("ndims", ctypes.c_int), ("dims", _Dims),
                ("data_type", ctypes.c_int), ("property", ctypes.c_int),
                ("layout_type", ctypes.c_int), ("layout", _Layout)]


def _dtype_member(dtype: DataType) -> str:
    return "dnnl_data_type_undef" if dtype is DataType.undef else f"dnnl_{dtype.value}"


def dtype_value(headers: Headers, dtype: DataType, version: str) -> int:
    value = headers.value("dnnl_data_type_t", _dtype_member(dtype))
    if value is None:
        raise OnednnUnsupportedError(f"data type {dtype.value} is not in its dnnl_data_type_t",
                                     version)
    return value


def dtype_of(headers: Headers, value: int) -> DataType | None:
    """The `DataType` whose enumerator has `value`, or None (a type fusionspec does not know)."""
    members = headers.enum("dnnl_data_type_t")
    return next((d for d in DataType if members.get(_dtype_member(d)) == value), None)


def supported_dtypes(headers: Headers) -> frozenset[DataType]:
    """The data types this library version can describe."""
    members = headers.enum("dnnl_data_type_t")
    return frozenset(d for d in DataType if _dtype_member(d) in members)


def _enum(headers: Headers, enum: str, prefix: str, name: str, version: str) -> int:
    value = headers.value(enum, prefix + name)
    if value is None:
        raise OnednnUnsupportedError(f"{enum} has no member {prefix + name}", version)
    return value


def to_native(t: LogicalTensor, headers: Headers, version: str) -> NativeLogicalTensor:
    """`t` as the C struct (an unknown rank or dimension becomes oneDNN's unknown marker)."""
    native = NativeLogicalTensor()
    native.id = t.id
    native.data_type = dtype_value(headers, t.dtype, version)
    native.property = _enum(headers, "dnnl_graph_tensor_property_t",
                            "dnnl_graph_tensor_property_", t.property_type.value, version)
    native.layout_type = _enum(headers, "dnnl_graph_layout_type_t", "dnnl_graph_layout_type_",
                               t.layout_type.value, version)
    if t.shape is None:
        native.ndims = -1
        return native
    if len(t.shape) > MAX_NDIMS:
        raise OnednnUnsupportedError(f"tensor {t.id} has {len(t.shape)} dimensions, more than "
                                     f"{MAX_NDIMS}", version)
    native.ndims = len(t.shape)
    for i, d in enumerate(t.shape):
        native.dims[i] = d if d >= 0 else UNKNOWN_DIM
    if t.layout_type is LayoutType.strided:
        strides = t.strides if t.strides is not None else \
            (t.dense_strides() if t.shape_known else (UNKNOWN_DIM,) * len(t.shape))
        for i, s in enumerate(strides[:MAX_NDIMS]):
            native.layout.strides[i] = s
    return native


def native_dims(native: NativeLogicalTensor) -> tuple[tuple[int, ...], tuple[int, ...]]:
    """Shape and (for a strided layout) strides of a struct the library filled in; the caller
    checks the layout type."""
    ndims = max(native.ndims, 0)
    shape = tuple(int(native.dims[i]) for i in range(ndims))
    strides = tuple(int(native.layout.strides[i]) for i in range(ndims))
    return shape, strides
