"""The rules of pages 000 and 003 and the Match type they are checked on.

Every rule with a predicate accepts a conforming instance and rejects an instance that breaks
it, with a message that names what broke and ends in the rule id. Instances are built from
`Op`/`LogicalTensor`: conforming ones are bound to the catalog tree by op kinds
(`PatternEntry.bind`), near misses the notation itself refuses are placed by hand
(`Match.placed`).
"""

from __future__ import annotations

import json
from collections.abc import Callable, Sequence
from dataclasses import dataclass

import pytest

from fusionspec.spec import DataType, LogicalTensor, Op
from fusionspec.spec.catalog import entry
from fusionspec.spec.match import Match, MatchError, Role, leaf_roles, match_kinds
from fusionspec.spec.rules import (
    CONVTRANSPOSE_INT8_DTYPES,
    RULES,
    RuleKind,
    UnknownRuleError,
    check_match,
    convtranspose_int8_dtypes,
    inplace_add_candidate,
    rule,
    rules_for,
)

D = DataType
SHAPE = (1, 4, 5, 5)


class _Ids:
    """Fresh op and tensor ids for one instance."""

    def __init__(self) -> None:
        self.next = 0

    def __call__(self) -> int:
        self.next += 1
        return self.next


def _quant(ids: _Ids, kind: str, src: LogicalTensor, dst: DataType, *,
           zps: tuple[int, ...] = (0,), scales: tuple[float, ...] = (0.5,),
           qtype: str = "per_tensor") -> Op:
    out = LogicalTensor(ids(), dst, src.shape)
    attrs = {"qtype": qtype, "scales": scales, "zps": zps}
    return Op(ids(), kind, (src,), (out,), attrs)


def _op(ids: _Ids, kind: str, inputs: Sequence[LogicalTensor], dst: DataType = D.f32,
        shape: tuple[int, ...] = SHAPE) -> Op:
    return Op(ids(), kind, tuple(inputs), (LogicalTensor(ids(), dst, shape),))


def _src(ids: _Ids, dtype: DataType, shape: tuple[int, ...] = SHAPE) -> LogicalTensor:
    return LogicalTensor(ids(), dtype, shape)


@dataclass(frozen=True)
class CT:
    """A quantized ConvTranspose instance to build; each field is one knob a rule looks at."""

    src: DataType = D.u8
    weights: DataType = D.s8
    bias: DataType | None = D.f32
    post: tuple[str, ...] = ("ReLU",)
    dst: DataType | None = D.u8  # the F2Q Quantize's output; None: no F2Q
    src_zps: tuple[int, ...] = (0,)
    f2q_qtype: str = "per_tensor"
    f2q_scales: tuple[float, ...] = (1.0,)

    def ops(self) -> list[Op]:
        ids = _Ids()
        found: list[Op] = []
        weights = _src(ids, self.weights, (4, 4, 3, 3))
        if self.weights is D.f32:
            found.append(_quant(ids, "Quantize", weights, D.s8))
            weights = found[-1].outputs[0]
        found.append(_quant(ids, "Dequantize", weights, D.f32))
        w = found[-1].outputs[0]
        found.append(_quant(ids, "Dequantize", _src(ids, self.src), D.f32, zps=self.src_zps))
        found.append(_op(ids, "ConvTranspose", (found[-1].outputs[0], w)))
        if self.bias is not None:
            found.append(_op(ids, "BiasAdd", (found[-1].outputs[0], _src(ids, self.bias, (4,)))))
        for kind in self.post:
            ins = [found[-1].outputs[0]] + ([_src(ids, D.f32)] if kind in ("Add", "Multiply")
                                            else [])
            found.append(_op(ids, kind, ins))
        if self.dst is not None:
            found.append(_quant(ids, "Quantize", found[-1].outputs[0], self.dst,
                                qtype=self.f2q_qtype, scales=self.f2q_scales))
        return found

    def match(self, engine_kind: str = "cpu") -> Match:
        return entry("convtranspose.int8").bind(self.ops(), engine_kind)


