"""The GEMM family of the OpenCL backend: MatMul, Convolution and ConvTranspose kernels against
the reference on hand-made graphs (layouts, groups, pads, dilations, auto_pad, transposes,
batch broadcasting, 1-D operands, biases, int8 folding, fused epilogues), in every kernel
form on the test device: the register-blocked form with each way of reading A (in runs,
packed first, element by element) and the local-memory tiled form (forced by describing the
device as one with dedicated local memory); the tile and register-block choices for small and
large devices."""

from __future__ import annotations

import dataclasses
import math
from typing import Any

import numpy as np
import pytest
from testkit.accel import OnDevice, first_info, requires_device

from fusionspec.accel.codegen.args import KernelArgs
from fusionspec.accel.codegen.source import Preamble
from fusionspec.accel.codegen.types import TypePolicy
from fusionspec.accel.families import BuildContext, family_for
from fusionspec.accel.families.gemm import (
    A_MODES,
    choose_register_tiles,
    choose_tiles,
    register_blocked,
)
from fusionspec.accel.families.gemm_geometry import geometry_of
from fusionspec.accel.plan import BufferArg, ScratchArg, TableArg
from fusionspec.reference.dtypes import cast_to
from fusionspec.spec.dtypes import DataType
from fusionspec.spec.graph import AttrValue, Graph, LogicalTensor, Op

pytestmark = [requires_device, pytest.mark.filterwarnings("ignore::RuntimeWarning")]



F32, BF16, S8, U8 = DataType.f32, DataType.bf16, DataType.s8, DataType.u8


def _t(tid: int, shape: tuple[int, ...] | None, dtype: DataType = F32) -> LogicalTensor:
    return LogicalTensor(tid, dtype, shape)


def _feeds(graph: Graph, seed: int = 3) -> dict[int, Any]:
    """Random inputs: quarters in [-4, 4] for floats (every product and partial sum is then
    exact in f32, so any accumulation order, with or without fused multiply-adds, gives the
    reference's result, as the suite's fills do), small integers for 8-bit tensors."""
    rng = np.random.default_rng(seed)
    feeds: dict[int, Any] = {}
    for t in graph.finalize().input_tensors:
        shape = t.shape or ()
        if t.dtype in (S8, U8):
            lo, hi = (-20, 20) if t.dtype is S8 else (0, 40)
            feeds[t.id] = rng.integers(lo, hi, shape).astype(np.int8 if t.dtype is S8
                                                             else np.uint8)
        else:
            feeds[t.id] = cast_to(rng.integers(-16, 17, shape) / 4.0, t.dtype)
    return feeds


#: The kernel forms every shape is checked in: the register-blocked form reading A in runs (the
#: default for these operands), packed first and element by element; the tiled form; and the
#: table form (index maps and the shared gathering program, what small products run).
FORMS = ("run", "packed", "element", "tiled", "table")


def _context(form: str) -> BuildContext:
    """A build context for the test device that generates `form` (see FORMS)."""
    info = first_info()
    if form == "table":
        return BuildContext.for_device(info, form="table")
    if form == "tiled":
        return BuildContext.for_device(dataclasses.replace(info, local_mem_dedicated=True))
    base = BuildContext.for_device(dataclasses.replace(info, local_mem_dedicated=False))
    return BuildContext(base.device, base.policy, None, {"gemm": {"a_mode": form}})


