"""The typed errors of fusionspec.

Every failure a user can cause (a malformed JSON file, an ill-formed graph, a bad pattern string)
raises a subclass of `FusionspecError` whose message names the problem and where it is. Each
`GraphError` carries the id of the rule it enforces (`rule`), so tests and the conformance suite
can check that the *right* rule fired, not just that something failed.
"""

from __future__ import annotations

from enum import StrEnum

__all__ = [
    "GraphRule",
    "FusionspecError",
    "GraphError",
    "UnknownOpError",
    "ArityError",
    "AttributeRuleError",
    "MissingAttributeError",
    "DTypeRuleError",
    "ShapeRuleError",
    "TopologyError",
    "JsonFormatError",
    "NotationError",
]


class GraphRule(StrEnum):
    """The ids of the rules a well-formed graph keeps (what `Graph.finalize()` checks, in
    `fusionspec.spec.validate`); a schema's own constraints carry their ids with them
    (`fusionspec.spec.schema.Constraint`)."""

    engine_kind = "graph.engine_kind"  #: engine_kind is cpu or gpu
    fpmath_mode = "graph.fpmath_mode"  #: fpmath_mode is one oneDNN defines
    op_id_unique = "graph.op_id.unique"  #: no two ops share an id
    one_producer = "graph.tensor.one_producer"  #: a tensor has at most one producer
    tensor_consistent = "graph.tensor.consistent"  #: one dtype and shape per tensor id
    acyclic = "graph.acyclic"  #: no op depends on its own output
    kind = "schema.kind"  #: an op kind oneDNN defines
    arity_inputs = "schema.arity.inputs"  #: as many inputs as the schema allows
    arity_outputs = "schema.arity.outputs"  #: as many outputs as the schema allows
    attr_unknown = "schema.attr.unknown"  #: no attribute the schema does not name
    attr_type = "schema.attr.type"  #: each attribute of its schema type
    attr_value = "schema.attr.value"  #: each attribute value among the allowed ones
    attr_required = "schema.attr.required"  #: every required attribute given
    attr_finite = "schema.attr.finite"  #: f32 attribute values are finite (no NaN, no inf)
    attr_range = "schema.attr.range"  #: numbers within the attribute's range (strides >= 1 ...)
    value_types = "graph.types"  #: op and tensor ids and dims are integers
    dtype_port = "schema.dtype.port"  #: each port's dtype allowed for that port
    dtype_unify = "schema.dtype.unify"  #: ports sharing a type symbol share the dtype
    dtype_row = "schema.dtype.row"  #: the ports' dtypes form a row of the op's table
    shape_infer = "schema.shape.infer"  #: input shapes the op can compute with
    shape_output = "schema.shape.output"  #: declared output shapes equal the inferred ones


class FusionspecError(Exception):
    """Base class of every error fusionspec raises on purpose."""


class GraphError(FusionspecError):
    """A graph breaks a rule of the op schemas or of graph structure.

    `op_id` is the offending op (None for graph-wide rules), `where` names the port or attribute
    (``"input 1 (weights)"``, ``"attribute strides"``), `rule` is a stable rule id such as
    ``"schema.dtype.unify"``.
    """

    def __init__(self, message: str, *, rule: str, op_id: int | None = None,
                 op_kind: str | None = None, where: str | None = None) -> None:
        self.rule = rule
        self.op_id = op_id
        self.op_kind = op_kind
        self.where = where
        self.detail = message
        prefix = ""
        if op_id is not None:
            prefix = f"op {op_id}" + (f" ({op_kind})" if op_kind else "")
            if where:
                prefix += f", {where}"
            prefix += ": "
        elif where:
            prefix = f"{where}: "
        super().__init__(f"{prefix}{message} [{rule}]")


class UnknownOpError(GraphError):
    """An op kind that oneDNN does not define."""


class ArityError(GraphError):
    """Wrong number of inputs or outputs for the op kind."""


class AttributeRuleError(GraphError):
    """A missing required attribute, an unknown one, a wrong type or a value not allowed."""


class MissingAttributeError(FusionspecError):
    """An attribute read from an op that does not give it, where its op schema has no default
    to fall back on: the attribute is required, optional without a default, not one the schema
    names, or the kind has no schema at all. A finalized graph never raises it for a required
    attribute (validation rejects the op first); it marks code asking for a value that the op
    and its schema leave undefined. `op_id` is None for attributes read before the op exists.
    """

    def __init__(self, message: str, *, op_kind: str, attribute: str,
                 op_id: int | None = None) -> None:
        self.op_kind = op_kind
        self.op_id = op_id
        self.attribute = attribute
        self.detail = message
        op = f"op {op_id} ({op_kind})" if op_id is not None else op_kind
        super().__init__(f"{op}, attribute {attribute}: {message}")


class DTypeRuleError(GraphError):
    """A data type not allowed on a port, or ports that must share a type and do not."""


class ShapeRuleError(GraphError):
    """Shapes that contradict the op's shape inference or each other."""


class TopologyError(GraphError):
    """Duplicate ids, a tensor produced twice, or a cycle."""


class JsonFormatError(FusionspecError):
    """A oneDNN graph JSON document that cannot be read; `path` is a JSON path like
    ``$.graph[3].inputs[0].dtype``."""

    def __init__(self, message: str, *, path: str, source: str | None = None) -> None:
        self.path = path
        self.source = source
        self.detail = message
        where = f"{source}: " if source else ""
        super().__init__(f"{where}{path}: {message}")


class NotationError(FusionspecError):
    """A pattern string that does not parse; `position` is the 0-based character offset."""

    def __init__(self, message: str, *, text: str, position: int) -> None:
        self.text = text
        self.position = position
        self.detail = message
        caret = " " * position + "^"
        super().__init__(f"{message} at character {position}:\n  {text}\n  {caret}")
