"""The rules of the pages that the notation cannot express, as data with small predicates.

Each `Rule` has a stable id, a one-line statement, the page and section it comes from, the
catalog patterns it applies to, a kind (`RuleKind`), an optional device (``"gpu"``: the rule
holds only there) and, except for notes, a predicate. A predicate takes a `Match` (the ops of
one instance in pattern order, with roles, see `fusionspec.spec.match`) and returns None when the
instance keeps the rule or a message naming what broke it; `Rule.check` appends the rule id:
``"SoftMax dst is f16 but TypeCast follows [softmax.f32_dst]"``.

Some rules restate a bound the notation already carries (``[Unary | Binary]^{0-4}``): the page
states them as rules too, and near-miss instances placed by hand (`Match.placed`) need them.
"""

from __future__ import annotations

import itertools
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from enum import StrEnum
from types import MappingProxyType
from typing import Any, TypeAlias

from .attrs import attr_value
from .dtypes import DataType
from .errors import FusionspecError
from .ir import Op
from .match import Match, Role
from .pages import QUANTIZED_CONVTRANSPOSE, SOFTMAX, Page

__all__ = [
    "RuleKind", "Predicate", "DTypeTable", "Rule", "RULES", "UnknownRuleError", "rule",
    "rules_for", "check_match", "CONVTRANSPOSE_INT8_DTYPES", "convtranspose_int8_dtypes",
    "inplace_add_candidate", "CONVTRANSPOSE_INT8_MAX_POST_OPS", "SOFTMAX_MAX_POST_OPS",
]

D = DataType

#: A rule's check: None when a match keeps the rule, else what broke it (without the rule id).
Predicate: TypeAlias = Callable[[Match], str | None]

#: The page's bounds on the unary/binary epilogue (the catalog's notation uses the same).
CONVTRANSPOSE_INT8_MAX_POST_OPS = 4
SOFTMAX_MAX_POST_OPS = 20


class RuleKind(StrEnum):
    dtype = "dtype"
    structure = "structure"
    device = "device"
    note = "note"


class UnknownRuleError(FusionspecError):
    """A rule id that no rule has."""


@dataclass(frozen=True)
class DTypeTable:
    """A dtype table of a page: each row allows, per column, a set of types."""

    columns: tuple[str, ...]
    rows: tuple[Mapping[str, frozenset[DataType]], ...]

    def check(self, values: Mapping[str, Sequence[DataType]]) -> str | None:
        """None when some row allows every value given for every column (a column may have
        several values, e.g. two bias tensors, or none), else which value no row allows."""
        best = ""
        for row in self.rows:
            for column in self.columns:
                bad = [dt for dt in values.get(column, ()) if dt not in row[column]]
                if bad:
                    allowed = ", ".join(sorted(dt.value for dt in row[column]))
                    best = best or f"{column} is {bad[0]}, the dtype table allows {allowed}"
                    break
            else:
                return None
        return best or "no row of the dtype table"

    def combinations(self) -> Iterator[dict[str, DataType]]:
        """Every concrete assignment of one type per column that some row allows."""
        seen: set[tuple[DataType, ...]] = set()
        for row in self.rows:
            ordered = [sorted(row[c], key=lambda dt: dt.value) for c in self.columns]
            for combo in itertools.product(*ordered):
                if combo not in seen:
                    seen.add(combo)
                    yield dict(zip(self.columns, combo))


@dataclass(frozen=True)
class Rule:
    """One rule of a page, applying to the catalog patterns `patterns`."""

    id: str
    kind: RuleKind
    statement: str
    page: Page
    section: str
    patterns: tuple[str, ...]
    predicate: Predicate | None = None
    device: str | None = None
    table: DTypeTable | None = None

    def applies(self, match: Match) -> bool:
        """Whether this rule is checked on `match`: its pattern, its device, not a note."""
        return (self.predicate is not None and match.pattern_id in self.patterns
                and (self.device is None or match.engine_kind == self.device))

    def to_dict(self) -> dict[str, Any]:
        """A JSON-ready description (the predicate is code and is left out)."""
        table = None
        if self.table is not None:
            table = {"columns": list(self.table.columns),
                     "rows": [{c: sorted(dt.value for dt in row[c]) for c in self.table.columns}
                              for row in self.table.rows]}
        return {"id": self.id, "kind": self.kind.value, "statement": self.statement,
                "page": self.page.file, "section": self.section,
                "patterns": list(self.patterns), "device": self.device, "table": table}

    def check(self, match: Match) -> str | None:
        """None when `match` keeps the rule (or the rule does not apply to it), else the
        predicate's message followed by ``[rule id]``."""
        if not self.applies(match) or self.predicate is None:
            return None
        message = self.predicate(match)
        return None if message is None else f"{message} [{self.id}]"