def _run(graph: Graph, label: str, *, kernels: int = 1, form: str | None = None) -> OnDevice:
    """Compile `graph` (one GEMM partition) in `form` (None: as the backend does) and check it
    against the reference; `kernels`: the GEMM kernel and what follows it (BiasAddBackward)."""
    ctx = None if form is None else _context(form)
    on = OnDevice(graph, ctx=ctx)
    assert len(on.parts) == 1, f"{label}: one partition, got {len(on.parts)}"
    assert family_for(on.parts[0]).name == "gemm", f"{label}: the GEMM family compiles it"
    plan = on.compiled[0].plans[0]
    names = [launch.kernel for launch in plan.launches]
    if form == "table" and "fs_tgemm" in names:
        after = ["fs_tgather", "fs_twindow"] * (kernels - 1)  # BiasAddBackward: a sum
        assert names == ["fs_tgather", "fs_tgather", "fs_tgemm", *after], \
            f"{label}: the table form gathers A and B, then multiplies: {names}"
        on.check(_feeds(graph), label=f"{label} [table]")
        return on
    assert len(on.compiled[0].plans) == 1 and names.count("fs_gemm") == 1 and \
        len(names) - names.index("fs_gemm") == kernels, \
        f"{label}: one GEMM kernel and {kernels - 1} after it for the whole partition: {names}"
    tiled = "__local float As" in plan.source
    if (ctx or BuildContext.for_device(first_info())).device.local_mem_dedicated:
        assert tiled and names[0] == "fs_gemm", f"{label}: operand tiles staged in local memory"
    else:
        assert not tiled and names[0] == "fs_gemm_pack_b", \
            f"{label}: register-blocked, B packed into panels first: {names}"
        if form in ("packed", "element"):
            assert ("fs_gemm_pack_a" in names) == (form == "packed"), \
                f"{label}: A packed first exactly in the packed form: {names}"
    on.check(_feeds(graph), label=f"{label} [{form or 'default'}]")
    return on


MATMULS: list[tuple[tuple[int, ...], tuple[int, ...], bool, bool, tuple[int, ...] | None]] = [
    ((5, 7), (7, 9), False, False, None),
    ((7, 5), (9, 7), True, True, (9,)),
    ((3, 1, 70, 40), (2, 40, 130), False, False, (1, 130)),  # batch broadcast, several tiles
    ((2, 7, 5), (7, 6), True, False, (2, 5, 6)),
    ((7,), (3, 7, 4), False, False, None),  # 1-D src: a row
    ((2, 3, 7), (7,), False, False, None),  # 1-D weights: a column
    ((7,), (7,), False, False, None),  # a dot product
]


@pytest.mark.parametrize("form", FORMS)
@pytest.mark.parametrize("sa,sb,ta,tb,bias", MATMULS)
def test_matmul_shapes_transposes_and_bias(sa: tuple[int, ...], sb: tuple[int, ...], ta: bool,
                                          tb: bool, bias: tuple[int, ...] | None,
                                          form: str) -> None:
    ins = (_t(0, sa), _t(1, sb), *((_t(2, bias),) if bias else ()))
    graph = Graph([Op(0, "MatMul", inputs=ins, outputs=(_t(3, None),),
                      attrs={"transpose_a": ta, "transpose_b": tb})])
    _run(graph, f"MatMul {sa} x {sb} ta={ta} tb={tb} bias={bias}", form=form)


@pytest.mark.parametrize("form", FORMS)
def test_matmul_bf16_with_post_ops(form: str) -> None:
    """bf16 operands and dst: the accumulator is rounded to bf16 before the post-ops."""
    graph = Graph([
        Op(0, "MatMul", inputs=(_t(0, (4, 33, 20), BF16), _t(1, (20, 17), BF16)),
           outputs=(_t(2, None, BF16),)),
        Op(1, "Add", inputs=(_t(2, None, BF16), _t(3, (1, 17), BF16)),
           outputs=(_t(4, None, BF16),)),
        Op(2, "GELU", inputs=(_t(4, None, BF16),), outputs=(_t(5, None, BF16),))])
    _run(graph, "bf16 MatMul + Add + GELU", form=form)


def _conv(kind: str, src: tuple[int, ...], wei: tuple[int, ...], **attrs: AttrValue) -> Op:
    nsp = len(src) - 2
    full: dict[str, AttrValue] = {"strides": [1] * nsp, "pads_begin": [0] * nsp,
                                  "pads_end": [0] * nsp, "dilations": [1] * nsp, **attrs}
    return Op(0, kind, inputs=(_t(0, src), _t(1, wei)), outputs=(_t(3, None),), attrs=full)


