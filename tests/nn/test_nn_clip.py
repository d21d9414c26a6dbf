"""genesis.nn.utils: clip_grad_norm_ / clip_grad_value_ and parameters <-> vector against torch.nn.utils;
the clipping never reads a value back to the host."""

from __future__ import annotations

import math

import numpy as np
import pytest
import torch
from nn_helpers import assert_close, g

import genesis
import genesis.nn as nn
import genesis_autograd
from genesis.nn.utils import (
    clip_grad_norm,
    clip_grad_norm_,
    clip_grad_value_,
    get_total_norm,
    parameters_to_vector,
    vector_to_parameters,
)

SHAPES = [(4, 3), (5,), (2, 2, 3)]


def _params_with_grads(device, dtype=torch.float64, scale=1.0, none_at=None):
    tps = [torch.nn.Parameter(torch.randn(s, dtype=dtype)) for s in SHAPES]
    gps = [nn.Parameter(g(t, device)) for t in tps]
    for i, (tp, gp) in enumerate(zip(tps, gps)):
        if i != none_at:
            grad = torch.randn_like(tp) * scale
            tp.grad, gp.grad = grad, g(grad, device)
    return tps, gps


class _NoHostReads:
    """Make every Tensor -> host read raise while active."""

    NAMES = ("item", "tolist", "numpy", "__bool__", "__float__", "__int__", "__array__")

    def __enter__(self):
        self.saved = {n: getattr(genesis.Tensor, n) for n in self.NAMES}

        def refuse(*args, **kwargs):
            raise AssertionError("host read during gradient clipping")

        for n in self.NAMES:
            setattr(genesis.Tensor, n, refuse)

    def __exit__(self, *exc):
        for n, f in self.saved.items():
            setattr(genesis.Tensor, n, f)


@pytest.mark.parametrize("norm_type", [2.0, 1, math.inf, 0.5, 3.0])
@pytest.mark.parametrize("max_norm", [0.3, 1e3])
def test_clip_grad_norm_matches_torch_without_host_reads(device, norm_type, max_norm):
    tps, gps = _params_with_grads(device, none_at=1)
    expected = torch.nn.utils.clip_grad_norm_(tps, max_norm, norm_type)
    with _NoHostReads():
        total = clip_grad_norm_((p for p in gps), max_norm, norm_type)  # a generator, as model.parameters()
    assert total.device == genesis_autograd.resolve_device(device) and total.shape == ()
    assert_close(total, expected, rtol=1e-12, atol=1e-14)
    for gp, tp in zip(gps, tps):
        if tp.grad is None:
            assert gp.grad is None
        else:
            assert_close(gp.grad, tp.grad, rtol=1e-12, atol=1e-14)


def test_clip_grad_norm_float32_and_a_single_tensor(device):
    tps, gps = _params_with_grads(device, dtype=torch.float32, scale=10.0)
    expected = torch.nn.utils.clip_grad_norm_(tps[0], 1.0)
    total = clip_grad_norm_(gps[0], 1.0)
    assert_close(total, expected)
    assert_close(gps[0].grad, tps[0].grad)
    assert_close(gps[1].grad, tps[1].grad)  # not clipped: not passed


def test_nonfinite_norm_raises_only_when_asked(device):
    tps, gps = _params_with_grads(device)
    with genesis.no_grad():
        gps[0].grad[0, 0] = float("inf")
    tps[0].grad[0, 0] = float("inf")
    with pytest.raises(RuntimeError, match="non-finite"):
        clip_grad_norm_(gps, 1.0, error_if_nonfinite=True)
    with pytest.raises(RuntimeError, match="non-finite"):
        torch.nn.utils.clip_grad_norm_(tps, 1.0, error_if_nonfinite=True)
    total = clip_grad_norm_(gps, 1.0)
    expected = torch.nn.utils.clip_grad_norm_(tps, 1.0)
    assert math.isinf(total.item()) and math.isinf(expected.item())
    for gp, tp in zip(gps, tps):
        np.testing.assert_array_equal(gp.grad.cpu().numpy(), tp.grad.numpy())  # nan / 0 where torch has them


def test_no_gradients_give_a_zero_norm():
    p = nn.Parameter(genesis.randn(3))
    assert clip_grad_norm_([p], 1.0).item() == 0.0
    assert get_total_norm([]).item() == torch.nn.utils.get_total_norm([]).item() == 0.0


def test_deprecated_clip_grad_norm_warns():
    tps, gps = _params_with_grads("cpu")
    with pytest.warns(FutureWarning):
        total = clip_grad_norm(gps, 0.5)
    assert_close(total, torch.nn.utils.clip_grad_norm_(tps, 0.5), rtol=1e-12, atol=1e-14)


@pytest.mark.parametrize("clip_value", [0.5, 2])
def test_clip_grad_value_matches_torch(device, clip_value):
    tps, gps = _params_with_grads(device, scale=2.0, none_at=0)
    torch.nn.utils.clip_grad_value_(tps, clip_value)
    with _NoHostReads():
        clip_grad_value_(gps, clip_value)
    for gp, tp in zip(gps[1:], tps[1:]):
        assert_close(gp.grad, tp.grad, rtol=0, atol=0)


def test_parameters_to_vector_and_back(device):
    tps, gps = _params_with_grads(device)
    vec = parameters_to_vector(gps)
    assert_close(vec, torch.nn.utils.parameters_to_vector(tps), rtol=0, atol=0)
    for p in gps:
        p.grad = None
    (vec * vec).sum().backward()  # differentiable, as torch's: d/dp of sum(p^2) is 2p
    for p in gps:
        np.testing.assert_array_equal(p.grad.cpu().numpy(), 2 * p.detach().cpu().numpy())

    new = torch.randn(vec.shape[0], dtype=torch.float64)
    torch.nn.utils.vector_to_parameters(new, tps)
    gvec = g(new, device)
    vector_to_parameters(gvec, gps)
    for gp, tp in zip(gps, tps):
        assert_close(gp, tp, rtol=0, atol=0)
    with genesis.no_grad():
        gvec.fill_(3.0)  # the parameters now show slices of the vector
    assert (gps[2].detach().cpu().numpy() == 3.0).all()
    with pytest.raises(TypeError, match=r"expected torch\.Tensor"):
        vector_to_parameters([1.0, 2.0], gps)


def test_genesis_nn_utils_is_the_package():
    import genesis.nn.utils as utils

    assert utils.clip_grad_norm_ is clip_grad_norm_
