"""The coverage model: what the op schemas allow each op of a pattern to be, as items.

Nothing here is written per op: the items come from the op schemas
(`fusionspec.spec.opschemas.SCHEMAS`) of every op kind a catalog pattern can hold (its main
chain, its post-ops and its side subgraphs). For an op kind ``K``:

- each attribute ``a`` gives the feature ``K.a`` with a value class per way the schema lets it
  differ: ``omitted`` when it is optional (the default applies); each allowed string; ``true``
  and ``false`` for a boolean; for a number, ``negative``, ``zero``, ``one`` and ``positive``
  (other positive values) within the schema's bounds, and ``at minimum`` / ``at maximum``
  where the schema draws a bound;
- each optional input or output port ``p`` gives ``K.input p`` / ``K.output p`` with the values
  ``present`` and ``absent``.

`graph_features(graph)` reads the same items off a graph (every op, side subgraphs included):
it is what a case records among its features, so the results document counts it per pattern
and the report shows it per op and per pattern. `model_items(entry)` is what a pattern's ops
could show (the structural situations its rules speak of are its near misses' rules:
`fusionspec.conformance.generate.near_miss.structure_items`); `required_items()` is the union
of the model items over the catalog, less `UNDRAWN`: the items the generator leaves out, each
with the reason it cannot be drawn as a valid case. A test holds the ci profile to drawing
every required item at least once.

>>> value_classes(AttrSpec("epsilon", AttrKind.f32, required=True, minimum=0.0), 0.0)
('zero', 'at minimum')
>>> [v for k, v in op_items("SoftMax") if k == "SoftMax.output stats"]
['present', 'absent']
"""

from __future__ import annotations

from collections.abc import Mapping
from functools import cache

from fusionspec.spec.catalog import CATALOG, PatternEntry
from fusionspec.spec.graph import AttrValue, Graph
from fusionspec.spec.opschemas import SCHEMAS
from fusionspec.spec.pattern_tree import op_kinds
from fusionspec.spec.schema import AttrKind, AttrSpec

#: A coverage item: (feature key, value as text), as `fusionspec.conformance.generate.coverage`
#: spells them.
Item = tuple[str, str]

__all__ = ["Item", "OMITTED", "value_classes", "op_items", "model_items", "graph_features",
           "required_items", "UNDRAWN"]

OMITTED = "omitted"
_NUMBERS = (AttrKind.f32, AttrKind.s64)


def _number_classes(spec: AttrSpec) -> list[str]:
    low = spec.minimum if spec.minimum is not None else float("-inf")
    high = spec.maximum if spec.maximum is not None else float("inf")
    found = [name for name, allowed in (("negative", low < 0), ("zero", low <= 0 <= high),
                                        ("one", low <= 1 <= high), ("positive", high > 0))
             if allowed]
    if spec.minimum is not None:
        found.append("at minimum")
    if spec.maximum is not None:
        found.append("at maximum")
    return found


def _attr_classes(spec: AttrSpec) -> list[str]:
    found = [] if spec.required else [OMITTED]
    if spec.kind is AttrKind.string and spec.allowed:
        found += list(spec.allowed)
    elif spec.kind is AttrKind.boolean:
        found += ["true", "false"]
    elif spec.kind in _NUMBERS:
        found += _number_classes(spec)
    return found


@cache
def op_items(kind: str) -> tuple[Item, ...]:
    """Every item the schema of `kind` allows (see the module docstring)."""
    schema = SCHEMAS[kind]
    items: list[Item] = []
    for spec in schema.attrs:
        items += [(f"{kind}.{spec.name}", value) for value in _attr_classes(spec)]
    for direction, ports in (("input", schema.inputs), ("output", schema.outputs)):
        for port in ports:
            if port.optional:
                items += [(f"{kind}.{direction} {port.name}", v) for v in ("present", "absent")]
    return tuple(items)


def value_classes(spec: AttrSpec, value: AttrValue | None) -> tuple[str, ...]:
    """The classes `value` of the attribute `spec` falls in (a bound may also be zero or one;
    none for an attribute without classes, such as a list)."""
    if value is None:
        return () if spec.required else (OMITTED,)
    if spec.kind is AttrKind.string and spec.allowed:
        return (str(value),)
    if spec.kind is AttrKind.boolean:
        return ("true" if value else "false",)
    if spec.kind not in _NUMBERS or isinstance(value, bool) or not isinstance(value,
                                                                             int | float):
        return ()
    found = ["negative" if value < 0 else "zero" if value == 0 else "one" if value == 1
             else "positive"]
    if spec.minimum is not None and value == spec.minimum:
        found.append("at minimum")
    if spec.maximum is not None and value == spec.maximum:
        found.append("at maximum")
    return tuple(found)


def graph_features(graph: Graph) -> dict[str, str]:
    """The model items `graph` shows, as case features: ``K.a`` -> its value classes,
    comma-joined and sorted."""
    found: dict[str, set[str]] = {}
    for op in graph.ops:
        schema = SCHEMAS.get(op.kind)
        if schema is None:
            continue
        for spec in schema.attrs:
            classes = value_classes(spec, op.attrs.get(spec.name))
            if classes:
                found.setdefault(f"{op.kind}.{spec.name}", set()).update(classes)
        for direction, ports, given in (("input", schema.inputs, len(op.inputs)),
                                        ("output", schema.outputs, len(op.outputs))):
            for index, port in enumerate(ports):
                if port.optional:
                    found.setdefault(f"{op.kind}.{direction} {port.name}", set()).add(
                        "present" if index < given else "absent")
    return {key: ",".join(sorted(values)) for key, values in sorted(found.items())}


#: Items of the model no valid case can show, and why. Keyed by (feature, value); each reason
#: is a rule of the spec or a recorded decision, never a choice of the generator's.
_GROUPS = ("groups splits the channels into that many groups: shape inference needs a "
           "positive divisor of both channel counts, so no well-formed graph has it")
UNDRAWN: Mapping[Item, str] = {
    **{(f"{kind}.groups", value): _GROUPS for kind in (
        "Convolution", "ConvTranspose", "ConvolutionBackwardWeights")
       for value in ("negative", "zero")},
    **{(f"{kind}.groups", "at maximum"): "2^31 - 1 groups need as many channels on each "
       "side: far past any tensor a case can hold" for kind in (
        "Convolution", "ConvTranspose", "ConvolutionBackwardWeights")},
    ("SoftPlus.beta", "zero"): "the formula ln(1 + e^(beta*x))/beta divides by beta: no value "
    "is defined for beta = 0 (the reference rejects it as bad input)",
    ("MatMul.accumulation_mode", "f16"): "licenses sums held in f16, an error the bounds do not "
    "model: a case would fail a backend that takes the licence (a suite limitation)",
    ("MatMul.accumulation_mode", "s32"): "integer accumulation: every MatMul of the patterns "
    "multiplies f32, bf16 or f16 operands (the int8 patterns dequantize first)",
}


def model_items(entry: PatternEntry) -> tuple[Item, ...]:
    """The model items of every op kind `entry` can hold, less `UNDRAWN`."""
    return tuple(item for kind in sorted(op_kinds(entry.tree)) if kind in SCHEMAS
                 for item in op_items(kind) if item not in UNDRAWN)


def required_items() -> frozenset[Item]:
    """What the ci profile must draw between all its cases: every pattern's model items."""
    return frozenset(item for entry in CATALOG for item in model_items(entry))
