"""AvgPool and MaxPool against PyTorch (float64) over random shapes and attributes, with the
oneDNN rules rebuilt around torch's pooling: asymmetric pads by explicit padding, exclude_pad by
dividing a window sum by a window count of ones, ceil rounding by padding the end as far as the
last window reaches (torch's own ceil mode drops a window that starts in the padding). Plus the
worked examples of docs/semantics.md and the all-padding window corner cases."""

from __future__ import annotations

import math
from typing import Any

import ml_dtypes
import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from testkit.reference import D, auto_pads, call, f32, from_ncx, need_torch, run_one, to_ncx

from fusionspec.spec.types import Array

LOWEST_F32 = float(np.finfo(np.float32).min)


@st.composite
def pool_cases(draw: st.DrawFn) -> dict[str, Any]:
    nsp = draw(st.integers(1, 3))
    kernel = [draw(st.integers(1, 2 if nsp == 3 else 3)) for _ in range(nsp)]
    strides = [draw(st.integers(1, 3)) for _ in range(nsp)]
    dil = [draw(st.integers(1, 2)) for _ in range(nsp)]
    pb = [draw(st.integers(0, k - 1)) for k in kernel]
    pe = [draw(st.integers(0, k - 1)) for k in kernel]
    auto_pad = draw(st.sampled_from(["None", "None", "VALID", "SAME_UPPER", "SAME_LOWER"]))
    spatial = [(k - 1) * d + 1 + draw(st.integers(0, 3 if nsp == 3 else 6))
               for k, d in zip(kernel, dil)]
    return dict(nsp=nsp, kernel=kernel, strides=strides, dilations=dil, pads_begin=pb,
                pads_end=pe, auto_pad=auto_pad, spatial=spatial,
                shape=(draw(st.integers(1, 2)), draw(st.integers(1, 3)), *spatial),
                data_format=draw(st.sampled_from(["NCX", "NXC"])),
                rounding_type=draw(st.sampled_from(["floor", "ceil"])),
                seed=draw(st.integers(0, 2**31 - 1)))