# -- helpers for predicates ----------------------------------------------------------------

def _in_dtype(op: Op, port: int) -> DataType | None:
    return op.inputs[port].dtype if port < len(op.inputs) else None


def _out_dtype(op: Op) -> DataType | None:
    return op.outputs[0].dtype if op.outputs else None


_Q2F_ROLES = (Role.src_q2f, Role.weights_q2f, Role.binary_q2f)
_ROLE_WORDS = {Role.src_q2f: "src Q2F", Role.weights_q2f: "weights Q2F", Role.f2q: "F2Q"}


def _main_chain(match: Match) -> list[Op]:
    return [m.op for m in match.ops if m.role not in _Q2F_ROLES]


# -- quantized ConvTranspose (page 000) ----------------------------------------------------

CONVTRANSPOSE_INT8_DTYPES = DTypeTable(
    ("src", "weights", "bias", "dst"),
    (MappingProxyType({
        "src": frozenset({D.u8, D.s8}),
        "weights": frozenset({D.s8, D.f32}),
        "bias": frozenset({D.f32, D.bf16, D.f16}),
        "dst": frozenset({D.u8, D.s8, D.bf16, D.f16, D.f32}),
    }),),
)


def convtranspose_int8_dtypes(match: Match) -> dict[str, tuple[DataType, ...]]:
    """The dtype table's columns read off a quantized-ConvTranspose match.

    src: the src Dequantize's input; weights: the weights path's first input (the f32 tensor
    when a Quantize comes first, else the Dequantize's quantized input); bias: ConvTranspose's
    own bias input and every BiasAdd's bias; dst: the main chain's last output.
    """
    found: dict[str, list[DataType]] = {c: [] for c in CONVTRANSPOSE_INT8_DTYPES.columns}
    for column, op, port in (("src", match.first(Role.src_q2f), 0),
                             ("weights", match.first(Role.weights_q2f), 0),
                             ("bias", match.base, 2)):
        dt = None if op is None else _in_dtype(op, port)
        if dt is not None:
            found[column].append(dt)
    for op in _main_chain(match):
        dt = _in_dtype(op, 1) if op.kind == "BiasAdd" else None
        if dt is not None:
            found["bias"].append(dt)
    chain = _main_chain(match)
    last = _out_dtype(chain[-1]) if chain else None
    if last is not None:
        found["dst"].append(last)
    return {column: tuple(values) for column, values in found.items()}


def _convtranspose_table(match: Match) -> str | None:
    return CONVTRANSPOSE_INT8_DTYPES.check(convtranspose_int8_dtypes(match))


def _bias_first_once(match: Match) -> str | None:
    epilogue = [m.op for m in match.ops if m.role in (Role.bias, Role.post_op)]
    places = [i for i, op in enumerate(epilogue) if op.kind == "BiasAdd"]
    if len(places) > 1:
        return f"BiasAdd appears {len(places)} times in the epilogue"
    if places and places[0] != 0:
        return (f"BiasAdd is epilogue op {places[0] + 1}, after "
                f"{epilogue[0].kind}; it must come first")
    return None


def _at_most_post_ops(bound: int) -> Predicate:
    def check(match: Match) -> str | None:
        count = len(match.with_role(Role.post_op))
        if count > bound:
            return f"{count} unary/binary post-ops; the page allows 0 to {bound}"
        return None
    return check


def _weights_only_quantize(match: Match) -> str | None:
    for op in match.with_role(Role.src_q2f):
        if op.kind == "Quantize":
            return (f"src path has a Quantize (op {op.id}); Quantize + Dequantize is a Q2F "
                    "form for weights only")
    return None


def _gpu_zero_zps(match: Match) -> str | None:
    for matched in match.ops:
        op = matched.op
        if matched.role in _ROLE_WORDS and op.kind in ("Quantize", "Dequantize"):
            zps = op.attrs.get("zps")  # optional, without a default: no zero points
            if isinstance(zps, tuple) and any(z != 0 for z in zps):
                return (f"{_ROLE_WORDS[matched.role]} {op.kind} (op {op.id}) has zps "
                        f"{list(zps)}; on GPU they must all be 0")
    return None