@dataclass(frozen=True)
class SM:
    """A Softmax instance to build."""

    softmax_dst: DataType = D.f32
    post: tuple[str, ...] = ("Multiply",)
    f2f: DataType | None = D.bf16  # TypeCast output; None: no F2F
    f2f_src: DataType | None = None  # TypeCast input, when not the chain's f32
    f2q: DataType | None = None  # Quantize output; None: no F2Q

    def ops(self) -> list[Op]:
        ids = _Ids()
        found = [_op(ids, "SoftMax", (_src(ids, D.f32),), self.softmax_dst)]
        for kind in self.post:
            ins = [found[-1].outputs[0]] + ([_src(ids, D.f32)] if kind in ("Add", "Multiply")
                                            else [])
            found.append(_op(ids, kind, ins, found[-1].outputs[0].dtype))
        if self.f2f is not None:
            src = found[-1].outputs[0]
            if self.f2f_src is not None:
                src = LogicalTensor(src.id, self.f2f_src, src.shape)
            found.append(_op(ids, "TypeCast", (src,), self.f2f))
        if self.f2q is not None:
            found.append(_quant(ids, "Quantize", found[-1].outputs[0], self.f2q))
        return found

    def match(self) -> Match:
        return entry("softmax.post_ops").bind(self.ops())


def _placed(pattern_id: str, ops: Sequence[Op], roles: Sequence[Role]) -> Match:
    return Match.placed(pattern_id, list(zip(ops, roles)))


def _ct_roles(n_post: int, *, bias_at: int | None = 0) -> list[Role]:
    epilogue = [Role.post_op] * n_post
    if bias_at is not None:
        epilogue.insert(bias_at, Role.bias)
    return [Role.weights_q2f, Role.src_q2f, Role.base, *epilogue, Role.f2q]


def _bias_after_relu() -> Match:
    ops = CT(post=("ReLU",)).ops()
    # swap BiasAdd and ReLU in pattern order: the placed match lists ReLU first
    reordered = [*ops[:3], ops[4], ops[3], ops[5]]
    roles = [Role.weights_q2f, Role.src_q2f, Role.base, Role.post_op, Role.bias, Role.f2q]
    return _placed("convtranspose.int8", reordered, roles)


def _two_bias_adds() -> Match:
    ops = CT(post=()).ops()
    extra = ops[3]
    ops = [*ops[:4], extra, ops[4]]
    return _placed("convtranspose.int8", ops, [*_ct_roles(0)[:4], Role.bias, Role.f2q])


def _five_post_ops() -> Match:
    ops = CT(post=("ReLU",) * 5).ops()
    return _placed("convtranspose.int8", ops, _ct_roles(5))


def _src_quantize() -> Match:
    ops = CT(weights=D.f32).ops()  # Quantize, Dequantize (weights), Dequantize (src), ...
    roles = [Role.src_q2f, Role.src_q2f, Role.weights_q2f, Role.base, Role.bias, Role.post_op,
             Role.f2q]
    reordered = [ops[0], ops[2], ops[1], *ops[3:]]
    return _placed("convtranspose.int8", reordered, roles)


def _sm_placed(ops: Sequence[Op], roles: Sequence[Role]) -> Match:
    return _placed("softmax.post_ops", ops, roles)


def _typecast_before_post_op() -> Match:
    ops = SM(post=(), f2f=D.bf16).ops()
    relu = Op(99, "ReLU", ops[-1].outputs, (LogicalTensor(98, D.bf16, SHAPE),))
    return _sm_placed([*ops, relu], [Role.base, Role.f2f, Role.post_op])


def _two_typecasts() -> Match:
    ops = SM(post=(), f2f=D.bf16).ops()
    return _sm_placed([*ops, ops[-1]], [Role.base, Role.f2f, Role.f2f])


def _relu_before_softmax() -> Match:
    ops = SM(post=("ReLU",), f2f=None).ops()
    return _sm_placed([ops[1], ops[0]], [Role.post_op, Role.base])


def _softmax_21_post_ops() -> Match:
    ops = SM(post=("ReLU",) * 21, f2f=None).ops()
    return _sm_placed(ops, [Role.base] + [Role.post_op] * 21)


