"""The pool family of the OpenCL backend: AvgPool (exclude_pad both ways, ceil rounding) and
MaxPool (dilations, padding, all-padding windows) in NCX and NXC with 1 to 3 spatial dims,
fp.pool_binary, int8.pool and int8.pool_add, checked against the reference; and the
conformance suite on the pool patterns."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest
from testkit.accel import OnDevice, requires_device

from fusionspec.accel.families import family_for
from fusionspec.reference import execute
from fusionspec.reference.dtypes import cast_to
from fusionspec.spec.dtypes import DataType
from fusionspec.spec.graph import AttrValue, Graph, LogicalTensor, Op

pytestmark = [requires_device, pytest.mark.filterwarnings("ignore::RuntimeWarning"),
              pytest.mark.usefixtures("kernel_form")]

F32, BF16, U8, S8 = DataType.f32, DataType.bf16, DataType.u8, DataType.s8


def _feeds(graph: Graph) -> dict[int, Any]:
    rng = np.random.default_rng(3)
    g = graph.finalize()
    feeds: dict[int, Any] = {}
    for t in g.input_tensors:
        if t.dtype.is_integer:
            feeds[t.id] = rng.integers(0, 120, t.shape or ()).astype(cast_to(
                np.zeros(1), t.dtype).dtype)
        else:
            feeds[t.id] = cast_to(4 * rng.standard_normal(t.shape or ()), t.dtype)
    return feeds


def _pool(kind: str, src_shape: tuple[int, ...], attrs: dict[str, AttrValue],
          dtype: DataType = F32) -> Graph:
    src = LogicalTensor(0, dtype, src_shape)
    dst = LogicalTensor(1, dtype, None)
    return Graph([Op(0, kind, inputs=(src,), outputs=(dst,), attrs=attrs)])


def _attrs(nsp: int, *, k: int = 3, s: int = 2, pb: int = 1, pe: int = 1, fmt: str = "NCX",
           **extra: AttrValue) -> dict[str, AttrValue]:
    return {"kernel": [k] * nsp, "strides": [s] * nsp, "pads_begin": [pb] * nsp,
            "pads_end": [pe] * nsp, "data_format": fmt, **extra}


CASES: list[tuple[str, tuple[int, ...], dict[str, AttrValue]]] = [
    ("AvgPool", (2, 3, 9), _attrs(1, exclude_pad=True)),
    ("AvgPool", (2, 3, 7, 6), _attrs(2, exclude_pad=False)),
    ("AvgPool", (2, 7, 6, 3), _attrs(2, exclude_pad=False, fmt="NXC")),
    ("AvgPool", (1, 2, 7, 6), _attrs(2, exclude_pad=False, rounding_type="ceil")),
    ("AvgPool", (1, 2, 5, 4, 6), _attrs(3, exclude_pad=True, fmt="NCX")),
    ("AvgPool", (1, 2, 5, 5), _attrs(2, k=2, s=3, pb=0, pe=0, exclude_pad=False,
                                     rounding_type="ceil")),
    ("MaxPool", (2, 3, 9), _attrs(1)),
    ("MaxPool", (2, 3, 8, 7), _attrs(2, dilations=[2, 2])),
    ("MaxPool", (2, 8, 7, 3), _attrs(2, fmt="NXC", rounding_type="ceil")),
    ("MaxPool", (1, 4, 5, 4, 3), _attrs(3, fmt="NXC", auto_pad="SAME_UPPER")),
]


@pytest.mark.parametrize("kind,shape,attrs", CASES)
def test_pool_matches_reference(kind: str, shape: tuple[int, ...],
                                attrs: dict[str, AttrValue]) -> None:
    graph = _pool(kind, shape, attrs)
    on = OnDevice(graph)
    assert family_for(on.parts[0]).name == "pool", f"{kind} goes to the pool family"
    on.check(_feeds(graph), label=f"{kind} {shape} {attrs}")


def test_maxpool_windows_of_padding_and_bf16() -> None:
    """Pads larger than the kernel make windows without in-bounds taps: MaxPool gives the
    lowest finite bf16 value there, AvgPool NaN."""
    attrs = _attrs(1, k=2, s=1, pb=3, pe=0)
    for kind, extra in (("MaxPool", {}), ("AvgPool", {"exclude_pad": True})):
        graph = _pool(kind, (1, 2, 4), {**attrs, **extra}, BF16)
        on = OnDevice(graph)
        feeds = _feeds(graph)
        got, want = on.run(feeds)[1], execute(on.graph, feeds)[1]
        same = np.array_equal(np.asarray(got, np.float32), np.asarray(want, np.float32),
                              equal_nan=True)
        assert same, f"{kind} over all-padding windows: {got} vs reference {want}"


def _pool_binary() -> Graph:
    src, p = LogicalTensor(0, F32, (2, 3, 6, 6)), LogicalTensor(1, F32, None)
    b1, y1 = LogicalTensor(2, F32, (1, 3, 1, 1)), LogicalTensor(3, F32, None)
    b2, y2 = LogicalTensor(4, F32, (2, 3, 3, 3)), LogicalTensor(5, F32, None)
    return Graph([Op(0, "AvgPool", inputs=(src,), outputs=(p,),
                     attrs=_attrs(2, exclude_pad=True)),
                  Op(1, "Multiply", inputs=(p, b1), outputs=(y1,)),
                  Op(2, "Maximum", inputs=(y1, b2), outputs=(y2,))])


def test_pool_binary_is_one_kernel() -> None:
    graph = _pool_binary()
    on = OnDevice(graph)
    assert len(on.parts) == 1 and on.parts[0].pattern == "fp.pool_binary", \
        f"AvgPool + 2 binaries is one fp.pool_binary partition ({on.parts[0].pattern})"
    on.check(_feeds(graph), label="fp.pool_binary")


def _quant(tid_in: LogicalTensor, out: LogicalTensor, kind: str, scale: float, zp: int) -> Op:
    return Op(out.id, kind, inputs=(tid_in,), outputs=(out,),
              attrs={"scales": [scale], "zps": [zp], "qtype": "per_tensor", "axis": 1})


@pytest.mark.parametrize("kind,add", [("MaxPool", False), ("AvgPool", False),
                                      ("AvgPool", True), ("MaxPool", True)])
def test_int8_pool_and_pool_add(kind: str, add: bool) -> None:
    shape = (1, 5, 6, 4)
    q = LogicalTensor(0, U8, shape)
    d = LogicalTensor(10, F32, shape)
    p = LogicalTensor(11, F32, None)
    extra: dict[str, AttrValue] = {"exclude_pad": False} if kind == "AvgPool" else {}
    ops = [_quant(q, d, "Dequantize", 0.25, 7),
           Op(1, kind, inputs=(d,), outputs=(p,), attrs=_attrs(2, fmt="NXC", **extra))]
    last = p
    if add:
        q2, d2, s = LogicalTensor(2, S8, (1, 3, 1, 4)), LogicalTensor(12, F32, None), \
            LogicalTensor(13, F32, None)
        ops += [_quant(q2, d2, "Dequantize", 0.5, -2), Op(3, "Add", inputs=(p, d2), outputs=(s,))]
        last = s
    ops.append(_quant(last, LogicalTensor(14, S8, None), "Quantize", 0.125, 4))
    graph = Graph(ops)
    on = OnDevice(graph)
    want = "int8.pool_add" if add else "int8.pool"
    assert len(on.parts) == 1 and on.parts[0].pattern == want, \
        f"{kind} int8 graph is one {want} partition ({[p.pattern for p in on.parts]})"
    on.check(_feeds(graph), label=want)
