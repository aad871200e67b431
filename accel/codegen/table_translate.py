"""The table form of an element-wise partition: its ops as data for one shared program.

The specialised form (`fusionspec.accel.codegen.epilogue`) writes each chain of ops out as
OpenCL C, so every distinct chain, dtype set, rank and broadcast structure is a program of its
own, and a conformance run, where nearly every case has a new structure, spends most of its
time compiling. The table form instead translates the partition into an instruction table
(`fusionspec.accel.codegen.table_instructions`: loads, stores, one instruction per op) and an
f32 table of attribute values and per-channel parameters, both kernel arguments; the
interpreter kernel (``accel/templates/table.cl.j2``) is the same text for every partition, so
one build serves them all.

Each tensor the kernel touches gets a buffer slot (`SLOTS` at most) and, per axis of the
domain padded to `RANK` axes, a stride argument: the tensor's own stride (runtime strides for
a strided input, as in the specialised form), or 0 along an axis it is broadcast over; a
per-channel parameter (BiasAdd's bias, BatchNorm's statistics) is a slot strided along the
channel axis only. An output is stored by the work items at the first index of every axis it
is broadcast over, so each element is written once.

`translate` returns None for a partition beyond these bounds (more slots, axes or registers);
the caller then uses the specialised form. It expects a validated partition: the checks
(supported ops and dtypes, attribute checks) are `fusionspec.accel.codegen.op_checks`', which
the caller runs before choosing a form, so both forms reject exactly the same partitions with
the same errors.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from fusionspec.spec.dtypes import DataType
from fusionspec.spec.graph import LogicalTensor, Op, Partition, row_major_strides
from fusionspec.spec.shapes import channel_axis

from ..errors import UnsupportedPartitionError
from ..plan import Binding, LongsArg, ScalarArg, StrideArg
from .access import is_dense, known_shape
from .epilogue import ordered_ops
from .formulas import FORMULAS, ByAttribute, Formula
from .opctx import attr_of
from .table_instructions import (
    BINARY,
    CASE_INSTRUCTIONS,
    DTYPE_CODES,
    ON_INPUT,
    OPCODES,
    SAME_INSTRUCTION,
)
from .types import Kind, is_integer

__all__ = ["SLOTS", "RANK", "REGS", "TABLE_KINDS", "TableCode", "translate", "translate_ops",
           "translate_operand", "slot_strides"]

#: Buffer slots, domain axes and registers (of each kind) of the interpreter kernel.
SLOTS, RANK, REGS = 16, 6, 64

#: The op kinds `translate` handles (a test holds this equal to the specialised op table's).
TABLE_KINDS = frozenset({*ON_INPUT, *BINARY, *SAME_INSTRUCTION,
                         *(kind for kind, _ in CASE_INSTRUCTIONS), "BatchNormInference",
                         "Dequantize", "Quantize", "TypeCast", "Reorder"})


class _TooBig(Exception):
    """The partition needs more slots or registers than the interpreter has."""


@dataclass(frozen=True)
class TableCode:
    """A translated partition: `code` (8 ints an instruction), `floats` (the f32 table),
    `buffers` (the tensor id of each used slot, in slot order) and `strides` (per used slot,
    the binding of its stride along each of the `RANK` domain axes)."""

    code: tuple[int, ...]
    floats: tuple[float, ...]
    buffers: tuple[int, ...]
    strides: tuple[tuple[Binding, ...], ...]


def _f32(value: float) -> float:
    with np.errstate(over="ignore"):
        return float(np.float32(value))


class _Translator:
    def __init__(self, ops: Sequence[Op], outputs: Sequence[LogicalTensor],
                 shape: Sequence[int]) -> None:
        self.ops = ordered_ops(ops)
        self.offset = RANK - len(shape)
        self.code: list[int] = []
        self.floats: list[float] = []
        self.buffers: list[int] = []
        self.strides: list[tuple[Binding, ...]] = []
        self.slot_of: dict[tuple[int, int], int] = {}
        self.values: dict[int, tuple[int, Kind]] = {}
        self.loads: dict[tuple[int, int], int] = {}
        self.counts: dict[Kind, int] = {"float": 0, "int": 0}
        self.outputs = {t.id: t for t in outputs}
        self.stored: set[int] = set()

    # -- registers, slots, instructions ---------------------------------------------------

    def reg(self, kind: Kind) -> int:
        n = self.counts[kind]
        if n >= REGS:
            raise _TooBig
        self.counts[kind] = n + 1
        return n

    def emit(self, name: str, kind: Kind, *operands: int, q: int = 0) -> int:
        r = self.reg(kind)
        self.raw(name, r, *operands, q=q)
        return r

    def raw(self, name: str, r: int, *operands: int, q: int = 0) -> None:
        padded = (*operands, 0, 0, 0, 0, 0)[:5]
        self.code.extend((OPCODES[name], r, *padded, q))

    def slot(self, tensor: LogicalTensor, strides: tuple[Binding, ...], channel: int = -1
             ) -> int:
        key = (tensor.id, channel)
        found = self.slot_of.get(key)
        if found is None:
            if len(self.buffers) >= SLOTS:
                raise _TooBig
            found = self.slot_of[key] = len(self.buffers)
            self.buffers.append(tensor.id)
            self.strides.append(strides)
        return found

    def domain_strides(self, tensor: LogicalTensor, *, dense: bool) -> tuple[Binding, ...]:
        """Per domain axis, the stride of `tensor` right-aligned in the domain (0 where it is
        broadcast)."""
        shape = known_shape(tensor)
        dense_strides = row_major_strides(shape)
        found: list[Binding] = []
        for d in range(RANK):
            j = d - (RANK - len(shape))
            if j < 0 or shape[j] == 1:
                found.append(ScalarArg("long", 0))
            elif dense:
                found.append(ScalarArg("long", dense_strides[j]))
            else:
                found.append(StrideArg(tensor.id, j))
        return tuple(found)

    def constant(self, value: float) -> int:
        self.floats.append(_f32(value))
        return self.emit("const", "float", len(self.floats) - 1, -1)

    def per_index(self, values: Sequence[float], axis: int) -> int:
        """A register holding ``values[index along domain axis]`` (-1: the first value)."""
        base = len(self.floats)
        self.floats.extend(_f32(v) for v in values)
        return self.emit("const", "float", base, axis)

    # -- values -----------------------------------------------------------------------------

    def value(self, tensor: LogicalTensor) -> tuple[int, Kind]:
        found = self.values.get(tensor.id)
        if found is None:
            kind: Kind = "int" if is_integer(tensor.dtype) else "float"
            slot = self.slot(tensor, self.domain_strides(tensor, dense=is_dense(tensor)))
            reg = self.emit("load_int" if kind == "int" else "load", kind, slot,
                            q=DTYPE_CODES[tensor.dtype])
            found = self.values[tensor.id] = (reg, kind)
        return found

    def f(self, op: Op, port: int) -> int:
        reg, kind = self.value(op.inputs[port])
        return reg if kind == "float" else self.emit("to_float", "float", reg)

    def channel_load(self, op: Op, port: int, axis: int) -> int:
        """Input `port` (1-D) at the index of input 0 along its `axis`, as f32."""
        src, param = op.inputs[0], op.inputs[port]
        d = self.offset_of(src) + axis
        key = (param.id, d)
        found = self.loads.get(key)
        if found is not None:
            return found
        shape = known_shape(src)
        strides: list[Binding] = [ScalarArg("long", 0)] * RANK
        if shape[axis] != 1:
            strides[d] = ScalarArg("long", 1) if is_dense(param) else StrideArg(param.id, 0)
        slot = self.slot(param, tuple(strides), channel=d)
        if is_integer(param.dtype):
            reg = self.emit("load_int", "int", slot, q=DTYPE_CODES[param.dtype])
            reg = self.emit("to_float", "float", reg)
        else:
            reg = self.emit("load", "float", slot, q=DTYPE_CODES[param.dtype])
        self.loads[key] = reg
        return reg

    @staticmethod
    def offset_of(tensor: LogicalTensor) -> int:
        return RANK - len(known_shape(tensor))

    def store(self, tid: int) -> None:
        tensor = self.outputs.get(tid)
        if tensor is None or tid in self.stored:
            return
        reg, kind = self.values[tid]
        slot = self.slot(tensor, self.domain_strides(tensor, dense=True))
        self.raw("store_int" if kind == "int" else "store", 0, reg, slot,
                 q=DTYPE_CODES[tensor.dtype])
        self.stored.add(tid)

    # -- ops --------------------------------------------------------------------------------

    def run(self, given: int | None) -> None:
        if given is not None:  # the caller's value arrives in rf[0]
            self.values[given] = (self.reg("float"), "float")
            self.store(given)
        for op in self.ops:
            self.values[op.outputs[0].id] = self.op(op)
            self.store(op.outputs[0].id)
        if given is not None and self.ops:  # the last value goes back to the caller
            reg, kind = self.values[self.ops[-1].outputs[0].id]
            self.raw("to_float" if kind == "int" else "Copy", 0, reg)

    def op(self, op: Op) -> tuple[int, Kind]:
        kind = op.kind
        formula = FORMULAS.get(kind)
        if isinstance(formula, ByAttribute):
            case = formula.key(attr_of(op, formula.attribute))
            return self.emit(CASE_INSTRUCTIONS[kind, case], "float", self.f(op, 0)), "float"
        if kind in ON_INPUT:
            assert isinstance(formula, Formula), f"{kind} has one formula"
            x = self.f(op, 0)
            constants = [self.constant(_number(op, attribute))
                         for _, attribute in formula.attributes]
            return self.emit(kind, "float", x, *constants), "float"
        if kind in BINARY:
            (a, ka), (b, kb) = self.value(op.inputs[0]), self.value(op.inputs[1])
            if ka == kb == "int":
                return self.emit(f"int_{kind}", "int", a, b), "int"
            return self.emit(kind, "float", self.f(op, 0), self.f(op, 1)), "float"
        if kind == "BiasAdd":
            x = self.f(op, 0)
            axis = channel_axis(str(attr_of(op, "data_format")), len(known_shape(op.inputs[0])))
            return self.emit(SAME_INSTRUCTION[kind], "float", x,
                             self.channel_load(op, 1, axis)), "float"
        if kind == "BatchNormInference":
            x = self.f(op, 0)
            axis = channel_axis(str(attr_of(op, "data_format")), len(known_shape(op.inputs[0])))
            gamma, beta, mean, var = (self.channel_load(op, p, axis) for p in (1, 2, 3, 4))
            eps = self.constant(_number(op, "epsilon"))
            self.raw("BatchNormInference", r := self.reg("float"), x, gamma, beta, mean, var,
                     q=eps)
            return r, "float"
        if kind in ("Dequantize", "Quantize"):
            x = self.f(op, 0)
            scale, zp = self.quant_params(op)
            if kind == "Dequantize":
                return self.emit("Dequantize", "float", x, scale, zp), "float"
            return self.emit("Quantize", "int", x, scale, zp,
                             q=DTYPE_CODES[op.outputs[0].dtype]), "int"
        if kind == "TypeCast":
            dst = op.outputs[0].dtype
            x = self.f(op, 0)
            if dst is DataType.f32:
                return x, "float"
            return self.emit("RoundBf16" if dst is DataType.bf16 else "RoundF16", "float", x), \
                "float"
        if kind == "Reorder":
            return self.value(op.inputs[0])
        if kind == "ReLUBackward":  # the training family's, beside the element-wise ops
            return self.emit(kind, "float", self.f(op, 0), self.f(op, 1)), "float"
        raise AssertionError(f"op kind {kind} passed validation but has no table entry")

    def quant_params(self, op: Op) -> tuple[int, int]:
        scales = _floats(op, "scales")
        zps = _floats(op, "zps") or [0.0] * len(scales)
        if attr_of(op, "qtype") != "per_channel":
            return self.constant(scales[0]), self.constant(zps[0])
        shape = known_shape(op.inputs[0])
        axis = int(_number(op, "axis")) % len(shape)
        d = self.offset_of(op.inputs[0]) + axis if shape[axis] != 1 else -1
        return self.per_index(scales, d), self.per_index(zps, d)


def _number(op: Op, name: str) -> float:
    value = attr_of(op, name)
    assert isinstance(value, int | float), f"attribute {name} of op {op.id} is {value!r}"
    return float(value)


def _floats(op: Op, name: str) -> list[float]:
    try:
        value = attr_of(op, name)
    except UnsupportedPartitionError:  # an absent optional list (zps): zero points of 0
        return []
    assert isinstance(value, list | tuple), f"attribute {name} of op {op.id} is {value!r}"
    return [float(v) for v in value]


def translate(partition: Partition, shape: Sequence[int]) -> TableCode | None:
    """`partition` (element-wise, already accepted by the specialised form) as a table over the
    domain `shape`; None when it does not fit the interpreter (see the module docstring)."""
    return translate_ops(partition.ops, partition.outputs, shape)


def translate_ops(ops: Sequence[Op], outputs: Sequence[LogicalTensor], shape: Sequence[int],
                  *, given: int | None = None) -> TableCode | None:
    """`ops` (element-wise, accepted by the specialised form) as a table over the domain
    `shape` that stores `outputs` once computed; None when it does not fit the interpreter.
    `given`: a tensor the caller computed (a main op's output, as the specialised form's
    ``given``): its value enters in register 0, and the last op's value is left there."""
    if len(shape) > RANK:
        return None
    translator = _Translator(ops, outputs, shape)
    try:
        translator.run(given)
    except _TooBig:
        return None
    return TableCode(tuple(translator.code), tuple(translator.floats),
                     tuple(translator.buffers), tuple(translator.strides))


