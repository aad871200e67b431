"""ConvTranspose against PyTorch (float64 oracle) over random shapes and attributes (IOX and
XOI weights, NCX and NXC data, groups, strides, dilations, asymmetric pads, auto_pad,
output_padding, bias), plus the worked examples of docs/semantics.md."""

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


def iox_to(w: Array, fmt: str) -> Array:
    """IOX = (IC, OC/G, K...) weights (torch's conv_transpose layout) in `fmt`; XOI is
    (K..., OC/G, IC)."""
    return w if fmt == "IOX" else np.ascontiguousarray(np.moveaxis(w, (0, 1), (-1, -2)))


@st.composite
def deconv_cases(draw: st.DrawFn) -> dict[str, Any]:
    nsp = draw(st.integers(1, 3))
    groups = draw(st.sampled_from([1, 1, 2, 3]))
    icg, ocg = draw(st.integers(1, 3)), draw(st.integers(1, 3))
    kernel = [draw(st.integers(1, 2 if nsp == 3 else 3)) for _ in range(nsp)]
    strides = [draw(st.integers(1, 3)) for _ in range(nsp)]
    dil = [draw(st.integers(1, 2)) for _ in range(nsp)]
    spatial = [draw(st.integers(1, 3 if nsp == 3 else 5)) for _ in range(nsp)]
    auto_pad = draw(st.sampled_from(["None", "None", "VALID", "SAME_UPPER", "SAME_LOWER"]))
    out_pad = [draw(st.integers(0, 2)) for _ in range(nsp)]
    pb, pe = [], []
    for i in range(nsp):
        full = strides[i] * (spatial[i] - 1) + (kernel[i] - 1) * dil[i] + 1 + out_pad[i]
        b = draw(st.integers(0, min(2, full - 1)))
        pb.append(b)
        pe.append(draw(st.integers(0, min(2, full - 1 - b))))  # keeps the output non-empty
    return dict(nsp=nsp, groups=groups, ic=icg * groups, ocg=ocg, kernel=kernel,
                strides=strides, dilations=dil, spatial=spatial, auto_pad=auto_pad,
                pads_begin=pb, pads_end=pe, output_padding=out_pad,
                batch=draw(st.integers(1, 2)), data_format=draw(st.sampled_from(["NCX", "NXC"])),
                weights_format=draw(st.sampled_from(["IOX", "XOI"])), bias=draw(st.booleans()),
                seed=draw(st.integers(0, 2**31 - 1)))


def torch_deconv(torch: Any, x: Array, w_iox: Array, c: dict[str, Any]) -> Array:
    """Transposed conv with torch and no padding, then oneDNN's asymmetric crop: the full
    result gets output_padding zeros at the end and loses pads_begin/pads_end."""
    f = torch.nn.functional
    fn = {1: f.conv_transpose1d, 2: f.conv_transpose2d, 3: f.conv_transpose3d}[c["nsp"]]
    full = fn(torch.from_numpy(x).double(), torch.from_numpy(w_iox).double(),
              stride=c["strides"], dilation=c["dilations"], groups=c["groups"]).numpy()
    index: list[slice] = [slice(None), slice(None)]
    widths = [(0, 0), (0, 0)]
    for i in range(c["nsp"]):
        b, e = auto_pads(c["auto_pad"], c["spatial"][i], c["kernel"][i], c["strides"][i],
                         c["dilations"][i], c["pads_begin"][i], c["pads_end"][i],
                         transposed=True)
        size = full.shape[2 + i] + c["output_padding"][i]
        widths.append((0, c["output_padding"][i]))
        index.append(slice(b, size - e))
    return np.asarray(np.pad(full, widths)[tuple(index)])


