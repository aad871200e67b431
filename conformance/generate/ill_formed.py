"""Ill-formed graphs: a valid pattern instance with one defect that `Graph.finalize()` rejects.

A valid instance is drawn, every defect that can be made in it is listed (`edits`), and one is
applied. Each defect is made so that the *first* check `finalize()` runs that fails is the one
named (`fusionspec.spec.validate` checks graph structure, then each op's arity, attributes and
dtypes, then shapes in topological order):

=========================  ==================================================================
rule                       the defect
=========================  ==================================================================
schema.dtype.port          a graph input (or output) gets a type its port does not allow (any
                           of them: u8, s8, s32, boolean, f32, bf16, f16)
schema.dtype.unify         a graph input gets another allowed type than the ports it shares a
                           type symbol with
schema.shape.output        a graph output's declared shape contradicts inference
schema.shape.infer         inputs or attributes that inference rejects: an operand that does
                           not broadcast, a bias or weights of the wrong size, an attribute
                           list of the wrong length, an axis out of range
schema.attr.required       a required attribute left out
schema.attr.value          a string attribute outside its allowed values
schema.attr.unknown        an attribute the op does not have
schema.arity.inputs        one input more than the op takes, or fewer than it needs
graph.acyclic              an op reads a tensor computed downstream of it (or its own output)
graph.tensor.one_producer  an op writes the tensor another op already produces
=========================  ==================================================================

The tensors a defect touches are graph inputs read by one op or graph outputs, so no other op
sees the change first.

Some rules check something that moves with an attribute: where a shape defect lies depends on
`LAYOUT_ATTRS` (a bias of the wrong size is checked against the channel axis that
``data_format`` names, a weights defect against the axis ``weights_format`` or ``transpose_b``
names). Each such (rule, op kind, attribute value) is a coverage item (`setting_items`: for
every op kind of the pattern that `_infer_edits` can give a defect, each value of each layout
attribute it has), recorded by the case (``ill-formed <rule> <Kind>.<attribute>``), and
`setting_cases` is their deterministic floor.
"""

from __future__ import annotations

import hashlib
import random
from collections.abc import Callable
from dataclasses import dataclass
from typing import cast

from hypothesis import HealthCheck, Phase, assume, given, seed, settings
from hypothesis import strategies as st

from fusionspec.spec.attrs import attr_value, attr_value_or_none
from fusionspec.spec.catalog import PatternEntry
from fusionspec.spec.catalog import entry as catalog_entry
from fusionspec.spec.categories import BINARY, REDUCTION
from fusionspec.spec.dtypes import DataType
from fusionspec.spec.errors import GraphRule
from fusionspec.spec.graph import AttrValue, Graph, LogicalTensor, Op
from fusionspec.spec.match import Role
from fusionspec.spec.opschemas import SCHEMAS
from fusionspec.spec.pattern_tree import op_kinds

from ..cases import Case, CaseKind
from .build import Built, build
from .dtypes import draw_dtype_plan, headline_dtype
from .ids import case_id, report_events
from .pairs import steered, value_text
from .plan import draw_skeleton, feature_keys
from .probes import rebuilt, set_input, with_op
from .stable import source_independent

__all__ = ["Defect", "Edit", "ILL_FORMED_RULES", "ill_formed", "edits", "LAYOUT_ATTRS",
           "SETTING_RULES", "INFER_EDIT_KINDS", "setting_items", "setting_cases"]

D = DataType
ILL_FORMED_RULES = (GraphRule.dtype_port, GraphRule.dtype_unify, GraphRule.shape_output,
                    GraphRule.shape_infer, GraphRule.attr_required, GraphRule.attr_value,
                    GraphRule.attr_unknown, GraphRule.arity_inputs, GraphRule.acyclic,
                    GraphRule.one_producer)

#: Attributes that say where an axis lies: a shape check looks at another axis under each
#: value.
LAYOUT_ATTRS = ("data_format", "weights_format", "transpose_a", "transpose_b")
#: The rules whose check moves with `LAYOUT_ATTRS`.
SETTING_RULES = (GraphRule.shape_infer,)
#: The op kinds `_infer_edits` can give a shape defect (an operand, a bias, weights, a stride
#: list, an axis, a size list).
INFER_EDIT_KINDS = frozenset({*BINARY, "BiasAdd", "Convolution", "ConvTranspose", "MatMul",
                              "AvgPool", "MaxPool", "SoftMax", "Interpolate", *REDUCTION})
