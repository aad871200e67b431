"""The table form of element-wise partitions (`fusionspec.accel.families.elementwise_table`):
one program for every chain, dtype set, rank and broadcast structure, computing bit for bit
what the specialised form computes; the backend's choice between the forms; the fallbacks."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest
from testkit.accel import OnDevice, first_device, requires_device

from fusionspec.accel.backend import FORM_ENV, AccelBackend
from fusionspec.accel.codegen.epilogue import supported_kinds
from fusionspec.accel.codegen.table_translate import RANK, REGS, SLOTS, TABLE_KINDS, translate
from fusionspec.accel.errors import AccelError
from fusionspec.accel.families.elementwise_table import TABLE_KERNEL
from fusionspec.accel.families.forms import TABLE_LIMIT
from fusionspec.accel.runtime import all_stats
from fusionspec.reference.dtypes import cast_to
from fusionspec.reference.partitioner import external_tensors
from fusionspec.spec.dtypes import DataType
from fusionspec.spec.graph import Graph, LogicalTensor, Op, Partition

pytestmark = [requires_device, pytest.mark.filterwarnings("ignore::RuntimeWarning")]

F32, BF16, F16 = DataType.f32, DataType.bf16, DataType.f16
S8, U8, S32 = DataType.s8, DataType.u8, DataType.s32
SHAPE = (4, 16)
RNG = np.random.default_rng(25)
SPECIALS = np.array([np.nan, np.inf, -np.inf, 0.0, -0.0, 1e-45, -1e-45, 1.5e-38, 0.5, -0.5,
                     1.5, 2.5, -2.5, 3.0, -3.0, 88.72283, -88.72283, 89.0, -89.0, 3.4e38,
                     -3.4e38, 1e-7, 20.0, -20.0, 7.0, -7.0, 100.0, -100.0, 0.1, -0.1, 1.0,
                     -1.0], dtype=np.float32)

UNARY: list[tuple[str, dict[str, Any]]] = [
    ("Abs", {}), ("Clamp", {"min": -1.5, "max": 2.25}), ("Elu", {"alpha": 0.7}),
    ("Exp", {}), ("GELU", {"mode": "gelu_erf"}), ("GELU", {"mode": "gelu_tanh"}),
    ("HardSwish", {}), ("LeakyReLU", {"alpha": 0.01}), ("Log", {}), ("Pow", {"beta": -0.5}),
    ("ReLU", {}), ("Reciprocal", {}), ("Round", {}), ("Sigmoid", {}),
    ("SoftPlus", {"beta": -2.0}), ("Sqrt", {}), ("Square", {}), ("Tanh", {}),
]
BINARY = ["Add", "Subtract", "Multiply", "Divide", "Maximum", "Minimum"]
_INTERPRETER = "fs_table_run("


def test_every_op_kind_has_a_table_entry() -> None:
    assert supported_kinds() == TABLE_KINDS, \
        (f"the forms differ: only specialised {sorted(supported_kinds() - TABLE_KINDS)}, only "
         f"table {sorted(TABLE_KINDS - supported_kinds())}")
    tested = {k for k, _ in UNARY} | set(BINARY) | {
        "BiasAdd", "BatchNormInference", "Quantize", "Dequantize", "TypeCast", "Reorder"}
    assert tested == TABLE_KINDS, f"untested table entries: {sorted(TABLE_KINDS - tested)}"


def _t(tid: int, dtype: DataType, shape: tuple[int, ...]) -> LogicalTensor:
    return LogicalTensor(tid, dtype, shape)


def _floats(shape: tuple[int, ...], dtype: DataType = F32) -> np.ndarray[Any, Any]:
    """Random values with every special value of `SPECIALS` among them."""
    values = (RNG.standard_normal(int(np.prod(shape))) * 4).astype(np.float32)
    values[:min(len(values), len(SPECIALS))] = SPECIALS[:len(values)]
    return cast_to(values.reshape(shape), dtype)


def _summable(values: np.ndarray[Any, Any]) -> np.ndarray[Any, Any]:
    """`values` with the non-finite and the huge ones replaced by 0.5: a sum of products
    past f32's range is inf or NaN by the order of its terms (BLAS on one processor gives NaN
    where a kernel gives inf), which neither the forms nor the reference fix."""
    out = values.copy()
    out[~np.isfinite(out) | (np.abs(out) > 1e30)] = 0.5
    return out


def _both(graph: Graph, feeds: dict[int, np.ndarray[Any, Any]], label: str, *,
          whole: bool = True) -> None:
    """Run `graph` in both forms and require the same bits in every output (any NaN matching
    any NaN), and the table form to have been used."""
    table = OnDevice(graph, whole=whole, form="table")
    special = OnDevice(graph, whole=whole, form="specialised")
    assert all(_INTERPRETER in c.kernel_source for c in table.compiled), \
        f"{label}: the table form was not used"
    assert all(_INTERPRETER not in c.kernel_source for c in special.compiled), \
        f"{label}: the specialised form was not used"
    got, want = table.run(feeds), special.run(feeds)
    for tid, expected in want.items():
        a, b = np.ascontiguousarray(got[tid]), np.ascontiguousarray(expected)
        assert a.dtype == b.dtype and a.shape == b.shape, f"{label}: output {tid} differs in kind"
        rows = (a.size, a.itemsize)
        same = (a.view(np.uint8).reshape(rows) == b.view(np.uint8).reshape(rows)).all(axis=1)
        if a.dtype.kind not in "iub":  # a NaN's sign and payload are not specified
            same |= (np.isnan(a.astype(np.float32)) & np.isnan(b.astype(np.float32))).ravel()
        bad = np.flatnonzero(~same)[:4]
        assert same.all(), (f"{label}: output {tid} differs between the forms at flat "
                            f"indices {bad.tolist()}: table {a.ravel()[bad]}, specialised "
                            f"{b.ravel()[bad]}")
    table.check(feeds, label=label)


@pytest.mark.parametrize(("kind", "attrs"), UNARY, ids=[f"{k}{a}" for k, a in UNARY])
@pytest.mark.parametrize("dtype", [F32, BF16, F16])
def test_unary_ops_agree_bit_for_bit(kind: str, attrs: dict[str, Any], dtype: DataType
                                     ) -> None:
    graph = Graph([Op(0, kind, inputs=(_t(0, dtype, SHAPE),), outputs=(_t(1, dtype, SHAPE),),
                      attrs=attrs)])
    _both(graph, {0: _floats(SHAPE, dtype)}, f"{kind}{attrs} {dtype}")


@pytest.mark.parametrize("kind", BINARY)
def test_binary_ops_with_broadcast_agree(kind: str) -> None:
    """A ReLU into either port of a binary whose other operand broadcasts along two axes."""
    x, r = _t(0, F32, (2, 3, 16)), _t(1, F32, (2, 3, 16))
    narrow = F32 if kind in ("Maximum", "Minimum") else BF16  # mixed types where allowed
    other, y = _t(2, narrow, (3, 1)), _t(3, F32, (2, 3, 16))
    graph = Graph([Op(0, "ReLU", inputs=(x,), outputs=(r,)),
                   Op(1, kind, inputs=(other, r), outputs=(y,))])
    _both(graph, {0: _floats((2, 3, 16)), 2: _floats((3, 1), narrow)}, f"ReLU->{kind}")


def test_integer_ops_saturate_alike() -> None:
    a, b = _t(0, S32, (64,)), _t(1, S32, (64,))
    s, d, m = _t(2, S32, (64,)), _t(3, S32, (64,)), _t(4, S32, (64,))
    graph = Graph([Op(0, "Add", inputs=(a, b), outputs=(s,)),
                   Op(1, "Subtract", inputs=(a, b), outputs=(d,)),
                   Op(2, "Add", inputs=(s, d), outputs=(m,))])
    ints = RNG.integers(-(2 ** 31), 2 ** 31 - 1, size=(2, 64), endpoint=True).astype(np.int32)
    _both(graph, {0: ints[0], 1: ints[1]}, "s32 chain")


@pytest.mark.parametrize("data_format", ["NXC", "NCX"])
def test_bias_add_and_batch_norm_agree(data_format: str) -> None:
    shape = (2, 4, 3, 5) if data_format == "NCX" else (2, 3, 5, 4)
    x, y, r = _t(0, F32, shape), _t(5, F32, shape), _t(6, F32, shape)
    params = [_t(i, F32, (4,)) for i in range(1, 5)]
    bias, out, low = _t(7, F32, (4,)), _t(8, F32, shape), _t(9, BF16, shape)
    graph = Graph([Op(0, "BatchNormInference", inputs=(x, *params), outputs=(y,),
                      attrs={"epsilon": 1e-5, "data_format": data_format}),
                   Op(1, "ReLU", inputs=(y,), outputs=(r,)),
                   Op(2, "BiasAdd", inputs=(r, bias), outputs=(out,),
                      attrs={"data_format": data_format}),
                   Op(3, "TypeCast", inputs=(out,), outputs=(low,))])
    feeds = {0: _floats(shape), 1: _floats((4,)), 2: _floats((4,)), 3: _floats((4,)),
             4: np.abs(_floats((4,))) + np.float32(0.5), 7: _floats((4,))}
    feeds[4][~np.isfinite(feeds[4])] = 1.0
    _both(graph, feeds, f"BN ReLU BiasAdd TypeCast {data_format}")


@pytest.mark.parametrize("dst", [S8, U8])
@pytest.mark.parametrize(("qtype", "axis", "scales", "zps"), [
    ("per_tensor", 1, [0.3], [-5]), ("per_channel", 1, [0.5, 0.1, 2.0], [1, 0, 3]),
    ("per_channel", -1, [0.7, 1.0, 0.125, 4.0], [0, 2, 0, 0]),
])
def test_quantization_agrees(qtype: str, axis: int, scales: list[float], zps: list[int],
                             dst: DataType) -> None:
    shape = (2, 3, 4)
    attrs = {"qtype": qtype, "axis": axis, "scales": scales, "zps": zps}
    q, f, g, out = _t(0, dst, shape), _t(1, F32, shape), _t(2, F32, shape), _t(3, dst, shape)
    graph = Graph([Op(0, "Dequantize", inputs=(q,), outputs=(f,), attrs=attrs),
                   Op(1, "Sigmoid", inputs=(f,), outputs=(g,)),
                   Op(2, "Quantize", inputs=(g,), outputs=(out,), attrs=attrs)])
    lo, hi = (-128, 127) if dst is S8 else (0, 255)
    src = RNG.integers(lo, hi, size=shape, endpoint=True).astype(cast_to(0, dst).dtype)
    _both(graph, {0: src}, f"Dequantize Sigmoid Quantize {qtype} {dst}")


@pytest.mark.parametrize("dtype", [BF16, F16])
def test_typecast_rounds_in_registers(dtype: DataType) -> None:
    x, n, y = _t(0, F32, (64,)), _t(1, dtype, (64,)), _t(2, F32, (64,))
    graph = Graph([Op(0, "TypeCast", inputs=(x,), outputs=(n,)),
                   Op(1, "TypeCast", inputs=(n,), outputs=(y,)),
                   Op(2, "Reorder", inputs=(y,), outputs=(_t(3, F32, (64,)),))])
    _both(graph, {0: _floats((64,))}, f"TypeCast f32 -> {dtype} -> f32")


def test_smaller_outputs_and_strided_inputs() -> None:
    """An output smaller than the domain is written once per element, and an input given as
    a flat buffer with its logical strides is read through them."""
    q, d = _t(0, U8, (1, 5)), _t(1, F32, (1, 5))
    x = LogicalTensor(2, F32, (3, 5), strides=(1, 3))  # column-major
    y, r = _t(3, F32, (3, 5)), _t(4, F32, (1, 5))
    attrs = {"qtype": "per_tensor", "scales": [0.5], "zps": [2]}
    graph = Graph([Op(0, "Dequantize", inputs=(q,), outputs=(d,), attrs=attrs),
                   Op(1, "Add", inputs=(x, d), outputs=(y,)),
                   Op(2, "ReLU", inputs=(d,), outputs=(r,))])
    flat = _floats((15,))
    _both(graph, {0: RNG.integers(0, 255, size=(1, 5)).astype(np.uint8), 2: flat},
          "smaller outputs, strided input")


def test_matmul_post_ops_agree() -> None:
    """MatMul -> BiasAdd -> GELU -> Add (broadcast) -> TypeCast: the table epilogue inside
    the GEMM kernel stores what the specialised epilogue stores."""
    a, b, mm = _t(0, F32, (2, 9, 13)), _t(1, F32, (13, 11)), _t(2, F32, (2, 9, 11))
    bias, biased, act = _t(3, F32, (11,)), _t(4, F32, (2, 9, 11)), _t(5, F32, (2, 9, 11))
    other, total, low = _t(6, F32, (9, 1)), _t(7, F32, (2, 9, 11)), _t(8, BF16, (2, 9, 11))
    graph = Graph([Op(0, "MatMul", inputs=(a, b), outputs=(mm,)),
                   Op(1, "BiasAdd", inputs=(mm, bias), outputs=(biased,)),
                   Op(2, "GELU", inputs=(biased,), outputs=(act,), attrs={"mode": "gelu_erf"}),
                   Op(3, "Add", inputs=(act, other), outputs=(total,)),
                   Op(4, "TypeCast", inputs=(total,), outputs=(low,))])
    feeds = {0: _summable(_floats((2, 9, 13))), 1: _summable(_floats((13, 11))),
             3: _floats((11,)), 6: _floats((9, 1))}
    _both(graph, feeds, "MatMul post-ops")


def test_convolution_batch_norm_agrees() -> None:
    src, wei = _t(0, F32, (1, 3, 8, 8)), _t(1, F32, (4, 3, 3, 3))
    conv, y, r = _t(2, F32, (1, 4, 6, 6)), _t(7, F32, (1, 4, 6, 6)), _t(8, F32, (1, 4, 6, 6))
    params = [_t(i, F32, (4,)) for i in range(3, 7)]
    zero = [0, 0]
    graph = Graph([Op(0, "Convolution", inputs=(src, wei), outputs=(conv,),
                      attrs={"strides": [1, 1], "pads_begin": zero, "pads_end": zero,
                             "dilations": [1, 1], "data_format": "NCX",
                             "weights_format": "OIX"}),
                   Op(1, "BatchNormInference", inputs=(conv, *params), outputs=(y,),
                      attrs={"epsilon": 1e-3, "data_format": "NCX"}),
                   Op(2, "ReLU", inputs=(y,), outputs=(r,))])
    feeds = {0: _floats((1, 3, 8, 8)), 1: _floats((4, 3, 3, 3)), 3: _floats((4,)),
             4: _floats((4,)), 5: _floats((4,)), 6: np.abs(_floats((4,))) + np.float32(0.5)}
    feeds = {key: _summable(value) for key, value in feeds.items()}
    _both(graph, feeds, "Convolution BatchNorm ReLU")


@pytest.mark.parametrize("dst", [BF16, U8])
def test_softmax_post_ops_agree(dst: DataType) -> None:
    shape = (2, 16, 5)
    x, p, m = _t(0, F32, shape), _t(1, F32, shape), _t(2, F32, (1, 16, 1))
    y, r = _t(3, F32, shape), _t(4, F32, shape)
    ops = [Op(0, "SoftMax", inputs=(x,), outputs=(p,), attrs={"axis": 1}),
           Op(1, "Multiply", inputs=(p, m), outputs=(y,)),
           Op(2, "ReLU", inputs=(y,), outputs=(r,))]
    if dst is BF16:
        ops.append(Op(3, "TypeCast", inputs=(r,), outputs=(_t(5, BF16, shape),)))
    else:
        ops.append(Op(3, "Quantize", inputs=(r,), outputs=(_t(5, U8, shape),),
                      attrs={"scales": [1 / 200.0], "zps": [3], "qtype": "per_tensor",
                             "axis": 1}))
    feeds = {0: _floats(shape), 2: _floats((1, 16, 1)) * np.float32(100)}
    feeds[0][~np.isfinite(feeds[0])] = 2.0
    feeds[2][~np.isfinite(feeds[2])] = 3.0
    _both(Graph(ops), feeds, f"SoftMax post-ops -> {dst}")


def _per_tensor(kind: str, src: LogicalTensor, dst: LogicalTensor, scale: float, zp: int
                ) -> Op:
    return Op(dst.id, kind, inputs=(src,), outputs=(dst,),
              attrs={"scales": [scale], "zps": [zp], "qtype": "per_tensor", "axis": 1})


def test_int8_pool_add_agrees() -> None:
    """Dequantize -> AvgPool -> Add(Dequantize'd s8, broadcast) -> Quantize (int8.pool_add)."""
    shape = (1, 5, 6, 4)
    q, d, p = _t(0, U8, shape), _t(10, F32, shape), LogicalTensor(11, F32, None)
    q2, d2, total = _t(2, S8, (1, 3, 1, 4)), _t(12, F32, (1, 3, 1, 4)), \
        LogicalTensor(13, F32, None)
    pool = {"kernel": [3, 3], "strides": [2, 2], "pads_begin": [1, 1], "pads_end": [1, 1],
            "data_format": "NXC", "exclude_pad": False}
    graph = Graph([_per_tensor("Dequantize", q, d, 0.25, 7),
                   Op(1, "AvgPool", inputs=(d,), outputs=(p,), attrs=pool),
                   _per_tensor("Dequantize", q2, d2, 0.5, -2),
                   Op(3, "Add", inputs=(p, d2), outputs=(total,)),
                   _per_tensor("Quantize", total, LogicalTensor(14, S8, None), 0.125, 4)])
    feeds = {0: RNG.integers(0, 255, size=shape).astype(np.uint8),
             2: RNG.integers(-128, 127, size=(1, 3, 1, 4)).astype(np.int8)}
    _both(graph, feeds, "int8.pool_add")


def test_interpolate_post_ops_agree() -> None:
    src, dst = _t(0, F32, (2, 3, 4, 5)), LogicalTensor(1, F32, None)
    other, y, r = _t(2, F32, (3, 1, 1)), LogicalTensor(3, F32, None), LogicalTensor(4, F32, None)
    graph = Graph([Op(0, "Interpolate", inputs=(src,), outputs=(dst,),
                      attrs={"mode": "bilinear", "sizes": [7, 3], "data_format": "NCX"}),
                   Op(1, "Multiply", inputs=(dst, other), outputs=(y,)),
                   Op(2, "Sigmoid", inputs=(y,), outputs=(r,))])
    feeds = {0: _floats((2, 3, 4, 5)), 2: _floats((3, 1, 1))}
    feeds[0][~np.isfinite(feeds[0])] = -1.0
    _both(graph, feeds, "Interpolate post-ops")


def test_every_chain_shares_one_program() -> None:
    """Different chains, dtypes, ranks and broadcasts: one program in the table form, a
    program each in the specialised form; building them all builds at most one program."""
    graphs = [
        Graph([Op(0, "ReLU", inputs=(_t(0, F32, (8,)),), outputs=(_t(1, F32, (8,)),))]),
        Graph([Op(0, "Add", inputs=(_t(0, BF16, (2, 3, 4)), _t(1, F32, (4,))),
                  outputs=(_t(2, F32, (2, 3, 4)),)),
               Op(1, "GELU", inputs=(_t(2, F32, (2, 3, 4)),), outputs=(_t(3, F32, (2, 3, 4)),),
                  attrs={"mode": "gelu_tanh"}),
               Op(2, "TypeCast", inputs=(_t(3, F32, (2, 3, 4)),),
                  outputs=(_t(4, F16, (2, 3, 4)),))]),
        Graph([Op(0, "Add", inputs=(_t(0, S32, (5, 1, 2, 1, 3)),
                                         _t(1, S32, (1, 4, 1, 6, 1))),
                  outputs=(_t(2, S32, (5, 4, 2, 6, 3)),))]),
    ]
    backend, device = AccelBackend(form="table"), first_device()
    special = AccelBackend(form="specialised")
    parts = [Partition(0, g.finalize().ops, *map(tuple, external_tensors(g, g.ops)))
             for g in graphs]
    sources = {plan.source for part in parts for plan in backend.plans(part, device)}
    assert len(sources) == 1, f"{len(sources)} table-form programs for {len(parts)} chains"
    specialised = {plan.source for part in parts for plan in special.plans(part, device)}
    assert len(specialised) == len(parts), "the specialised form gives each chain its program"
    before = all_stats().builds
    for part in parts:
        backend.compile(part, device)
    assert all_stats().builds - before <= 1, "the chains built more than one program"


def test_auto_picks_the_form_by_size_and_falls_back() -> None:
    """``auto``: the table form for a small domain, the specialised one above `TABLE_LIMIT`;
    a partition with more tensors than the interpreter has slots stays specialised."""
    device, backend = first_device(), AccelBackend(form="auto")

    def kernel(shape: tuple[int, ...], inputs: int = 2) -> str:
        ins = [_t(i, F32, shape) for i in range(inputs)]
        ops, acc = [], ins[0]
        for i, other in enumerate(ins[1:]):
            out = _t(100 + i, F32, shape)
            ops.append(Op(i, "Add", inputs=(acc, other), outputs=(out,)))
            acc = out
        part = Partition(0, tuple(ops), tuple(ins), (acc,))
        return backend.plans(part, device)[0].launches[0].kernel

    assert kernel((64,)) == TABLE_KERNEL, "a small domain takes the table form"
    assert kernel((TABLE_LIMIT + 1,)) != TABLE_KERNEL, "a large domain stays specialised"
    assert kernel((64,), inputs=SLOTS + 1) != TABLE_KERNEL, \
        "a partition beyond the interpreter's slots stays specialised"
    assert kernel((1, 2) * (RANK // 2) + (3,)) != TABLE_KERNEL, \
        "a domain of more axes than the interpreter's stays specialised"


def test_register_overflow_falls_back() -> None:
    """A chain longer than the interpreter's registers is not translated (the backend then
    builds the specialised form)."""
    x = _t(0, F32, (8,))
    ops, acc = [], x
    for i in range(REGS + 1):
        out = _t(i + 1, F32, (8,))
        ops.append(Op(i, "Exp", inputs=(acc,), outputs=(out,)))
        acc = out
    assert translate(Partition(0, tuple(ops), (x,), (acc,)), (8,)) is None, \
        f"{REGS + 1} float registers fit an interpreter of {REGS}"
    assert translate(Partition(0, tuple(ops[:4]), (x,), (ops[3].outputs[0],)), (8,)), \
        "a short chain translates"


def test_unknown_form_is_a_clear_error(monkeypatch: pytest.MonkeyPatch) -> None:
    with pytest.raises(AccelError, match=r"unknown kernel form 'fast'.*auto, table, specialised"):
        AccelBackend(form="fast")
    monkeypatch.setenv(FORM_ENV, "nope")
    with pytest.raises(AccelError, match=f"'nope' \\(from {FORM_ENV}\\)"):
        AccelBackend()
    monkeypatch.setenv(FORM_ENV, "specialised")
    assert AccelBackend().form == "specialised", "the environment variable picks the form"
