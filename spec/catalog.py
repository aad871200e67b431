"""The pattern catalog: every fusion pattern of the three pages, in the pages' notation.

`CATALOG` holds one `PatternEntry` per pattern, in a fixed order that the partitioner uses to
break ties: page 001's three tables top to bottom (11 float inference rows, 7 quantized, 2
training), then the quantized ConvTranspose pattern of page 000, then the Softmax pattern of
page 003. Page 001's rows carry their RST text verbatim; pages 000 and 003 describe their
patterns in prose and diagrams, so fusionspec writes them in the same notation and records that
as a decision. Each entry cites its page and section, lists the rules that apply to it
(`fusionspec.spec.rules`) and the decisions taken where the pages leave room
(`fusionspec.spec.decisions`).

>>> entry("softmax.post_ops").notation
'SoftMax + [Unary | Binary]^{0-20} + TypeCast^? + Quantize^?_{>out}'
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, replace
from enum import StrEnum
from functools import cached_property
from types import MappingProxyType
from typing import Any

from . import decisions as dec
from .categories import BINARY
from .decisions import Decision
from .errors import FusionspecError
from .graph import Op
from .match import Match, Role, bind, leaf_roles
from .notation import parse
from .pages import FUSION_PATTERNS, QUANTIZED_CONVTRANSPOSE, SOFTMAX, Page
from .pattern_tree import (
    CategoryRef,
    Chain,
    Node,
    Path,
    Repeat,
    Subgraphs,
    leaves,
    max_ops,
    min_ops,
    op_kinds,
    walk,
)
from .rules import (
    CONVTRANSPOSE_INT8_MAX_POST_OPS,
    SOFTMAX_MAX_POST_OPS,
    Rule,
    check_match,
    rules_for,
)

__all__ = ["PatternFamily", "PatternEntry", "CATALOG", "UnknownPatternError", "entry", "entries",
           "pattern_ids"]


class PatternFamily(StrEnum):
    float_inference = "float-inference"
    quantized = "quantized"
    training = "training"
    quantized_convtranspose = "quantized-convtranspose"
    softmax = "softmax"


class UnknownPatternError(FusionspecError):
    """A pattern id that the catalog does not have."""


@dataclass(frozen=True, kw_only=True)
class PatternEntry:
    """One pattern of the pages.

    `notation` is the plain notation (the tree is `tree`, parsed once); `rst` is page 001's
    verbatim table cell (None for the patterns fusionspec wrote down from pages 000 and 003);
    `section` is the heading path inside `page`; `description` is the table's description
    column, or a summary for pages 000 and 003.
    """

    id: str
    notation: str
    family: PatternFamily
    page: Page
    section: str
    description: str
    rst: str | None = None
    decisions: tuple[Decision, ...] = ()

    @cached_property
    def tree(self) -> Node:
        return parse(self.notation)

    @cached_property
    def roles(self) -> Mapping[Path, Role]:
        """The role of each leaf of the tree, by path (see `fusionspec.spec.match.leaf_roles`)."""
        return leaf_roles(self.tree)

    @property
    def title(self) -> str:
        return self.page.title

    @property
    def rules(self) -> tuple[Rule, ...]:
        return rules_for(self.id)

    @property
    def rule_ids(self) -> tuple[str, ...]:
        return tuple(r.id for r in self.rules)

    @property
    def min_ops(self) -> int:
        return min_ops(self.tree)

    @property
    def max_ops(self) -> int:
        return max_ops(self.tree)

    def bind(self, ops: Sequence[Op], engine_kind: str = "cpu") -> Match:
        """A match of `ops`, given in pattern order, by their kinds (see `match.bind`)."""
        return bind(self.id, self.tree, ops, engine_kind)

    def check(self, match: Match) -> tuple[str, ...]:
        """The messages of the rules `match` breaks."""
        return check_match(match)

    def to_dict(self) -> dict[str, Any]:
        """A JSON-ready description (what ``fusionspec patterns --json`` prints)."""
        return {
            "id": self.id, "notation": self.notation, "family": self.family.value,
            "page": self.page.file, "title": self.page.title, "section": self.section,
            "description": self.description, "rst": self.rst,
            "min_ops": self.min_ops, "max_ops": self.max_ops,
            "rules": [r.to_dict() for r in self.rules],
            "decisions": [{"id": d.id, "text": d.text, "reason": d.reason}
                          for d in self.decisions],
        }


# -- shared decisions, attached where the tree calls for them -------------------------------

_BINARY = frozenset(BINARY)


def _shared_decisions(tree: Node) -> tuple[Decision, ...]:
    found: list[Decision] = []
    nodes = [node for _, node in walk(tree)]
    if any(isinstance(n, CategoryRef) and n.name == "Unary" for n in nodes):
        found.append(dec.POW_IN_UNARY)
    roles = leaf_roles(tree)
    if any(roles[path] is Role.post_op and op_kinds(leaf) & _BINARY
           for path, leaf in leaves(tree)):
        found.append(dec.CHAIN_OPERAND)
    main = tree.parts[-1] if isinstance(tree, Subgraphs) else tree
    last = main.items[-1] if isinstance(main, Chain) else main
    if isinstance(last, Repeat) and last.low == 0 and last.marks.is_partition_output:
        found.append(dec.OPTIONAL_OUT)
    return tuple(found)


def _entry(*, id: str, notation: str, family: PatternFamily, page: Page, section: str,
           description: str, rst: str | None, decisions: tuple[Decision, ...] = ()
           ) -> PatternEntry:
    made = PatternEntry(id=id, notation=notation, family=family, page=page, section=section,
                        description=description, rst=rst)
    return replace(made, decisions=_shared_decisions(made.tree) + decisions)


_FP = "Inference / Floating Point Patterns"
_Q = "Inference / Quantized Patterns"
_T = "Training"
_UB = "[Unary | Binary] :math:`^{0-3}` :math:`_{>out}`"
_INT8_HEAD = ("Quantize :math:`^?` + Dequantize :math:`_{>t1}` , Dequantize :math:`_{>t2}` "
              ":math:`^{0-3}` , Dequantize + ")
_INT8_TAIL = (" :math:`_{<t1}` + BiasAdd :math:`^?` + [Unary | Binary :math:`_{<t2}` ] "
              ":math:`^{0-3}` + Quantize :math:`^?` :math:`_{>out}`")


def _fp(*, id: str, notation: str, rst: str, description: str,
        decisions: tuple[Decision, ...] = ()) -> PatternEntry:
    """A float inference row of page 001."""
    return _entry(id=id, notation=notation, family=PatternFamily.float_inference,
                  page=FUSION_PATTERNS, section=_FP, description=description, rst=rst,
                  decisions=decisions)


def _int8(*, id: str, base: str, decisions: tuple[Decision, ...] = ()) -> PatternEntry:
    """One of page 001's three quantized rows built around a base op (`base`)."""
    notation = ("Quantize^? + Dequantize_{>t1}, Dequantize_{>t2}^{0-3}, Dequantize + " + base
                + "_{<t1} + BiasAdd^? + [Unary | Binary_{<t2}]^{0-3} + Quantize^?_{>out}")
    return _entry(id=id, notation=notation, family=PatternFamily.quantized, page=FUSION_PATTERNS,
                  section=_Q, description="N/A", rst=_INT8_HEAD + base + _INT8_TAIL,
                  decisions=(dec.BOUND_0_3, dec.INT8_TYPES, dec.INT8_WEIGHTS_T1,
                             dec.INT8_BINARY_T2, *decisions))


