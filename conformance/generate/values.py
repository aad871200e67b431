"""Which values a case's inputs are filled from: clean signal, or one corner on purpose.

A case either *tests a corner* or *carries clean signal*, and its features say which
(``signal``: ``corner`` or ``clean``; ``values``: the value domain of
`fusionspec.reference.filling.DOMAINS`; ``values_at``: for a corner, the op kind that reads
the tensor it was put into), so the report's coverage counts both.

- **Corners** (`CORNER_EVERY`, one case in four of the drawn valid and near-miss cases; and,
  in the catalog instances, one case for each op kind that reads a graph input directly and
  each corner that is specific to it, `TARGETED`: an Exp at the overflow edge, a Divide by
  zeros, a Maximum with NaN on either side ...): one
  graph input gets a corner domain that means something to the op reading it: special values
  (NaN, +-inf, -0), huge magnitudes and subnormals for any floating-point input; magnitudes past
  the exp overflow bound where an exponential is computed downstream; rows all -inf for a
  SoftMax; exact rounding ties for a Round, a Quantize or a TypeCast; far out-of-range values
  for a Quantize. The other inputs keep the default grid.
- **Clean signal** (`clean_plan`): the default grid, or full-precision random values (``dense``),
  for every input; when that makes the reference's outputs non-finite or ill-conditioned (a Log
  of a convolution's negative half, a division by a difference that cancels, an Exp of an Exp),
  the inputs are moved to the positive grid, then to the small grid, and the first plan whose
  outputs are finite and well conditioned is kept (checked on the reference with seed 0, the
  suite's default). A bf16/f16 input of a ReduceProd leaves the grid for ``dense`` values
  (`narrow_products`): the grid's products are exact in the narrow type. A case none of them
  helps keeps the best plan and is marked
  ``conditioning: weak``; the report and the benchmark count such cases apart.
"""

from __future__ import annotations

import random
from collections.abc import Callable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field, replace

import numpy as np
from hypothesis import strategies as st

from fusionspec.reference import execute, fill_inputs
from fusionspec.reference.filling import CLEAN_DOMAINS
from fusionspec.reference.partitioner import partition
from fusionspec.spec.errors import FusionspecError
from fusionspec.spec.graph import Graph, LogicalTensor, Op, Partition
from fusionspec.spec.opschemas import carries_shape

from ..cases import Case, CaseKind
from ..grade.bounds import error_bounds
from ..grade.prepared import Prepared
from ..grade.tolerances import weak_elements
from .ids import case_id
from .model import SPECIAL_KINDS, SPECIAL_VALUES, graph_features

__all__ = ["ValuePlan", "CORNER_EVERY", "EXP_LIKE", "TARGETED", "corner_candidates",
           "targeted_corners", "clean_plan", "draw_values", "value_choices", "values_for",
           "with_values", "output_health", "harvesting",
           "narrow_products", "value_items",
           "NONFINITE_LIMIT", "WEAK_LIMIT"]

#: One drawn case in this many tests a corner.
CORNER_EVERY = 4
#: Ops computing an exponential, where magnitudes past the f32 exp bound are a corner.
EXP_LIKE = frozenset({"Exp", "Sigmoid", "SoftPlus", "Tanh", "GELU", "Elu", "SoftMax"})
#: Ops with padding or inserted zeros (see `corner_candidates`).
_PADDED = frozenset({"Convolution", "ConvTranspose", "ConvolutionBackwardWeights"})
#: Ops whose f32 intermediates are sums of products of their inputs (Σ dy·(x − mean)): huge
#: inputs overflow those long before the result does (see `corner_candidates`).
_SUMS_OF_PRODUCTS = frozenset({"BatchNormTrainingBackward"})
#: Ops that round their input to integers or a narrower type.
_ROUNDING = frozenset({"Round", "Quantize", "TypeCast"})
#: A clean plan is kept once at most this share of the outputs is NaN or inf ...
NONFINITE_LIMIT = 0.01
#: ... and at most this share of them has weak signal (`tolerances.WEAK_RELATIVE`).
WEAK_LIMIT = 0.10
#: The seed the clean plans are checked with (the suite's default).
CHECK_SEED = 0


@dataclass(frozen=True)
class ValuePlan:
    """The value domain of each graph input that leaves the default grid, and the features
    that say what the case's values test."""

    domains: Mapping[int, str] = field(default_factory=dict)
    features: Mapping[str, str] = field(default_factory=dict)


