"""Probing the validator: which rule each one-change defect of a graph breaks, and under which
settings of the op it touches.

Nothing here names a rule. A *defect* is one small change to one op of a valid graph, made
from a generic family that knows only what a graph can hold (`defects`): a graph input or an
unread graph output of another data type, shape (a dim one larger, a dim of 1, one dim fewer
or more), an attribute removed, given a value outside its allowed strings, a list one longer or
shorter or with a zero or negative first element, a number turned negative, zero, NaN or a
string or large, an attribute the op does not have, one input more or fewer, the free inputs
of one type symbol retyped together, a tensor retyped at one reader only or written again by
its reader, an op id reused. `outcome` runs `Graph.finalize()` on the changed graph and
returns the rule id it raises (None when the graph is still valid).

A *setting* is what the op reads besides the defect: the value in effect of each of its
attributes with enumerated values (allowed strings, booleans), the data type of each input it
reads from the graph, and whether each optional input is present (`settings_of`). A
*variation* changes one setting of one op and keeps the graph valid (`variations`). Comparing
each defect's outcome on the graph and on each variation tells which settings a rule reads:
where the same defect breaks a rule under one value and not under another, the rule checks
something that moves with that setting (`fusionspec.conformance.generate.rule_settings`).
"""

from __future__ import annotations

import math
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass

from fusionspec.spec.attrs import attr_value_or_none
from fusionspec.spec.dtypes import DataType
from fusionspec.spec.errors import FusionspecError, GraphError
from fusionspec.spec.graph import AttrValue, Graph, LogicalTensor, Op
from fusionspec.spec.opschemas import SCHEMAS
from fusionspec.spec.schema import AttrKind

from .pairs import value_text

__all__ = ["Defect", "defects", "outcome", "settings_of", "variations", "free_inputs",
           "OFFERED_TYPES", "with_op", "rebuilt", "set_input", "set_output"]

D = DataType
#: The data types a defect may give a port: every type a port of the pages' ops can hold.
OFFERED_TYPES = (D.f32, D.bf16, D.f16, D.u8, D.s8, D.s32, D.boolean, D.f8_e4m3)
#: A string no enumerated attribute allows.
_BAD_STRING = "not_a_value"
#: An attribute name no op of the pages has.
_STRAY = "stray_attribute"


@dataclass(frozen=True)
class Defect:
    """One change to op `op_id`: `name` identifies it independently of the graph's values
    (``input 1 dim -1 +1``), so the same defect can be made on a variation of the graph."""

    op_id: int
    name: str
    apply: Callable[[Graph], Graph]


def with_op(graph: Graph, op: Op) -> Graph:
    """`graph` with `op` in the place of the op of its id."""
    return graph.replace_ops([op if o.id == op.id else o for o in graph.ops])


def rebuilt(op: Op, *, inputs: tuple[LogicalTensor, ...] | None = None,
             outputs: tuple[LogicalTensor, ...] | None = None,
             attrs: dict[str, AttrValue] | None = None, op_id: int | None = None) -> Op:
    """`op` with the given parts replaced."""
    return Op(op.id if op_id is None else op_id, op.kind,
              op.inputs if inputs is None else inputs,
              op.outputs if outputs is None else outputs,
              dict(op.attrs) if attrs is None else attrs, op.name)


def _retyped(t: LogicalTensor, dtype: DataType | None = None,
             shape: tuple[int, ...] | None = None) -> LogicalTensor:
    return LogicalTensor(t.id, dtype or t.dtype, t.shape if shape is None else shape,
                         None, t.layout_type, t.property_type)


def free_inputs(graph: Graph, op: Op) -> list[int]:
    """The input ports of `op` holding a graph input that no other port of the graph reads."""
    return [port for port, t in enumerate(op.inputs)
            if t.id not in graph.producers and len(graph.consumers[t.id]) == 1]


def _free_outputs(graph: Graph, op: Op) -> list[int]:
    return [port for port, t in enumerate(op.outputs) if t.id not in graph.consumers]


def set_input(op: Op, port: int, t: LogicalTensor) -> Op:
    inputs = list(op.inputs)
    inputs[port] = t
    return rebuilt(op, inputs=tuple(inputs))


def set_output(op: Op, port: int, t: LogicalTensor) -> Op:
    outputs = list(op.outputs)
    outputs[port] = t
    return rebuilt(op, outputs=tuple(outputs))