Build = Callable[[], Match]

#: rule id -> [(what breaks, conforming instance, breaking instance, words in the message)]
CASES: dict[str, list[tuple[str, Build, Build, str]]] = {
    "convtranspose.int8.dtypes": [
        ("u8 weights", lambda: CT().match(), lambda: CT(weights=D.u8).match(),
         "weights is u8, the dtype table allows f32, s8"),
        ("f8 src", lambda: CT(src=D.s8, weights=D.f32).match(),
         lambda: CT(src=D.f8_e4m3).match(), "src is f8_e4m3"),
        ("s8 bias", lambda: CT(bias=D.bf16).match(), lambda: CT(bias=D.s8).match(),
         "bias is s8"),
        ("f8 dst", lambda: CT(dst=D.s8).match(), lambda: CT(dst=D.f8_e5m2).match(),
         "dst is f8_e5m2"),
    ],
    "convtranspose.int8.q2f_weights_only": [
        ("Quantize on src", lambda: CT(weights=D.f32).match(), _src_quantize,
         "src path has a Quantize"),
    ],
    "convtranspose.int8.bias_first": [
        ("BiasAdd after ReLU", lambda: CT(post=("ReLU", "Add")).match(), _bias_after_relu,
         "BiasAdd is epilogue op 2, after ReLU"),
        ("two BiasAdds", lambda: CT(post=()).match(), _two_bias_adds,
         "BiasAdd appears 2 times"),
    ],
    "convtranspose.int8.post_op_count": [
        ("5 post-ops", lambda: CT(post=("ReLU", "Add", "Tanh", "Multiply")).match(),
         _five_post_ops, "5 unary/binary post-ops; the page allows 0 to 4"),
    ],
    "convtranspose.int8.gpu_zero_zps": [
        ("src zps 3", lambda: CT().match("gpu"), lambda: CT(src_zps=(3,)).match("gpu"),
         "src Q2F Dequantize"),
    ],
    "convtranspose.int8.gpu_f2q_per_tensor": [
        ("per_channel", lambda: CT().match("gpu"),
         lambda: CT(f2q_qtype="per_channel", f2q_scales=(1.0,) * 4).match("gpu"),
         "is per_channel"),
        ("scale 0.5", lambda: CT().match("gpu"), lambda: CT(f2q_scales=(0.5,)).match("gpu"),
         "scales [0.5]"),
    ],
    "softmax.order": [
        ("TypeCast before ReLU", lambda: SM(post=("ReLU",)).match(), _typecast_before_post_op,
         "follows the F2F TypeCast; the order is epilogue, F2F, F2Q"),
        ("two TypeCasts", lambda: SM().match(), _two_typecasts, "a second F2F subgraph"),
        ("ReLU before SoftMax", lambda: SM(f2f=None, post=("ReLU",)).match(),
         _relu_before_softmax, "ReLU comes before the SoftMax"),
    ],
    "softmax.post_op_count": [
        ("21 post-ops", lambda: SM(post=("ReLU",) * 20, f2f=None).match(),
         _softmax_21_post_ops, "21 unary/binary post-ops; the page allows 0 to 20"),
    ],
    "softmax.f32_dst": [
        ("bf16 SoftMax + ReLU", lambda: SM(softmax_dst=D.bf16, post=(), f2f=None).match(),
         lambda: SM(softmax_dst=D.bf16, post=("ReLU",), f2f=None).match(),
         "SoftMax dst is bf16 but post-op ReLU follows"),
        ("f16 SoftMax + TypeCast", lambda: SM(post=()).match(),
         lambda: SM(softmax_dst=D.f16, post=(), f2f=D.bf16).match(),
         "SoftMax dst is f16 but TypeCast follows"),
    ],
    "softmax.f2f_target": [
        ("TypeCast to f32", lambda: SM(f2f=D.f16).match(),
         lambda: SM(f2f=D.f32, f2f_src=D.bf16).match(), "converts bf16 to f32"),
    ],
    "softmax.f2q_target": [
        ("Quantize to f8", lambda: SM(f2f=None, f2q=D.u8).match(),
         lambda: SM(f2f=None, f2q=D.f8_e4m3).match(), "converts f32 to f8_e4m3"),
    ],
}

