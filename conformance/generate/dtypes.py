"""Dtype rows: which data types an instance of a pattern uses, and how they are named.

A *row* is one combination of data types, named by a short label that is also the case's
``dtype_row`` feature:

- float patterns: ``f32``, ``bf16``, ``f16`` (every tensor of that type);
  ``bf16>f32`` / ``f16>f32`` (the chain starts in bf16/f16 and turns f32 where the schemas allow:
  a MatMul or SoftMax with an f32 dst, or an Add/Subtract/Multiply/Divide with an f32 operand);
  ``f32+bf16`` / ``f32+f16`` (an f32 chain whose binary operands are partly bf16/f16);
  ``f32>bf16`` / ``f32>f16`` (SoftMax: an f32 src with a bf16/f16 dst, or an F2F TypeCast);
  ``f32>u8`` / ``f32>s8`` (SoftMax with an F2Q Quantize);
- quantized patterns: the columns of page 000's ConvTranspose table where it applies
  (``src=u8 weights=s8 bias=f32 dst=u8``; ``weights=f32`` means f32 weights quantized by the
  pattern's own Quantize + Dequantize; ``bias=none``: no bias), else
  ``src=u8 weights=s8 dst=f32``, ``src=s8 dst=u8`` or ``src=u8 add=s8 dst=u8``.

`required_rows` lists every row a pattern can take at all (the reachability tests hold the
strategies to it). Valid cases draw a row first, then the instance shape it needs
(`row_bounds`), then where each type goes (`plan_for_row` -> `DtypePlan`), so every row is
about equally likely; near misses draw the shape first and a row it allows (`feasible_rows`,
`draw_dtype_plan`). Quantized rows use u8/s8 sources and s8 weights only: decision
dec.int8_types also allows f8 types and u8 weights in page 001's rows, which valid cases do not
draw.

`headline_dtype` maps a graph to the report matrix's column: ``int8`` when any tensor is u8 or
s8, else ``bf16`` when any is bf16, else ``f16`` when any is f16, else ``f8`` when any is an f8
type (near misses only), else ``f32``. Shape-carrying s32 inputs do not count.
"""

from __future__ import annotations

import itertools
from collections.abc import Sequence
from dataclasses import dataclass

from hypothesis import strategies as st

from fusionspec.spec.catalog import PatternEntry, PatternFamily
from fusionspec.spec.dtypes import DataType
from fusionspec.spec.graph import Graph
from fusionspec.spec.match import Role
from fusionspec.spec.pattern_tree import Path, first_kinds, op_kinds
from fusionspec.spec.rules import SOFTMAX_MAX_POST_OPS

from .plan import Step, main_part, optional_path, post_op_repeats

__all__ = ["MIXABLE", "DtypePlan", "feasible_rows", "draw_dtype_plan", "row_bounds",
           "plan_for_row", "required_rows", "int8_row", "headline_dtype", "CT_TABLE_RULE",
           "has_table"]

D = DataType
F32, BF16, F16, U8, S8 = D.f32, D.bf16, D.f16, D.u8, D.s8
#: Binaries whose schema rows mix f32 with bf16/f16 (Maximum and Minimum have one type T).
MIXABLE = frozenset({"Add", "Subtract", "Multiply", "Divide"})
LOW = (BF16, F16)
CT_TABLE_RULE = "convtranspose.int8.dtypes"


@dataclass(frozen=True)
class DtypePlan:
    """Where each type goes in one instance.

    `start` is the chain's first type (the head's input); `head_dst` the head's output type
    when it differs (MatMul/SoftMax); `switch` the binary step whose f32 operand turns a
    bf16/f16 chain f32; `low_operands` the binary steps given a `low` operand on an f32 chain;
    `cast` the F2F TypeCast's target; `quant_dst` the final Quantize's type; `src`, `weights`
    the quantized types of the src and weights paths; `side_types` those of binary operands'
    Dequantize ops; `gpu` keeps page 000's GPU limits; `bias_input` forces (or forbids) a
    bias input on the base op (None: drawn).
    """

    row: str
    start: DataType = F32
    head_dst: DataType | None = None
    switch: int | None = None
    low_operands: frozenset[int] = frozenset()
    low: DataType | None = None
    cast: DataType | None = None
    quant_dst: DataType | None = None
    src: DataType = U8
    weights: DataType = S8
    side_types: tuple[DataType, ...] = (U8, S8)
    gpu: bool = False
    bias_input: bool | None = None