def _shape_changes(shape: tuple[int, ...]) -> Iterator[tuple[str, tuple[int, ...]]]:
    """(name, shape) of each shape defect; dims are named from the end, so that the same name
    means the same change whatever the rank."""
    for i, d in enumerate(shape):
        back = i - len(shape)
        yield f"dim {back} +1", (*shape[:i], d + 1, *shape[i + 1:])
        if d != 1:
            yield f"dim {back} =1", (*shape[:i], 1, *shape[i + 1:])
    if shape:
        yield "rank -1", shape[1:]
    yield "rank +1", (1, *shape)


def _tensor_defects(graph: Graph, op: Op) -> Iterator[Defect]:
    for port in free_inputs(graph, op):
        t = op.inputs[port]
        for dtype in OFFERED_TYPES:
            if dtype != t.dtype:
                yield Defect(op.id, f"input {port} dtype {dtype}",
                             _change(set_input(op, port, _retyped(t, dtype))))
        for name, shape in _shape_changes(t.shape or ()):
            yield Defect(op.id, f"input {port} {name}",
                         _change(set_input(op, port, _retyped(t, shape=shape))))
    for port in _free_outputs(graph, op):
        t = op.outputs[port]
        for dtype in OFFERED_TYPES:
            if dtype != t.dtype:
                yield Defect(op.id, f"output {port} dtype {dtype}",
                             _change(set_output(op, port, _retyped(t, dtype))))
        if t.shape:
            wrong = (t.shape[0] + 1, *t.shape[1:])
            yield Defect(op.id, f"output {port} dim 0 +1",
                         _change(set_output(op, port, _retyped(t, shape=wrong))))
    yield from _symbol_defects(graph, op)
    for port, t in enumerate(op.inputs):
        if t.id in graph.producers:
            # The tensor it reads, written by this op too: a second producer.
            yield Defect(op.id, "output 0 is the tensor it reads",
                         _change(set_output(op, 0, _retyped(t, op.outputs[0].dtype,
                                                             t.shape))))
            # The tensor read here with another type than its producer wrote.
            other = D.bf16 if t.dtype != D.bf16 else D.f32
            yield Defect(op.id, f"input {port} retyped at its reader",
                         _change(set_input(op, port, _retyped(t, other))))


def _symbol_defects(graph: Graph, op: Op) -> Iterator[Defect]:
    """Every free input that shares a type symbol with another, retyped together (a check
    of the types the symbol may take together, which one input retyped alone never reaches:
    it breaks the symbol's unity first)."""
    schema = SCHEMAS[op.kind]
    by_symbol: dict[str, list[int]] = {}
    for port in free_inputs(graph, op):
        if port < len(schema.inputs):
            by_symbol.setdefault(schema.inputs[port].symbol, []).append(port)
    for symbol, ports in sorted(by_symbol.items()):
        if len(ports) < 2:
            continue
        for dtype in OFFERED_TYPES:
            changed = op
            for port in ports:
                changed = set_input(changed, port, _retyped(op.inputs[port], dtype))
            if changed != op:
                yield Defect(op.id, f"inputs of type {symbol} all {dtype}", _change(changed))


def _list_changes(value: tuple[int | float, ...]) -> Iterator[tuple[str, AttrValue]]:
    if value:
        yield "one value more", (*value, value[-1])
        yield "one value fewer", value[:-1]
        yield "first value 0", (type(value[0])(0), *value[1:])
        yield "first value -1", (type(value[0])(-1), *value[1:])
    else:
        yield "one value", (1,)


def _attr_defects(op: Op) -> Iterator[Defect]:
    schema = SCHEMAS[op.kind]
    for spec in schema.attrs:
        given = spec.name in op.attrs
        value = attr_value_or_none(op, spec.name)
        changes: list[tuple[str, AttrValue | None]] = []
        if given:
            changes.append(("removed", None))
        if spec.allowed is not None:
            changes.append(("outside its values", _BAD_STRING))
        elif spec.kind in (AttrKind.s64_list, AttrKind.f32_list) and isinstance(value, tuple):
            changes += list(_list_changes(value))
        elif spec.kind in (AttrKind.s64, AttrKind.f32):
            changes += [("negative", -1 if spec.kind is AttrKind.s64 else -1.0),
                        ("zero", 0 if spec.kind is AttrKind.s64 else 0.0),
                        ("large", 1000 if spec.kind is AttrKind.s64 else 1000.0)]
            if spec.kind is AttrKind.f32:
                changes.append(("not finite", math.nan))
            changes.append(("a string", _BAD_STRING))
        for words, new in changes:
            attrs = {k: v for k, v in op.attrs.items() if k != spec.name}
            if new is not None:
                attrs[spec.name] = new
            yield Defect(op.id, f"attribute {spec.name} {words}",
                         _change(rebuilt(op, attrs=attrs)))
    yield Defect(op.id, "an attribute it does not have",
                 _change(rebuilt(op, attrs={**op.attrs, _STRAY: 1})))


