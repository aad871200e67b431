"""Value boundaries: the points where each op's definition changes behaviour, as items.

An op's definition (`fusionspec.reference.ops`, docs/semantics.md) is not one formula over the
whole line: an exponential turns to +inf past ln of the largest finite value, a rounding has
to choose at an exact tie, a NaN has to travel through every op after the one it entered, a
sum of products is exact for a few terms and not for thousands. Each of these points is an
item ``("K.boundary", value)`` for the op kind ``K`` it belongs to, so the report's per-op
coverage counts it next to the op's schema items. Nothing is listed per op: each kind of
boundary below names the property of an op that gives it one, and a pattern's items are the
op kinds its catalog instances (`instance_plans`) can put at that point.

=============================  ================================================================
boundary (item value)          where, and why it matters
=============================  ================================================================
``overflow edge``              Exp, Sigmoid and SoftPlus (`EDGE_KINDS`) reading a graph input:
                               exp(x) overflows f32 past x = 88.72, where the definitions turn
                               to +inf, exactly 0 and x. A guard whose constant is rounded
                               (88 instead of 88.72) or an exp evaluated in a narrower way goes
                               wrong inside the last unit before the edge, which a spread of
                               large values ([60, 2048]) almost never hits; the
                               ``overflow-edge`` domain puts half of the input within 1 of it.
``f16 overflow edge``          Exp (`F16_OVERFLOW`) alone in f16: computed in f32, its value
                               overflows at the f16 output past ln 65504 = 11.09, where an f16
                               kernel's own guard sits.
``<switch>: last 4 <type>      Exp, Pow, Sigmoid, SoftPlus, Tanh (`ULP_KINDS`) reading a graph
inputs either side``           input, filled with ``edge-ulps``: the last representable inputs
                               of the input's type on either side of where the op's exponential
                               overflows its result's type or f32, or its guard switches
                               (`fusionspec.reference.thresholds`, which derives each point from
                               the op's definition); a lone Exp or Pow also in bf16 and f16,
                               where the overflow moves with the type. A guard a few ulps low
                               (88.7228 for 88.72283) shows only there.
``f32 integer edge``           Round (`INTEGER_KINDS`) reading a graph input: from 2^23 on
                               every f32 is an integer and the rounding is the identity; below
                               it, ties are halves. The cheap rounding ``(|x| + 2^23) - 2^23``
                               (ties to even for free) is exact only below that edge, and is
                               off by one on odd integers past it without its range guard. The
                               ``integer-edge`` domain puts half of the input in [2^22, 2^25).
``NaN and inf from upstream``  every op whose result on NaN and inf is where implementations
                               part ways (`model.SPECIAL_KINDS`: a max, a clamp, a division, a
                               Log ...) placed after another op of the chain: the NaN and inf
                               come down from an earlier op instead of a graph input, which is
                               where a fused kernel's epilogue, holding the running value in a
                               register, drops them (``acc > b ? acc : b``). The value corner
                               ``special`` goes into an upstream graph input such that every op
                               between carries NaN on (`NAN_STOPS` do not).
``bf16 / f16 ties from         a narrowing conversion (`NARROWING`: TypeCast) given exact
upstream``                     midpoints of two neighbours of its destination type, which the
                               definition rounds to even. In the catalog a TypeCast only ever
                               reads a computed value; a Maximum inserted before it passes the
                               ``narrow-ties`` domain on unchanged (the values are at least 1
                               and a SoftMax's are at most 1), so the conversion sees the ties.
``bf16 / f16 overflow edge     the same conversion given values around its destination's
from upstream``                largest finite value (``narrow-max``): up to half an ulp past it
                               they round down to it, from there to +inf. A conversion that
                               checks the range before it rounds gives +inf too early.
``2048-term sums in bf16 /     MatMul, Convolution, ConvTranspose (`LONG_KINDS`) in bf16/f16
f16``                          summing `LONG_TERMS` products per output (the reductions of real
                               networks, not the catalog's few dozen) of full-precision values
                               (``long-sum``) that grow the sum to where an accumulator, or a
                               split reduction's partial sums, held in the narrow type lose
                               more than the output's rounding and the bound of any f32
                               summation order (``2n*u*sum|x*w|``) allow.
``bf16 / f16 rounding where    a near miss of a dtype rule that ends the pattern's partition at
the pattern ends``             a narrow tensor (SoftMax's dst in bf16 or f16 followed by a
                               post-op, softmax.f32_dst), read by a binary post-op that writes
                               f32, the base op reading full-precision values: the f32 output
                               shows whether the tensor was rounded to its declared type, which
                               the grading requires even of a backend that fuses past it
                               (`fusionspec.conformance.grade.verdicts`).
=============================  ================================================================

`boundary_items(entry)` are a pattern's items; `boundary_cases(entry, plans)` its deterministic
floor: per item, the shortest instance plan that shows it (a greedy cover for the upstream
NaN, where one case reaches several ops), or a small dedicated graph for the long sums, each
case recording the items it shows among its features; `boundary_near_misses(entry, rule)`
the near misses of the last row, which the suite draws on top of each rule's near misses.
`BOUNDARY_UNDRAWN` lists the items no
case can show, with the reason (none at present: every boundary derived here has a graph).
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass, replace
from functools import cache

import numpy as np

from fusionspec.reference.explain import explain
from fusionspec.reference.filling import fill_tensor
from fusionspec.reference.partitioner import partition
from fusionspec.reference.thresholds import EDGE_KINDS as ULP_KINDS
from fusionspec.reference.thresholds import EDGE_ULPS, RESULT_KINDS, edges
from fusionspec.spec.catalog import CATALOG, PatternEntry
from fusionspec.spec.dtypes import DataType
from fusionspec.spec.errors import FusionspecError
from fusionspec.spec.graph import AttrValue, Graph, LogicalTensor, Op
from fusionspec.spec.opschemas import SCHEMAS, carries_shape
from fusionspec.spec.rules import RuleKind, UnknownRuleError, rule

from ..cases import Case, CaseKind
from .dtypes import headline_dtype
from .ids import case_id
from .instance_build import InstanceBuilder, build_instance, instance_case
from .instance_plans import Plan, instance_plans
from .model import SPECIAL_KINDS, Item
from .values import CHECK_SEED, ValuePlan, with_values

__all__ = ["boundary_items", "boundary_cases", "BOUNDARY_UNDRAWN", "EDGE_KINDS", "INTEGER_KINDS",
           "AT_INPUT", "INTEGER_EDGE", "F16_OVERFLOW", "F16_OVERFLOW_EDGE", "NARROWING",
           "LONG_KINDS", "LONG_TERMS", "NAN_STOPS", "OVERFLOW_EDGE", "UPSTREAM_NONFINITE",
           "NARROWING_POINTS", "boundary_key", "ties_value", "narrow_max_value", "long_value",
           "ULP_KINDS", "ulps_value", "narrow_end_value", "boundary_near_misses"]

#: Ops whose definition switches where exp overflows f32 (+inf, exactly 0, x).
EDGE_KINDS = frozenset({"Exp", "Sigmoid", "SoftPlus"})
#: Ops whose output grows like exp(x), so that an f16 output overflows past ln 65504 = 11.09.
F16_OVERFLOW = frozenset({"Exp"})
#: Ops whose definition changes where f32 runs out of fractional bits (from 2^23 on every f32
#: is an integer and a rounding is the identity).
INTEGER_KINDS = frozenset({"Round"})
#: Conversions that round to a narrower floating-point type, ties to even.
NARROWING = frozenset({"TypeCast"})
#: Ops summing products, whose reductions real networks make long.
LONG_KINDS = ("MatMul", "Convolution", "ConvTranspose")
#: Products per output of a long-sum case (a 2048-wide MatMul, or 2048 input channels of a
#: 1x1 convolution or transposed convolution).
LONG_TERMS = 2048
#: Ops whose output no longer carries a NaN of their input: a clamp gives its bound, a max pool
#: skips it, a quantization gives 0, a ReLU backward's mask is 0 where the comparison fails.
NAN_STOPS = frozenset({"Clamp", "MaxPool", "Quantize", "ReLUBackward"})
#: Ports where a NaN or inf tests nothing the bounds can judge (a convolution's padding times
#: inf; see `values.corner_candidates`).
_PADDED = frozenset({"Convolution", "ConvTranspose", "ConvolutionBackwardWeights"})
_NARROW = (DataType.bf16, DataType.f16)

OVERFLOW_EDGE = "overflow edge"
F16_OVERFLOW_EDGE = "f16 overflow edge"
INTEGER_EDGE = "f32 integer edge"
UPSTREAM_NONFINITE = "NaN and inf from upstream"
#: The boundaries put into the op reading a graph input: op kind -> (fill domain, item value,
#: how a case's description says it).
AT_INPUT: Mapping[str, tuple[str, str, str]] = {
    **{kind: ("overflow-edge", OVERFLOW_EDGE, "at the exp overflow edge") for kind in EDGE_KINDS},
    **{kind: ("integer-edge", INTEGER_EDGE, "where f32 runs out of fractional bits")
       for kind in INTEGER_KINDS},
}

#: Boundary items no case can show, and why.
BOUNDARY_UNDRAWN: Mapping[Item, str] = {}


def boundary_key(kind: str) -> str:
    """The feature key of op kind `kind`'s boundaries."""
    return f"{kind}.boundary"


