"""BatchNormInference against PyTorch float64 in both data formats, and a hand example."""

from __future__ import annotations

import math

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from testkit.reference import assert_ulp, f32, need_torch, op_fn, same_bits

from fusionspec.reference.errors import OpInputError


@settings(max_examples=30)
@given(seed=st.integers(0, 2**32 - 1), rank=st.integers(2, 5), ncx=st.booleans(),
       eps=st.sampled_from([0.0, 1e-5, 0.1]))
def test_batchnorm_inference_matches_torch(seed: int, rank: int, ncx: bool, eps: float) -> None:
    torch = need_torch()
    rng = np.random.default_rng(seed)
    shape = tuple(int(d) for d in rng.integers(1, 5, size=rank))
    c = shape[1]
    x = f32(rng.normal(size=shape) * 3)
    gamma, beta, mean = (f32(rng.normal(size=c)) for _ in range(3))
    var = f32(rng.uniform(0.1, 4.0, size=c))
    t = {k: torch.from_numpy(v.astype(np.float64))
         for k, v in dict(x=x, g=gamma, b=beta, m=mean, v=var).items()}
    want = torch.nn.functional.batch_norm(t["x"], t["m"], t["v"], t["g"], t["b"],
                                          training=False, eps=float(np.float32(eps))).numpy()
    if ncx:
        got = op_fn("BatchNormInference")(x, gamma, beta, mean, var, epsilon=eps,
                                          data_format="NCX")
    else:
        moved = np.moveaxis(x, 1, -1)  # the same data, channels last
        got = np.moveaxis(op_fn("BatchNormInference")(moved, gamma, beta, mean, var,
                                                      epsilon=eps, data_format="NXC"), -1, 1)
    assert_ulp(got, want, 0.51, f"BatchNormInference {'NCX' if ncx else 'NXC'} {shape}")


def test_batchnorm_inference_hand_example() -> None:
    x = f32([[1.0, 10.0], [3.0, 20.0]])  # NXC: channels are the last axis
    got = op_fn("BatchNormInference")(x, f32([2.0, 1.0]), f32([0.5, -1.0]), f32([2.0, 10.0]),
                                      f32([4.0, 25.0]), epsilon=0.0)
    # channel 0: 2*(x-2)/2 + 0.5 ; channel 1: (x-10)/5 - 1
    assert same_bits(got, f32([[-0.5, -1.0], [1.5, 1.0]])), f"BN by hand gave {got}"
    eps = op_fn("BatchNormInference")(f32([[2.0]]), f32([1.0]), f32([0.0]), f32([0.0]),
                                      f32([0.0]), epsilon=0.25)
    assert_ulp(eps, [[2.0 / math.sqrt(0.25)]], 0.5, "epsilon is added to the variance")


def test_parameter_length_must_match_channels() -> None:
    with pytest.raises(OpInputError, match="gamma"):
        op_fn("BatchNormInference")(f32(np.zeros((2, 3))), f32([1.0]), f32([0, 0, 0]),
                                    f32([0, 0, 0]), f32([1, 1, 1]), epsilon=0.0)
