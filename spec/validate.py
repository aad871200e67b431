"""Graph validation: one generic checker that applies the op schemas to a graph.

`finalize_ops` is what `Graph.finalize()` runs. It checks, in this order, and stops at the
first broken rule with a `GraphError` subclass naming the op, the port or attribute and the
rule id:

1. graph settings (``engine_kind``, ``fpmath_mode``) and structure: unique op ids, one producer
   per tensor, one dtype per tensor id, no cycle;
2. per op: a kind oneDNN defines (kinds outside the pages pass with an `OutsideSpecWarning`),
   arity, attributes (unknown, missing, wrong kind, value not allowed; defaults filled in),
   dtypes (per port, shared symbols, the page's dtype rows), extra constraints;
3. shapes, in topological order: inferred outputs must agree with declared ones; unknown dims
   are filled from inference in the returned graph.
"""

from __future__ import annotations

import math
import warnings
from collections import deque
from collections.abc import Mapping, Sequence

from .errors import (
    ArityError,
    AttributeRuleError,
    DTypeRuleError,
    GraphError,
    GraphRule,
    ShapeRuleError,
    TopologyError,
    UnknownOpError,
)
from .ir import AttrValue, LogicalTensor, Op
from .opschemas import OPAQUE_KINDS, SCHEMAS
from .schema import AttrKind, InferenceFailure, OpSchema, Shape

__all__ = ["finalize_ops", "validate_op", "OutsideSpecWarning", "ENGINE_KINDS", "FPMATH_MODES",
           "topological_order", "merge_shapes"]

ENGINE_KINDS = ("cpu", "gpu")
FPMATH_MODES = ("strict", "bf16", "f16", "tf32", "any")


class OutsideSpecWarning(UserWarning):
    """An op kind oneDNN defines but the spec pages do not name."""


def finalize_ops(ops: Sequence[Op], *, engine_kind: str, fpmath_mode: str) -> list[Op]:
    """The ops of a graph, validated, with schema defaults filled in and shapes inferred
    (what `Graph.finalize()` runs; see the module docstring)."""
    if engine_kind not in ENGINE_KINDS:
        raise GraphError(f"engine_kind {engine_kind!r} is not one of {ENGINE_KINDS}",
                         rule=GraphRule.engine_kind, where="graph")
    if fpmath_mode not in FPMATH_MODES:
        raise GraphError(f"fpmath_mode {fpmath_mode!r} is not one of {FPMATH_MODES}",
                         rule=GraphRule.fpmath_mode, where="graph")
    _check_structure(ops)
    order = topological_order(ops)
    checked = [validate_op(op) for op in ops]
    by_id = {op.id: op for op in checked}
    shapes = _infer_shapes([by_id[op.id] for op in order], ops)
    return [_with_shapes(op, shapes) for op in checked]


def _is_int(value: object) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)


def _check_types(ops: Sequence[Op]) -> None:
    """Ids and dims are integers (a graph built in Python may hold anything)."""
    for op in ops:
        if not _is_int(op.id):
            raise TopologyError(f"op id {op.id!r} is not an integer", rule=GraphRule.value_types,
                                op_kind=op.kind if isinstance(op.kind, str) else None)
        for port, t in enumerate((*op.inputs, *op.outputs)):
            side = "input" if port < len(op.inputs) else "output"
            where = f"{side} {port if side == 'input' else port - len(op.inputs)}"
            if not _is_int(t.id):
                raise TopologyError(f"tensor id {t.id!r} is not an integer",
                                    rule=GraphRule.value_types, op_id=op.id, op_kind=op.kind,
                                    where=where)
            for name in ("shape", "strides"):
                dims = getattr(t, name)
                if dims is not None and not all(_is_int(d) for d in dims):
                    raise TopologyError(f"tensor {t.id} {name} {list(dims)} holds a non-integer",
                                        rule=GraphRule.value_types, op_id=op.id,
                                        op_kind=op.kind, where=where)


def _check_structure(ops: Sequence[Op]) -> None:
    _check_types(ops)
    seen_ops: set[int] = set()
    producer: dict[int, int] = {}
    dtype_of: dict[int, tuple[LogicalTensor, int]] = {}
    for op in ops:
        if op.id in seen_ops:
            raise TopologyError(f"op id {op.id} is used by two ops", rule=GraphRule.op_id_unique,
                                op_id=op.id, op_kind=op.kind)
        seen_ops.add(op.id)
        for port, t in enumerate(op.outputs):
            if t.id in producer:
                raise TopologyError(
                    f"tensor {t.id} is produced by op {producer[t.id]} and again here",
                    rule=GraphRule.one_producer, op_id=op.id, op_kind=op.kind,
                    where=f"output {port}")
            producer[t.id] = op.id
        for t in (*op.inputs, *op.outputs):
            if t.id in dtype_of:
                first, first_op = dtype_of[t.id]
                if first.dtype != t.dtype:
                    raise TopologyError(
                        f"tensor {t.id} is {t.dtype} here but {first.dtype} at op {first_op}",
                        rule=GraphRule.tensor_consistent, op_id=op.id, op_kind=op.kind)
                try:
                    merge_shapes(first.shape, t.shape)
                except InferenceFailure:
                    raise TopologyError(
                        f"tensor {t.id} has shape {_fmt(t.shape)} here but {_fmt(first.shape)}"
                        f" at op {first_op}", rule=GraphRule.tensor_consistent, op_id=op.id,
                        op_kind=op.kind) from None
            else:
                dtype_of[t.id] = (t, op.id)


