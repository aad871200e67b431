"""The table form's gathering program: its host-side index maps reproduce the reference
(MatMul, Convolution, ConvTranspose, ConvolutionBackwardWeights, pooling windows, reductions)
without a device; every
small partition of the main families shares one program; a partition compiled in the table
form is timed in the specialised form."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest
from testkit.accel import OnDevice, requires_device

from fusionspec.accel.families.gemm_index_maps import index_maps
from fusionspec.accel.families.window_table import pool_map, reduction_map
from fusionspec.reference import execute
from fusionspec.spec.dtypes import DataType
from fusionspec.spec.graph import AttrValue, Graph, LogicalTensor, Op

F32 = DataType.f32


def _t(tid: int, shape: tuple[int, ...] | None) -> LogicalTensor:
    return LogicalTensor(tid, F32, shape)


def _conv(kind: str, src: tuple[int, ...], wei: tuple[int, ...], **attrs: AttrValue) -> Op:
    nsp = len(src) - 2
    full: dict[str, AttrValue] = {"strides": [1] * nsp, "pads_begin": [0] * nsp,
                                  "pads_end": [0] * nsp, "dilations": [1] * nsp, **attrs}
    return Op(0, kind, inputs=(_t(0, src), _t(1, wei)), outputs=(_t(3, None),), attrs=full)


#: (src, weights, transpose_a, transpose_b): ranks 1 to 4, batch broadcasting, transposes.
MATMULS = [((5, 7), (7, 9), False, False), ((7, 5), (9, 7), True, True),
           ((3, 1, 6, 4), (2, 4, 5), False, False), ((7,), (3, 7, 4), False, False),
           ((2, 3, 7), (7,), False, False), ((7,), (7,), False, False)]
#: (label, src, weights, attributes): layouts, groups, strides, pads, dilations, auto_pad.
CONVS: list[tuple[str, tuple[int, ...], tuple[int, ...], dict[str, AttrValue]]] = [
    ("NCX OIX strided padded dilated 2 groups", (2, 6, 9, 8), (4, 3, 3, 2),
     dict(strides=[2, 1], pads_begin=[1, 0], pads_end=[1, 1], dilations=[1, 2], groups=2,
          data_format="NCX", weights_format="OIX")),
    ("NXC XIO depthwise", (1, 9, 9, 6), (3, 3, 1, 6),
     dict(groups=6, strides=[2, 2], data_format="NXC", weights_format="XIO")),
    ("NCX OIX SAME_UPPER", (1, 3, 10, 7), (5, 3, 3, 3),
     dict(auto_pad="SAME_UPPER", strides=[2, 2], data_format="NCX", weights_format="OIX")),
    ("3-D NXC OIX", (1, 4, 5, 6, 3), (8, 3, 2, 2, 2),
     dict(strides=[1, 2, 1], pads_begin=[0, 1, 1], pads_end=[1, 0, 0], data_format="NXC",
          weights_format="OIX")),
]
DECONVS: list[tuple[str, tuple[int, ...], tuple[int, ...], dict[str, AttrValue]]] = [
    ("NCX IOX strided padded", (1, 4, 5, 6), (4, 3, 3, 2),
     dict(strides=[2, 2], pads_begin=[1, 0], pads_end=[1, 1], data_format="NCX",
          weights_format="IOX")),
    ("NXC XOI output_padding dilated 2 groups", (1, 5, 4, 6), (3, 2, 2, 6),
     dict(strides=[2, 3], dilations=[2, 1], output_padding=[1, 2], groups=2,
          data_format="NXC", weights_format="XOI")),
]


def _random_inputs(graph: Graph, seed: int = 5) -> dict[int, Any]:
    rng = np.random.default_rng(seed)
    return {t.id: rng.integers(-8, 9, t.shape or ()).astype(np.float32)
            for t in graph.input_tensors}


def _via_maps(graph: Graph, inputs: dict[int, Any]) -> Any:
    """The main op's dst computed in NumPy from its index maps alone."""
    op = graph.ops[0]
    maps = index_maps(op)
    src, wei = (np.asarray(inputs[t.id], dtype=np.float64).ravel() for t in op.inputs[:2])
    a = np.where(maps.a >= 0, src[np.maximum(maps.a, 0)], 0.0)
    b = np.where(maps.b >= 0, wei[np.maximum(maps.b, 0)], 0.0)
    out = np.zeros(int(np.prod(op.outputs[0].shape or ())), dtype=np.float64)
    out[maps.d.ravel()] = np.einsum("zmk,zkn->zmn", a, b).ravel()
    return out