def _gpu_f2q_per_tensor(match: Match) -> str | None:
    for op in match.with_role(Role.f2q):
        qtype = attr_value(op, "qtype")
        if qtype != "per_tensor":
            return f"F2Q Quantize (op {op.id}) is {qtype}; on GPU it must be per_tensor"
        scales = attr_value(op, "scales")
        if isinstance(scales, tuple) and any(s != 1.0 for s in scales):
            return (f"F2Q Quantize (op {op.id}) has scales {list(scales)}; on GPU they must "
                    "all be 1")
    return None


# -- Softmax (page 003) --------------------------------------------------------------------

_STAGES = {Role.post_op: (0, "epilogue"), Role.f2f: (1, "F2F"), Role.f2q: (2, "F2Q")}


def _softmax_order(match: Match) -> str | None:
    if match.ops and match.ops[0].role is not Role.base:
        return f"{match.ops[0].op.kind} comes before the SoftMax; SoftMax must come first"
    last = (0, "epilogue", "")
    counts = {Role.f2f: 0, Role.f2q: 0}
    for matched in match.ops[1:]:
        stage = _STAGES.get(matched.role)
        if stage is None:
            return f"{matched.op.kind} (op {matched.op.id}) is no part of a Softmax pattern"
        if matched.role in counts:
            counts[matched.role] += 1
            if counts[matched.role] > 1:
                return f"a second {stage[1]} subgraph ({matched.op.kind} op {matched.op.id})"
        if stage[0] < last[0]:
            return (f"{stage[1]} {matched.op.kind} (op {matched.op.id}) follows the {last[1]} "
                    f"{last[2]}; the order is epilogue, F2F, F2Q")
        last = (stage[0], stage[1], matched.op.kind)
    return None


def _softmax_f32_dst(match: Match) -> str | None:
    softmax = match.base
    following = [m for m in match.ops if m.role in _STAGES]
    if softmax is None or not following:
        return None
    dst = _out_dtype(softmax)
    if dst is not None and dst is not D.f32:
        first = following[0]
        what = f"post-op {first.op.kind}" if first.role is Role.post_op else first.op.kind
        return f"SoftMax dst is {dst} but {what} follows"
    return None


def _softmax_f2f(match: Match) -> str | None:
    for op in match.with_role(Role.f2f):
        src, dst = _in_dtype(op, 0), _out_dtype(op)
        if src is not D.f32 or dst not in (D.f16, D.bf16):
            return (f"TypeCast (op {op.id}) converts {src} to {dst}; F2F goes from f32 to f16 "
                    "or bf16")
    return None


def _softmax_f2q(match: Match) -> str | None:
    for op in match.with_role(Role.f2q):
        src, dst = _in_dtype(op, 0), _out_dtype(op)
        if src is not D.f32 or dst not in (D.s8, D.u8):
            return (f"Quantize (op {op.id}) converts {src} to {dst}; F2Q goes from f32 to s8 "
                    "or u8")
    return None


def inplace_add_candidate(match: Match) -> tuple[Op, int] | None:
    """The Add and the input port that the in-place note of page 003 allows to be overwritten:
    the last epilogue op when it is an Add whose dst has the shape of its non-chain input and an
    element of the same size; None otherwise."""
    epilogue = match.with_role(Role.post_op)
    if not epilogue or epilogue[-1].kind != "Add":
        return None
    add = epilogue[-1]
    before = [m.op for m in match.ops]
    index = before.index(add)
    chain_ids = {t.id for t in before[index - 1].outputs} if index > 0 else set()
    others = [p for p, t in enumerate(add.inputs) if t.id not in chain_ids]
    if not others or not add.outputs:
        return None
    port, dst = others[-1], add.outputs[0]
    other = add.inputs[port]
    if other.shape == dst.shape and other.dtype.bits == dst.dtype.bits:
        return add, port
    return None


# -- the rules -----------------------------------------------------------------------------

_CT = ("convtranspose.int8",)
#: Page 000 details the quantized ConvTranspose patterns, so its table, structure rules and GPU
#: limitations also bind page 001's quantized ConvTranspose row (decision dec.ct_rules_on_001).
_CT_BOTH = ("convtranspose.int8", "int8.convtranspose_post_ops")
_SM = ("softmax.post_ops",)