FLAT = [(rule_id, *case) for rule_id, cases in CASES.items() for case in cases]


@pytest.mark.parametrize(("rule_id", "what", "good", "bad", "words"), FLAT,
                         ids=[f"{r}-{w}" for r, w, *_ in FLAT])
def test_rule_accepts_conforming_and_rejects_breaking(rule_id: str, what: str, good: Build,
                                                      bad: Build, words: str) -> None:
    the_rule = rule(rule_id)
    ok = the_rule.check(good())
    assert ok is None, f"{rule_id} rejected the conforming instance for {what!r}: {ok}"
    message = the_rule.check(bad())
    assert message is not None, f"{rule_id} accepted an instance with {what}"
    assert message.endswith(f"[{rule_id}]"), f"message {message!r} should end with the rule id"
    assert words in message, f"message {message!r} should say {words!r}"


def test_every_rule_with_a_predicate_has_cases() -> None:
    checked = {r.id for r in RULES if r.predicate is not None}
    missing = checked - set(CASES)
    assert not missing, f"rules without accept/reject cases: {sorted(missing)}"
    for r in RULES:
        assert (r.kind is RuleKind.note) == (r.predicate is None), \
            f"{r.id}: notes and only notes have no predicate"
        assert r.statement and "\n" not in r.statement, f"{r.id}: statement must be one line"


def test_conforming_instances_keep_every_rule() -> None:
    for match in (CT().match(), CT(weights=D.f32, dst=None, post=()).match("gpu"),
                  SM().match(), SM(f2f=None, f2q=D.s8).match(), SM(post=(), f2f=None).match()):
        broken = check_match(match)
        assert broken == (), f"{match.pattern_id} {match.kinds} broke {broken}"


def test_gpu_rules_hold_only_on_gpu() -> None:
    bad = CT(src_zps=(3,), f2q_scales=(0.5,))
    assert check_match(bad.match("cpu")) == (), "GPU limitations must not apply on CPU"
    messages = check_match(bad.match("gpu"))
    ids = [m.rsplit("[", 1)[1].rstrip("]") for m in messages]
    assert ids == ["convtranspose.int8.gpu_zero_zps", "convtranspose.int8.gpu_f2q_per_tensor"], \
        f"on GPU both limitations should fire, got {messages}"
    assert all(rule(i).device == "gpu" and rule(i).kind is RuleKind.device for i in ids), \
        "GPU limitations must be device rules with device 'gpu'"


def test_page_000_rules_bind_page_001_convtranspose_row_only() -> None:
    bad = CT(weights=D.u8).match()
    row_001 = Match("int8.convtranspose_post_ops", bad.ops)
    assert rule("convtranspose.int8.dtypes").check(row_001) is not None, \
        "page 000's dtype table must bind page 001's quantized ConvTranspose row " \
        "(decision dec.ct_rules_on_001)"
    other = Match("int8.conv_post_ops", bad.ops)
    assert check_match(other) == (), "page 000's rules must not apply to other rows"
    assert rule("convtranspose.int8.dtypes").check(other) is None, "dtype rule applied elsewhere"


def test_dtype_table_as_data() -> None:
    table = CONVTRANSPOSE_INT8_DTYPES
    assert table.columns == ("src", "weights", "bias", "dst"), f"columns {table.columns}"
    combos = list(table.combinations())
    assert len(combos) == 2 * 2 * 3 * 5, f"{len(combos)} combinations, the table gives 60"
    assert all(table.check({c: (v,) for c, v in combo.items()}) is None for combo in combos), \
        "every combination of the table must pass its own check"
    got = convtranspose_int8_dtypes(CT(weights=D.f32, bias=D.f32, dst=D.s8).match())
    assert got == {"src": (D.u8,), "weights": (D.f32,), "bias": (D.f32,), "dst": (D.s8,)}, \
        f"columns read off the instance: {got}"
    no_f2q = convtranspose_int8_dtypes(CT(dst=None, bias=None, post=()).match())
    assert no_f2q["dst"] == (D.f32,) and no_f2q["bias"] == (), \
        f"without F2Q the dst is ConvTranspose's f32 and no bias is read: {no_f2q}"
    as_json = json.loads(json.dumps(rule("convtranspose.int8.dtypes").to_dict()))
    assert as_json["table"]["rows"][0]["dst"] == ["bf16", "f16", "f32", "s8", "u8"], \
        f"JSON table row {as_json['table']}"


