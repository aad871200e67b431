"""fusionspec.spec: the oneDNN Graph fusion-pattern spec as executable data.

The data model (`DataType`, `LogicalTensor`, `Op`, `Graph`, `Partition`, and `Array`, the type
of the NumPy arrays tensors travel as), the op schemas of the 47 ops the pages name, graph
validation (`Graph.finalize()`), and the typed errors. The pattern notation, the catalog and
oneDNN's graph JSON format live in the sibling modules `notation`, `catalog` and `onednn_json`.
"""

from .dtypes import DataType
from .errors import (
    ArityError,
    AttributeRuleError,
    DTypeRuleError,
    FusionspecError,
    GraphError,
    JsonFormatError,
    NotationError,
    ShapeRuleError,
    TopologyError,
    UnknownOpError,
)
from .graph import (
    UNKNOWN_DIM,
    AttrValue,
    Graph,
    LayoutType,
    LogicalTensor,
    Op,
    Partition,
    PropertyType,
)
from .opschemas import OPAQUE_KINDS, SCHEMAS, schema_for
from .schema import AttrKind, AttrSpec, OpSchema, PortSpec
from .types import Array
from .validate import OutsideSpecWarning

__all__ = [
    "Array", "ArityError", "AttrKind", "AttrSpec", "AttrValue", "AttributeRuleError",
    "DTypeRuleError",
    "DataType", "FusionspecError", "Graph", "GraphError", "JsonFormatError", "LayoutType",
    "LogicalTensor", "NotationError", "OPAQUE_KINDS", "Op", "OpSchema", "OutsideSpecWarning",
    "Partition", "PortSpec", "PropertyType", "SCHEMAS", "ShapeRuleError", "TopologyError",
    "UNKNOWN_DIM", "UnknownOpError", "schema_for",
]

# -- the pattern notation, the catalog and its rules ----------------------------------------
from .catalog import CATALOG, PatternEntry, PatternFamily, UnknownPatternError, entries, entry
from .categories import CATEGORIES
from .decisions import Decision
from .match import Match, MatchedOp, MatchError, Role, bind, leaf_roles, match_kinds
from .notation import parse, rst_to_plain, to_notation
from .pages import Page
from .pattern_tree import (
    NO_MARKS,
    Alternation,
    CategoryRef,
    Chain,
    Group,
    Leaf,
    Marks,
    Node,
    OpRef,
    PatternTreeError,
    Repeat,
    Subgraphs,
)
from .rules import RULES, DTypeTable, Rule, RuleKind, UnknownRuleError, check_match, rules_for

__all__ += [
    "Alternation", "CATALOG", "CATEGORIES", "CategoryRef", "Chain", "DTypeTable", "Decision",
    "PatternFamily", "Group", "Leaf", "MatchError", "Marks", "Match", "MatchedOp", "NO_MARKS",
    "Node",
    "OpRef", "Page", "PatternEntry", "PatternTreeError", "RULES", "Repeat", "Role", "Rule",
    "RuleKind", "Subgraphs", "UnknownPatternError", "UnknownRuleError", "bind", "check_match",
    "entries", "entry", "leaf_roles", "match_kinds", "parse", "rst_to_plain", "rules_for",
    "to_notation",
]
