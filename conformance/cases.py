"""What the conformance suite generates: cases, their kinds and statuses, the structural rules.

A `Case` is one graph with what the spec says about it:

- ``valid``: an instance of catalog pattern `pattern`; the spec requires one partition with
  exactly its ops, and outputs equal to the reference's within tolerance;
- ``near-miss``: a well-formed graph that breaks one rule of `pattern` (`rule` names it: a
  catalog rule id, or one of `STRUCTURAL_RULES`); the reference does not fuse it as `pattern`. A
  backend that fuses it anyway and computes it right is an *extension*, not a failure;
- ``ill-formed``: a graph that breaks an op-schema or graph rule (`rule` is the schema rule id,
  e.g. ``schema.attr.required``); the spec requires a typed rejection.

A case's verdict (`fusionspec.conformance.grade.verdict.Verdict`) has a `Status`
(`fusionspec.backend.status`, re-exported here).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from enum import StrEnum

from fusionspec.backend.status import FAILING, Status
from fusionspec.spec.graph import Graph

__all__ = ["CaseKind", "Case", "Status", "FAILING", "StructuralRule",
           "STRUCTURAL_RULES"]


class CaseKind(StrEnum):
    valid = "valid"
    near_miss = "near-miss"
    ill_formed = "ill-formed"


class StructuralRule(StrEnum):
    """Near-miss labels for rules the notation itself states (catalog rules have their own
    ids)."""

    bound = "structure.bound"
    bias_first = "structure.bias_first"
    fan_out = "structure.fan_out"
    port = "structure.port"
    kind = "structure.kind"
    convex = "structure.convex"


#: What each structural rule says.
STRUCTURAL_RULES: Mapping[str, str] = {
    StructuralRule.bound: "one more post-op than the repetition bound allows",
    StructuralRule.bias_first: "BiasAdd not first in the epilogue, or twice",
    StructuralRule.fan_out: "an intermediate tensor of the chain has a second consumer",
    StructuralRule.port: "the chain enters Subtract or Divide on src_1",
    StructuralRule.kind: "an op the pattern does not allow at that place",
    StructuralRule.convex: "a path leaves the instance through a second output and re-enters it",
}


@dataclass(frozen=True)
class Case:
    """One generated graph and what the spec says about it.

    `features` records what the case exercises, for grammar coverage in the report: e.g.
    ``{"post_ops": 2, "alternative": "Binary", "bias": "yes", "dtype_row": "u8,s8,f32,u8"}``.
    `dtype` is the case's headline data type for the report's matrix (``f32``, ``bf16``,
    ``int8`` ...). `values` names the value domain of the graph inputs that are not filled
    from the default grid (tensor id -> a `fusionspec.reference.filling.DOMAINS` name): the
    inputs are ``fill_inputs(graph, seed, values)``, so a case with the same seed always gets
    the same data.
    """

    id: str
    kind: CaseKind
    pattern: str
    graph: Graph
    rule: str | None = None
    dtype: str = "f32"
    features: Mapping[str, str | int] = field(default_factory=dict)
    description: str = ""
    values: Mapping[int, str] = field(default_factory=dict)