CONVS: list[tuple[str, tuple[int, ...], tuple[int, ...], dict[str, AttrValue]]] = [
    ("NCX OIX strided padded dilated, 2 groups", (2, 6, 9, 8), (4, 3, 3, 2),
     dict(strides=[2, 1], pads_begin=[1, 0], pads_end=[1, 1], dilations=[1, 2], groups=2,
          data_format="NCX", weights_format="OIX")),
    ("NXC XIO", (2, 7, 6, 5), (3, 2, 5, 8),
     dict(pads_begin=[1, 1], pads_end=[0, 1], data_format="NXC", weights_format="XIO")),
    ("NXC XIO depthwise", (1, 9, 9, 6), (3, 3, 1, 6),
     dict(groups=6, strides=[2, 2], data_format="NXC", weights_format="XIO")),
    ("NCX OIX SAME_UPPER", (1, 3, 10, 7), (5, 3, 3, 3),
     dict(auto_pad="SAME_UPPER", strides=[2, 2], data_format="NCX", weights_format="OIX")),
    ("1-D NCX XIO, 3 groups", (2, 9, 20), (4, 3, 6),
     dict(groups=3, dilations=[3], pads_begin=[2], pads_end=[2], data_format="NCX",
          weights_format="XIO")),
    ("3-D NXC OIX", (1, 4, 5, 6, 3), (8, 3, 2, 2, 2),
     dict(strides=[1, 2, 1], pads_begin=[0, 1, 1], pads_end=[1, 0, 0], data_format="NXC",
          weights_format="OIX")),
    ("1x1 many channels", (1, 3, 3, 70), (1, 1, 70, 90),
     dict(data_format="NXC", weights_format="XIO")),
]


@pytest.mark.parametrize("form", FORMS)
@pytest.mark.parametrize("label,src,wei,attrs", CONVS, ids=[c[0] for c in CONVS])
def test_convolution_layouts_groups_pads_dilations(label: str, src: tuple[int, ...],
                                                   wei: tuple[int, ...],
                                                   attrs: dict[str, AttrValue],
                                                   form: str) -> None:
    _run(Graph([_conv("Convolution", src, wei, **attrs)]), f"Convolution {label}", form=form)


def test_convolution_bias_input_and_epilogue() -> None:
    """Convolution with its bias input, then BiasAdd, BatchNormInference, ReLU and Multiply."""
    conv = Op(0, "Convolution", inputs=(_t(0, (2, 5, 6, 4)), _t(1, (3, 3, 4, 6)),
                                        _t(2, (6,))), outputs=(_t(3, None),),
              attrs=dict(strides=[1, 1], pads_begin=[1, 1], pads_end=[1, 1],
                         dilations=[1, 1], data_format="NXC", weights_format="XIO"))
    graph = Graph([
        conv,
        Op(1, "BiasAdd", inputs=(_t(3, None), _t(4, (6,))), outputs=(_t(5, None),),
           attrs={"data_format": "NXC"}),
        Op(2, "BatchNormInference", inputs=(_t(5, None), *(_t(i, (6,)) for i in (6, 7, 8))
                                            , _t(9, (6,))),
           outputs=(_t(10, None),), attrs={"epsilon": 1e-3, "data_format": "NXC"}),
        Op(3, "ReLU", inputs=(_t(10, None),), outputs=(_t(11, None),)),
        Op(4, "Multiply", inputs=(_t(11, None), _t(12, (1, 1, 1, 6))),
           outputs=(_t(13, None),))])
    feeds = _feeds(graph)
    feeds[9] = np.abs(feeds[9]) + np.float32(0.5)  # a variance
    on = OnDevice(graph)
    assert len(on.compiled[0].plans) == 1, "conv + 4 post-ops: one plan"
    on.check(feeds, label="conv + bias + BiasAdd + BN + ReLU + Multiply")


DECONVS: list[tuple[str, tuple[int, ...], tuple[int, ...], dict[str, AttrValue]]] = [
    ("NCX IOX stride 2 pads", (2, 4, 5, 6), (4, 3, 3, 3),
     dict(strides=[2, 2], pads_begin=[1, 0], pads_end=[1, 1], data_format="NCX",
          weights_format="IOX")),
    ("NXC XOI output_padding dilated 2 groups", (1, 5, 4, 6), (3, 2, 2, 6),
     dict(strides=[2, 3], dilations=[2, 1], output_padding=[1, 2], groups=2,
          data_format="NXC", weights_format="XOI")),
    ("1-D NCX XOI", (2, 3, 7), (4, 5, 3),
     dict(strides=[3], pads_begin=[1], pads_end=[0], data_format="NCX",
          weights_format="XOI")),
]