def _data_inputs(graph: Graph) -> list[tuple[LogicalTensor, list[tuple[Op, int]]]]:
    """Graph inputs that carry data, with the (op, port) pairs reading them."""
    uses: dict[int, list[tuple[Op, int]]] = {}
    for op in graph.ops:
        for port, t in enumerate(op.inputs):
            uses.setdefault(t.id, []).append((op, port))
    found = []
    for t in graph.input_tensors:
        readers = [(op, port) for op, port in uses.get(t.id, ())
                   if not carries_shape(op.kind, port)]
        if readers:
            found.append((t, readers))
    return found


def corner_candidates(graph: Graph) -> list[tuple[int, str, str]]:
    """Every (tensor id, corner domain, reading op kind) that means something in `graph`."""
    graph = graph if graph.finalized else graph.finalize()
    exp_downstream = any(op.kind in EXP_LIKE for op in graph.ops)
    # No huge magnitudes upstream of a sum of products: whether its f32 intermediates overflow
    # to inf depends on the implementation's order of summation (an output of -1.8e38 from
    # one, -inf from another), so such a case would test nothing the bounds can judge.
    sums_downstream = any(op.kind in _SUMS_OF_PRODUCTS for op in graph.ops)
    found: list[tuple[int, str, str]] = []
    for tensor, readers in _data_inputs(graph):
        kinds = {op.kind for op, _ in readers}
        reader = readers[0][0].kind
        if tensor.dtype.is_integer:
            found.append((tensor.id, "special", reader))
            continue
        if not tensor.dtype.is_float:
            continue
        # No inf or NaN into a convolution's data or weights: whether an implementation
        # multiplies padding (or a transposed convolution's inserted zeros) by them, making
        # 0*inf = NaN, is its own choice, so the bounds accept anything there and such a case
        # would test nothing.
        padded = any(op.kind in _PADDED and port < 2 for op, port in readers)
        for domain in ("special", "huge", "subnormal"):
            if not (padded and domain in ("special", "huge")) and not (
                    sums_downstream and domain == "huge"):
                found.append((tensor.id, domain, reader))
        if exp_downstream:
            found.append((tensor.id, "large", reader))
        if "SoftMax" in kinds:
            found.append((tensor.id, "neg-inf-rows", "SoftMax"))
        for op, _ in readers:
            if op.kind in _ROUNDING and (op.kind != "TypeCast" or tensor.dtype.value == "f32"):
                found.append((tensor.id, "ties", op.kind))
            if op.kind == "Quantize":
                found.append((tensor.id, "saturate", "Quantize"))
    return sorted(set(found))


def output_health(graph: Graph, domains: Mapping[int, str], seed: int = CHECK_SEED,
                  parts: Sequence[Partition] | None = None) -> tuple[float, float]:
    """(share of NaN/inf outputs, share of outputs with weak signal) of the reference on
    `graph` filled from `domains` with `seed` (`parts`: the reference's partitions of the
    finalized `graph`, when the caller has them)."""
    graph = graph if graph.finalized else graph.finalize()
    inputs = fill_inputs(graph, seed, domains)
    found = list(parts) if parts is not None else partition(graph)
    keep = _HARVEST is not None and seed == CHECK_SEED
    with np.errstate(all="ignore"):
        outputs = execute(graph, inputs, partitioner=lambda _: found, keep_intermediates=keep)
        radii = error_bounds(graph, inputs, found)
    if keep and _HARVEST is not None:
        _HARVEST[id(graph), tuple(sorted(domains.items()))] = Prepared(
            "", seed, graph, tuple(found), dict(inputs), dict(outputs), radii)
    total = nonfinite = weak = 0
    for t in graph.output_tensors:
        v = np.asarray(outputs[t.id], dtype=np.float64)
        total += v.size
        nonfinite += int((~np.isfinite(v)).sum())
        weak += int(weak_elements(v, radii[t.id], t.dtype).sum())
    if not total:
        return 0.0, 0.0
    return nonfinite / total, weak / total


#: What `output_health` computed while `harvesting` (None otherwise): the reference's side of
#: each graph and value plan it checked with `CHECK_SEED`, by (finalized graph, plan).
_HARVEST: dict[tuple[int, tuple[tuple[int, str], ...]], Prepared] | None = None