def geometry(c: dict[str, Any], dilations: list[int]) -> tuple[list[int], list[int], list[int]]:
    """(pads_begin, end padding reaching the last window, output size) per spatial dim."""
    begins, ends, outs = [], [], []
    for i in range(c["nsp"]):
        k, s, d, size = c["kernel"][i], c["strides"][i], dilations[i], c["spatial"][i]
        b, e = auto_pads(c["auto_pad"], size, k, s, d, c["pads_begin"][i], c["pads_end"][i])
        span = size + b + e - ((k - 1) * d + 1)
        out = (-(-span // s) if c["rounding_type"] == "ceil" else span // s) + 1
        begins.append(b)
        ends.append((out - 1) * s + (k - 1) * d + 1 - size - b)
        outs.append(out)
    return begins, ends, outs


def torch_pool(torch: Any, x: Array, c: dict[str, Any], dilations: list[int], value: float,
               fn: str) -> Array:
    """Pad explicitly (the end possibly negative: a crop), then a padding-free torch pool."""
    begins, ends, _ = geometry(c, dilations)
    t = torch.from_numpy(x).double()
    for i in range(c["nsp"]):
        t = t.narrow(2 + i, 0, t.shape[2 + i] + min(ends[i], 0))
    pads: list[int] = []
    for b, e in zip(begins, ends):
        pads = [b, max(e, 0), *pads]
    t = torch.nn.functional.pad(t, pads, value=value)
    f = torch.nn.functional
    if fn == "max":
        pool = {1: f.max_pool1d, 2: f.max_pool2d, 3: f.max_pool3d}[c["nsp"]]
        return np.asarray(pool(t, c["kernel"], c["strides"], dilation=dilations).numpy())
    pool = {1: f.avg_pool1d, 2: f.avg_pool2d, 3: f.avg_pool3d}[c["nsp"]]
    return np.asarray(pool(t, c["kernel"], c["strides"]).numpy() * math.prod(c["kernel"]))


def pool_attrs(c: dict[str, Any]) -> dict[str, Any]:
    return dict(strides=c["strides"], pads_begin=c["pads_begin"], pads_end=c["pads_end"],
                kernel=c["kernel"], data_format=c["data_format"], auto_pad=c["auto_pad"],
                rounding_type=c["rounding_type"])


@settings(max_examples=50)
@given(pool_cases(), st.booleans())
def test_avgpool_matches_torch(c: dict[str, Any], exclude_pad: bool) -> None:
    torch = need_torch()
    x = np.random.default_rng(c["seed"]).standard_normal(c["shape"]).astype(np.float32)
    ones = [1] * c["nsp"]
    total = torch_pool(torch, x, c, ones, 0.0, "avg")
    if exclude_pad or c["rounding_type"] == "ceil":  # ceil always excludes the padding
        divisor = torch_pool(torch, np.ones_like(x), c, ones, 0.0, "avg")
    else:
        divisor = np.asarray(float(math.prod(c["kernel"])))
    with np.errstate(invalid="ignore", divide="ignore"):
        want = total / divisor
    got = call("AvgPool", from_ncx(x, c["data_format"]), exclude_pad=exclude_pad,
               **pool_attrs(c))
    got = to_ncx(got, c["data_format"])
    assert got.shape == want.shape, f"AvgPool shape {got.shape}, expected {want.shape} [{c}]"
    assert got.dtype == np.float32, f"AvgPool dtype {got.dtype} [{c}]"
    # Both sides sum a few float32 values exactly enough that the mean rounds once.
    scale = torch_pool(torch, np.abs(x), c, ones, 0.0, "avg") / np.maximum(divisor, 1)
    ok = np.isclose(got, want, rtol=0, atol=1e-6 * np.nanmax(scale, initial=1.0),
                    equal_nan=True)
    assert ok.all(), f"AvgPool off at {int((~ok).sum())} elements [{c}]"


@settings(max_examples=50)
@given(pool_cases())
def test_maxpool_matches_torch(c: dict[str, Any]) -> None:
    torch = need_torch()
    x = np.random.default_rng(c["seed"]).standard_normal(c["shape"]).astype(np.float32)
    want = torch_pool(torch, x, c, c["dilations"], -math.inf, "max")
    # A window of padding only is -inf for torch; oneDNN starts from the lowest finite value.
    want = np.where(np.isneginf(want), LOWEST_F32, want)
    got = call("MaxPool", from_ncx(x, c["data_format"]), dilations=c["dilations"],
               **pool_attrs(c))
    got = to_ncx(got, c["data_format"])
    assert got.shape == want.shape, f"MaxPool shape {got.shape}, expected {want.shape} [{c}]"
    assert np.array_equal(got, want.astype(np.float32)), f"MaxPool values differ [{c}]"


# -- hand-computed cases (docs/semantics.md, Pooling) --------------------------------------

AVG_K3_S2_P1 = dict(strides=[2], pads_begin=[1], pads_end=[1], kernel=[3], data_format="NCX")


@pytest.mark.parametrize(("exclude_pad", "want"), [(False, [1, 3]), (True, [1.5, 3])])
def test_avgpool_k3_s2_p1_example(exclude_pad: bool, want: list[float]) -> None:
    got = call("AvgPool", f32([[[1, 2, 3, 4]]]), exclude_pad=exclude_pad, **AVG_K3_S2_P1)
    assert got.reshape(-1).tolist() == want, (
        f"AvgPool k3 s2 p1 exclude_pad={exclude_pad} gave {got.tolist()}, "
        f"docs/semantics.md says {want}")


@pytest.mark.parametrize("exclude_pad", [False, True])
def test_avgpool_ceil_always_excludes_padding(exclude_pad: bool) -> None:
    # docs/semantics.md, Pooling: k2 s2 ceil on [1..5] gives [1.5, 3.5, 5].
    got = call("AvgPool", f32([[[1, 2, 3, 4, 5]]]), strides=[2], pads_begin=[0], pads_end=[0],
               kernel=[2], exclude_pad=exclude_pad, rounding_type="ceil", data_format="NCX")
    assert got.reshape(-1).tolist() == [1.5, 3.5, 5], (
        f"AvgPool ceil (exclude_pad={exclude_pad}) gave {got.tolist()}")


def test_avgpool_window_of_padding_only_is_nan() -> None:
    got = call("AvgPool", f32([[[4]]]), strides=[1], pads_begin=[2], pads_end=[0], kernel=[2],
               exclude_pad=True, data_format="NCX")
    assert np.isnan(got[0, 0, 0]) and got[0, 0, 1:].tolist() == [4], (
        f"exclude_pad window of padding only must be 0/0 = NaN, got {got.tolist()}")


def test_maxpool_padding_never_wins() -> None:
    got = call("MaxPool", f32([[[-5, -7, -1]]]), strides=[1], pads_begin=[1], pads_end=[1],
               kernel=[2], data_format="NCX")
    assert got.reshape(-1).tolist() == [-5, -5, -1, -1], f"MaxPool gave {got.tolist()}"


def test_maxpool_dilation_two_skips_one() -> None:
    got = call("MaxPool", f32([[[1, 9, 2, 8, 3]]]), strides=[1], pads_begin=[0], pads_end=[0],
               kernel=[2], dilations=[2], data_format="NCX")
    assert got.reshape(-1).tolist() == [2, 9, 3], f"dilated MaxPool gave {got.tolist()}"


def test_maxpool_window_of_padding_only_is_the_dst_lowest() -> None:
    x = f32([[[1, 2]]])
    kw = dict(strides=[1], pads_begin=[2], pads_end=[0], kernel=[2], data_format="NCX")
    (f32_out,) = run_one("MaxPool", [x], [D.f32], **kw)
    (bf16_out,) = run_one("MaxPool", [x.astype(ml_dtypes.bfloat16)], [D.bf16], **kw)
    assert float(f32_out[0, 0, 0]) == LOWEST_F32, f"f32 all-padding window: {f32_out.tolist()}"
    want = -float.fromhex("0x1.fep127")
    assert float(np.float32(bf16_out[0, 0, 0])) == want, (
        f"bf16 all-padding window gave {bf16_out.tolist()}, lowest bf16 is {want}")


def test_maxpool_nan_and_minus_inf_never_win() -> None:
    got = call("MaxPool", f32([[[math.nan, -math.inf, 3]]]), strides=[1], pads_begin=[0],
               pads_end=[0], kernel=[2], data_format="NCX")
    assert got.reshape(-1).tolist() == [LOWEST_F32, 3], (
        f"oneDNN's max starts at the lowest value and only '>' replaces it: {got.tolist()}")


def test_pools_keep_the_nxc_default() -> None:
    x = f32([[[1, 10], [2, 20], [3, 30]]])  # NXC: 3 positions, 2 channels
    kw = dict(strides=[1], pads_begin=[0], pads_end=[0], kernel=[2])
    avg = call("AvgPool", x, exclude_pad=False, **kw)
    mx = call("MaxPool", x, **kw)
    assert avg.tolist() == [[[1.5, 15], [2.5, 25]]], f"NXC AvgPool gave {avg.tolist()}"
    assert mx.tolist() == [[[2, 20], [3, 30]]], f"NXC MaxPool gave {mx.tolist()}"