def _arity_defects(graph: Graph, op: Op) -> Iterator[Defect]:
    fresh = max(t.id for o in graph.ops for t in (*o.inputs, *o.outputs)) + 1
    extra = LogicalTensor(fresh, op.inputs[0].dtype, op.inputs[0].shape) if op.inputs else (
        LogicalTensor(fresh, D.f32, (1,)))
    yield Defect(op.id, "one input more",
                 _change(rebuilt(op, inputs=(*op.inputs, extra))))
    if op.inputs:
        yield Defect(op.id, "one input fewer", _change(rebuilt(op, inputs=tuple(op.inputs[:-1]))))
    spare = LogicalTensor(fresh, op.outputs[0].dtype, op.outputs[0].shape)
    yield Defect(op.id, "one output more",
                 _change(rebuilt(op, outputs=(*op.outputs, spare))))
    # The id of the op that produces one of its inputs (one the defect's check will see).
    near = [graph.producers[t.id][0] for t in op.inputs if t.id in graph.producers]
    if near:
        yield Defect(op.id, "the id of the op before it",
                     _change(rebuilt(op, op_id=near[0].id), keep_id=op.id))


def _change(op: Op, keep_id: int | None = None) -> Callable[[Graph], Graph]:
    """Apply: put `op` in the place of the op of its id (or of `keep_id`)."""
    target = op.id if keep_id is None else keep_id

    def apply(graph: Graph) -> Graph:
        return graph.replace_ops([op if o.id == target and o.kind == op.kind else o
                                  for o in graph.ops])
    return apply


def defects(graph: Graph, op: Op) -> list[Defect]:
    """Every defect of the generic family that can be made on `op` of `graph`."""
    if op.kind not in SCHEMAS:
        return []
    return [*_tensor_defects(graph, op), *_attr_defects(op), *_arity_defects(graph, op)]


def _local(graph: Graph, op_id: int) -> Graph:
    """The op `op_id` with the producers of its inputs: every tensor a defect of the op can
    touch is declared there, so the rule the whole graph breaks is the one this part breaks
    (and it validates in a fraction of the time)."""
    op = graph.op_by_id[op_id]
    near = {graph.producers[t.id][0].id for t in op.inputs if t.id in graph.producers}
    return Graph([o for o in graph.ops if o.id in near or o.id == op_id],
                 engine_kind=graph.engine_kind, fpmath_mode=graph.fpmath_mode)


def outcome(graph: Graph, defect: Defect) -> str | None:
    """The rule `Graph.finalize()` raises on `graph` with `defect` (None: still valid; ``?``
    when it raises an error without a rule)."""
    changed = defect.apply(_local(graph, defect.op_id))
    try:
        changed.finalize()
    except GraphError as exc:
        return str(exc.rule)
    except FusionspecError:
        return "?"
    except Exception as exc:  # a validator that crashes is a bug to name, not to hide
        return f"crash: {type(exc).__name__}: {exc}"
    return None


def settings_of(graph: Graph, op: Op) -> dict[str, str]:
    """The settings of `op` (see the module docstring), keyed ``Kind.what``."""
    schema = SCHEMAS[op.kind]
    found: dict[str, str] = {}
    for spec in schema.attrs:
        if spec.allowed is not None or spec.kind is AttrKind.boolean:
            value = attr_value_or_none(op, spec.name)
            if value is not None:
                found[f"{op.kind}.{spec.name}"] = value_text(value)
    for t, port_spec in zip(op.inputs, schema.inputs):
        if not port_spec.carries_shape:
            found[f"{op.kind}.{port_spec.name} dtype"] = t.dtype.value
    for port, port_spec in enumerate(schema.inputs):
        if port_spec.optional:
            found[f"{op.kind}.input {port_spec.name}"] = (
                "present" if port < len(op.inputs) else "absent")
    return found