@settings(max_examples=45)
@given(deconv_cases())
def test_conv_transpose_matches_torch(c: dict[str, Any]) -> None:
    torch = need_torch()
    rng = np.random.default_rng(c["seed"])
    x = rng.standard_normal((c["batch"], c["ic"], *c["spatial"])).astype(np.float32)
    w = rng.standard_normal((c["ic"], c["ocg"], *c["kernel"])).astype(np.float32)
    oc = c["ocg"] * c["groups"]
    bias = rng.standard_normal(oc).astype(np.float32) if c["bias"] else None
    want = torch_deconv(torch, x, w, c)
    scale = torch_deconv(torch, np.abs(x), np.abs(w), c)
    if bias is not None:
        shape = (1, oc, *(1,) * c["nsp"])
        want, scale = want + bias.reshape(shape), scale + np.abs(bias).reshape(shape)
    attrs = dict(strides=c["strides"], pads_begin=c["pads_begin"], pads_end=c["pads_end"],
                 dilations=c["dilations"], auto_pad=c["auto_pad"], groups=c["groups"],
                 data_format=c["data_format"], weights_format=c["weights_format"],
                 output_padding=c["output_padding"])
    args = [from_ncx(x, c["data_format"]), iox_to(w, c["weights_format"])]
    got = call("ConvTranspose", *args, *([bias] if bias is not None else []), **attrs)
    terms = (c["ic"] // c["groups"]) * math.prod(c["kernel"])
    assert_dot_bound(to_ncx(got, c["data_format"]), want, scale, terms, f"ConvTranspose {c}")


def test_groups_use_their_own_input_channels_and_weight_rows() -> None:
    # docs/semantics.md, Convolution and ConvTranspose: G=2, IOX (2, 2, 1), x = [1, 100],
    # w = [1, 2, 3, 4] -> [1, 2, 300, 400].
    got = call("ConvTranspose", f32([1, 100]).reshape(1, 2, 1), f32([1, 2, 3, 4]).reshape(2, 2, 1),
               strides=[1], pads_begin=[0], pads_end=[0], dilations=[1], groups=2,
               data_format="NCX", weights_format="IOX")
    assert got.reshape(-1).tolist() == [1, 2, 300, 400], f"grouped IOX gave {got.tolist()}"


def test_output_padding_adds_trailing_positions() -> None:
    # docs/semantics.md, Convolution and ConvTranspose: in = [1, 2], w = [1, 10], S = 2,
    # output_padding 1 -> [1, 10, 2, 20, 0].
    got = call("ConvTranspose", f32([[[1, 2]]]), f32([[[1, 10]]]), strides=[2], pads_begin=[0],
               pads_end=[0], dilations=[1], output_padding=[1], data_format="NCX",
               weights_format="IOX")
    assert got.tolist() == [[[1, 10, 2, 20, 0]]], f"output_padding gave {got.tolist()}"


def test_pads_crop_the_full_result() -> None:
    # Full result [1, 10, 2, 20]; pads_begin 1 and pads_end 2 keep [10].
    got = call("ConvTranspose", f32([[[1, 2]]]), f32([[[1, 10]]]), strides=[2], pads_begin=[1],
               pads_end=[2], dilations=[1], data_format="NCX", weights_format="IOX")
    assert got.tolist() == [[[10]]], f"cropped transposed conv gave {got.tolist()}"


def test_same_upper_uses_the_transposed_rule() -> None:
    # k=3, s=2: total = 3 - 2 = 1 whatever the input size; SAME_UPPER crops 0 in front, 1 behind.
    got = call("ConvTranspose", f32([[[1, 2, 3]]]), f32([[[1, 10, 100]]]), strides=[2],
               pads_begin=[0], pads_end=[0], dilations=[1], auto_pad="SAME_UPPER",
               data_format="NCX", weights_format="IOX")
    full = [1, 10, 102, 20, 203, 30, 300]
    assert got.tolist() == [[full[:6]]], f"SAME_UPPER transposed conv gave {got.tolist()}"


def test_default_layouts_are_nxc_and_xoi() -> None:
    # src NXC (1, 1, 2): two channels at one position; XOI (1, 1, 2): k=1, OC/G=1, IC=2.
    got = call("ConvTranspose", f32([[[1, 100]]]), f32([[[3, 5]]]), strides=[1],
               pads_begin=[0], pads_end=[0], dilations=[1])
    assert got.tolist() == [[[503]]], f"NXC/XOI transposed conv gave {got.tolist()}"


@pytest.mark.parametrize("data_format", ["NCX", "NXC"])
def test_batch_blocks_and_row_chunks_give_the_same_sums(monkeypatch: pytest.MonkeyPatch,
                                                        data_format: str) -> None:
    from fusionspec.reference.ops import _layout

    rng = np.random.default_rng(2)
    x = rng.standard_normal((3, 4, 5, 4)).astype(np.float32)
    w = rng.standard_normal((2, 3, 3, 4)).astype(np.float32)  # XOI: 2 groups, OC/G = 3
    b = rng.standard_normal(6).astype(np.float32)
    kw = dict(strides=[2, 1], pads_begin=[1, 0], pads_end=[0, 1], dilations=[1, 2], groups=2,
              data_format=data_format, output_padding=[1, 0])
    whole = call("ConvTranspose", x, w, b, **kw)
    scale = call("ConvTranspose", np.abs(x), np.abs(w), np.abs(b), **kw).astype(np.float64)
    original = _layout.chunks

    def one_row(batch: int, rows: int, row_bytes: int, budget: int = 0) -> Any:
        return original(batch, rows, row_bytes, budget=row_bytes)

    monkeypatch.setattr("fusionspec.reference.ops.conv.chunks", one_row)
    monkeypatch.setattr("fusionspec.reference.ops.conv.CHUNK_BYTES", 1)  # one item a canvas
    chunked = call("ConvTranspose", x, w, b, **kw)
    assert_dot_bound(chunked, whole.astype(np.float64), 2 * scale, 2 * 2 * 2,
                     f"ConvTranspose {data_format} by batch item and input row")


def test_channel_mismatch_is_a_typed_error() -> None:
    fn = op_fn("ConvTranspose")
    with pytest.raises(OpInputError, match="channels"):
        fn(f32([[[1, 2]]]), f32([[[1]], [[2]]]), strides=(1,), pads_begin=(0,), pads_end=(0,),
           dilations=(1,), data_format="NCX", weights_format="IOX")


def test_runs_through_the_executor_with_bias() -> None:
    (got,) = run_one("ConvTranspose", [f32([[[1, 2]]]), f32([[[1, 10]]]), f32([1000])],
                     [D.f32], strides=[2], pads_begin=[0], pads_end=[0], dilations=[1],
                     output_padding=[1], data_format="NCX", weights_format="IOX")
    assert got.tolist() == [[[1001, 1010, 1002, 1020, 1000]]], (
        f"executor ConvTranspose + bias gave {got.tolist()}")
