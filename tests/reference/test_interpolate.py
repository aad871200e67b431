"""Interpolate: linear modes against PyTorch (float64) for half_pixel and align_corners over
1-3 spatial dims; nearest against the index rule of docs/semantics.md computed by hand (torch's
"nearest" floors, oneDNN rounds half away from zero); output sizes from sizes, scales (an f32
product) and the optional sizes input; the worked examples of docs/semantics.md."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from testkit.reference import D, call, f32, from_ncx, need_torch, op_fn, run_one, to_ncx

from fusionspec.reference.errors import OpInputError
from fusionspec.spec.types import Array


@st.composite
def resize_cases(draw: st.DrawFn) -> dict[str, Any]:
    nsp = draw(st.integers(1, 3))
    top = 4 if nsp == 3 else 7
    spatial = [draw(st.integers(1, top)) for _ in range(nsp)]
    out = [draw(st.integers(1, 2 * top)) for _ in range(nsp)]
    return dict(nsp=nsp, spatial=spatial, out=out,
                shape=(draw(st.integers(1, 2)), draw(st.integers(1, 3)), *spatial),
                data_format=draw(st.sampled_from(["NCX", "NXC"])),
                ctm=draw(st.sampled_from(["half_pixel", "align_corners"])),
                seed=draw(st.integers(0, 2**31 - 1)))


@settings(max_examples=50)
@given(resize_cases(), st.sampled_from(["linear", "bilinear", "trilinear"]))
def test_linear_modes_match_torch(c: dict[str, Any], mode: str) -> None:
    torch = need_torch()
    x = np.random.default_rng(c["seed"]).standard_normal(c["shape"]).astype(np.float32)
    # Every non-nearest mode is separable linear over all spatial dims, whatever its name.
    torch_mode = {1: "linear", 2: "bilinear", 3: "trilinear"}[c["nsp"]]
    want = torch.nn.functional.interpolate(
        torch.from_numpy(x).double(), size=c["out"], mode=torch_mode,
        align_corners=c["ctm"] == "align_corners").numpy()
    got = call("Interpolate", from_ncx(x, c["data_format"]), mode=mode, sizes=c["out"],
               coordinate_transformation_mode=c["ctm"], data_format=c["data_format"])
    got = to_ncx(got, c["data_format"])
    assert got.shape == want.shape, f"Interpolate shape {got.shape}, want {want.shape} [{c}]"
    # oneDNN computes source coordinates and weights in float32, torch here in float64: the
    # weights differ by a few float32 ulps, scaled by the neighbours' difference.
    tol = 4e-6 * float(np.abs(x).max()) * c["nsp"]
    err = float(np.abs(got - want).max())
    assert err <= tol, f"Interpolate {mode} off by {err:.3g} > {tol:.3g} [{c}]"


def nearest_by_hand(x: Array, out: list[int], ctm: str) -> Array:
    """x[..., idx] per spatial axis (NCX) with idx = roundf(s), s in float32
    (docs/semantics.md, Interpolate)."""
    for axis, o in enumerate(out, start=2):
        size = x.shape[axis]
        pos = np.arange(o, dtype=np.float32)
        if ctm == "align_corners":
            s = (pos * np.float32(size - 1) / np.float32(o - 1) if o > 1
                 else np.zeros(1, dtype=np.float32))
        else:
            s = (pos + np.float32(0.5)) * np.float32(size) / np.float32(o) - np.float32(0.5)
        idx = [min(max(int(np.copysign(np.floor(abs(float(v)) + 0.5), v)), 0), size - 1)
               for v in s]
        x = np.take(x, idx, axis=axis)
    return x


@settings(max_examples=50)
@given(resize_cases())
def test_nearest_matches_the_index_rule(c: dict[str, Any]) -> None:
    x = np.random.default_rng(c["seed"]).standard_normal(c["shape"]).astype(np.float32)
    want = nearest_by_hand(x, c["out"], c["ctm"])
    got = call("Interpolate", from_ncx(x, c["data_format"]), mode="nearest", sizes=c["out"],
               coordinate_transformation_mode=c["ctm"], data_format=c["data_format"])
    assert np.array_equal(to_ncx(got, c["data_format"]), want), f"nearest differs [{c}]"


# -- hand-computed cases (docs/semantics.md, Interpolate) ----------------------------------

def test_nearest_rounds_half_away_from_zero() -> None:
    # docs/semantics.md, Interpolate: [10, 20] -> 3 gives [10, 20, 20] (s = 0.5 rounds up to 1).
    got = call("Interpolate", f32([[[10, 20]]]), mode="nearest", sizes=[3], data_format="NCX")
    assert got.tolist() == [[[10, 20, 20]]], f"nearest 2->3 gave {got.tolist()}"


def test_linear_example() -> None:
    # docs/semantics.md, Interpolate: [10, 20, 30, 40] -> 3 gives [11.667, 25, 38.333].
    got = call("Interpolate", f32([[[10, 20, 30, 40]]]), mode="linear", sizes=[3],
               data_format="NCX")
    want = [np.float32(35 / 3), 25, np.float32(115 / 3)]
    assert np.allclose(got.reshape(-1), want, rtol=1e-6, atol=0), (
        f"linear 4->3 gave {got.tolist()}, docs/semantics.md says {want}")


def test_linear_clamps_at_both_edges() -> None:
    # 2 -> 4: s = -0.25, 0.25, 0.75, 1.25; the ends clamp to x[0] and x[1].
    got = call("Interpolate", f32([[[0, 8]]]), mode="linear", sizes=[4], data_format="NCX")
    assert got.tolist() == [[[0, 2, 6, 8]]], f"linear 2->4 gave {got.tolist()}"


def test_bilinear_is_separable_over_both_axes() -> None:
    x = f32([[[[0, 4], [8, 12]]]])
    got = call("Interpolate", x, mode="bilinear", sizes=[1, 1], data_format="NCX")
    assert got.tolist() == [[[[6]]]], f"bilinear 2x2 -> 1x1 gave {got.tolist()}"


def test_align_corners_keeps_the_corners() -> None:
    got = call("Interpolate", f32([[[0, 9]]]), mode="linear", sizes=[4],
               coordinate_transformation_mode="align_corners", data_format="NCX")
    single = call("Interpolate", f32([[[5, 9]]]), mode="linear", sizes=[1],
                  coordinate_transformation_mode="align_corners", data_format="NCX")
    assert got.tolist() == [[[0, 3, 6, 9]]], f"align_corners 2->4 gave {got.tolist()}"
    assert single.tolist() == [[[5]]], f"align_corners to 1 must take x[0], got {single.tolist()}"


@pytest.mark.parametrize(("size", "scale", "out"), [(3, 1.5, 4), (10, 0.7, 7), (5, 0.5, 2)])
def test_scales_give_the_f32_floor_of_the_product(size: int, scale: float, out: int) -> None:
    # 3 x 1.5 -> 4 is verified; 10 x 0.7 is 7 in float32 (6.99999988 rounds to 7.0), 6 in f64.
    got = call("Interpolate", np.ones((1, 1, size), np.float32), mode="nearest",
               scales=[scale], data_format="NCX")
    assert got.shape == (1, 1, out), f"{size} x scale {scale} gave {got.shape[-1]}, want {out}"


def test_coordinates_use_sizes_not_the_scale() -> None:
    # 3 x 1.5 -> 4 outputs; the map uses in/out = 3/4, not 1/1.5.
    got = call("Interpolate", f32([[[0, 1, 2]]]), mode="linear", scales=[1.5],
               data_format="NCX")
    assert got.reshape(-1).tolist() == [0, 0.625, 1.375, 2], f"3->4 linear gave {got.tolist()}"


def test_sizes_input_overrides_and_runs_through_the_executor() -> None:
    sizes = np.asarray([3], dtype=np.int32)
    direct = call("Interpolate", f32([[[10, 20]]]), sizes, mode="nearest", data_format="NCX")
    (executed,) = run_one("Interpolate", [f32([[[10, 20]]]), sizes], [D.f32], mode="nearest",
                          data_format="NCX")
    assert direct.tolist() == [[[10, 20, 20]]], f"sizes input gave {direct.tolist()}"
    assert executed.tolist() == [[[10, 20, 20]]], f"executor gave {executed.tolist()}"


def test_default_layout_is_nxc() -> None:
    got = call("Interpolate", f32([[[1, 10], [3, 30]]]), mode="linear", sizes=[1])
    assert got.tolist() == [[[2, 20]]], f"NXC linear 2->1 gave {got.tolist()}"


def test_bad_sizes_input_is_a_typed_error() -> None:
    with pytest.raises(OpInputError, match="sizes"):
        op_fn("Interpolate")(f32([[[1, 2]]]), np.asarray([2, 2], np.int32), mode="nearest",
                             data_format="NCX")