def ties_value(dtype: DataType) -> str:
    """The item value of exact `dtype` ties reaching a narrowing conversion."""
    return f"{dtype.value} ties from upstream"


def narrow_max_value(dtype: DataType) -> str:
    """The item value of values around `dtype`'s largest reaching a narrowing conversion."""
    return f"{dtype.value} overflow edge from upstream"


def ulps_value(switch: str, dtype: DataType) -> str:
    """The item value of the last representable `dtype` inputs on either side of `switch` (an
    `fusionspec.reference.thresholds.Edge` name)."""
    return f"{switch}: last {EDGE_ULPS} {dtype.value} inputs either side"


def narrow_end_value(dtype: DataType) -> str:
    """The item value of a pattern's partition ending at a `dtype` tensor (a near miss of a
    dtype rule) whose rounding the op after it shows in f32."""
    return f"{dtype.value} rounding where the pattern ends"


def long_value(dtype: DataType) -> str:
    """The item value of a `LONG_TERMS`-product reduction in `dtype`."""
    return f"{LONG_TERMS}-term sums in {dtype.value}"


#: The points of a narrowing conversion (fill domain, item value of the destination type):
#: exact ties, and the neighbourhood of the type's largest finite value, which rounds down to
#: it up to half an ulp past it and to +inf from there.
NARROWING_POINTS = (("narrow-ties", ties_value), ("narrow-max", narrow_max_value))


