"""The one post-op generator: element-wise ops -> OpenCL C statements, driven by a table.

Every fused kernel of the backend evaluates its element-wise ops here: all the ops of an
element-wise partition, or the ops after the main op of a convolution, matmul, pooling,
reduction or softmax partition (its epilogue). `emit_epilogue` walks the ops in dependency order
and writes straight-line statements that compute, at the kernel's current domain index
(``idx[]``, or a lazy domain's linear index), one register per tensor (``v0``, ``v1`` ... in
order of first use, never after tensor ids): a tensor produced by the main op comes in through
`given` (``{dst.id: Value("acc")}``), a partition input is loaded with NumPy broadcasting
(`fusionspec.accel.codegen.access`: row-major strides for a dense tensor, runtime strides for
any other layout, the linear index where it covers the domain), and an op's output is its table
entry applied to its operands' registers.
Either operand of a binary op may be the chain (the order is the ops' own), and the other one
may itself be computed by ops of the partition (the Dequantize of an int8 post-op operand).
Partition outputs among the computed tensors are stored (rounded and saturated to their dtype)
as soon as they exist, and with ``acc=`` the final value is written back to the accumulator.

Numerics mirror `fusionspec.reference.execute`: f32 registers throughout, with TypeCast and
Quantize as the only roundings inside a partition; integer (s32) arithmetic exact in ``long``
and saturated; constants are exact f32 literals. Attribute values (Clamp's bounds, alphas,
betas, epsilons, per-tensor scales and zero points) are f32 kernel arguments, rounded to f32
as f32 attributes are, and per-channel ones f32 tables (`fusionspec.accel.codegen.args`), so
every partition with the same ops, dtypes and layouts shares one program.

Accuracy choice: transcendental ops use the full-precision OpenCL builtins (``exp``, ``expm1``,
``log``, ``log1p``, ``tanh``, ``pow``; at most 3-16 ulp by the OpenCL specification), except
GELU's ``erfc``, which is written out in arithmetic (`fusionspec.accel.codegen.mathfn`: within
4 ulp, and vectorisable where the builtin is a slow library call); never ``native_*`` or
``half_*`` variants and never ``-cl-fast-relaxed-math``, whose error is unbounded by the
specification; division and sqrt are correctly rounded where the device
supports it (`fusionspec.accel.runtime.base_options`). The suite's tolerances
(`fusionspec.conformance.grade.tolerances`: 4e-6 relative for simple and 4e-5 for complex eltwise
ops) are far above these bounds.

The op table lives in `fusionspec.accel.codegen.ops` (`OP_TABLE`), each op's math in
`fusionspec.accel.codegen.formulas` (shared with the table form).
This is the specialised form; an element-wise partition with a small domain instead becomes
data for one shared interpreter program (the table form,
`fusionspec.accel.codegen.table_translate`).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field

from fusionspec.spec.graph import LogicalTensor, Op

from ..errors import UnsupportedPartitionError
from .access import Domain, channel_offset
from .op_checks import check_chain, ordered_ops
from .opctx import OpCtx, Value
from .ops import OP_TABLE
from .source import Preamble
from .types import Kind, TypePolicy

__all__ = ["Value", "OpCtx", "EpilogueCode", "emit_epilogue", "supported_kinds",
           "ordered_ops"]


@dataclass(frozen=True)
class EpilogueCode:
    """What `emit_epilogue` produced.

    `body`: the statements (one per line, unindented); `values`: the register of every tensor
    it loaded or computed, by tensor id; `result`: the register of the last op's output (the
    given value when there are no ops); `stored`: ids of the tensors it stores. The kernel
    parameters its loads, stores and attributes need are in the domain's `KernelArgs`."""

    body: str
    values: Mapping[int, Value]
    result: Value
    stored: tuple[int, ...] = field(default=())


def supported_kinds() -> frozenset[str]:
    """The op kinds the generator can emit (the table's keys)."""
    return frozenset(OP_TABLE)


