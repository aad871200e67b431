"""Two corners of the validation rules that one defect of the probing family
(`fusionspec.conformance.generate.probes`) never reaches, as items of the rule x setting
method (`fusionspec.conformance.generate.rule_settings`), which draws them:

- ``("ill-formed declared output shape", Kind)``: an op of ``Kind`` whose output is declared
  with a shape that contradicts inference, wherever the op sits in the pattern. The probes
  change only an output no other op reads (the last op's); here the tensor's shape changes at
  its producer and at every reader alike, so the graph stays consistent and the first check
  that fails is the producer's inference (a backend that trusts the declared shape of a base
  op, a Reduction's say, and infers only the last op's accepts the graph).
- ``("ill-formed below the lower bound", Kind.attr)``: an integer attribute (or the first
  value of an integer list) just outside the least value the validator accepts for that op:
  0 where 1 is the least (groups, strides, dilations, kernel sizes, sizes), -1 where 0 is
  (pads), ``-(rank + 1)`` where an axis may count from the end. The bound is the schema's
  ``minimum`` where it declares one; else it is found by probing: a candidate value that the
  validator refuses for that attribute (its error names the attribute) while it does not
  refuse the next value up for it (the op's outputs left to inference, so a value that only
  changes the output shape, or clashes with another part of the op, is not taken for a
  bound).

Each item comes with the defect that shows it and the rule the reference raises for it, at
the op changed (checked on the whole graph, so no other op's check comes first).
"""

from __future__ import annotations

import itertools
from collections.abc import Callable, Container, Iterator, Sequence
from dataclasses import replace

from fusionspec.spec.attrs import attr_value_or_none
from fusionspec.spec.errors import GraphError, GraphRule
from fusionspec.spec.graph import Graph, LogicalTensor, Op
from fusionspec.spec.opschemas import SCHEMAS
from fusionspec.spec.schema import AttrKind, AttrSpec

from .model import Item
from .probes import Defect, rebuilt

__all__ = ["OUTPUT_SHAPE", "BELOW_BOUND", "corner_examples", "bound_candidates"]

OUTPUT_SHAPE = "ill-formed declared output shape"
BELOW_BOUND = "ill-formed below the lower bound"
_INTEGERS = (AttrKind.s64, AttrKind.s64_list)

#: Per op signature, the (attribute, value just below its bound) pairs found by probing.
_BOUNDS: dict[str, tuple[tuple[str, int], ...]] = {}


def _reshaped(graph: Graph, tid: int, shape: tuple[int, ...]) -> Graph:
    """`graph` with tensor `tid` declared of `shape` wherever it appears."""
    def fix(ts: Sequence[LogicalTensor]) -> tuple[LogicalTensor, ...]:
        return tuple(replace(t, shape=shape, strides=None) if t.id == tid else t for t in ts)
    return graph.replace_ops([rebuilt(o, inputs=fix(o.inputs), outputs=fix(o.outputs))
                              for o in graph.ops])


def _output_defect(op: Op) -> Defect | None:
    """Op `op`'s first output declared one longer in its first dim (a scalar: of shape [2]),
    at the producer and every reader."""
    if not op.outputs or op.outputs[0].shape is None:
        return None
    out = op.outputs[0]
    shape = out.shape or ()
    wrong = (shape[0] + 1, *shape[1:]) if shape else (2,)
    return Defect(op.id, f"output 0 declared {list(wrong)} at its producer and readers",
                  lambda graph: _reshaped(graph, out.id, wrong))


def _with_value(op: Op, spec: AttrSpec, value: int) -> Op | None:
    """`op` with `spec` set to `value` (an integer list: its first value), or None where the
    op holds no such value to change."""
    given = attr_value_or_none(op, spec.name)
    if spec.kind is AttrKind.s64_list:
        if not isinstance(given, tuple) or not given:
            return None
        return rebuilt(op, attrs={**op.attrs, spec.name: (value, *given[1:])})
    if given is None or isinstance(given, tuple):
        return None
    return rebuilt(op, attrs={**op.attrs, spec.name: value})


def bound_candidates(spec: AttrSpec, rank: int) -> tuple[int, ...]:
    """The values just below a lower bound an integer attribute may have: the schema's
    minimum less one where it declares one; else 0, -1 and -(rank + 1) (an axis counted from
    the end), largest first."""
    if spec.minimum is not None:
        return (int(spec.minimum) - 1,)
    return tuple(sorted({0, -1, -(rank + 1)}, reverse=True))


def _refused_at(graph: Graph, op: Op, name: str) -> bool:
    """Whether `op` (in the place of the op of its id in `graph`, which holds it and the
    producers of its inputs), its outputs left to inference, is refused for its attribute
    `name`: an error that names the attribute (a check of another part of the op, one the
    value only makes fail, is no bound of the attribute)."""
    free = rebuilt(op, outputs=tuple(replace(t, shape=None, strides=None) for t in op.outputs))
    try:
        graph.replace_ops([free if o.id == op.id else o for o in graph.ops]).finalize()
    except GraphError as exc:
        return exc.where == f"attribute {name}" or (exc.where is None and name in exc.detail)
    except Exception:  # another error, or a crash: no bound to draw
        return False
    return False


