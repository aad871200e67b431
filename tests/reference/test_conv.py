"""Convolution and ConvolutionBackwardWeights against PyTorch (float64 oracle) over random
shapes and attributes, plus the hand-computed cases of docs/semantics.md (auto_pad, groups,
exactness of integer data) and the typed errors on contradicting inputs."""

from __future__ import annotations

import math
from typing import Any

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from testkit.reference import (
    D,
    assert_dot_bound,
    auto_pads,
    call,
    f32,
    from_ncx,
    need_torch,
    op_fn,
    run_one,
    to_ncx,
)

from fusionspec.reference.errors import OpInputError
from fusionspec.spec.types import Array


def oix_to(w: Array, fmt: str) -> Array:
    """OIX = (O, I, K...) weights in `fmt` (OIX or XIO = (K..., I, O))."""
    return w if fmt == "OIX" else np.ascontiguousarray(np.moveaxis(w, (0, 1), (-1, -2)))


@st.composite
def conv_cases(draw: st.DrawFn) -> dict[str, Any]:
    nsp = draw(st.integers(1, 3))
    depthwise = draw(st.booleans())
    groups = draw(st.integers(1, 4)) if depthwise else draw(st.sampled_from([1, 1, 2, 3]))
    icg = 1 if depthwise else draw(st.integers(1, 3))
    ocg = draw(st.integers(1, 3))
    kmax = 2 if nsp == 3 else 3
    kernel = [draw(st.integers(1, kmax)) for _ in range(nsp)]
    strides = [draw(st.integers(1, 3)) for _ in range(nsp)]
    dil = [draw(st.integers(1, 3)) for _ in range(nsp)]
    auto_pad = draw(st.sampled_from(["None", "None", "VALID", "SAME_UPPER", "SAME_LOWER"]))
    pb = [draw(st.integers(0, 2)) for _ in range(nsp)]
    pe = [draw(st.integers(0, 2)) for _ in range(nsp)]
    spatial = []
    for i in range(nsp):
        eff = (kernel[i] - 1) * dil[i] + 1
        low = max(1, eff - pb[i] - pe[i]) if auto_pad == "None" else eff
        spatial.append(draw(st.integers(low, low + (3 if nsp == 3 else 6))))
    return dict(nsp=nsp, groups=groups, ic=icg * groups, oc=ocg * groups, kernel=kernel,
                strides=strides, dilations=dil, auto_pad=auto_pad, pads_begin=pb,
                pads_end=pe, spatial=spatial, batch=draw(st.integers(1, 2)),
                data_format=draw(st.sampled_from(["NCX", "NXC"])),
                weights_format=draw(st.sampled_from(["OIX", "XIO"])),
                bias=draw(st.booleans()), seed=draw(st.integers(0, 2**31 - 1)))


def torch_padded(torch: Any, x: Array, c: dict[str, Any]) -> tuple[Any, list[int]]:
    """NCX float64 torch tensor of `x`, zero-padded per the (auto) pads; and those pads."""
    pads: list[int] = []
    begins = []
    for i in range(c["nsp"]):
        b, e = auto_pads(c["auto_pad"], c["spatial"][i], c["kernel"][i], c["strides"][i],
                         c["dilations"][i], c["pads_begin"][i], c["pads_end"][i])
        pads = [b, e, *pads]  # F.pad lists the last dim first
        begins.append(b)
    return torch.nn.functional.pad(torch.from_numpy(x).double(), pads), begins


def conv_nd(torch: Any, nsp: int) -> Any:
    f = torch.nn.functional
    return {1: f.conv1d, 2: f.conv2d, 3: f.conv3d}[nsp]


def attrs_of(c: dict[str, Any]) -> dict[str, Any]:
    return dict(strides=c["strides"], pads_begin=c["pads_begin"], pads_end=c["pads_end"],
                dilations=c["dilations"], auto_pad=c["auto_pad"], groups=c["groups"],
                data_format=c["data_format"], weights_format=c["weights_format"])