@dataclass(frozen=True)
class _Draw:
    """One candidate case: its graph, the domain of each input that leaves the grid, the items
    it shows and a description."""

    graph: Graph
    domains: Mapping[int, str]
    items: tuple[Item, ...]
    description: str


def _inputs(graph: Graph) -> Iterator[tuple[LogicalTensor, list[tuple[Op, int]]]]:
    """Float graph inputs carrying data, with the (op, port) pairs reading them."""
    made = {t.id for op in graph.ops for t in op.outputs}
    readers: dict[int, tuple[LogicalTensor, list[tuple[Op, int]]]] = {}
    for op in graph.ops:
        for port, t in enumerate(op.inputs):
            if t.id not in made and not carries_shape(op.kind, port) and t.dtype.is_float:
                readers.setdefault(t.id, (t, []))[1].append((op, port))
    yield from readers.values()


def _edge_draws(entry: PatternEntry, plan: Plan, graph: Graph) -> Iterator[_Draw]:
    """Each op of `AT_INPUT` reading a graph input, in `plan` cut right after it where the
    pattern allows (an op after it, a Minimum for one, may clip the overflow away)."""
    for tensor, readers in _inputs(graph):
        for op, port in readers:
            if op.kind not in AT_INPUT or port != 0:
                continue
            domain, value, what = AT_INPUT[op.kind]
            shown, built, tid = _cut(entry, plan, graph, op, tensor.id)
            yield _Draw(built, {tid: domain}, ((boundary_key(op.kind), value),),
                        f"catalog instance: {shown.describe()}, {op.kind} {what}")
            if op.kind in F16_OVERFLOW and len(built.ops) == 1:
                narrow = _retyped(built, {t.id for t in (*built.ops[0].inputs,
                                                         *built.ops[0].outputs)}, DataType.f16)
                if _forms_entry(entry, narrow):
                    yield _Draw(narrow, {tid: domain},
                                ((boundary_key(op.kind), F16_OVERFLOW_EDGE),),
                                f"catalog instance: {shown.describe()} in f16, {op.kind} at "
                                "the f16 overflow edge")