def _local(graph: Graph, op: Op) -> Graph:
    near = {graph.producers[t.id][0].id for t in op.inputs if t.id in graph.producers}
    return Graph([o for o in graph.ops if o.id in near or o.id == op.id],
                 engine_kind=graph.engine_kind, fpmath_mode=graph.fpmath_mode)


def _bounds(graph: Graph, op: Op, signature: str) -> tuple[tuple[str, int], ...]:
    if signature in _BOUNDS:
        return _BOUNDS[signature]
    local = _local(graph, op)
    rank = len(op.inputs[0].shape or ()) if op.inputs else 0
    found: list[tuple[str, int]] = []
    for spec in SCHEMAS[op.kind].attrs:
        if spec.kind not in _INTEGERS:
            continue
        for value in bound_candidates(spec, rank):
            below, at = _with_value(op, spec, value), _with_value(op, spec, value + 1)
            if below is None or at is None:
                break
            if _refused_at(local, below, spec.name) and not _refused_at(local, at, spec.name):
                found.append((spec.name, value))
                break
    _BOUNDS[signature] = tuple(found)
    return _BOUNDS[signature]


def _rule_at(graph: Graph, defect: Defect) -> str | None:
    """The rule the whole of `graph` with `defect` breaks, where it breaks it at the op the
    defect changes (None otherwise: valid, or another op's check first)."""
    try:
        defect.apply(graph).finalize()
    except GraphError as exc:
        return str(exc.rule) if exc.op_id == defect.op_id else None
    except Exception:  # a crash is no example to draw
        return None
    return None


def _attribute_form(graph: Graph, op: Op) -> Graph | None:
    """`graph` with `op` taking the axes it reads from an input (a reduction's) from its
    attribute instead, the first set of axes of its src that keeps the graph valid: the
    validator infers the output shape only from the attribute (from the input it reads the
    declared shape); None where `op` has no such input or no set of axes fits."""
    ports = [p for p, spec in enumerate(SCHEMAS[op.kind].inputs) if spec.name == "axes"
             and SCHEMAS[op.kind].attr_spec("axes") is not None and p < len(op.inputs)]
    shape = op.inputs[0].shape if op.inputs else None
    if not ports or shape is None or op.inputs[ports[0]].id in graph.producers:
        return None
    inputs = tuple(t for p, t in enumerate(op.inputs) if p != ports[0])
    for size in range(1, len(shape) + 1):
        for axes in itertools.combinations(range(len(shape)), size):
            changed = rebuilt(op, inputs=inputs, attrs={**op.attrs, "axes": axes})
            varied = graph.replace_ops([changed if o.id == op.id else o for o in graph.ops])
            try:
                varied.finalize()
            except Exception:  # not these axes (or no valid form at all): try the next
                continue
            return varied
    return None


def _output_example(forms: tuple[Graph, ...], op_id: int) -> tuple[Graph, Defect] | None:
    """A graph of `forms` and the wrong declared output shape of op `op_id` in it that the
    validator rejects by comparing it with the shape it infers (schema.shape.output)."""
    for form in forms:
        defect = _output_defect(form.op_by_id[op_id])
        if defect is not None and _rule_at(form, defect) == GraphRule.shape_output:
            return form, defect
    return None


def corner_examples(graph: Graph, op: Op, signature: str, taken: Container[Item],
                    ) -> Iterator[tuple[Item, Graph, Defect, str, bool]]:
    """The items of this module `op` of `graph` shows and `taken` does not hold, each with
    the graph it is made in (`graph`, or its `_attribute_form`), its defect, the rule it
    breaks and whether it is the better example of its item (a wrong output shape on an op
    whose output another op reads: the probes already change the last op's); `signature` is
    what the bounds of the op depend on."""
    if op.kind not in SCHEMAS:
        return
    other = _attribute_form(graph, op)
    forms = (graph,) if other is None else (graph, other)
    item = (OUTPUT_SHAPE, op.kind)
    if item not in taken:
        found = _output_example(forms, op.id)
        if found is not None:
            inner = bool(op.outputs) and op.outputs[0].id in graph.consumers
            yield item, found[0], found[1], GraphRule.shape_output, inner
    for form, sig in zip(forms, (signature, f"{signature}|axes attribute")):
        changed_op = form.op_by_id[op.id]
        for name, value in _bounds(form, changed_op, sig):
            item = (BELOW_BOUND, f"{op.kind}.{name}")
            spec = SCHEMAS[op.kind].attr_spec(name)
            changed = _with_value(changed_op, spec, value) if spec is not None else None
            if item in taken or changed is None:
                continue
            where = "first value" if spec is not None and spec.kind is AttrKind.s64_list \
                else "="
            defect = Defect(op.id, f"attribute {name} {where} {value}", _put(changed))
            rule = _rule_at(form, defect)
            if rule is not None:
                yield item, form, defect, rule, True


def _put(op: Op) -> Callable[[Graph], Graph]:
    def apply(graph: Graph) -> Graph:
        return graph.replace_ops([op if o.id == op.id and o.kind == op.kind else o
                                  for o in graph.ops])
    return apply