def translate_operand(ops: Sequence[Op], operand: LogicalTensor) -> TableCode | None:
    """The table computing `operand` in f32 over its own shape: loaded from its buffer, or,
    when `ops` (a Dequantize, or Quantize -> Dequantize, folded into a main op's operand) end
    in it, computed by them from their inputs. The value is left in register 0; nothing is
    stored. None when it does not fit the interpreter."""
    shape = known_shape(operand)
    if len(shape) > RANK:
        return None
    translator = _Translator(ops, (), shape)
    try:
        translator.reg("float")  # register 0 receives the value
        for op in translator.ops:
            translator.values[op.outputs[0].id] = translator.op(op)
        reg, kind = translator.value(operand)
        translator.raw("to_float" if kind == "int" else "Copy", 0, reg)
    except _TooBig:
        return None
    return TableCode(tuple(translator.code), tuple(translator.floats),
                     tuple(translator.buffers), tuple(translator.strides))


def slot_strides(table: TableCode) -> LongsArg:
    """The strides argument of `table`: `RANK` per slot, in slot order, 0 for unused slots
    (a buffer the interpreter reads, so the slot count costs no kernel parameters)."""
    entries: list[StrideArg | ScalarArg] = []
    for k in range(SLOTS):
        row = table.strides[k] if k < len(table.strides) else (ScalarArg("long", 0),) * RANK
        for binding in row:
            assert isinstance(binding, StrideArg | ScalarArg), "a stride is a stride"
            entries.append(binding)
    return LongsArg(tuple(entries))