@pytest.mark.parametrize("form", FORMS)
@pytest.mark.parametrize("label,src,wei,attrs", DECONVS, ids=[c[0] for c in DECONVS])
def test_convtranspose_layouts_groups_output_padding(label: str, src: tuple[int, ...],
                                                     wei: tuple[int, ...],
                                                     attrs: dict[str, AttrValue],
                                                     form: str) -> None:
    _run(Graph([_conv("ConvTranspose", src, wei, **attrs)]), f"ConvTranspose {label}",
         form=form)


def _int8_graph(main: Op, wshape: tuple[int, ...], oc_axis: int, *,
                quantize_weights: bool) -> Graph:
    """u8 src (zp 3) and s8 per-channel weights (or f32 weights quantized in the graph)
    dequantized into `main`, then ReLU, Add of a dequantized s8 tensor, Quantize to u8.
    Power-of-two scales keep every value exact, so the u8 result must match exactly."""
    oc = wshape[oc_axis]
    scales = [2.0 ** -(i % 3) for i in range(oc)]
    src_q, w_in = _t(10, main.inputs[0].shape, U8), _t(11, wshape, F32 if quantize_weights
                                                      else S8)
    ops = [Op(10, "Dequantize", inputs=(src_q,), outputs=(main.inputs[0],),
              attrs={"qtype": "per_tensor", "scales": [0.5], "zps": [3]})]
    w_q = w_in
    if quantize_weights:
        w_q = _t(12, wshape, S8)
        ops.append(Op(11, "Quantize", inputs=(w_in,), outputs=(w_q,),
                      attrs={"qtype": "per_channel", "axis": oc_axis, "scales": [0.125] * oc,
                             "zps": [0] * oc}))
    ops.append(Op(12, "Dequantize", inputs=(w_q,), outputs=(main.inputs[1],),
                  attrs={"qtype": "per_channel", "axis": oc_axis, "scales": scales,
                         "zps": [0] * oc}))
    dst = main.outputs[0]
    ops += [main, Op(13, "ReLU", inputs=(dst,), outputs=(_t(20, None),)),
            Op(14, "Dequantize", inputs=(_t(21, (1,), S8),), outputs=(_t(22, (1,)),),
               attrs={"qtype": "per_tensor", "scales": [0.25], "zps": [-2]}),
            Op(15, "Add", inputs=(_t(20, None), _t(22, (1,))), outputs=(_t(23, None),)),
            Op(16, "Quantize", inputs=(_t(23, None),), outputs=(_t(24, None, U8),),
               attrs={"qtype": "per_tensor", "scales": [4.0], "zps": [1]})]
    return Graph(ops)


@pytest.mark.parametrize("form", FORMS)
@pytest.mark.parametrize("quantize_weights", [False, True])
def test_int8_matmul_folds_dequantize_into_loads(quantize_weights: bool, form: str) -> None:
    mm = Op(0, "MatMul", inputs=(_t(0, (2, 9, 13)), _t(1, (13, 11))), outputs=(_t(3, None),))
    graph = _int8_graph(mm, (13, 11), 1, quantize_weights=quantize_weights)
    on = _run(graph, f"int8 MatMul (weights quantized in graph: {quantize_weights})",
              form=form)
    plan = on.compiled[0].plans[0]
    if form == "table":  # the Dequantize chains are the gathers' instruction tables
        read = {p.binding.tensor_id for launch in plan.launches for p in launch.params
                if isinstance(p.binding, BufferArg)}
        assert read == {10, 11, 21, 24}, \
            f"only the int8 inputs, the f32/s8 weights and the u8 output are buffers: {read}"
        return
    params = plan.launches[-1].params
    buffers = {p.binding.tensor_id for p in params if isinstance(p.binding, BufferArg)}
    assert buffers == {10, 11, 21, 24}, \
        f"only the int8 inputs, the f32/s8 weights and the u8 output are buffers: {buffers}"
    tables = [p for p in params if isinstance(p.binding, TableArg)]
    scratch = [p for p in params if isinstance(p.binding, ScratchArg)]
    assert sum("__global" in p.decl for p in params) == len(buffers) + len(tables) + \
        len(scratch), "the other global parameters are the per-channel scale and zero-point " \
        "tables (and the packed operands of the register-blocked form)"
    assert "char" in plan.source and "uchar" in plan.source, "int8 data is loaded as is"