def test_inplace_note_is_data() -> None:
    note = rule("softmax.inplace_last_add")
    assert note.kind is RuleKind.note and note.predicate is None, f"{note}"
    assert note.section == "Implementation Notes", f"section {note.section}"
    assert note.check(SM(post=("Add",), f2f=None).match()) is None, "a note never rejects"
    add_last = SM(post=("ReLU", "Add"), f2f=None).match()
    found = inplace_add_candidate(add_last)
    assert found is not None and found[0].kind == "Add" and found[1] == 1, \
        f"the last Add's src_1 may be overwritten, got {found}"
    assert inplace_add_candidate(SM(post=("Add", "ReLU"), f2f=None).match()) is None, \
        "an Add that is not last cannot be in place"
    ops = SM(post=("Add",), f2f=None).ops()
    add = ops[1]
    small = LogicalTensor(add.inputs[1].id, D.f32, (1, 4, 1, 1))
    broadcast = Op(add.id, "Add", (add.inputs[0], small), add.outputs)
    match = entry("softmax.post_ops").bind([ops[0], broadcast])
    assert inplace_add_candidate(match) is None, "a broadcast input differs in shape from dst"


def test_bind_and_roles() -> None:
    match = CT(weights=D.f32, post=("ReLU", "Add")).match()
    roles = [m.role for m in match.ops]
    assert roles == [Role.weights_q2f, Role.weights_q2f, Role.src_q2f, Role.base, Role.bias,
                     Role.post_op, Role.post_op, Role.f2q], f"roles {roles}"
    assert all(m.node is not None and m.path is not None for m in match.ops), \
        "bound ops carry their leaf and path"
    assert match.base is not None and match.base.kind == "ConvTranspose", f"base {match.base}"
    pool_add = leaf_roles(entry("int8.pool_add").tree)
    assert pool_add[(0,)] is Role.binary_q2f and pool_add[(1, 2)] is Role.post_op, \
        f"int8.pool_add roles {dict(pool_add)}"
    with pytest.raises(MatchError, match=r"not an instance of convtranspose\.int8"):
        entry("convtranspose.int8").bind(CT(post=("ReLU",) * 5).ops())
    with pytest.raises(MatchError, match="unknown role 'epilogue'"):
        Match.placed("softmax.post_ops", [(SM().ops()[0], "epilogue")])


def test_match_kinds_is_greedy_and_backtracks() -> None:
    tree = entry("int8.conv_post_ops").tree
    kinds = ["Dequantize", "Dequantize", "Dequantize", "Convolution", "Add", "Quantize"]
    paths = match_kinds(tree, kinds)
    assert paths is not None, f"{kinds} should be an int8 conv instance"
    assert paths[:3] == ((0, 1), (1, 0), (2, 0)), \
        f"weights, one t2 Dequantize, then src: {paths[:3]}"
    assert match_kinds(tree, ["Dequantize", "Convolution"]) is None, \
        "the weights Dequantize is required"
    softmax = entry("softmax.post_ops").tree
    twenty = ["SoftMax"] + ["ReLU"] * 20 + ["Quantize"]
    assert match_kinds(softmax, twenty) is not None, "20 post-ops and F2Q are an instance"
    assert match_kinds(softmax, ["SoftMax"] + ["ReLU"] * 21) is None, "21 post-ops are not"


def test_rule_lookup() -> None:
    first = rules_for("softmax.post_ops")[0]
    assert first.id == "softmax.order", f"first Softmax rule is {first.id}"
    assert rules_for("fp.bn_relu") == (), "page 001's rows carry no extra rules"
    with pytest.raises(UnknownRuleError, match=r"no rule 'softmax\.nope'"):
        rule("softmax.nope")