def topological_order(ops: Sequence[Op]) -> list[Op]:
    """Ops with producers before consumers (ties broken by position); raises on a cycle."""
    producer = {t.id: op.id for op in ops for t in op.outputs}
    consumers: dict[int, list[Op]] = {}
    for op in ops:
        for t in op.inputs:
            consumers.setdefault(t.id, []).append(op)
    indegree = {op.id: len({producer[t.id] for t in op.inputs if t.id in producer})
                for op in ops}
    ready = deque(op for op in ops if indegree[op.id] == 0)
    order: list[Op] = []
    while ready:
        op = ready.popleft()
        order.append(op)
        # Successors by output port, then in op order, each once.
        successors = {c.id: c for t in op.outputs for c in consumers.get(t.id, ())}
        for succ in successors.values():
            indegree[succ.id] -= 1
            if indegree[succ.id] == 0:
                ready.append(succ)
    if len(order) != len(ops):
        stuck = sorted(op_id for op_id, d in indegree.items() if d > 0)
        kind = next(op.kind for op in ops if op.id == stuck[0])
        raise TopologyError(f"the graph has a cycle through ops {stuck}", rule=GraphRule.acyclic,
                            op_id=stuck[0], op_kind=kind)
    return order


def validate_op(op: Op) -> Op:
    """Check one op against its schema; return it with default attributes filled in."""
    schema = SCHEMAS.get(op.kind)
    if schema is None:
        if op.kind in OPAQUE_KINDS:
            warnings.warn(OutsideSpecWarning(
                f"op {op.id} ({op.kind}) is outside the spec: never fused, not executed by "
                "the reference"), stacklevel=3)
            return op
        raise UnknownOpError(f"{op.kind!r} is not a oneDNN op kind", rule=GraphRule.kind,
                             op_id=op.id, op_kind=op.kind)
    _check_arity(op, schema)
    attrs = _check_attrs(op, schema)
    op = Op(op.id, op.kind, op.inputs, op.outputs, attrs, op.name)
    _check_dtypes(op, schema)
    for constraint in schema.constraints:
        problem = constraint.check(op)
        if problem is not None:
            error = DTypeRuleError if constraint.rule.startswith("schema.dtype") else (
                AttributeRuleError)
            raise error(problem, rule=constraint.rule, op_id=op.id, op_kind=op.kind)
    return op


def _check_arity(op: Op, schema: OpSchema) -> None:
    for side, rule, got, allowed in (
            ("inputs", GraphRule.arity_inputs, len(op.inputs), schema.input_counts),
            ("outputs", GraphRule.arity_outputs, len(op.outputs), schema.allowed_output_counts)):
        if got not in allowed:
            counts = " or ".join(str(n) for n in sorted(allowed))
            raise ArityError(f"{op.kind} takes {counts} {side}, got {got}",
                             rule=rule, op_id=op.id, op_kind=op.kind)


def _check_attrs(op: Op, schema: OpSchema) -> dict[str, AttrValue]:
    attrs: dict[str, AttrValue] = {}
    for name, value in op.attrs.items():
        spec = schema.attr_spec(name)
        where = f"attribute {name}"
        if spec is None:
            known = ", ".join(a.name for a in schema.attrs) or "none"
            raise AttributeRuleError(f"{op.kind} has no attribute {name!r} (it has: {known})",
                                     rule=GraphRule.attr_unknown, op_id=op.id, op_kind=op.kind,
                                     where=where)
        if not spec.kind.accepts(value):
            raise AttributeRuleError(f"expected {spec.kind.value}, got {value!r}",
                                     rule=GraphRule.attr_type, op_id=op.id, op_kind=op.kind,
                                     where=where)
        if spec.allowed is not None and value not in spec.allowed:
            allowed = ", ".join(repr(a) for a in spec.allowed)
            raise AttributeRuleError(f"{value!r} is not one of {allowed}",
                                     rule=GraphRule.attr_value, op_id=op.id, op_kind=op.kind,
                                     where=where)
        if spec.kind in (AttrKind.f32, AttrKind.f32_list) and not _finite(value):
            raise AttributeRuleError(f"{value!r} is not finite", rule=GraphRule.attr_finite,
                                     op_id=op.id, op_kind=op.kind, where=where)
        wrong = spec.out_of_range(value)
        if wrong is not None:
            raise AttributeRuleError(wrong, rule=GraphRule.attr_range, op_id=op.id,
                                     op_kind=op.kind, where=where)
        attrs[name] = spec.kind.normalize(value)
    for spec in schema.attrs:
        if spec.name in attrs:
            continue
        if spec.required:
            raise AttributeRuleError(f"required attribute {spec.name!r} is missing",
                                     rule=GraphRule.attr_required, op_id=op.id,
                                     op_kind=op.kind, where=f"attribute {spec.name}")
        if spec.default is not None:
            attrs[spec.name] = spec.default
    return attrs