@pytest.mark.parametrize("form", FORMS)
def test_int8_conv_and_convtranspose(form: str) -> None:
    conv = _conv("Convolution", (1, 4, 7, 7), (6, 2, 3, 3), groups=2, strides=[2, 1],
                 pads_begin=[1, 1], pads_end=[1, 0], data_format="NCX", weights_format="OIX")
    deconv = _conv("ConvTranspose", (1, 5, 5, 4), (3, 3, 5, 4), strides=[2, 2],
                   pads_begin=[1, 1], pads_end=[0, 0], data_format="NXC",
                   weights_format="XOI")
    cases = [("int8 Convolution", conv, _int8_graph(conv, (6, 2, 3, 3), 0,
                                                    quantize_weights=True)),
             ("int8 ConvTranspose", deconv, _int8_graph(deconv, (3, 3, 5, 4), 2,
                                                        quantize_weights=False))]
    for label, main, graph in cases:
        on = _run(graph, label, form=form)
        if form != "run":
            continue
        plan = on.compiled[0].plans[0]
        names = [launch.kernel for launch in plan.launches]
        assert names == ["fs_gemm_pack_b", "fs_gemm"], \
            f"{label}: A's Dequantize staged by the packing launch, no im2col pass: {names}"
        assert [s.name for s in plan.scratch] == ["packed_b", "a_f32"] and \
            plan.scratch[1].nbytes == 4 * math.prod(main.inputs[0].shape or ()), \
            f"{label}: A staged as dense f32 of the source's size: {plan.scratch}"


def test_tiles_fit_the_device() -> None:
    """A GPU-like device gets 64 x 64 tiles of 4 x 4 blocks; a small device (32 work-items,
    2 KiB of local memory) gets tiles within its limits; a thin product gets a thin tile."""
    base = first_info()
    big = dataclasses.replace(base, max_work_group_size=1024, max_work_item_sizes=(1024,) * 3,
                              local_mem_size=65536)
    tiles = choose_tiles(BuildContext.for_device(big), 1000, 1000, 1000)
    assert (tiles.tm, tiles.tn, tiles.rm, tiles.rn, tiles.tk) == (64, 64, 4, 4, 16), \
        f"large device, large product: {tiles}"
    small = dataclasses.replace(base, max_work_group_size=32, max_work_item_sizes=(32, 8, 1),
                                local_mem_size=2048)
    tiles = choose_tiles(BuildContext.for_device(small), 1000, 1000, 1000)
    assert tiles.tx * tiles.ty <= 32 and tiles.ty <= 8 and tiles.local_bytes <= 1024, \
        f"small device: {tiles} exceeds 32 work-items or half of 2 KiB"
    thin = choose_tiles(BuildContext.for_device(big), 1, 500, 64)
    assert thin.tm == 1 and thin.tn == 64, f"a 1-row product gets a 1-row tile: {thin}"


def _geometry(graph: Graph) -> object:
    op = graph.finalize().ops[0]
    return geometry_of(op, KernelArgs(Preamble(TypePolicy())))


