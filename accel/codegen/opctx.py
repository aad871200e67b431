"""What an entry of the post-op table (`fusionspec.accel.codegen.ops`) works with.

`OpCtx` gives an entry its op, its operands' registers (`Value`), its attributes (as kernel
arguments, never literals) and ways to declare per-channel loads, tables, helpers and
temporaries; it asks the generator of the epilogue (`Emitter`, implemented by
`fusionspec.accel.codegen.epilogue`) for them, so the table and the generator do not import
each other.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Protocol

from fusionspec.spec.attrs import attr_value
from fusionspec.spec.errors import MissingAttributeError
from fusionspec.spec.graph import AttrValue, LogicalTensor, Op

from ..errors import UnsupportedPartitionError
from .access import Domain
from .args import KernelArgs
from .source import Preamble
from .types import Kind, TypePolicy, c_float

__all__ = ["Value", "Emitter", "OpCtx", "attr_of", "fattr_of"]


@dataclass(frozen=True)
class Value:
    """A register (or C expression) and its kind: f32 ``float`` or exact integer ``long``.
    `f32`, for an integer register, names the same value already read as f32 (a loaded
    input's twin), which float ops take instead of converting `text`."""

    text: str
    kind: Kind = "float"
    f32: str | None = None


class Emitter(Protocol):
    """The part of the epilogue generator an op-table entry reaches through `OpCtx`."""

    domain: Domain
    args: KernelArgs
    policy: TypePolicy
    preamble: Preamble

    def value(self, tensor: LogicalTensor) -> Value: ...

    def load_1d(self, tensor: LogicalTensor, index: str, op: Op) -> str: ...

    def temp(self, expr: str, kind: Kind) -> str: ...


def attr_of(op: Op, name: str) -> AttrValue:
    """Attribute `name` of `op`, or its schema default (validated graphs have every default
    filled in; this also serves partitions built by hand); UnsupportedPartitionError when it
    has neither."""
    try:
        return attr_value(op, name)
    except MissingAttributeError as exc:
        raise UnsupportedPartitionError(f"{exc} (finalize the graph first)") from None


def fattr_of(op: Op, name: str) -> float:
    """Numeric attribute `name` of `op` (UnsupportedPartitionError when absent or not a
    number)."""
    value = attr_of(op, name)
    if not isinstance(value, int | float) or isinstance(value, bool):
        raise UnsupportedPartitionError(f"op {op.id} ({op.kind}) attribute {name!r} is "
                                        f"{value!r}, not a number")
    return float(value)


class OpCtx:
    """What an op-table entry sees: the op, its operands' registers, its attributes, and ways
    to declare per-channel loads, attribute arguments, tables, helpers and temporaries."""

    def __init__(self, emitter: Emitter, op: Op) -> None:
        self.op = op
        self._e = emitter
        self.policy: TypePolicy = emitter.policy

    # operands
    def arg(self, port: int) -> Value:
        """The register of input `port` at the domain index (loaded on first use)."""
        return self._e.value(self.op.inputs[port])

    def f(self, port: int) -> str:
        """Input `port` as an f32 expression (integers are converted as NumPy does)."""
        value = self.arg(port)
        if value.f32 is not None:
            return value.f32
        return self.policy.as_float(value.text, value.kind)

    def input(self, port: int) -> LogicalTensor:
        return self.op.inputs[port]

    def output(self, port: int = 0) -> LogicalTensor:
        return self.op.outputs[port]

    def channel_index(self, port: int, axis: int) -> str:
        """The index of input `port`'s tensor along `axis` at the domain index."""
        return self._e.domain.index_along(self.op.inputs[port], axis)

    def load_at(self, port: int, index: str) -> str:
        """Element `index` of input `port`, a 1-D partition input (per-channel parameters:
        bias, gamma, scales given as tensors), as an f32 expression."""
        return self._e.load_1d(self.op.inputs[port], index, self.op)

    # attributes and constants
    def attr(self, name: str) -> AttrValue:
        """Attribute `name`, or its schema default; UnsupportedPartitionError when absent."""
        return attr_of(self.op, name)

    def fattr(self, name: str) -> float:
        return fattr_of(self.op, name)

    @staticmethod
    def lit(value: float) -> str:
        """An exact f32 literal of `value`, for the constants of a formula (never for an
        attribute: those are arguments, `farg`)."""
        return c_float(value)

    def farg(self, name: str) -> str:
        """Numeric attribute `name` as an f32 kernel argument (``<name><n>``)."""
        return self.float_arg(name, self.fattr(name))

    def float_arg(self, prefix: str, value: float) -> str:
        """`value` as an f32 kernel argument named ``<prefix><n>``."""
        return self._e.args.numbered_f32(prefix, value)

    def table(self, prefix: str, values: Sequence[float]) -> str:
        """An f32 table argument ``<prefix><n>`` holding `values` (per-channel parameters)."""
        return self._e.args.table(prefix, values)

    def need(self, *helpers: str) -> None:
        self._e.preamble.need(helpers)

    def let(self, expr: str, kind: Kind = "float") -> str:
        """Emit ``const <type> eN = expr;`` and return ``eN`` (to use a value twice)."""
        return self._e.temp(expr, kind)