def _cut(entry: PatternEntry, plan: Plan, graph: Graph, op: Op, tid: int,
         ) -> tuple[Plan, Graph, int]:
    """`plan`, its `graph` and the id of `op`'s input `tid`, cut right after `op` where the
    pattern allows (an op after it, a Minimum for one, may clip what it computes away)."""
    cut = replace(plan, kinds=plan.kinds[:op.id + 1],
                  dequantized=frozenset(i for i in plan.dequantized if i <= op.id))
    if cut != plan and plan.kinds[op.id:op.id + 1] == (op.kind,):
        shorter = build_instance(entry, cut)
        if _forms_entry(entry, shorter):
            return cut, shorter, shorter.ops[op.id].inputs[0].id
    return plan, graph, tid


def _ulp_draws(entry: PatternEntry, plan: Plan, graph: Graph) -> Iterator[_Draw]:
    """Each op of `ULP_KINDS` reading a graph input at port 0, cut after it as `_cut` does,
    filled with ``edge-ulps``: the last representable inputs around each of its switches
    (`fusionspec.reference.thresholds.edges`) for its input's type and its result's; a lone
    op whose switch is its result's overflow (`RESULT_KINDS`) also in bf16 and f16
    throughout, where the pattern takes it so."""
    for tensor, readers in _inputs(graph):
        for op, port in readers:
            if op.kind not in ULP_KINDS or port != 0:
                continue
            shown, built, tid = _cut(entry, plan, graph, op, tensor.id)
            variants = [(built, tensor.dtype, "")]
            if len(built.ops) == 1 and op.kind in RESULT_KINDS:
                lone = built.ops[0]
                ids = {t.id for t in (*lone.inputs, *lone.outputs)}
                variants += [(narrow, dtype, f" in {dtype.value}") for dtype in _NARROW
                             if dtype != tensor.dtype and _forms_entry(
                                 entry, narrow := _retyped(built, ids, dtype))]
            for variant, dtype, where in variants:
                target = next(o for o in variant.ops if o.id == op.id)
                found = edges(target, target.outputs[0].dtype, dtype)
                if not found:
                    continue
                names = list(dict.fromkeys(edge.name for edge in found))
                yield _Draw(variant, {tid: "edge-ulps"},
                            tuple((boundary_key(op.kind), ulps_value(name, dtype))
                                  for name in names),
                            f"catalog instance: {shown.describe()}{where}, {op.kind} at the "
                            f"last {dtype.value} inputs around: {'; '.join(names)}")