RULES: tuple[Rule, ...] = (
    Rule("convtranspose.int8.dtypes", RuleKind.dtype,
         "src, weights, bias and dst types fall in the page's table: src u8/s8, weights s8/f32, "
         "bias f32/bf16/f16, dst u8/s8/bf16/f16/f32",
         QUANTIZED_CONVTRANSPOSE, "Data Types", _CT_BOTH, _convtranspose_table,
         table=CONVTRANSPOSE_INT8_DTYPES),
    Rule("convtranspose.int8.q2f_weights_only", RuleKind.structure,
         "the Quantize + Dequantize form of the Q2F subgraph is for weights; src has a lone "
         "Dequantize", QUANTIZED_CONVTRANSPOSE, "Pattern Structure", _CT_BOTH,
         _weights_only_quantize),
    Rule("convtranspose.int8.bias_first", RuleKind.structure,
         "a BiasAdd in the epilogue is its first op and appears at most once",
         QUANTIZED_CONVTRANSPOSE, "Pattern Structure", _CT_BOTH, _bias_first_once),
    Rule("convtranspose.int8.post_op_count", RuleKind.structure,
         f"the epilogue has 0 to {CONVTRANSPOSE_INT8_MAX_POST_OPS} unary or binary ops",
         QUANTIZED_CONVTRANSPOSE, "Pattern Structure", _CT,
         _at_most_post_ops(CONVTRANSPOSE_INT8_MAX_POST_OPS)),
    Rule("convtranspose.int8.gpu_zero_zps", RuleKind.device,
         "on GPU, the Dequantize and Quantize ops of the Q2F and F2Q subgraphs have all-zero zps",
         QUANTIZED_CONVTRANSPOSE, "Implementation Limitations", _CT_BOTH, _gpu_zero_zps,
         device="gpu"),
    Rule("convtranspose.int8.gpu_f2q_per_tensor", RuleKind.device,
         "on GPU, the F2Q Quantize is per_tensor with every scale equal to 1",
         QUANTIZED_CONVTRANSPOSE, "Implementation Limitations", _CT_BOTH, _gpu_f2q_per_tensor,
         device="gpu"),
    Rule("softmax.order", RuleKind.structure,
         "optional subgraphs follow SoftMax in the order epilogue, F2F, F2Q, each at most once",
         SOFTMAX, "Pattern Structure", _SM, _softmax_order),
    Rule("softmax.post_op_count", RuleKind.structure,
         f"the epilogue has 0 to {SOFTMAX_MAX_POST_OPS} unary or binary ops",
         SOFTMAX, "Pattern Structure", _SM, _at_most_post_ops(SOFTMAX_MAX_POST_OPS)),
    Rule("softmax.f32_dst", RuleKind.dtype,
         "when any optional subgraph is present, SoftMax's output is f32",
         SOFTMAX, "Data Types", _SM, _softmax_f32_dst),
    Rule("softmax.f2f_target", RuleKind.dtype,
         "the F2F TypeCast converts f32 to f16 or bf16", SOFTMAX, "Data Types", _SM,
         _softmax_f2f),
    Rule("softmax.f2q_target", RuleKind.dtype,
         "the F2Q Quantize converts f32 to int8 (s8 or u8)", SOFTMAX, "Data Types", _SM,
         _softmax_f2q),
    Rule("softmax.inplace_last_add", RuleKind.note,
         "a post-binary Add that ends the epilogue may write its result over its other input "
         "when that input has the dst's shape and element size",
         SOFTMAX, "Implementation Notes", _SM),
)

_BY_ID: Mapping[str, Rule] = MappingProxyType({r.id: r for r in RULES})


def rule(rule_id: str) -> Rule:
    """The rule with id `rule_id`; raises UnknownRuleError naming the known ids."""
    try:
        return _BY_ID[rule_id]
    except KeyError:
        raise UnknownRuleError(f"no rule {rule_id!r}; known: {', '.join(_BY_ID)}") from None


def rules_for(pattern_id: str) -> tuple[Rule, ...]:
    """The rules that apply to the catalog pattern `pattern_id`, in rule order."""
    return tuple(r for r in RULES if pattern_id in r.patterns)


def check_match(match: Match) -> tuple[str, ...]:
    """The messages of every rule `match` breaks (empty when it keeps them all)."""
    return tuple(m for r in rules_for(match.pattern_id) if (m := r.check(match)) is not None)