def _q(*, id: str, notation: str, rst: str, decisions: tuple[Decision, ...] = ()
       ) -> PatternEntry:
    """Another quantized row of page 001."""
    return _entry(id=id, notation=notation, family=PatternFamily.quantized, page=FUSION_PATTERNS,
                  section=_Q, description="N/A", rst=rst,
                  decisions=(dec.INT8_TYPES, *decisions))


def _build() -> tuple[PatternEntry, ...]:
    bound = dec.BOUND_0_3
    zero = dec.ZERO_POST_OPS
    return (
        _fp(
            id="fp.conv_post_ops",
            notation=(
                "Convolution + BiasAdd^? + BatchNormInference^? + [Unary | Binary]^{0-3}_{>out}"
            ),
            rst="Convolution + BiasAdd :math:`^?` + BatchNormInference :math:`^?` + " + _UB,
            description=(
                "This pattern is widely used in Convolution Neural Networks, for example ResNet, "
                "ResNext, SSD, etc."
            ),
            decisions=(bound,),
        ),
        _fp(
            id="fp.convtranspose_post_ops",
            notation="ConvTranspose + BiasAdd^? + [Unary | Binary]^{0-3}_{>out}",
            rst="ConvTranspose + BiasAdd :math:`^?` + " + _UB,
            description="This pattern is widely used in Generative Adversarial Networks.",
            decisions=(bound,),
        ),
        _fp(
            id="fp.interpolate_post_ops",
            notation="Interpolate + [Unary | Binary]^{0-3}_{>out}",
            rst="Interpolate + " + _UB,
            description="This pattern is widely used for image processing.",
            decisions=(bound, zero),
        ),
        _fp(
            id="fp.matmul_post_ops",
            notation="MatMul + BiasAdd^? + [Unary | Binary]^{0-3}_{>out}",
            rst="MatMul + BiasAdd :math:`^?` + " + _UB,
            description=(
                "This pattern is widely used in language models and recommendation models, for "
                "example BERT, DLRM, etc."
            ),
            decisions=(bound,),
        ),
        _fp(
            id="fp.reduction_post_ops",
            notation="Reduction + [Unary | Binary]^{0-3}_{>out}",
            rst="Reduction + " + _UB,
            description=(
                "This pattern is widely used for data processing, for example loss reduction."
            ),
            decisions=(bound,),
        ),
        _fp(
            id="fp.unary_binary",
            notation="Unary + Binary^{0-3}_{>out}",
            rst="Unary + Binary :math:`^{0-3}` :math:`_{>out}`",
            description="This pattern is widely used in Convolution Neural Networks.",
            decisions=(bound, zero, dec.UNARY_BINARY_ONLY),
        ),
        _fp(
            id="fp.binary_post_ops",
            notation="Binary + [Unary | Binary]^{0-3}_{>out}",
            rst="Binary + " + _UB,
            description=(
                "This pattern is widely used in Generative Adversarial Networks, for example "
                "ParallelWaveGAN."
            ),
            decisions=(bound, zero),
        ),
        _fp(
            id="fp.pool_binary",
            notation="[AvgPool | MaxPool] + Binary^{0-3}_{>out}",
            rst="[AvgPool | MaxPool] + Binary :math:`^{0-3}` :math:`_{>out}`",
            description="This pattern is widely used in Convolution Neural Networks.",
            decisions=(bound, zero, dec.POOL_BINARY_ONLY),
        ),
        _fp(
            id="fp.bn_relu",
            notation="BatchNormInference + ReLU_{>out}",
            rst="BatchNormInference + ReLU :math:`_{>out}`",
            description=(
                "This pattern is widely used in Convolution Neural Networks, for example "
                "DenseNet."
            ),
            decisions=(dec.BN_RELU,),
        ),
        _fp(
            id="fp.reciprocal_multiply",
            notation="Reciprocal + Multiply_{>out}",
            rst="Reciprocal + Multiply :math:`_{>out}`",
            description="N/A",
        ),
        _fp(
            id="fp.reorder_add",
            notation="Reorder + Add_{>out}",
            rst="Reorder + Add :math:`_{>out}`",
            description="N/A",
            decisions=(dec.ADD_BROADCAST,),
        ),
        _int8(id="int8.conv_post_ops", base="Convolution"),
        _int8(
            id="int8.convtranspose_post_ops",
            base="ConvTranspose",
            decisions=(dec.CT_RULES_ON_001,),
        ),
        _int8(id="int8.matmul_post_ops", base="MatMul"),
        _q(
            id="int8.pool",
            notation="Dequantize + [AvgPool | MaxPool] + Quantize_{>out}",
            rst="Dequantize + [AvgPool | MaxPool] + Quantize :math:`_{>out}`",
        ),
        _q(
            id="int8.pool_add",
            notation=(
                "Dequantize_{>t1}, Dequantize + [AvgPool | MaxPool] + Add_{<t1} + "
                "Quantize_{>out}"
            ),
            rst=(
                "Dequantize :math:`_{>t1}` , Dequantize + [AvgPool | MaxPool] + Add :math:`_{<t1}` "
                "+ Quantize :math:`_{>out}`"
            ),
            decisions=(dec.ADD_T1,),
        ),
        _q(
            id="int8.reorder",
            notation="Dequantize + Reorder + Quantize_{>out}",
            rst="Dequantize + Reorder + Quantize :math:`_{>out}`",
        ),
        _q(
            id="int8.reorder_add",
            notation=(
                "Dequantize_{>t1}, Dequantize + Reorder + Add_{<t1} + "
                "Quantize_{>out}"
            ),
            rst=(
                "Dequantize :math:`_{>t1}` , Dequantize + Reorder + Add :math:`_{<t1}` + Quantize "
                ":math:`_{>out}`"
            ),
            decisions=(dec.ADD_T1, dec.ADD_BROADCAST),
        ),
        _entry(
            id="train.conv_bwd_weights_bias_bwd",
            notation="ConvolutionBackwardWeights + BiasAddBackward_{>out}",
            family=PatternFamily.training,
            page=FUSION_PATTERNS,
            section=_T,
            description="N/A",
            rst="ConvolutionBackwardWeights + BiasAddBackward :math:`_{>out}`",
            decisions=(dec.CBW_CHAIN,),
        ),
        _entry(
            id="train.relu_bwd_bn_bwd",
            notation="ReLUBackward + BatchNormTrainingBackward_{>out}",
            family=PatternFamily.training,
            page=FUSION_PATTERNS,
            section=_T,
            description="N/A",
            rst="ReLUBackward + BatchNormTrainingBackward :math:`_{>out}`",
            decisions=(dec.RELU_BWD_BN_BWD,),
        ),
        _entry(
            id="convtranspose.int8",
            notation=(
                "Quantize^? + Dequantize_{>t1}, Dequantize + ConvTranspose_{<t1} + BiasAdd^? + "
                f"[Unary | Binary]^{{0-{CONVTRANSPOSE_INT8_MAX_POST_OPS}}} + Quantize^?_{{>out}}"
            ),
            family=PatternFamily.quantized_convtranspose,
            page=QUANTIZED_CONVTRANSPOSE,
            section="Pattern Structure",
            description=(
                "Quantized ConvTranspose: Q2F conversion of src and weights, ConvTranspose, an "
                "epilogue of an optional BiasAdd and 0 to 4 unary/binary ops, optional F2Q "
                "conversion."
            ),
            rst=None,
            decisions=(dec.WRITTEN_BY_FUSIONSPEC, dec.CT_Q2F, dec.CT_F2Q_OPTIONAL, dec.CT_BOUND,
                       dec.CT_PLAIN_BINARY, dec.CT_UNREACHABLE, dec.CT_BIAS, dec.CT_GPU),
        ),
        _entry(
            id="softmax.post_ops",
            notation=(
                f"SoftMax + [Unary | Binary]^{{0-{SOFTMAX_MAX_POST_OPS}}} + TypeCast^? + "
                "Quantize^?_{>out}"
            ),
            family=PatternFamily.softmax,
            page=SOFTMAX,
            section="Pattern Structure",
            description=(
                "SoftMax, an epilogue of 0 to 20 unary/binary ops, optional F2F conversion "
                "(TypeCast), optional F2Q conversion (Quantize)."
            ),
            rst=None,
            decisions=(dec.WRITTEN_BY_FUSIONSPEC, dec.SM_BOUND, dec.SM_F2F_AND_F2Q, dec.SM_F32,
                       dec.SM_INT8, dec.SM_INPLACE),
        ),
    )


#: Every pattern of the pages, in catalog order.
CATALOG: tuple[PatternEntry, ...] = _build()

_BY_ID: Mapping[str, PatternEntry] = MappingProxyType({e.id: e for e in CATALOG})


def pattern_ids() -> tuple[str, ...]:
    """The catalog's pattern ids, in catalog order."""
    return tuple(_BY_ID)


def entry(pattern_id: str) -> PatternEntry:
    """The entry with id `pattern_id`; raises UnknownPatternError naming the known ids."""
    try:
        return _BY_ID[pattern_id]
    except KeyError:
        raise UnknownPatternError(f"no pattern {pattern_id!r} in the catalog; known: "
                                  f"{', '.join(_BY_ID)}") from None


def entries(family: PatternFamily | str | None = None) -> tuple[PatternEntry, ...]:
    """The catalog's entries, all or those of one family, in catalog order."""
    if family is None:
        return CATALOG
    try:
        wanted = PatternFamily(family)
    except ValueError:
        known = ", ".join(f.value for f in PatternFamily)
        raise UnknownPatternError(f"no pattern family {family!r}; known: {known}") from None
    return tuple(e for e in CATALOG if e.family is wanted)