def _upstream_draws(entry: PatternEntry, plan: Plan, graph: Graph) -> Iterator[_Draw]:
    """For each float input not on a padded port whose ``special`` fill holds NaN and inf:
    the ops of `SPECIAL_KINDS` its NaN reaches through an earlier op (following the ops in
    graph order, which is the chain's, and stopping at `NAN_STOPS`)."""
    for tensor, readers in _inputs(graph):
        if any(op.kind in _PADDED and port < 2 for op, port in readers):
            continue
        # A per-channel vector of four may draw no NaN or no inf at all: only an input whose
        # fill (with the suite's default seed) holds both is a source.
        values = np.asarray(fill_tensor(tensor, readers, CHECK_SEED, "special"), np.float64)
        if not (np.isnan(values).any() and np.isinf(values).any()):
            continue
        carrying, reached = {tensor.id}, set()
        for op in graph.ops:
            fed = [t.id for t in op.inputs if t.id in carrying]
            if not fed:
                continue
            if op.kind in SPECIAL_KINDS and any(i != tensor.id for i in fed):
                reached.add(op.kind)
            if op.kind not in NAN_STOPS:
                carrying.update(t.id for t in op.outputs)
        if reached:
            yield _Draw(graph, {tensor.id: "special"},
                        tuple((boundary_key(k), UPSTREAM_NONFINITE) for k in sorted(reached)),
                        f"catalog instance: {plan.describe()}, NaN and inf from upstream into "
                        + ", ".join(sorted(reached)))


def _retyped(graph: Graph, tensor_ids: set[int], dtype: DataType) -> Graph:
    def fix(t: LogicalTensor) -> LogicalTensor:
        if t.id not in tensor_ids:
            return t
        return LogicalTensor(t.id, dtype, t.shape, t.strides, t.layout_type, t.property_type)
    return Graph([Op(op.id, op.kind, tuple(map(fix, op.inputs)), tuple(map(fix, op.outputs)),
                     dict(op.attrs), op.name) for op in graph.ops], engine_kind=graph.engine_kind)


def _forms_entry(entry: PatternEntry, graph: Graph) -> bool:
    """Whether the reference partitions `graph` into one partition of `entry`."""
    try:
        parts = partition(graph.finalize())
    except FusionspecError:
        return False
    return len(parts) == 1 and parts[0].pattern == entry.id and len(parts[0].ops) == len(
        graph.ops)


def _narrowing_draws(entry: PatternEntry, plans: Sequence[Plan]) -> Iterator[_Draw]:
    """The shortest plan holding a narrowing conversion, with a Maximum inserted before it
    whose other operand is filled with each of `NARROWING_POINTS`, once per narrow destination
    type."""
    for kind in sorted(NARROWING):
        holding = sorted((p for p in plans if kind in p.kinds[1:]), key=lambda p: len(p.kinds))
        if not holding:
            continue
        plan = holding[0]
        at = plan.kinds.index(kind)
        inserted = Plan((*plan.kinds[:at], "Maximum", *plan.kinds[at:]),
                        frozenset(i + (i >= at) for i in plan.dequantized),
                        plan.weights_quantize)
        base = build_instance(entry, inserted)
        target = base.ops[[op.kind for op in base.ops].index(kind)]
        maximum = next(op for op in base.ops if op.outputs[0].id == target.inputs[0].id)
        for dtype in _NARROW:
            if dtype not in SCHEMAS[kind].types[SCHEMAS[kind].outputs[0].symbol]:
                continue
            graph = _retyped(base, {target.outputs[0].id}, dtype)
            if not _forms_entry(entry, graph):
                continue
            for domain, value in NARROWING_POINTS:
                yield _Draw(graph, {maximum.inputs[1].id: domain},
                            ((boundary_key(kind), value(dtype)),),
                            f"catalog instance: {inserted.describe()}, {value(dtype)} into "
                            f"the {kind}")


def _long_graph(kind: str, dtype: DataType) -> tuple[Graph, list[int]]:
    """A lone `kind` summing `LONG_TERMS` products per output, all tensors `dtype`."""
    b = InstanceBuilder("cpu")
    attrs: dict[str, AttrValue] = {}
    src: tuple[int, ...]
    weights: tuple[int, ...]
    dst: tuple[int, ...]
    if kind == "MatMul":
        src, weights, dst = (8, LONG_TERMS), (LONG_TERMS, 32), (8, 32)
    else:
        transposed = kind == "ConvTranspose"
        src, dst = (1, LONG_TERMS, 2, 2), (1, 16, 2, 2)
        weights = (LONG_TERMS, 16, 1, 1) if transposed else (16, LONG_TERMS, 1, 1)
        attrs = {"strides": (1, 1), "pads_begin": (0, 0), "pads_end": (0, 0),
                 "dilations": (1, 1), "data_format": "NCX",
                 "weights_format": "IOX" if transposed else "OIX"}
    a, w = b.tensor(src, dtype), b.tensor(weights, dtype)
    b.op(kind, [a, w], [b.tensor(dst, dtype)], attrs)
    return Graph(b.ops), [a.id, w.id]