#: Values a user might plausibly write that the schemas do not allow (by attribute, or by
#: op kind and attribute).
_BAD_VALUES: dict[str, str] = {
    "data_format": "NCHW", "auto_pad": "same_upper", "auto_broadcast": "bidirectional",
    "rounding_type": "round", "qtype": "per_axis", "coordinate_transformation_mode":
    "asymmetric", "accumulation_mode": "f64", "Interpolate.mode": "cubic",
    "GELU.mode": "tanh", "SoftMax.mode": "inf_as_nan", "ConvTranspose.weights_format": "OIX",
    "Convolution.weights_format": "IOX", "ConvolutionBackwardWeights.weights_format": "IOX",
}
#: The types a dtype.port defect may give a port: every one the port does not allow is
#: offered (an s8 operand of a float Multiply as much as a u8 one).
_OFFERED = (D.u8, D.s8, D.s32, D.boolean, D.f32, D.bf16, D.f16)
#: Attributes some ops have, to give ops that do not have them.
_STRAY: dict[str, AttrValue] = {"axis": 1, "data_format": "NCX", "epsilon": 1e-5,
                                "alpha": 0.5, "keep_dims": True, "transpose_a": True}


@dataclass(frozen=True)
class Edit:
    """One defect: the rule it breaks, a sentence that starts with the kind of the op it
    changes, and how to make it."""

    rule: str
    words: str
    apply: Callable[[Graph], Graph]

    @property
    def op_kind(self) -> str:
        return self.words.split()[0]


@dataclass(frozen=True)
class Defect:
    case: Case
    built: Built
    edit: Edit


def _retyped(t: LogicalTensor, dtype: DataType | None = None,
             shape: tuple[int, ...] | None = None) -> LogicalTensor:
    return LogicalTensor(t.id, dtype or t.dtype, shape if shape is not None else t.shape,
                         t.strides, t.layout_type, t.property_type)


def _sole_inputs(graph: Graph) -> list[tuple[Op, int]]:
    """(op, port) of graph inputs that exactly one op reads, once."""
    return [(op, port) for op in graph.ops for port, t in enumerate(op.inputs)
            if t.id not in graph.producers and len(graph.consumers[t.id]) == 1]


def _apply(op: Op) -> Callable[[Graph], Graph]:
    return lambda graph: with_op(graph, op)


# -- candidate defects, rule by rule -------------------------------------------------------

def _dtype_edits(graph: Graph) -> list[Edit]:
    found: list[Edit] = []
    for op, port in _sole_inputs(graph):
        schema = SCHEMAS.get(op.kind)
        if schema is None or port >= len(schema.inputs):
            continue
        t, symbol = op.inputs[port], schema.inputs[port].symbol
        allowed = schema.types[symbol]
        name = schema.inputs[port].name
        for bad in (d for d in _OFFERED if d not in allowed):
            found.append(Edit(GraphRule.dtype_port, f"{op.kind} {op.id} {name} is {bad}",
                              _apply(set_input(op, port, _retyped(t, bad)))))
        shared = [p for p in (*schema.inputs[:len(op.inputs)], *schema.outputs[:len(op.outputs)])
                  if p.symbol == symbol and p.name != name]
        other = next((d for d in (D.bf16, D.f32, D.f16) if d in allowed and d != t.dtype), None)
        if shared and other is not None:
            found.append(Edit(GraphRule.dtype_unify,
                              f"{op.kind} {op.id} {name} is {other}, {shared[0].name} "
                              f"{t.dtype}", _apply(set_input(op, port, _retyped(t, other)))))
    for op in graph.ops:
        schema = SCHEMAS[op.kind]
        out = op.outputs[0]
        if out.id in graph.consumers:
            continue
        allowed = schema.types[schema.outputs[0].symbol]
        for bad in (d for d in _OFFERED if d not in allowed):
            found.append(Edit(GraphRule.dtype_port, f"{op.kind} {op.id} dst is {bad}", _apply(
                rebuilt(op, outputs=(_retyped(out, bad), *op.outputs[1:])))))
        shape = out.shape or ()
        if shape:
            wrong = (shape[0] + 1, *shape[1:])
            found.append(Edit(GraphRule.shape_output,
                              f"{op.kind} {op.id} dst declared {list(wrong)}", _apply(
                                  rebuilt(op, outputs=(_retyped(out, shape=wrong),
                                                        *op.outputs[1:])))))
    return found


