"""The shape of an op schema: ports, dtype symbols, attributes, shape inference and extra rules.

Schemas are data (`OpSchema` instances in `fusionspec.spec.opschemas`); one generic validator
(`fusionspec.spec.validate`) checks any op against its schema. Vocabulary, as oneDNN's:

- a port has a name (``src``, ``weights``) and a dtype *symbol* (``T``, ``T1``); ports sharing a
  symbol must have the same dtype, and the symbol lists the dtypes allowed;
- `dtype_rows` narrows the symbols to the combinations an op's page tables list (Add: f32+bf16
  gives f32, never bf16+f16);
- an attribute has a kind (`AttrKind`, the JSON ``type`` spelling), may be required, may have a
  default that validation fills in, and strings may be limited to `allowed` values;
- `infer` maps input shapes to output shapes and raises `InferenceFailure` when they clash;
- `constraints` are the rules oneDNN checks beyond the above, each with a rule id.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from enum import StrEnum
from typing import TypeAlias

from .dtypes import DataType
from .ir import AttrValue, Op

__all__ = [
    "AttrKind",
    "AttrSpec",
    "PortSpec",
    "Constraint",
    "InferenceFailure",
    "OpSchema",
    "Shape",
    "InferFn",
]

#: A shape that may be unknown (None) or have unknown dims (negative).
Shape: TypeAlias = tuple[int, ...] | None
#: Shape inference: (op with defaults filled, input shapes) -> output shapes.
InferFn: TypeAlias = Callable[[Op, Sequence[Shape]], Sequence[Shape]]


class AttrKind(StrEnum):
    """Attribute value kinds, spelled as the graph JSON's ``type`` field."""

    s64 = "s64"
    s64_list = "s64[]"
    f32 = "f32"
    f32_list = "f32[]"
    string = "string"
    boolean = "bool"

    def accepts(self, value: object) -> bool:
        """Whether a Python value has this kind (ints are accepted where floats are)."""
        if self is AttrKind.boolean:
            return isinstance(value, bool)
        if self is AttrKind.string:
            return isinstance(value, str)
        if self is AttrKind.s64:
            return isinstance(value, int) and not isinstance(value, bool)
        if self is AttrKind.f32:
            return isinstance(value, int | float) and not isinstance(value, bool)
        if not isinstance(value, tuple):
            return False
        if self is AttrKind.s64_list:
            return all(isinstance(v, int) and not isinstance(v, bool) for v in value)
        return all(isinstance(v, int | float) and not isinstance(v, bool) for v in value)

    def normalize(self, value: AttrValue) -> AttrValue:
        """Coerce an accepted value to the canonical Python type (ints to floats for f32)."""
        if self is AttrKind.f32:
            return float(value)  # type: ignore[arg-type]
        if self is AttrKind.f32_list:
            return tuple(float(v) for v in value)  # type: ignore[union-attr]
        return value


@dataclass(frozen=True)
class AttrSpec:
    """One attribute of an op: its kind, whether it is required or its default, the allowed
    strings, and for numbers the range every value (every element of a list) must lie in
    (`minimum`, `maximum`, inclusive; f32 values must also be finite)."""

    name: str
    kind: AttrKind
    required: bool = False
    default: AttrValue | None = None
    allowed: tuple[str, ...] | None = None
    minimum: float | None = None
    maximum: float | None = None

    def out_of_range(self, value: AttrValue) -> str | None:
        """Why `value` (of this attribute's kind) is outside the range, or None."""
        values = value if isinstance(value, tuple) else (value,)
        for item in values:
            if isinstance(item, bool) or not isinstance(item, int | float):
                continue
            if self.minimum is not None and item < self.minimum:
                return f"{item!r} is below the minimum {_number(self.minimum)}"
            if self.maximum is not None and item > self.maximum:
                return f"{item!r} is above the maximum {_number(self.maximum)}"
        return None


def _number(value: float) -> str:
    return str(int(value)) if float(value).is_integer() else repr(value)


@dataclass(frozen=True)
class PortSpec:
    """An input or output port: its name, its dtype symbol, whether it may be left out, and
    whether it carries a shape or axes (integers that say how to compute, never data to
    compute on: value filling and the value domains leave such a port alone)."""

    name: str
    symbol: str
    optional: bool = False
    carries_shape: bool = False


@dataclass(frozen=True)
class Constraint:
    """A rule beyond ports/attributes/shapes. `check` returns None when the op complies, else a
    message; it may assume attributes are filled and port dtypes are valid."""

    rule: str
    statement: str
    check: Callable[[Op], str | None]


class InferenceFailure(ValueError):
    """Raised by shape inference when shapes or attributes contradict each other."""

    def __init__(self, message: str, *, where: str | None = None) -> None:
        super().__init__(message)
        self.where = where


@dataclass(frozen=True, kw_only=True)
class OpSchema:
    """Everything the spec says about one op kind. `page` is oneDNN's op doc for the kind."""

    kind: str
    inputs: tuple[PortSpec, ...]
    outputs: tuple[PortSpec, ...]
    types: Mapping[str, frozenset[DataType]]
    attrs: tuple[AttrSpec, ...] = ()
    infer: InferFn | None = None
    constraints: tuple[Constraint, ...] = ()
    dtype_rows: tuple[Mapping[str, frozenset[DataType]], ...] = ()
    commutative_inputs: tuple[int, ...] = ()
    #: Output counts allowed beyond "all required plus a prefix of the optional ones".
    output_counts: frozenset[int] | None = None
    summary: str = ""
    page: str = field(default="")

    def __post_init__(self) -> None:
        if not self.page:
            object.__setattr__(self, "page", f"doc/graph_api/operations/{self.kind}.md")

    @property
    def input_counts(self) -> frozenset[int]:
        return _counts(self.inputs)

    @property
    def allowed_output_counts(self) -> frozenset[int]:
        return self.output_counts if self.output_counts is not None else _counts(self.outputs)

    def attr_spec(self, name: str) -> AttrSpec | None:
        for spec in self.attrs:
            if spec.name == name:
                return spec
        return None

    def port_dtypes(self, port: PortSpec) -> frozenset[DataType]:
        return self.types[port.symbol]


def _counts(ports: tuple[PortSpec, ...]) -> frozenset[int]:
    required = sum(1 for p in ports if not p.optional)
    return frozenset(range(required, len(ports) + 1))