def _long_draws(entry: PatternEntry, plans: Sequence[Plan]) -> Iterator[_Draw]:
    """For each of `LONG_KINDS` that heads a plan of `entry` and each narrow type its schema
    takes: a lone op over `LONG_TERMS` products, filled with ``long-sum``."""
    for kind in LONG_KINDS:
        if not any(p.kinds[0] == kind for p in plans):
            continue
        schema = SCHEMAS[kind]
        for dtype in _NARROW:
            if dtype not in schema.types[schema.inputs[0].symbol]:
                continue
            graph, ids = _long_graph(kind, dtype)
            if _forms_entry(entry, graph):
                yield _Draw(graph, {i: "long-sum" for i in ids},
                            ((boundary_key(kind), long_value(dtype)),),
                            f"catalog instance: {kind} {dtype.value} over {LONG_TERMS} "
                            "full-precision products")


#: Binary ops that pass a change of their chain operand on to their result whatever the
#: other operand is (a Maximum or Minimum may hide it), in the order they are preferred.
_PASSING = ("Subtract", "Add", "Multiply", "Divide")


def _dtype_rule(reason: str) -> bool:
    try:
        return rule(reason).kind is RuleKind.dtype
    except UnknownRuleError:
        return False


@cache
def _narrow_ends(entry_id: str) -> tuple[tuple[_Draw, str], ...]:
    """The near misses where the pattern's partition ends at a narrow tensor because of a
    dtype rule, with the rule: the shortest plan whose base op a binary post-op of `_PASSING`
    follows, the base op's output retyped to bf16 or f16 and the binary kept writing f32, kept
    where the reference ends the pattern's partition at that tensor and `explain` blames a
    dtype rule. The base op reads full-precision values, so its result is inexact in the
    narrow type, and the f32 binary shows whether it was rounded there."""
    entry = next(e for e in CATALOG if e.id == entry_id)
    plans = sorted((p for p in instance_plans(entry) if p.kinds[1:2] and p.kinds[1] in _PASSING),
                   key=lambda p: (_PASSING.index(p.kinds[1]), len(p.kinds)))
    if not plans:
        return ()
    plan = replace(plans[0], kinds=plans[0].kinds[:2],
                   dequantized=frozenset(i for i in plans[0].dequantized if i <= 1))
    base_graph = build_instance(entry, plan)
    base = next(op for op in base_graph.ops if op.kind == plan.kinds[0])
    found: list[tuple[_Draw, str]] = []
    for dtype in _NARROW:
        if dtype not in SCHEMAS[base.kind].types[SCHEMAS[base.kind].outputs[0].symbol]:
            continue
        graph = _retyped(base_graph, {base.outputs[0].id}, dtype)
        try:
            final = graph.finalize()
            parts = partition(final)
            blamed = [e.reason for e in explain(final) if base.id in (e.op_id, e.neighbour_id)]
        except FusionspecError:  # a retyping the op's schema does not allow
            continue
        ends = any(p.pattern == entry.id and any(t.id == base.outputs[0].id for t in p.outputs)
                   for p in parts)
        reasons = [r for r in blamed if _dtype_rule(r)]
        if not ends or not reasons:
            continue
        dense = {t.id: "dense" for t, readers in _inputs(graph)
                 if any(op.id == base.id for op, _ in readers)}
        found.append((_Draw(graph, dense, ((boundary_key(base.kind), narrow_end_value(dtype)),),
                            f"near miss [{reasons[0]}]: {base.kind} dst in {dtype.value} read by "
                            f"{plan.kinds[1]} writing f32, which shows whether the dst was "
                            f"rounded to {dtype.value}; {plan.describe()}"), reasons[0]))
    return tuple(found)