def _mixable(steps: Sequence[Step]) -> list[int]:
    return [i for i, s in enumerate(steps) if s.kind in MIXABLE and s.reads is None]


def _uniform_and_mixed(mixable: bool, head_switch: bool) -> list[str]:
    rows = ["f32", "bf16", "f16"]
    if mixable or head_switch:
        rows += ["bf16>f32", "f16>f32"]
    if mixable:
        rows += ["f32+bf16", "f32+f16"]
    return rows


def feasible_rows(entry: PatternEntry, steps: Sequence[Step]) -> list[str]:
    """The float rows an instance with these main-chain steps can take (quantized patterns
    draw their types in `draw_dtype_plan`)."""
    kinds = [s.kind for s in steps]
    mixable = bool(_mixable(steps))
    if entry.family is PatternFamily.softmax:
        if "Quantize" in kinds:
            return ["f32>u8", "f32>s8"]
        if "TypeCast" in kinds:
            return ["f32>bf16", "f32>f16"]
        if len(kinds) > 1:
            return ["f32", "bf16>f32", "f16>f32"] + (["f32+bf16", "f32+f16"] if mixable else [])
        return ["f32", "bf16", "f16", "bf16>f32", "f16>f32", "f32>bf16", "f32>f16"]
    return _uniform_and_mixed(mixable, kinds[0] == "MatMul")


def _quantized(entry: PatternEntry) -> bool:
    return entry.family in (PatternFamily.quantized, PatternFamily.quantized_convtranspose)


def draw_dtype_plan(draw: st.DrawFn, entry: PatternEntry, steps: Sequence[Step]) -> DtypePlan:
    """A row for this instance shape, and where its types go."""
    if _quantized(entry):
        gpu = CT_TABLE_RULE in entry.rule_ids and draw(st.booleans(), label="gpu engine")
        return DtypePlan("int8", src=draw(st.sampled_from((U8, S8)), label="src type"),
                         quant_dst=draw(st.sampled_from((U8, S8)), label="dst type"), gpu=gpu)
    return _float_plan(draw, entry, steps,
                       draw(st.sampled_from(feasible_rows(entry, steps)), label="dtype row"))


def row_bounds(draw: st.DrawFn, entry: PatternEntry, row: str,
               ) -> tuple[dict[Path, tuple[int, int]], bool | None]:
    """What the optional items of `entry` must be for an instance of `row` (bounds for
    `draw_skeleton`), and whether its base op must (True) or must not (False) take a bias
    input; drawing the row first keeps every row equally likely."""
    bounds: dict[Path, tuple[int, int]] = {}
    bias_input: bool | None = None

    def set_count(kind: str, role: Role, count: int) -> None:
        path = optional_path(entry, kind, role)
        if path is not None:
            bounds[path] = (count, count)

    if _quantized(entry):
        columns = dict(part.split("=") for part in row.split())
        if "weights" in columns:
            set_count("Quantize", Role.weights_q2f, int(columns["weights"] == "f32"))
        set_count("Quantize", Role.f2q, int(columns["dst"] != "f32"))
        if columns.get("bias") == "none":
            set_count("BiasAdd", Role.bias, 0)
            bias_input = False
        elif columns.get("bias") == "f32":
            if draw(st.booleans(), label="bias as a BiasAdd"):
                set_count("BiasAdd", Role.bias, 1)
            else:
                bias_input = True
    elif entry.family is PatternFamily.softmax:
        low_out = row in ("f32>bf16", "f32>f16")
        cast = low_out and draw(st.booleans(), label="F2F TypeCast")
        set_count("TypeCast", Role.f2f, int(cast))
        set_count("Quantize", Role.f2q, int(row in ("f32>u8", "f32>s8")))
        post = post_op_repeats(entry.id)[0]
        if row in ("bf16", "f16") or (low_out and not cast):
            bounds[post] = (0, 0)
        elif row.startswith("f32+"):
            bounds[post] = (1, SOFTMAX_MAX_POST_OPS)
    return bounds, bias_input