def _finite(value: AttrValue) -> bool:
    values = value if isinstance(value, tuple) else (value,)
    return all(math.isfinite(v) for v in values if isinstance(v, int | float))


def _check_dtypes(op: Op, schema: OpSchema) -> None:
    bound: dict[str, tuple[str, str]] = {}
    ports = [("input", i, p, t) for i, (p, t) in enumerate(zip(schema.inputs, op.inputs))]
    ports += [("output", i, p, t) for i, (p, t) in enumerate(zip(schema.outputs, op.outputs))]
    for side, index, port, tensor in ports:
        where = f"{side} {index} ({port.name})"
        allowed = schema.types[port.symbol]
        if tensor.dtype not in allowed:
            names = ", ".join(sorted(d.value for d in allowed))
            raise DTypeRuleError(f"dtype {tensor.dtype} is not allowed (allowed: {names})",
                                 rule=GraphRule.dtype_port, op_id=op.id, op_kind=op.kind,
                                 where=where)
        if port.symbol in bound and bound[port.symbol][0] != tensor.dtype:
            other_dtype, other_where = bound[port.symbol]
            raise DTypeRuleError(
                f"dtype {tensor.dtype} differs from {other_dtype} at {other_where}; both are "
                f"type {port.symbol}", rule=GraphRule.dtype_unify, op_id=op.id,
                op_kind=op.kind, where=where)
        bound.setdefault(port.symbol, (tensor.dtype, where))
    if schema.dtype_rows:
        present = {p.name: t.dtype for _, _, p, t in ports}
        if not any(all(present[n] in row[n] for n in row if n in present)
                   for row in schema.dtype_rows):
            combo = ", ".join(f"{n}={d}" for n, d in present.items())
            raise DTypeRuleError(f"the combination {combo} is not a row of {op.kind}'s "
                                 "supported data types", rule=GraphRule.dtype_row,
                                 op_id=op.id, op_kind=op.kind)


def merge_shapes(a: Shape, b: Shape) -> Shape:
    """The most-known shape compatible with both; raise InferenceFailure if they clash."""
    if a is None:
        return b
    if b is None:
        return a
    if len(a) != len(b) or any(x >= 0 and y >= 0 and x != y for x, y in zip(a, b)):
        raise InferenceFailure(f"{_fmt(a)} vs {_fmt(b)}")
    return tuple(x if x >= 0 else y for x, y in zip(a, b))


def _fmt(shape: Shape) -> str:
    if shape is None:
        return "unknown"
    return "[" + ", ".join(str(d) if d >= 0 else "?" for d in shape) + "]"


def _infer_shapes(order: Sequence[Op], ops: Sequence[Op]) -> dict[int, Shape]:
    shapes: dict[int, Shape] = {}
    for op in ops:
        for t in (*op.inputs, *op.outputs):
            shapes[t.id] = merge_shapes(shapes.get(t.id), t.shape)
    for op in order:
        schema = SCHEMAS.get(op.kind)
        if schema is None or schema.infer is None:
            continue
        ins = [shapes[t.id] for t in op.inputs]
        try:
            inferred = schema.infer(op, ins)
        except InferenceFailure as exc:
            raise ShapeRuleError(str(exc), rule=GraphRule.shape_infer, op_id=op.id,
                                 op_kind=op.kind, where=exc.where) from None
        for port, (t, shape) in enumerate(zip(op.outputs, inferred)):
            try:
                shapes[t.id] = merge_shapes(shapes[t.id], shape)
            except InferenceFailure:
                raise ShapeRuleError(
                    f"declared shape {_fmt(t.shape)} contradicts the inferred {_fmt(shape)}",
                    rule=GraphRule.shape_output, op_id=op.id, op_kind=op.kind,
                    where=f"output {port}") from None
    return shapes


def _with_shapes(op: Op, shapes: Mapping[int, Shape]) -> Op:
    def refine(t: LogicalTensor) -> LogicalTensor:
        shape = shapes.get(t.id, t.shape)
        return t if shape == t.shape or shape is None else t.with_shape(shape)
    return Op(op.id, op.kind, tuple(map(refine, op.inputs)), tuple(map(refine, op.outputs)),
              op.attrs, op.name)