def boundary_near_misses(entry: PatternEntry, label: str | None = None) -> list[Case]:
    """The near-miss floor of the value boundaries: one case per `_narrow_ends` draw of
    `entry` (those of the rule `label` only, when given), labelled with the rule it breaks.
    Grading judges such a boundary tensor as rounded even where a backend fuses past it
    (`fusionspec.conformance.grade.verdicts`), so a fusion that skips the rounding the
    dtype rule is about is a numeric mismatch rather than an extension."""
    cases = []
    for draw, reason in _narrow_ends(entry.id):
        if label is not None and reason != label:
            continue
        (key, value), = draw.items
        reader = key.split(".")[0]
        features: dict[str, str] = {
            "rule": reason, "variant": "narrow end", "signal": "corner", "values": "dense",
            "values_at": reader, key: value}
        case = Case(case_id(entry.id, CaseKind.near_miss, draw.graph, reason),
                    CaseKind.near_miss, entry.id, draw.graph, reason,
                    headline_dtype(draw.graph), features, draw.description)
        cases.append(with_values(case, ValuePlan(dict(draw.domains), features)))
    return cases


@cache
def _draws(entry_id: str) -> tuple[_Draw, ...]:
    """Every candidate case of a pattern, plans in order (shortest first within a kind)."""
    entry = next(e for e in CATALOG if e.id == entry_id)
    plans = instance_plans(entry)
    found: list[_Draw] = []
    for plan in sorted(plans, key=lambda p: len(p.kinds)):
        graph = build_instance(entry, plan)
        found += _edge_draws(entry, plan, graph)
        found += _ulp_draws(entry, plan, graph)
        found += _upstream_draws(entry, plan, graph)
    found += _narrowing_draws(entry, plans)
    found += _long_draws(entry, plans)
    return tuple(found)


def boundary_items(entry: PatternEntry) -> tuple[Item, ...]:
    """The value-boundary items of `entry`: what its instances can put at each boundary, and
    the narrow tensors its near misses of a dtype rule end its partition at."""
    draws = (*_draws(entry.id), *(draw for draw, _ in _narrow_ends(entry.id)))
    return tuple(dict.fromkeys(item for draw in draws for item in draw.items))


def _chosen(entry: PatternEntry) -> list[_Draw]:
    """The fewest candidates, shortest first, that show every item of `entry` between them:
    each round takes the candidate showing the most items not yet shown."""
    wanted = set(item for draw in _draws(entry.id) for item in draw.items) - set(
        BOUNDARY_UNDRAWN)
    candidates = list(_draws(entry.id))
    chosen: list[_Draw] = []
    while wanted:
        best = max(candidates, key=lambda d: (len(wanted & set(d.items)),
                                              -len(d.graph.ops)))
        if not wanted & set(best.items):
            break
        wanted -= set(best.items)
        chosen.append(best)
    return chosen


def boundary_cases(entry: PatternEntry, plans: Sequence[Plan]) -> list[Case]:
    """The deterministic floor of `boundary_items`: one case per chosen candidate
    (`_chosen`), filled from its domains, its features naming the items it shows. The
    candidates come from the pattern's instance plans (`plans`, which `_draws` derives and
    keeps once per pattern, since the coverage model asks for the items far more often)."""
    cases = []
    for draw in _chosen(entry):
        case = instance_case(entry, draw.graph, draw.description)
        dtypes = {t.dtype for op in draw.graph.ops for t in op.inputs}
        if len(dtypes) == 1 and (only := next(iter(dtypes))) in _NARROW:
            case = replace(case, dtype=only.value)
        shown: dict[str, list[str]] = {}
        for key, value in draw.items:
            shown.setdefault(key, []).append(value)
        first = next(iter(draw.domains.values()))
        reader = draw.items[0][0].split(".")[0]
        features = {"signal": "corner", "values": first, "values_at": reader,
                    **{key: ",".join(values) for key, values in shown.items()}}
        cases.append(with_values(case, ValuePlan(dict(draw.domains), features)))
    return cases
