"""Training ops: ReLUBackward (use_dst both ways), BatchNormTrainingBackward against PyTorch
autograd (with and without gamma, both data formats), BiasAddBackward."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from testkit.reference import D, assert_ulp, f32, need_torch, op_fn, run_one, same_bits

from fusionspec.reference.errors import OpInputError


def test_relu_backward_uses_dst_by_default_and_src_when_asked() -> None:
    v = f32([-1.0, 0.0, 2.0, 3.0])
    dy = f32([10.0, 20.0, 30.0, -40.0])
    got = op_fn("ReLUBackward")(v, dy)
    assert same_bits(got, f32([0.0, 0.0, 30.0, -40.0])), f"diff_dst where v > 0, got {got}"
    (default,) = run_one("ReLUBackward", [v, dy], [D.f32])
    assert same_bits(default, got), "the executor fills use_dst=True and gives the same"
    (by_src,) = run_one("ReLUBackward", [v, dy], [D.f32], use_dst=False)
    assert same_bits(by_src, got), "with src on input 0 the rule is the same (src > 0)"
    with pytest.raises(OpInputError, match="differ in shape"):
        op_fn("ReLUBackward")(v, f32([1.0]))


@settings(max_examples=25)
@given(seed=st.integers(0, 2**32 - 1), rank=st.integers(2, 4), ncx=st.booleans(),
       with_gamma=st.booleans())
def test_batchnorm_backward_matches_torch_autograd(seed: int, rank: int, ncx: bool,
                                                   with_gamma: bool) -> None:
    torch = need_torch()
    rng = np.random.default_rng(seed)
    shape = tuple(int(d) for d in rng.integers(2, 5, size=rank))
    c, eps = shape[1], 1e-3
    x = f32(rng.normal(size=shape) * 2 + 1)
    dy = f32(rng.normal(size=shape))
    gamma = f32(rng.normal(size=c)) if with_gamma else None
    others = tuple(a for a in range(rank) if a != 1)
    mean = f32(x.astype(np.float64).mean(axis=others))
    var = f32(x.astype(np.float64).var(axis=others))
    tx = torch.from_numpy(x.astype(np.float64)).requires_grad_()
    tg = torch.from_numpy((gamma if gamma is not None else np.ones(c)).astype(np.float64))
    tg.requires_grad_()
    tb = torch.zeros(c, dtype=torch.float64, requires_grad=True)
    # torch recomputes the batch statistics from x in float64; the op is given them rounded
    # to f32, hence the tolerances below.
    y = torch.nn.functional.batch_norm(tx, None, None, tg, tb, training=True,
                                       eps=float(np.float32(eps)))
    y.backward(torch.from_numpy(dy.astype(np.float64)))
    args = [x, dy, mean, var] + ([gamma] if gamma is not None else [])
    if ncx:
        got = op_fn("BatchNormTrainingBackward")(*args, epsilon=eps, data_format="NCX")
        d_src = got[0]
    else:
        moved = [np.moveaxis(x, 1, -1), np.moveaxis(dy, 1, -1), *args[2:]]
        got = op_fn("BatchNormTrainingBackward")(*moved, epsilon=eps, data_format="NXC")
        d_src = np.moveaxis(got[0], -1, 1)
    assert tx.grad is not None and tg.grad is not None and tb.grad is not None
    scale = np.abs(dy).max()
    np.testing.assert_allclose(d_src, tx.grad.numpy(), rtol=2e-4, atol=2e-5 * scale,
                               err_msg=f"diff_src {'NCX' if ncx else 'NXC'} {shape}")
    np.testing.assert_allclose(got[1], tg.grad.numpy(), rtol=2e-4, atol=2e-5 * scale,
                               err_msg=f"diff_gamma {shape}")
    np.testing.assert_allclose(got[2], tb.grad.numpy(), rtol=1e-5, atol=1e-5 * scale,
                               err_msg=f"diff_beta {shape}")


def test_batchnorm_backward_hand_example_and_output_counts() -> None:
    # One channel (NCX, shape [3, 1]): x = [0, 1, 2], mean 1, var 1, eps 0, dy = [1, 0, 2].
    x, dy = f32([[0.0], [1.0], [2.0]]), f32([[1.0], [0.0], [2.0]])
    mean, var = f32([1.0]), f32([1.0])
    d_src, d_gamma, d_beta = op_fn("BatchNormTrainingBackward")(
        x, dy, mean, var, f32([2.0]), epsilon=0.0, data_format="NCX")
    # xhat = [-1, 0, 1]; diff_beta = 3; diff_gamma = -1 + 0 + 2 = 1;
    # diff_src = 2*(dy - 3/3 - xhat*1/3) = [2/3, -2, 4/3]
    assert same_bits(d_beta, f32([3.0])) and same_bits(d_gamma, f32([1.0])), \
        f"diff_beta {d_beta} (want 3), diff_gamma {d_gamma} (want 1)"
    assert_ulp(d_src, [[2 / 3], [-2.0], [4 / 3]], 0.5, "diff_src by hand")
    (only,) = run_one("BatchNormTrainingBackward", [x, dy, mean, var], [D.f32], epsilon=0.0,
                      data_format="NCX")
    assert_ulp(only, [[1 / 3], [-1.0], [2 / 3]], 0.5, "1-output form, gamma absent (= 1)")
    three = run_one("BatchNormTrainingBackward", [x, dy, mean, var], [D.f32] * 3,
                    epsilon=0.0, data_format="NCX")
    assert [a.shape for a in three] == [(3, 1), (1,), (1,)], \
        f"3-output form shapes {[a.shape for a in three]}"


def test_bias_add_backward_sums_all_but_the_channel_axis() -> None:
    dy = f32(np.arange(24).reshape(2, 3, 4))
    nxc = op_fn("BiasAddBackward")(dy)
    assert same_bits(nxc, f32(dy.sum(axis=(0, 1)))), f"NXC keeps the last axis, got {nxc}"
    ncx = op_fn("BiasAddBackward")(dy, data_format="NCX")
    assert same_bits(ncx, f32(dy.sum(axis=(0, 2)))), f"NCX keeps axis 1, got {ncx}"
    (via_graph,) = run_one("BiasAddBackward", [dy], [D.f32])
    assert via_graph.shape == (4,), f"diff_bias has one value per channel, got {via_graph.shape}"
    with pytest.raises(OpInputError, match="rank >= 2"):
        op_fn("BiasAddBackward")(f32([1.0, 2.0]))