def _infer_edits(graph: Graph) -> list[Edit]:
    found: list[Edit] = []
    for op, port in _sole_inputs(graph):
        t, chain = op.inputs[port], op.inputs[1 - port] if len(op.inputs) == 2 else None
        shape = list(t.shape or ())
        axis: int | None = None
        if op.kind in BINARY:
            dims = list(chain.shape or ()) if chain is not None else []
            axis = next((a for a, d in enumerate(dims) if d >= 2 and a < len(shape)), None)
            if axis is not None:
                shape[axis] = dims[axis] + 1
        elif op.kind == "BiasAdd" and port == 1:
            axis, shape[0] = 0, shape[0] + 1
        elif op.kind in ("Convolution", "ConvTranspose") and port == 1:
            fmt = attr_value(op, "weights_format")
            axis = {"OIX": 1, "XIO": -2, "IOX": 0, "XOI": -1}[str(fmt)]
            shape[axis] += 1
        elif op.kind == "MatMul" and port == 1:
            # A 1-D weights vector has only its inner dim (a transpose of it is ignored).
            axis = -1 if op.attrs.get("transpose_b") or len(shape) == 1 else -2
            shape[axis] += 1
        if axis is not None:
            found.append(Edit(GraphRule.shape_infer, f"{op.kind} {op.id} input {port} shape "
                              f"{shape}", _apply(set_input(op, port,
                                                            _retyped(t, shape=tuple(shape))))))
    for op in graph.ops:
        attrs = dict(op.attrs)
        rank = len(op.inputs[0].shape or ()) if op.inputs else 0
        if "strides" in attrs and op.kind != "ConvolutionBackwardWeights":
            attrs["strides"] = (*attrs["strides"], 1)  # type: ignore[misc]
            words = "one stride too many"
        elif op.kind == "SoftMax":
            attrs["axis"], words = rank, f"axis {rank} of a rank-{rank} src"
        elif op.kind.startswith("Reduce"):
            attrs["axes"], words = (rank,), f"axes [{rank}] of a rank-{rank} src"
        elif op.kind == "Interpolate" and attrs.get("sizes"):
            attrs["sizes"] = (*attrs["sizes"], 2)  # type: ignore[misc]
            words = "one size too many"
        else:
            continue
        found.append(Edit(GraphRule.shape_infer, f"{op.kind} {op.id}: {words}",
                          _apply(rebuilt(op, attrs=attrs))))
    return found


def _attr_edits(graph: Graph) -> list[Edit]:
    found: list[Edit] = []
    for op in graph.ops:
        schema = SCHEMAS[op.kind]
        for spec in schema.attrs:
            if spec.required and spec.name in op.attrs:
                attrs = {k: v for k, v in op.attrs.items() if k != spec.name}
                found.append(Edit(GraphRule.attr_required, f"{op.kind} {op.id} without "
                                  f"{spec.name}", _apply(rebuilt(op, attrs=attrs))))
            if spec.allowed is not None:
                bad = _BAD_VALUES.get(f"{op.kind}.{spec.name}") or _BAD_VALUES[spec.name]
                found.append(Edit(GraphRule.attr_value, f"{op.kind} {op.id} {spec.name}="
                                  f"{bad!r}", _apply(rebuilt(op, attrs={**op.attrs,
                                                                          spec.name: bad}))))
        stray = next(n for n in _STRAY if schema.attr_spec(n) is None)
        found.append(Edit(GraphRule.attr_unknown, f"{op.kind} {op.id} with attribute {stray}",
                          _apply(rebuilt(op, attrs={**op.attrs, stray: _STRAY[stray]}))))
    return found