def plan_for_row(draw: st.DrawFn, entry: PatternEntry, steps: Sequence[Step], row: str,
                 bias_input: bool | None = None) -> DtypePlan:
    """The plan of `row` for these steps (the float rows that need a binary fall back to a
    feasible row when the steps have none)."""
    if not _quantized(entry):
        if row not in feasible_rows(entry, steps):
            row = draw(st.sampled_from(feasible_rows(entry, steps)), label="dtype row")
        return _float_plan(draw, entry, steps, row)
    columns = dict(part.split("=") for part in row.split())
    gpu = has_table(entry) and draw(st.booleans(), label="gpu engine")
    dst = None if columns["dst"] == "f32" else D(columns["dst"])
    sides = (D(columns["add"]),) if "add" in columns else (U8, S8)
    return DtypePlan("int8", src=D(columns["src"]), quant_dst=dst, side_types=sides, gpu=gpu,
                     bias_input=bias_input)


def _float_plan(draw: st.DrawFn, entry: PatternEntry, steps: Sequence[Step], row: str,
                ) -> DtypePlan:
    if row in ("f32", "bf16", "f16"):
        return DtypePlan(row, start=D(row))
    if row.endswith(">f32"):
        low = D(row.split(">")[0])
        heads = [0] if steps[0].kind in ("MatMul", "SoftMax") else []
        # After a SoftMax every post-op is f32 (rule softmax.f32_dst): switch at the SoftMax.
        places = heads if entry.family is PatternFamily.softmax else heads + _mixable(steps)
        where = draw(st.sampled_from(places), label="switch to f32 at")
        if where in heads:
            return DtypePlan(row, start=low, head_dst=F32)
        return DtypePlan(row, start=low, switch=where)
    if row.startswith("f32+"):
        low = D(row[4:])
        candidates = _mixable(steps)
        first = draw(st.sampled_from(candidates), label="low operand at")
        more = {i for i in candidates
                if i != first and draw(st.booleans(), label="low operand")}
        return DtypePlan(row, low_operands=frozenset({first} | more), low=low)
    target = D(row.split(">")[1])
    if target in (U8, S8):
        return DtypePlan(row, quant_dst=target)
    if "TypeCast" in [s.kind for s in steps]:
        return DtypePlan(row, cast=target)
    return DtypePlan(row, head_dst=target)


def has_table(entry: PatternEntry) -> bool:
    return CT_TABLE_RULE in entry.rule_ids


def _has_role(entry: PatternEntry, role: Role) -> bool:
    return role in entry.roles.values()


def int8_row(entry: PatternEntry, columns: dict[str, str]) -> str:
    """The row label of a quantized instance from its column values (see the module doc)."""
    if entry.family is PatternFamily.softmax:
        return f"f32>{columns['dst']}"
    names = ["src"]
    if _has_role(entry, Role.weights_q2f):
        names += ["weights", "bias"] if has_table(entry) else ["weights"]
    elif _has_role(entry, Role.binary_q2f):
        names.append("add")
    names.append("dst")
    return " ".join(f"{name}={columns[name]}" for name in names)


def required_rows(entry: PatternEntry) -> tuple[str, ...]:
    """Every row the strategies must be able to give an instance of `entry`."""
    if entry.family is PatternFamily.softmax:
        return ("f32", "bf16", "f16", "bf16>f32", "f16>f32", "f32+bf16", "f32+f16",
                "f32>bf16", "f32>f16", "f32>u8", "f32>s8")
    if entry.family in (PatternFamily.quantized, PatternFamily.quantized_convtranspose):
        ints = ("u8", "s8")
        columns: dict[str, tuple[str, ...]] = {"src": ints}
        if _has_role(entry, Role.weights_q2f):
            columns["weights"] = ("s8", "f32")
            if has_table(entry):
                columns["bias"] = ("f32", "none")
            columns["dst"] = (*ints, "f32")
        else:
            if _has_role(entry, Role.binary_q2f):
                columns["add"] = ints
            columns["dst"] = ints
        names = list(columns)
        return tuple(int8_row(entry, dict(zip(names, combo)))
                     for combo in itertools.product(*(columns[n] for n in names)))
    main, _ = main_part(entry)
    kinds = op_kinds(main)
    return tuple(_uniform_and_mixed(bool(kinds & MIXABLE),
                                    bool(first_kinds(main) & {"MatMul"})))


def headline_dtype(graph: Graph) -> str:
    """The report matrix's column for a graph (see the module docstring)."""
    found = {t.dtype for op in graph.ops for t in (*op.inputs, *op.outputs)}
    if found & {U8, S8}:
        return "int8"
    for dtype in (BF16, F16):
        if dtype in found:
            return dtype.value
    if found & {D.f8_e4m3, D.f8_e5m2}:
        return "f8"
    return "f32"