@settings(max_examples=45)
@given(conv_cases())
def test_convolution_matches_torch(c: dict[str, Any]) -> None:
    torch = need_torch()
    rng = np.random.default_rng(c["seed"])
    x_ncx = rng.standard_normal((c["batch"], c["ic"], *c["spatial"])).astype(np.float32)
    w_oix = rng.standard_normal((c["oc"], c["ic"] // c["groups"], *c["kernel"])
                                ).astype(np.float32)
    bias = rng.standard_normal(c["oc"]).astype(np.float32) if c["bias"] else None
    xt, _ = torch_padded(torch, x_ncx, c)
    conv = conv_nd(torch, c["nsp"])
    kw = dict(stride=c["strides"], dilation=c["dilations"], groups=c["groups"])
    bt = None if bias is None else torch.from_numpy(bias).double()
    want = conv(xt, torch.from_numpy(w_oix).double(), bt, **kw).numpy()
    scale = conv(xt.abs(), torch.from_numpy(np.abs(w_oix)).double(),
                 None if bt is None else bt.abs(), **kw).numpy()
    args = [from_ncx(x_ncx, c["data_format"]), oix_to(w_oix, c["weights_format"])]
    got = call("Convolution", *args, *([bias] if bias is not None else []), **attrs_of(c))
    terms = (c["ic"] // c["groups"]) * math.prod(c["kernel"])
    assert_dot_bound(to_ncx(got, c["data_format"]), want, scale, terms, f"Convolution {c}")


@settings(max_examples=35)
@given(conv_cases(), st.booleans())
def test_backward_weights_matches_torch(c: dict[str, Any], shape_as_input: bool) -> None:
    torch = need_torch()
    rng = np.random.default_rng(c["seed"])
    x_ncx = rng.standard_normal((c["batch"], c["ic"], *c["spatial"])).astype(np.float32)
    wshape_oix = (c["oc"], c["ic"] // c["groups"], *c["kernel"])
    xt, _ = torch_padded(torch, x_ncx, c)
    conv = conv_nd(torch, c["nsp"])
    kw = dict(stride=c["strides"], dilation=c["dilations"], groups=c["groups"])
    out_shape = conv(xt, torch.zeros(wshape_oix, dtype=torch.float64), **kw).shape
    dy_ncx = rng.standard_normal(tuple(out_shape)).astype(np.float32)

    def grad(x: Any, dy: Array) -> Array:
        w = torch.zeros(wshape_oix, dtype=torch.float64, requires_grad=True)
        conv(x, w, **kw).backward(torch.from_numpy(dy).double())
        return np.asarray(w.grad.numpy())

    want, scale = grad(xt, dy_ncx), grad(xt.abs(), np.abs(dy_ncx))
    wshape = oix_to(np.empty(wshape_oix), c["weights_format"]).shape
    args = [from_ncx(x_ncx, c["data_format"]), from_ncx(dy_ncx, c["data_format"])]
    attrs = attrs_of(c)
    if shape_as_input:
        args.append(np.asarray(wshape, dtype=np.int32))
    else:
        attrs["weights_shape"] = list(wshape)
    got = call("ConvolutionBackwardWeights", *args, **attrs)
    want_fmt = oix_to(want, c["weights_format"])
    terms = c["batch"] * math.prod(out_shape[2:])
    assert_dot_bound(got, want_fmt, oix_to(scale, c["weights_format"]), terms,
                     f"ConvolutionBackwardWeights {c}")


# -- hand-computed cases (docs/semantics.md, Convolution and ConvTranspose) ----------------

@pytest.mark.parametrize(("auto_pad", "want"), [("SAME_UPPER", [21, 32, 43, 4]),
                                                ("SAME_LOWER", [10, 21, 32, 43])])
def test_auto_pad_k2_example(auto_pad: str, want: list[float]) -> None:
    got = call("Convolution", f32([[[1, 2, 3, 4]]]), f32([[[1, 10]]]), strides=[1],
               pads_begin=[0], pads_end=[0], dilations=[1], auto_pad=auto_pad,
               data_format="NCX", weights_format="OIX")
    assert got.tolist() == [[want]], \
        f"{auto_pad} k=2 conv gives {got.tolist()}, docs/semantics.md says {want}"


def test_auto_pad_overrides_explicit_pads() -> None:
    got = call("Convolution", f32([[[1, 2, 3, 4]]]), f32([[[1, 10]]]), strides=[1],
               pads_begin=[5], pads_end=[5], dilations=[1], auto_pad="VALID",
               data_format="NCX", weights_format="OIX")
    assert got.tolist() == [[[21, 32, 43]]], f"VALID must ignore pads 5/5, got {got.tolist()}"


def test_default_layouts_are_nxc_and_xio() -> None:
    # src (1, 3, 2) NXC: 3 positions, 2 channels; weights XIO (1, 2, 1): k=1, ic=2, oc=1.
    got = call("Convolution", f32([[[1, 2], [3, 4], [5, 6]]]), f32([[[1], [100]]]),
               strides=[1], pads_begin=[0], pads_end=[0], dilations=[1])
    assert got.tolist() == [[[201], [403], [605]]], f"NXC/XIO default conv gave {got.tolist()}"


def test_groups_use_their_own_channels() -> None:
    # 2 groups, 1 channel each, OIX (2, 1, 1): out channel g = w[g] * in channel g.
    got = call("Convolution", f32([[[1, 2], [10, 20]]]), f32([[[3]], [[5]]]), strides=[1],
               pads_begin=[0], pads_end=[0], dilations=[1], groups=2, data_format="NCX",
               weights_format="OIX")
    assert got.tolist() == [[[3, 6], [50, 100]]], f"grouped conv gave {got.tolist()}"


def test_dilation_one_means_none_and_two_skips_one() -> None:
    x, w = f32([[[1, 2, 3, 4, 5]]]), f32([[[1, 10]]])
    kw = dict(strides=[1], pads_begin=[0], pads_end=[0], data_format="NCX",
              weights_format="OIX")
    plain = call("Convolution", x, w, dilations=[1], **kw)
    dilated = call("Convolution", x, w, dilations=[2], **kw)
    assert plain.tolist() == [[[21, 32, 43, 54]]], f"dilations=1 gave {plain.tolist()}"
    assert dilated.tolist() == [[[31, 42, 53]]], f"dilations=2 gave {dilated.tolist()}"


def test_integer_data_is_exact_beyond_f32_running_sums() -> None:
    # u8-range activations times s8-range weights, 1152 products per output: a float32 running
    # sum passes 2^24 and rounds; the reference must give the exact integer (rounded once).
    x = np.full((1, 128, 3, 3), 255, dtype=np.float32)
    w = np.full((2, 128, 3, 3), 127, dtype=np.float32)
    w[1, :64] = -128
    got = call("Convolution", x, w, strides=[1, 1], pads_begin=[0, 0], pads_end=[0, 0],
               dilations=[1, 1], data_format="NCX", weights_format="OIX")
    exact = [1152 * 255 * 127, 576 * 255 * 127 - 576 * 255 * 128]
    assert got.reshape(-1).tolist() == [float(np.float32(v)) for v in exact], (
        f"integer conv gave {got.reshape(-1).tolist()}, exact sums are {exact}")


def test_bias_is_added_per_output_channel() -> None:
    got = call("Convolution", f32([[[1, 2]]]), f32([[[1]], [[2]]]), f32([100, 1000]),
               strides=[1], pads_begin=[0], pads_end=[0], dilations=[1], data_format="NCX",
               weights_format="OIX")
    assert got.tolist() == [[[101, 102], [1002, 1004]]], f"conv + bias gave {got.tolist()}"


@pytest.mark.parametrize("data_format", ["NCX", "NXC"])
def test_row_chunks_give_the_same_sums(monkeypatch: pytest.MonkeyPatch, data_format: str
                                       ) -> None:
    from fusionspec.reference.ops import _layout

    rng = np.random.default_rng(1)
    x = rng.standard_normal((3, 4, 5, 7) if data_format == "NCX" else (3, 5, 7, 4))
    x = x.astype(np.float32)
    w = rng.standard_normal((3, 3, 2, 6)).astype(np.float32)  # XIO, 2 groups of 2 channels
    kw = dict(strides=[1, 2], pads_begin=[1, 0], pads_end=[1, 1], dilations=[1, 1], groups=2,
              data_format=data_format)
    dy = rng.standard_normal(call("Convolution", x, w, **kw).shape).astype(np.float32)
    bwd = dict(kw, weights_shape=list(w.shape))
    whole = call("Convolution", x, w, **kw)
    whole_dw = call("ConvolutionBackwardWeights", x, dy, **bwd)
    scale = call("Convolution", np.abs(x), np.abs(w), **kw).astype(np.float64)
    scale_dw = call("ConvolutionBackwardWeights", np.abs(x), np.abs(dy), **bwd)
    original = _layout.chunks

    def one_row(batch: int, rows: int, row_bytes: int, budget: int = 0) -> Any:
        return original(batch, rows, row_bytes, budget=row_bytes)

    monkeypatch.setattr("fusionspec.reference.ops.conv.chunks", one_row)
    rowwise = call("Convolution", x, w, **kw)
    rowwise_dw = call("ConvolutionBackwardWeights", x, dy, **bwd)
    # BLAS may order a float32 sum differently for another matrix size, so the chunked result
    # is held to the dot-product bound around the unchunked one, not to equal bits.
    assert_dot_bound(rowwise, whole.astype(np.float64), 2 * scale, 3 * 3 * 2,
                     f"Convolution {data_format} computed one output row at a time")
    assert_dot_bound(rowwise_dw, whole_dw.astype(np.float64), 2 * scale_dw.astype(np.float64),
                     dy.size // 6, f"ConvolutionBackwardWeights {data_format} row by row")


def test_backward_weights_hand_example() -> None:
    # diff_w[0, 0, k] = sum_o dy[o] * x[o + k]: x = [1, 2, 3], dy = [1, 10], k = 2.
    got = call("ConvolutionBackwardWeights", f32([[[1, 2, 3]]]), f32([[[1, 10]]]),
               strides=[1], pads_begin=[0], pads_end=[0], dilations=[1], data_format="NCX",
               weights_format="OIX", weights_shape=[1, 1, 2])
    assert got.tolist() == [[[21, 32]]], f"diff_weights gave {got.tolist()}, expected 21, 32"


def test_backward_weights_without_a_shape_is_a_typed_error() -> None:
    fn = op_fn("ConvolutionBackwardWeights")
    with pytest.raises(OpInputError, match="weights_shape"):
        fn(f32([[[1, 2, 3]]]), f32([[[1, 10]]]), strides=(1,), pads_begin=(0,),
           pads_end=(0,), dilations=(1,), data_format="NCX", weights_format="OIX")


def test_backward_weights_wrong_diff_dst_is_a_typed_error() -> None:
    fn = op_fn("ConvolutionBackwardWeights")
    with pytest.raises(OpInputError, match="diff_dst"):
        fn(f32([[[1, 2, 3]]]), f32([[[1, 10, 100]]]), strides=(1,), pads_begin=(0,),
           pads_end=(0,), dilations=(1,), data_format="NCX", weights_format="OIX",
           weights_shape=(1, 1, 2))


def test_channel_mismatch_is_a_typed_error() -> None:
    fn = op_fn("Convolution")
    with pytest.raises(OpInputError, match="channels"):
        fn(f32([[[1, 2, 3]]]), f32([[[1], [2]]]), strides=(1,), pads_begin=(0,),
           pads_end=(0,), dilations=(1,), data_format="NCX", weights_format="OIX")


def test_runs_through_the_executor() -> None:
    (got,) = run_one("Convolution", [f32([[[1, 2, 3, 4]]]), f32([[[1, 10]]])], [D.f32],
                     strides=[1], pads_begin=[0], pads_end=[0], dilations=[1],
                     auto_pad="SAME_LOWER", data_format="NCX", weights_format="OIX")
    assert got.tolist() == [[[10, 21, 32, 43]]], f"executor conv gave {got.tolist()}"