def _structure_edits(graph: Graph, chain: tuple[int, ...], fresh: int) -> list[Edit]:
    found: list[Edit] = []
    for op in graph.ops:
        counts = SCHEMAS[op.kind].input_counts
        extra = LogicalTensor(fresh, op.inputs[0].dtype, op.inputs[0].shape)
        found.append(Edit(GraphRule.arity_inputs, f"{op.kind} {op.id} with "
                          f"{max(counts) + 1} inputs", _apply(rebuilt(
                              op, inputs=(*op.inputs, *[extra] * (max(counts) + 1
                                                                 - len(op.inputs)))))))
        if min(counts) > 0:
            found.append(Edit(GraphRule.arity_inputs, f"{op.kind} {op.id} with "
                              f"{min(counts) - 1} inputs",
                              _apply(rebuilt(op, inputs=tuple(op.inputs[:min(counts) - 1])))))
    ops = [graph.op_by_id[i] for i in chain]
    sole = set(_sole_inputs(graph))
    for i, a in enumerate(ops):
        for b in ops[i:]:
            out = b.outputs[0]
            for port, t in enumerate(a.inputs):
                if (a, port) in sole and t.dtype == out.dtype and t.shape == out.shape:
                    found.append(Edit(GraphRule.acyclic, f"{a.kind} {a.id} reads the output of "
                                      f"{b.kind} {b.id}", _apply(set_input(a, port, out))))
        for b in ops[i + 1:]:
            twin = _retyped(b.outputs[0])
            twin = LogicalTensor(a.outputs[0].id, twin.dtype, twin.shape)
            found.append(Edit(GraphRule.one_producer, f"{b.kind} {b.id} writes tensor "
                              f"{twin.id} of {a.kind} {a.id}", _apply(rebuilt(
                                  b, outputs=(twin, *b.outputs[1:])))))
    return found


def edits(graph: Graph, chain: tuple[int, ...]) -> dict[str, list[Edit]]:
    """Every defect that can be made in `graph` (whose main chain is the ops `chain`), by
    rule id."""
    fresh = max(t.id for op in graph.ops for t in (*op.inputs, *op.outputs)) + 1
    found: dict[str, list[Edit]] = {rule: [] for rule in ILL_FORMED_RULES}
    for edit in (*_dtype_edits(graph), *_infer_edits(graph), *_attr_edits(graph),
                 *_structure_edits(graph, chain, fresh)):
        found[edit.rule].append(edit)
    return found


def ill_formed(entry: PatternEntry, rule: str | None = None) -> st.SearchStrategy[Defect]:
    """Instances of `entry` with one defect: of any rule, or of `rule` (instances where it
    cannot be made are rejected)."""
    if rule is not None and rule not in ILL_FORMED_RULES:
        raise ValueError(f"no ill-formed rule {rule!r}; known: {', '.join(ILL_FORMED_RULES)}")
    return _ill_formed(entry.id, rule, None)


def _settings(rule: str, edit: Edit, graph: Graph) -> dict[str, str]:
    """The setting items of a defect: the layout attributes of the op it changes, under a
    rule whose check moves with them."""
    if rule not in SETTING_RULES:
        return {}
    ident = edit.words.split()[1].rstrip(":")
    op = next((o for o in graph.ops if str(o.id) == ident and o.kind == edit.op_kind), None)
    if op is None:
        return {}
    found = {}
    for spec in SCHEMAS[op.kind].attrs:
        value = attr_value_or_none(op, spec.name)
        if spec.name in LAYOUT_ATTRS and value is not None:
            found[f"ill-formed {rule} {op.kind}.{spec.name}"] = value_text(value)
    return found