@contextmanager
def harvesting() -> Iterator[Callable[[Case], Prepared | None]]:
    """While drawing, keep what checking each value plan computed: the reference's side of the
    cases drawn, with `CHECK_SEED` (a run's default seed), which judging would compute again.
    Yields a lookup: the `Prepared` of a drawn case (its id set), or None where its values were
    not checked here (a corner, a graph the reference could not run)."""
    global _HARVEST
    outer, _HARVEST = _HARVEST, {}
    kept = _HARVEST

    def lookup(case: Case) -> Prepared | None:
        if case.kind is CaseKind.ill_formed:
            return None
        try:
            graph = case.graph.finalize()  # the same object output_health held, if it ran
        except Exception:  # judged (and reported) later
            return None
        found = kept.get((id(graph), tuple(sorted(case.values.items()))))
        # The finalized graph itself is held in the entry, so its id cannot have been reused.
        if found is None or found.graph is not graph:
            return None
        return replace(found, case_id=case.id)

    try:
        yield lookup
    finally:
        _HARVEST = outer


def clean_plan(graph: Graph, base: str = "grid") -> ValuePlan:
    """The first of `base`, ``positive`` and ``small`` (for every data input) whose outputs are
    finite and well conditioned on the reference; else the best of them, marked weak."""
    graph = graph if graph.finalized else graph.finalize()
    floats = [t.id for t, _ in _data_inputs(graph) if t.dtype.is_float]
    inexact = narrow_products(graph)
    best: tuple[float, ValuePlan] | None = None
    parts: list[Partition] | None = None  # the same for every plan: partitioned once
    for domain in dict.fromkeys((base, "positive", "small")):
        domains = {} if domain == "grid" else {tid: domain for tid in floats}
        if domain == "grid":
            domains.update({tid: "dense" for tid in inexact})
        try:
            parts = partition(graph) if parts is None else parts
            nonfinite, weak = output_health(graph, domains, parts=parts)
        except FusionspecError:  # a graph the reference cannot run is judged as such later
            return ValuePlan({}, {"signal": "clean", "values": base})
        features = {"signal": "clean", "values": domain}
        if inexact and domain in ("grid", "dense"):
            features["product_fill"] = "inexact"
        plan = ValuePlan(domains, features)
        if nonfinite <= NONFINITE_LIMIT and weak <= WEAK_LIMIT:
            return plan
        score = nonfinite + weak
        if best is None or score < best[0]:
            best = (score, plan)
    assert best is not None
    return ValuePlan(best[1].domains, {**best[1].features, "conditioning": "weak"})


def narrow_products(graph: Graph) -> list[int]:
    """bf16/f16 graph inputs that a ReduceProd reads. The grid's +-{0.5, 1, 2} keeps every
    product exact in the narrow type, which would hide an accumulator of that type, so the
    clean grid fills them ``dense`` (full-precision values in [0.5, 2] of either sign)."""
    return [t.id for t, readers in _data_inputs(graph)
            if t.dtype.value in ("bf16", "f16") and any(op.kind == "ReduceProd"
                                                         for op, _ in readers)]


@st.composite
def draw_values(draw: st.DrawFn, graph: Graph) -> ValuePlan:
    """A corner (one case in `CORNER_EVERY`) or a clean plan (grid or dense) for `graph`."""
    return values_for(graph, draw(st.integers(0, 2 ** 32), label="values"))


@st.composite
def value_choices(draw: st.DrawFn, graph: Graph) -> int:
    """What `draw_values` draws for `graph`, the plan left to `values_for`: a run that keeps
    one of its draws makes the plan of that one only (a clean plan runs the reference)."""
    return draw(st.integers(0, 2 ** 32), label="values")


def values_for(graph: Graph, choice: int) -> ValuePlan:
    """The plan `draw_values` gives `graph` for its drawn `choice`."""
    # Choices come from a Random seeded by the graph's own hash (and a drawn number) rather
    # than from sampled_from, whose derandomized draws favour the first options: every corner
    # should turn up about as often as the others, and the same graph keeps its values.
    digest = case_id("", CaseKind.valid, graph).rsplit("/", 1)[1]
    rng = random.Random(int(digest, 16) ^ choice)
    corners = corner_candidates(graph)
    if corners and rng.randrange(CORNER_EVERY) == 0:
        domain = rng.choice(sorted({domain for _, domain, _ in corners}))
        if _inf_as_zero(graph) and any(c[1] == "neg-inf-rows" for c in corners) \
                and rng.randrange(2) == 0:
            # The mode exists for rows all -inf: without them it computes as "none" does, so
            # half of its corner cases test what it is there for.
            domain = "neg-inf-rows"
        tid, _, reader = rng.choice([c for c in corners if c[1] == domain])
        return ValuePlan({tid: domain}, {"signal": "corner", "values": domain,
                                         "values_at": reader})
    return clean_plan(graph, "dense" if rng.randrange(3) == 0 else "grid")


