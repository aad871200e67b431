"""The parts a graph is made of: logical tensors, ops and their attribute values.

These records sit below everything else of the spec (the op schemas, shape inference and the
validator read them; `fusionspec.spec.graph` puts them together into graphs and partitions).
Everything is immutable.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from enum import StrEnum
from types import MappingProxyType
from typing import TypeAlias

from .dtypes import DataType

__all__ = ["AttrValue", "LayoutType", "PropertyType", "LogicalTensor", "Op", "UNKNOWN_DIM",
           "row_major_strides", "ops_in_order"]

#: An attribute value: s64, f32, string, bool, s64[] or f32[] in oneDNN's terms.
AttrValue: TypeAlias = int | float | str | bool | tuple[int, ...] | tuple[float, ...]


def row_major_strides(shape: Sequence[int]) -> tuple[int, ...]:
    """Dense row-major strides (in elements) of `shape`; a zero-sized dim steps like size 1."""
    out: list[int] = []
    step = 1
    for d in reversed(shape):
        out.append(step)
        step *= max(d, 1)
    return tuple(reversed(out))


#: A dimension whose size is not known (oneDNN writes INT64_MIN; older versions wrote -1).
UNKNOWN_DIM = -1


class LayoutType(StrEnum):
    """A logical tensor's layout, as oneDNN's ``layout_type`` (``strided`` for the suite's
    graphs; ``any`` lets a backend choose)."""

    undef = "undef"
    any = "any"
    strided = "strided"
    opaque = "opaque"


class PropertyType(StrEnum):
    """A logical tensor's property, as oneDNN's ``property_type`` (``constant`` marks a tensor
    whose value does not change between executions, such as weights)."""

    undef = "undef"
    variable = "variable"
    constant = "constant"
    host_scalar = "host_scalar"


@dataclass(frozen=True)
class LogicalTensor:
    """Metadata of a tensor: id, dtype, shape and (for strided layouts) strides.

    `shape` is None when even the rank is unknown; a dimension equal to `UNKNOWN_DIM` is unknown.
    `strides` is None when not given; then a strided tensor is dense row-major.
    """

    id: int
    dtype: DataType
    shape: tuple[int, ...] | None = None
    strides: tuple[int, ...] | None = None
    layout_type: LayoutType = LayoutType.strided
    property_type: PropertyType = PropertyType.undef

    def __post_init__(self) -> None:
        # Accept lists for convenience; store tuples so the tensor stays hashable.
        for name in ("shape", "strides"):
            value = getattr(self, name)
            if value is not None:
                object.__setattr__(self, name, tuple(value))

    @property
    def ndim(self) -> int | None:
        return None if self.shape is None else len(self.shape)

    @property
    def shape_known(self) -> bool:
        """True when the rank and every dimension are known."""
        return self.shape is not None and all(d >= 0 for d in self.shape)

    def dense_strides(self) -> tuple[int, ...]:
        """Row-major strides (in elements) for this tensor's known shape."""
        if not self.shape_known or self.shape is None:
            raise ValueError(f"tensor {self.id} has no known shape")
        return row_major_strides(self.shape)

    def with_shape(self, shape: tuple[int, ...]) -> LogicalTensor:
        return LogicalTensor(self.id, self.dtype, shape, self.strides, self.layout_type,
                             self.property_type)


def _freeze_attrs(attrs: Mapping[str, object]) -> Mapping[str, AttrValue]:
    frozen: dict[str, AttrValue] = {}
    for name, value in attrs.items():
        if isinstance(value, list):
            value = tuple(value)
        frozen[name] = value  # type: ignore[assignment]  # validated against the schema later
    return MappingProxyType(frozen)


@dataclass(frozen=True, eq=False)
class Op:
    """One op: `kind` is the oneDNN op kind string ("Convolution"); inputs and outputs are in port
    order. Attribute lists may be given as Python lists; they are stored as tuples."""

    id: int
    kind: str
    inputs: Sequence[LogicalTensor] = ()
    outputs: Sequence[LogicalTensor] = ()
    attrs: Mapping[str, AttrValue] = field(default_factory=dict)
    name: str = ""

    def __post_init__(self) -> None:
        object.__setattr__(self, "inputs", tuple(self.inputs))
        object.__setattr__(self, "outputs", tuple(self.outputs))
        object.__setattr__(self, "attrs", _freeze_attrs(self.attrs))
        if not self.name:
            object.__setattr__(self, "name", f"{self.kind.lower()}_{self.id}")

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, Op):
            return NotImplemented
        return (self.id, self.kind, self.inputs, self.outputs, dict(self.attrs), self.name) == (
            other.id, other.kind, other.inputs, other.outputs, dict(other.attrs), other.name)

    def __hash__(self) -> int:
        return hash((self.id, self.kind))

    def __repr__(self) -> str:
        ins = ", ".join(str(t.id) for t in self.inputs)
        outs = ", ".join(str(t.id) for t in self.outputs)
        return f"Op({self.id}, {self.kind!r}, in=[{ins}], out=[{outs}])"


def ops_in_order(ops: Sequence[Op]) -> tuple[Op, ...]:
    """`ops` sorted by id: the canonical order used when printing partitions."""
    return tuple(sorted(ops, key=lambda op: op.id))