class _Emitter:
    """Generates the statements of one epilogue (the `Emitter` an `OpCtx` talks to)."""

    def __init__(self, ops: Sequence[Op], domain: Domain, policy: TypePolicy,
                 preamble: Preamble, given: Mapping[int, Value],
                 outputs: Sequence[LogicalTensor], linear: str | None) -> None:
        self.ops = ordered_ops(ops)
        self.domain = domain
        self.args = domain.args
        self.policy = policy
        self.preamble = preamble
        self.values: dict[int, Value] = dict(given)
        self.outputs = {t.id: t for t in outputs}
        self.linear = linear or domain.linear
        self.lines: list[str] = []
        self.stored: list[int] = []
        self.produced = {t.id for op in self.ops for t in op.outputs}

    def run(self) -> None:
        for tid in list(self.values):
            self._maybe_store(tid)
        for op in self.ops:  # checked by `check_chain`
            result = OP_TABLE[op.kind](OpCtx(self, op))
            out = op.outputs[0]
            ctype = "float" if result.kind == "float" else "long"
            name = self.args.fresh("v")
            self.lines.append(f"const {ctype} {name} = {result.text};")
            self.values[out.id] = Value(name, result.kind)
            self._maybe_store(out.id)

    def value(self, tensor: LogicalTensor) -> Value:
        found = self.values.get(tensor.id)
        if found is not None:
            return found
        if tensor.id in self.produced:  # ordered_ops puts producers first; cannot happen
            raise UnsupportedPartitionError(f"tensor {tensor.id} is used before it is computed")
        return self._load(tensor)

    def _load(self, tensor: LogicalTensor) -> Value:
        self.preamble.uses(tensor.dtype)
        buffer = self.args.read(tensor)
        offset = self.domain.read_offset(tensor, self.linear)
        expr, helpers = self.policy.load(tensor.dtype, buffer, offset)
        self.preamble.need(helpers)
        kind = self.policy.kind(tensor.dtype)
        ctype = "float" if kind == "float" else "long"
        name = self.args.fresh("v")
        self.lines.append(f"const {ctype} {name} = {expr};")
        twin = None
        if kind == "int":
            # The same element read as f32 for the float ops (`TypePolicy.load_float`); the
            # compiler drops whichever of the two registers no op reads.
            fexpr, fhelpers = self.policy.load_float(tensor.dtype, buffer, offset)
            self.preamble.need(fhelpers)
            twin = f"{name}f"
            self.lines.append(f"const float {twin} = {fexpr};")
        value = self.values[tensor.id] = Value(name, kind, twin)
        return value

    def load_1d(self, tensor: LogicalTensor, index: str, op: Op) -> str:
        self.preamble.uses(tensor.dtype)
        buffer = self.args.read(tensor)
        expr, helpers = self.policy.load_float(tensor.dtype, buffer,
                                               channel_offset(tensor, index, self.args))
        self.preamble.need(helpers)
        return expr

    def _maybe_store(self, tid: int) -> None:
        tensor = self.outputs.get(tid)
        if tensor is None or tid in self.stored:
            return
        self.preamble.uses(tensor.dtype)
        buffer = self.args.write(tensor)
        value = self.values[tid]
        offset = self.domain.dense_offset(tensor, self.linear)
        statement, helpers = self.policy.store(tensor.dtype, buffer, offset, value.text,
                                               value.kind)
        self.preamble.need(helpers)
        guard = None if self.domain.covers(tensor) else self.domain.owner_guard(tensor)
        self.lines.append(f"if ({guard}) {statement}" if guard else statement)
        self.stored.append(tid)

    def temp(self, expr: str, kind: Kind) -> str:
        name = self.args.fresh("e")
        self.lines.append(f"const {'float' if kind == 'float' else 'long'} {name} = {expr};")
        return name


def emit_epilogue(ops: Sequence[Op], *, domain: Domain, policy: TypePolicy,
                  preamble: Preamble, given: Mapping[int, Value] | None = None,
                  outputs: Sequence[LogicalTensor] = (), acc: str | None = None,
                  linear: str | None = None) -> EpilogueCode:
    """Generate the statements for `ops` (element-wise ops, any order) at `domain`'s index;
    the parameters they need go to ``domain.args``.

    `given`: registers already computed by the caller (the main op's output: ``{dst.id:
    Value("acc")}``); every other operand must be a partition input or an output of `ops`.
    `outputs`: tensors to store (dense, in their dtype) once computed, typically the
    partition's outputs. `acc`: when given, the last value is also assigned to this variable
    (``acc = v7;``), so a template can keep using its accumulator. `linear`: a C expression of
    the domain's linear index (a lazy domain brings its own), the offset of every dense tensor
    that covers the domain, loaded or stored.
    Raises what `check_chain` raises for the chain (an op without a table entry, an
    unsupported dtype, a tensor that does not broadcast into the domain ...) before
    generating anything.
    """
    check_chain(ops, domain.shape, given={tid: v.kind for tid, v in (given or {}).items()},
                outputs=outputs)
    emitter = _Emitter(ops, domain, policy, preamble, given or {}, outputs, linear)
    emitter.run()
    if emitter.ops:
        last = emitter.ops[-1].outputs[0].id
        result = emitter.values[last]
    else:
        result = next(iter((given or {}).values()))
    if acc is not None and result.text != acc:
        emitter.lines.append(f"{acc} = {policy.as_float(result.text, result.kind)};")
    return EpilogueCode("\n".join(emitter.lines), dict(emitter.values), result,
                        tuple(emitter.stored))