def _inf_as_zero(graph: Graph) -> bool:
    return any(op.kind == "SoftMax" and op.attrs.get("mode") == "inf_as_zero"
               for op in graph.ops)


#: Corners worth a deterministic case of their own in the catalog instances, by the domain and
#: the op kinds that must read the tensor directly for it to test something specific.
TARGETED: Mapping[str, frozenset[str]] = {
    "large": EXP_LIKE,
    "ties": _ROUNDING,
    "neg-inf-rows": frozenset({"SoftMax"}),
    "saturate": frozenset({"Quantize"}),
    "special": SPECIAL_KINDS,
    "subnormal": frozenset({"Exp", "Elu", "Tanh", "GELU", "Reciprocal", "Sqrt", "Log"}),
}


def targeted_corners(graph: Graph) -> list[tuple[tuple[str, int, str], ValuePlan]]:
    """The `TARGETED` corners of `graph`, each keyed by (reading op kind, its input port,
    domain): the catalog instances add one case per key not yet seen in their pattern."""
    graph = graph if graph.finalized else graph.finalize()
    found: dict[tuple[str, int, str], ValuePlan] = {}
    for tensor, readers in _data_inputs(graph):
        if not tensor.dtype.is_float:
            continue
        for op, port in readers:
            for domain, kinds in TARGETED.items():
                if op.kind not in kinds or (op.kind == "TypeCast" and domain == "ties"
                                            and tensor.dtype.value != "f32"):
                    continue
                key = (op.kind, port, domain)
                found.setdefault(key, ValuePlan({tensor.id: domain}, {
                    "signal": "corner", "values": domain, "values_at": op.kind}))
    return sorted(found.items())


#: Clean domains whose values keep every product and sum of a few terms exact in bf16 and f16.
_EXACT_DOMAINS = frozenset({"grid", "positive", "small"})


def value_items(graph: Graph, domains: Mapping[int, str]) -> dict[str, str]:
    """The tensor value classes of the coverage model (`fusionspec.conformance.generate.model`)
    that `graph` filled from `domains` shows, by the op kind reading each data input:
    ``K.narrow fill`` (``bf16 exact``, ``bf16 inexact``, ``f16 ...``: a bf16/f16 input from the
    grid or from full-precision values) and ``K.special values`` (``NaN and inf``)."""
    graph = graph if graph.finalized else graph.finalize()
    found: dict[str, set[str]] = {}
    for tensor, readers in _data_inputs(graph):
        domain = domains.get(tensor.id, "grid")
        for op, _ in readers:
            if tensor.dtype.value in ("bf16", "f16") and domain in CLEAN_DOMAINS:
                exact = "exact" if domain in _EXACT_DOMAINS else "inexact"
                found.setdefault(f"{op.kind}.narrow fill", set()).add(
                    f"{tensor.dtype.value} {exact}")
            if domain == "special" and tensor.dtype.is_float:
                found.setdefault(f"{op.kind}.special values", set()).add(SPECIAL_VALUES)
    return {key: ",".join(sorted(values)) for key, values in sorted(found.items())}


def with_values(case: Case, plan: ValuePlan) -> Case:
    """`case` filled from `plan`, its features saying so (and its id telling it apart from the
    same graph with other values), and the coverage model's items its graph shows
    (`fusionspec.conformance.generate.model.graph_features`)."""
    ident = case.id
    if plan.domains:
        rule = case.rule if case.kind is not CaseKind.valid else None
        prefix = case.id.rsplit("/", 1)[0]
        ident = f"{prefix}/" + case_id(case.pattern, case.kind, case.graph, rule,
                                        plan.domains).rsplit("/", 1)[1]
    return replace(case, id=ident, values=dict(plan.domains),
                   features={**case.features, **plan.features, **graph_features(case.graph),
                             **value_items(case.graph, plan.domains)})