def test_register_blocks_fit_the_device() -> None:
    """CPU-like devices (local memory not dedicated) get the register-blocked form with W =
    their native width capped at 8 (16-wide types abort PoCL 3.0 on AVX-512 CPUs), floored at
    4; A is read in runs for MatMul (6 x 2 block) and plain convolutions (4 x 2: each row
    also keeps a window offset and a padding flag), packed where an op is folded into a
    convolution's loads, element by element into a MatMul's; tuned blocks and A mode replace
    the defaults; GPU-like devices get tiles."""
    base = first_info()
    cpu = dataclasses.replace(base, local_mem_dedicated=False, native_vector_width=16)
    ctx = BuildContext.for_device(cpu)
    assert register_blocked(ctx) and not register_blocked(
        BuildContext.for_device(dataclasses.replace(cpu, local_mem_dedicated=True))), \
        "the form follows CL_DEVICE_LOCAL_MEM_TYPE"
    mm = _geometry(Graph([Op(0, "MatMul", inputs=(_t(0, (70, 40)), _t(1, (40, 130))),
                             outputs=(_t(3, None),))]))
    conv = _geometry(Graph([_conv("Convolution", (1, 6, 9, 8), (4, 6, 3, 3),
                                  pads_begin=[1, 1], pads_end=[1, 1], data_format="NCX",
                                  weights_format="OIX")]))

    def tiles(c: BuildContext, geo: object, folded: bool = False) -> tuple[object, ...]:
        t = choose_register_tiles(c, geo, folded)  # type: ignore[arg-type]
        return t.rm, t.nv, t.width, t.a_mode

    assert tiles(ctx, mm) == (6, 2, 8, "run"), "native width 16: 6 x 2 float8, A in runs"
    narrow = BuildContext.for_device(dataclasses.replace(cpu, native_vector_width=4))
    assert tiles(narrow, mm)[2] == 4, "native width 4: float4"
    assert tiles(ctx, conv) == (4, 2, 8, "run"), "convolution windows in runs, 4 x 2"
    assert tiles(ctx, conv, True)[::3] == (6, "packed"), \
        "with a Dequantize folded into A, the window is materialised first"
    assert tiles(ctx, mm, True)[3] == "element", \
        "a folded MatMul operand is read element by element in place"
    tuned = BuildContext(ctx.device, ctx.policy, None,
                         {"gemm": {"block": [4, 3], "window_block": [3, 2]}})
    assert tiles(tuned, mm) == (4, 3, 8, "run") and tiles(tuned, conv) == (3, 2, 8, "run"), \
        "tuned blocks per class"
    packed = BuildContext(ctx.device, ctx.policy, None, {"gemm": {"a_mode": "packed"}})
    assert tiles(packed, conv) == (6, 2, 8, "packed"), "a tuned A mode (packed: plain block)"
    assert set(A_MODES) == {"run", "packed", "element"}, f"modes {A_MODES}"


BACKWARDS: list[tuple[str, tuple[int, ...], tuple[int, ...], dict[str, AttrValue]]] = [
    ("NCX OIX strided padded 2 groups", (2, 4, 7, 6), (6, 2, 3, 3),
     dict(strides=[2, 1], pads_begin=[1, 1], pads_end=[1, 0], groups=2, data_format="NCX",
          weights_format="OIX")),
    ("NXC XIO dilated", (1, 9, 8, 3), (2, 2, 3, 5),
     dict(dilations=[2, 3], data_format="NXC", weights_format="XIO")),
]


@pytest.mark.parametrize("form", FORMS)
@pytest.mark.parametrize("label,src,wshape,attrs", BACKWARDS, ids=[c[0] for c in BACKWARDS])
@pytest.mark.parametrize("with_bias", [False, True])
def test_convolution_backward_weights_and_bias_backward(
        label: str, src: tuple[int, ...], wshape: tuple[int, ...],
        attrs: dict[str, AttrValue], with_bias: bool, form: str) -> None:
    """The weight gradient as an implicit GEMM; with BiasAddBackward of diff_weights (the
    training pattern as written), a second kernel reduces it per channel."""
    forward = Graph([_conv("Convolution", src, wshape, **attrs)]).finalize()
    dy = forward.ops[0].outputs[0].shape
    nsp = len(src) - 2
    full: dict[str, AttrValue] = {"strides": [1] * nsp, "pads_begin": [0] * nsp,
                                  "pads_end": [0] * nsp, "dilations": [1] * nsp, **attrs,
                                  "weights_shape": list(wshape)}
    ops = [Op(0, "ConvolutionBackwardWeights", inputs=(_t(0, src), _t(1, dy)),
              outputs=(_t(2, None),), attrs=full)]
    if with_bias:
        ops.append(Op(1, "BiasAddBackward", inputs=(_t(2, None),), outputs=(_t(3, None),),
                      attrs={"data_format": "NCX"}))
    _run(Graph(ops), f"ConvolutionBackwardWeights {label} (+ BiasAddBackward: {with_bias})",
         kernels=1 + with_bias, form=form)