def _main_op_graphs() -> list[tuple[str, Graph]]:
    graphs = [(f"MatMul {sa} x {sb} ta={ta} tb={tb}",
               Graph([Op(0, "MatMul", inputs=(_t(0, sa), _t(1, sb)), outputs=(_t(3, None),),
                         attrs={"transpose_a": ta, "transpose_b": tb})]))
              for sa, sb, ta, tb in MATMULS]
    graphs += [(f"Convolution {label}", Graph([_conv("Convolution", src, wei, **attrs)]))
               for label, src, wei, attrs in CONVS]
    graphs += [(f"ConvTranspose {label}", Graph([_conv("ConvTranspose", src, wei, **attrs)]))
               for label, src, wei, attrs in DECONVS]
    for label, src, wei, attrs in CONVS:  # the weight gradient of each convolution
        dy = Graph([_conv("Convolution", src, wei, **attrs)]).finalize().ops[0].outputs[0].shape
        nsp = len(src) - 2
        full: dict[str, AttrValue] = {"strides": [1] * nsp, "pads_begin": [0] * nsp,
                                      "pads_end": [0] * nsp, "dilations": [1] * nsp, **attrs,
                                      "weights_shape": list(wei)}
        graphs.append((f"ConvolutionBackwardWeights {label}", Graph([Op(
            0, "ConvolutionBackwardWeights", inputs=(_t(0, src), _t(1, dy)),
            outputs=(_t(2, None),), attrs=full)])))
    return graphs


@pytest.mark.parametrize("label,graph", _main_op_graphs(), ids=lambda v: str(v)[:40])
def test_gemm_index_maps_reproduce_the_reference(label: str, graph: Graph) -> None:
    graph = graph.finalize()
    inputs = _random_inputs(graph)
    want = np.asarray(execute(graph, inputs)[graph.ops[0].outputs[0].id], dtype=np.float64)
    got = _via_maps(graph, inputs)
    assert np.array_equal(got, want.ravel()), \
        f"{label}: the index maps give another product (largest difference " \
        f"{np.max(np.abs(got - want.ravel()))})"


def test_pool_map_reproduces_max_pool() -> None:
    src = LogicalTensor(0, F32, (1, 2, 7, 6))
    attrs: dict[str, AttrValue] = {"kernel": [3, 2], "strides": [2, 2], "pads_begin": [1, 0],
                                   "pads_end": [1, 1], "dilations": [1, 2],
                                   "data_format": "NCX"}
    graph = Graph([Op(0, "MaxPool", inputs=(src,), outputs=(LogicalTensor(1, F32, None),),
                      attrs=attrs)]).finalize()
    inputs = _random_inputs(graph)
    dst = graph.ops[0].outputs[0]
    want = execute(graph, inputs)[dst.id]
    where = pool_map((1, 2, 7, 6), dst.shape or (), (2, 3), (3, 2), (2, 2), (1, 2), (1, 0))
    flat = inputs[0].ravel()
    got = np.where(where >= 0, flat[np.maximum(where, 0)], -np.inf).max(axis=1)
    assert np.array_equal(got, want.ravel()), "the pool map's windows give another maximum"


@pytest.mark.parametrize("shape,axes", [((2, 3, 4), (1,)), ((2, 3, 4), (0, 2)),
                                        ((5,), (0,)), ((2, 3, 4), ())])
def test_reduction_map_groups_each_output(shape: tuple[int, ...], axes: tuple[int, ...]
                                          ) -> None:
    data = np.arange(int(np.prod(shape)), dtype=np.float64).reshape(shape)
    where = reduction_map(shape, axes)
    got = data.ravel()[where].sum(axis=1)
    want = data.sum(axis=axes) if axes else data
    assert np.array_equal(got, np.ravel(want)), \
        f"reduction map over {axes} of {shape}: rows in dst's order, the reduced extent each"


def _small_graphs() -> list[Graph]:
    conv = Graph([_conv("Convolution", (1, 4, 6, 6), (4, 4, 3, 3), data_format="NCX",
                        weights_format="OIX")])
    matmul = Graph([Op(0, "MatMul", inputs=(_t(0, (3, 5)), _t(1, (5, 2))),
                       outputs=(_t(2, None),))])
    pool = Graph([Op(0, "AvgPool", inputs=(_t(0, (1, 3, 6, 6)),), outputs=(_t(1, None),),
                     attrs={"kernel": [2, 2], "strides": [2, 2], "pads_begin": [0, 0],
                            "pads_end": [0, 0], "exclude_pad": False,
                            "data_format": "NCX"})])
    softmax = Graph([Op(0, "SoftMax", inputs=(_t(0, (4, 7)),), outputs=(_t(1, None),),
                        attrs={"axis": 1})])
    reduce = Graph([Op(0, "ReduceSum", inputs=(_t(0, (4, 7)),), outputs=(_t(1, None),),
                       attrs={"axes": [0], "keep_dims": False})])
    return [conv, matmul, pool, softmax, reduce]


@requires_device
def test_small_partitions_share_one_program_and_time_the_specialised_kernels() -> None:
    sources = set()
    for graph in _small_graphs():
        on = OnDevice(graph)
        sources.add(on.compiled[0].plans[0].source)
        inputs = _random_inputs(on.graph)
        on.check(inputs, label=f"{graph.ops[0].kind} in the table form")
        timed = on.compiled[0].timed()
        assert timed is not on.compiled[0] and "fs_tg" not in timed.kernel_source, \
            f"{graph.ops[0].kind}: timing runs the specialised kernels"
        assert timed.execute_timed(inputs) > 0.0, f"{graph.ops[0].kind}: a device time"
    assert len(sources) == 1, f"one program for every small main op, got {len(sources)}"