def _retype_everywhere(graph: Graph, tid: int, dtype: DataType) -> Graph:
    """`graph` with tensor `tid` of `dtype` at its producer and at every reader."""
    def fix(ts: Sequence[LogicalTensor]) -> tuple[LogicalTensor, ...]:
        return tuple(_retyped(t, dtype) if t.id == tid else t for t in ts)
    return graph.replace_ops([rebuilt(o, inputs=fix(o.inputs), outputs=fix(o.outputs))
                              for o in graph.ops])


def _valid_outputs(graph: Graph, op_id: int) -> Graph:
    """`graph` as it is when valid; else with the first type of the op's free output that
    makes it valid (an input of another type may need a dst of another type: TypeCast must
    change the type)."""
    try:
        _around(graph, op_id).finalize()
        return graph
    except FusionspecError:
        pass
    op = graph.op_by_id[op_id]
    schema = SCHEMAS[op.kind]
    for port in _free_outputs(graph, op):
        if port >= len(schema.outputs):
            continue
        for dtype in sorted(schema.types[schema.outputs[port].symbol], key=lambda d: d.value):
            varied = with_op(graph, set_output(op, port, _retyped(op.outputs[port], dtype)))
            try:
                _around(varied, op_id).finalize()
            except FusionspecError:
                continue
            return varied
    return graph


def variations(graph: Graph, op: Op) -> Iterator[tuple[str, str, Graph]]:
    """(setting, its new value, the graph) for each valid graph that changes one setting of
    `op`: an enumerated attribute to another value; an input to another type its port allows
    (the tensor retyped at its producer and every reader, and with it every free input of the
    same type symbol); the last optional input dropped."""
    schema = SCHEMAS[op.kind]
    candidates: list[tuple[str, str, Graph]] = []
    for spec in schema.attrs:
        if spec.allowed is None and spec.kind is not AttrKind.boolean:
            continue
        current = attr_value_or_none(op, spec.name)
        values: tuple[AttrValue, ...] = spec.allowed or (False, True)
        for value in values:
            if value != current:
                changed = rebuilt(op, attrs={**op.attrs, spec.name: value})
                candidates.append((f"{op.kind}.{spec.name}", value_text(value),
                                   with_op(graph, changed)))
    free = free_inputs(graph, op)
    for port, t in enumerate(op.inputs):
        port_spec = schema.inputs[port] if port < len(schema.inputs) else None
        if port_spec is None or port_spec.carries_shape:
            continue
        same = [p for p in free if p != port and p < len(schema.inputs)
                and schema.inputs[p].symbol == port_spec.symbol]
        for dtype in sorted(schema.types[port_spec.symbol], key=lambda d: d.value):
            if dtype == t.dtype:
                continue
            varied = _retype_everywhere(graph, t.id, dtype)
            for p in same:
                varied = _retype_everywhere(varied, op.inputs[p].id, dtype)
            candidates.append((f"{op.kind}.{port_spec.name} dtype", dtype.value,
                               _valid_outputs(varied, op.id)))
    last = len(op.inputs) - 1
    if last > 0 and last < len(schema.inputs) and schema.inputs[last].optional \
            and last in free:
        candidates.append((f"{op.kind}.input {schema.inputs[last].name}", "absent",
                           with_op(graph, rebuilt(op, inputs=tuple(op.inputs[:-1])))))
    for setting, value, varied in candidates:
        try:
            _around(varied, op.id).finalize()
        except FusionspecError:
            continue
        yield setting, value, varied


def _around(graph: Graph, op_id: int) -> Graph:
    """The op `op_id`, the producers of its inputs and every other reader of them: all that a
    variation of the op (an attribute, an input retyped everywhere) can make invalid."""
    op = graph.op_by_id[op_id]
    ids = {t.id for t in op.inputs}
    near = {graph.producers[t][0].id for t in ids if t in graph.producers}
    near |= {reader.id for t in ids for reader, _ in graph.consumers.get(t, ())}
    return Graph([o for o in graph.ops if o.id in near or o.id == op_id],
                 engine_kind=graph.engine_kind, fpmath_mode=graph.fpmath_mode)