def setting_items(entry: PatternEntry) -> tuple[tuple[str, str], ...]:
    """Every (rule, op kind, layout attribute value) of `entry` (see the module docstring)."""
    items = []
    kinds = op_kinds(entry.tree) & INFER_EDIT_KINDS
    if Role.weights_q2f in entry.roles.values():
        # A MatMul's one shape defect is on its weights, a graph input only where no weights
        # path (Dequantize) computes them.
        kinds -= {"MatMul"}
    for kind in sorted(kinds):
        for spec in SCHEMAS[kind].attrs:
            if spec.name not in LAYOUT_ATTRS:
                continue
            values = spec.allowed or ("false", "true")
            items += [(f"ill-formed {rule} {kind}.{spec.name}", v)
                      for rule in SETTING_RULES for v in values]
    return tuple(items)


#: Defects drawn for one setting item, the first that shows it kept: a few, then more.
SETTING_TRIES = (6, 30)


def setting_cases(entry: PatternEntry, count: int) -> list[Case]:
    """At most `count` ill-formed cases, one per setting item of `entry` (in order), each the
    first that shows it of seeded hypothesis runs of its own: the layout attribute forced by
    the label the generator draws it with, the defect made on an op of that kind."""
    found: list[Case] = []
    for key, value in setting_items(entry)[:count]:
        kind, attr = key.rsplit(" ", 1)[1].split(".")
        forced = ((attr, value == "true" if value in ("true", "false") else value),)
        digest = hashlib.sha256(f"{entry.id}\x1f{key}\x1f{value}".encode()).digest()[:8]
        strategy = _ill_formed(entry.id, SETTING_RULES[0], kind, forced)
        for tries in SETTING_TRIES:
            drawn = _drawn(strategy, int.from_bytes(digest, "big") + tries, tries)
            hit = next((d for d in drawn if d.case.features.get(key) == value), None)
            if hit is not None:
                found.append(hit.case)
                break
    return found


def _drawn(strategy: st.SearchStrategy[Defect], run_seed: int, count: int) -> list[Defect]:
    drawn: list[Defect] = []

    @seed(run_seed)
    @settings(max_examples=count, derandomize=False, database=None, deadline=None,
              phases=[Phase.generate], suppress_health_check=list(HealthCheck))
    @given(strategy)
    def collect(defect: Defect) -> None:
        drawn.append(defect)

    with source_independent():
        collect()
    return drawn


@st.composite
def _ill_formed(draw: st.DrawFn, pattern: str, rule: str | None, kind: str | None,
                steer: tuple[tuple[str, object], ...] = ()) -> Defect:
    if steer:
        draw = cast(st.DrawFn, steered(draw, dict(steer)))
    entry = catalog_entry(pattern)
    skeleton = draw_skeleton(draw, entry)
    built = build(draw, entry, skeleton, draw_dtype_plan(draw, entry, skeleton.steps))
    found = edits(built.graph, built.step_ops)
    available = [r for r in ILL_FORMED_RULES if found[r]]
    if rule is not None:
        assume(rule in available)
    chosen = rule or draw(st.sampled_from(available), label="rule")
    # The defect comes from a Random seeded by the graph's hash and a drawn number, not from
    # sampled_from, whose derandomized draws favour the first options: every port and every
    # disallowed type should turn up about as often.
    digest = case_id("", CaseKind.ill_formed, built.graph).rsplit("/", 1)[1]
    pick = random.Random(int(digest, 16) ^ draw(st.integers(0, 2 ** 32), label="defect"))
    # A setting case wants the defect on an op of `kind` where one can be made there.
    candidates = [e for e in found[chosen] if kind is None or e.op_kind == kind]
    edit = pick.choice(candidates or found[chosen])
    graph = edit.apply(built.graph)
    grammar = set(feature_keys(pattern).values())
    features = {k: v for k, v in built.features.items() if k not in grammar}
    features.update(rule=chosen, defect_op=edit.op_kind)
    if chosen == GraphRule.dtype_port:
        features["bad_dtype"] = edit.words.rsplit(" ", 1)[1]
    features.update(_settings(chosen, edit, built.graph))
    report_events(pattern, CaseKind.ill_formed, features, chosen)
    case = Case(case_id(pattern, CaseKind.ill_formed, graph, chosen), CaseKind.ill_formed,
                pattern, graph, chosen, headline_dtype(built.graph), features,
                f"ill-formed [{chosen}]: {edit.words}; in {built.describe()}")
    return Defect(case, built, edit)
