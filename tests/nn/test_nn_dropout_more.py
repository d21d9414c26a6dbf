"""Dropout1d / 2d / 3d, AlphaDropout and FeatureAlphaDropout (functional, modules, top-level forms).
Their masks are random, so the tests check what torch guarantees: whole channels dropped, the kept
ones scaled by 1 / (1 - p) (alpha: the affine map), the fraction dropped near p, mean and variance
kept, the gradient equal to the mask, eval the identity; and torch's warnings, errors and reprs."""

from __future__ import annotations

import math

import pytest
import torch
from nn_helpers import g, to_torch

import genesis
import genesis.nn as nn
import genesis.nn.functional as F

SELU_SATURATION = 1.7580993408473766  # -SELU(-inf)


def positive(*shape):
    """Inputs away from 0, so a zeroed element is never mistaken for a kept one."""
    return torch.rand(*shape, dtype=torch.float64) + 0.5


def _run(fn, data, device):
    x = g(data, device, requires_grad=True)
    out = fn(x)
    w = torch.randn(data.shape, dtype=torch.float64)
    (out * g(w, device)).sum().backward()
    return to_torch(out), to_torch(x.grad), w


@pytest.mark.parametrize(
    "fn,shape,channel_dims",
    [
        (lambda t, p: F.dropout1d(t, p), (8, 16, 5), 2),
        (lambda t, p: F.dropout1d(t, p), (32, 5), 1),  # unbatched (C, L)
        (lambda t, p: F.dropout2d(t, p), (8, 16, 3, 4), 2),
        (lambda t, p: F.dropout3d(t, p), (4, 16, 2, 3, 2), 2),
        (lambda t, p: F.dropout3d(t, p), (32, 2, 3, 2), 1),  # unbatched (C, D, H, W)
    ],
)
def test_feature_dropout_zeroes_whole_channels(device, fn, shape, channel_dims):
    p = 0.4
    data = positive(*shape)
    out, grad, w = _run(lambda t: fn(t, p), data, device)
    ratio = (out / data).reshape(*shape[:channel_dims], -1)
    per_channel = ratio[..., 0]
    torch.testing.assert_close(ratio, per_channel.unsqueeze(-1).expand_as(ratio))  # one draw per channel
    kept = per_channel != 0
    torch.testing.assert_close(per_channel[kept], torch.full_like(per_channel[kept], 1 / (1 - p)))
    assert 0.15 < 1 - kept.double().mean() < 0.65  # about p of 128 channels (p = 0.4 +- 5 sigma)
    torch.testing.assert_close(grad, (out / data) * w)  # the gradient is the scaled mask


def test_feature_dropout_keeps_the_mean(device):
    data = positive(64, 64, 4)
    out = to_torch(F.dropout1d(g(data, device), 0.3))
    assert abs(out.mean() / data.mean() - 1) < 0.08  # 4096 channels: std of the ratio ~1%


def test_eval_is_the_identity_and_p_edges(device):
    x = g(positive(2, 3, 4, 5), device)
    for module in (nn.Dropout2d(), nn.Dropout3d(), nn.AlphaDropout(), nn.FeatureAlphaDropout()):
        assert module.eval()(x) is x
    unbatched = x[0]
    assert nn.Dropout1d().eval()(unbatched) is unbatched
    with pytest.raises(RuntimeError, match="dropout1d: Expected 2D or 3D input"):
        nn.Dropout1d().eval()(x)  # the rank is checked in eval mode too, as torch
    assert F.dropout2d(x, 0.0) is x and F.alpha_dropout(x, 0.5) is x  # alpha's default is training=False
    assert not to_torch(F.dropout2d(x, 1.0)).any()
    assert not to_torch(F.alpha_dropout(x, 1.0, True)).any()  # torch: p = 1 gives zeros, not the saturation


def test_alpha_dropout_keeps_mean_and_variance(device):
    p = 0.2
    data = torch.randn(200_000, dtype=torch.float64)
    out, grad, w = _run(lambda t: F.alpha_dropout(t, p, True), data, device)
    assert abs(out.mean()) < 0.02 and abs(out.var() - 1) < 0.03
    a = 1 / math.sqrt((SELU_SATURATION**2 * p + 1) * (1 - p))
    b = SELU_SATURATION * a * p
    kept = (out - (a * data + b)).abs() < 1e-12
    dropped = ~kept
    torch.testing.assert_close(out[dropped], torch.full_like(out[dropped], -SELU_SATURATION * a + b))
    assert abs(dropped.double().mean() - p) < 0.01
    torch.testing.assert_close(grad, torch.where(kept, a * w, torch.zeros_like(w)))


def test_feature_alpha_dropout_masks_whole_channels(device):
    p = 0.5
    data = torch.randn(8, 16, 6, dtype=torch.float64)
    out = to_torch(F.feature_alpha_dropout(g(data, device), p, True))
    a = 1 / math.sqrt((SELU_SATURATION**2 * p + 1) * (1 - p))
    b = SELU_SATURATION * a * p
    kept = ((out - (a * data + b)).abs() < 1e-12).all(-1)
    dropped = (out == out[..., :1]).all(-1) & ~kept  # a dropped channel is one constant
    assert (kept | dropped).all() and 0.2 < dropped.double().mean() < 0.8
    torch.testing.assert_close(out[dropped], torch.full_like(out[dropped], -SELU_SATURATION * a + b))


def test_inplace_writes_the_input(device):
    data = positive(4, 6, 5)
    x = g(data, device)
    assert F.dropout1d(x, 0.5, inplace=True) is x
    ratio = to_torch(x) / data
    assert ((ratio == 0) | ((ratio - 2).abs() < 1e-12)).all()
    y = g(data, device)
    assert F.feature_alpha_dropout(y, 0.5, True, inplace=True) is y and not torch.equal(to_torch(y), data)
    data4d = positive(4, 6, 5, 2)
    leaf = g(data4d, device, requires_grad=True)
    z = leaf * 1.0
    F.dropout2d(z, 0.5, inplace=True).sum().backward()
    torch.testing.assert_close(to_torch(leaf.grad), to_torch(z.detach()) / data4d)


def test_warnings_and_errors_match_torch(device):
    with pytest.raises(RuntimeError, match="dropout1d: Expected 2D or 3D input, but received a 4D input"):
        F.dropout1d(g(positive(2, 3, 4, 5), device))
    with pytest.warns(UserWarning, match="dropout2d: Received a 2-D input to dropout2d, which is deprecated"):
        F.dropout2d(g(positive(3, 4), device))
    with pytest.warns(UserWarning, match="dropout2d: Received a 3D input to dropout2d and assuming"):
        F.dropout2d(g(positive(3, 4, 5), device))
    with pytest.warns(UserWarning, match="dropout3d: Received a 3-D input to dropout3d, which is deprecated"):
        F.dropout3d(g(positive(3, 4, 5), device))
    with (
        pytest.warns(UserWarning, match="Received a 1-D input"),
        pytest.raises(RuntimeError, match="Feature dropout requires at least 2 dimensions in the input"),
    ):
        F.dropout2d(g(positive(3), device))
    with pytest.raises(RuntimeError, match="Feature dropout requires at least 2 dimensions in the input"):
        F.feature_alpha_dropout(g(positive(3), device), 0.5, True)
    vector = g(positive(3), device)
    assert F.feature_alpha_dropout(vector, 0.5, False) is vector  # the rank is checked only when active
    for fn in (F.dropout1d, F.dropout2d, F.dropout3d, F.alpha_dropout, F.feature_alpha_dropout):
        with pytest.raises(ValueError, match=r"dropout probability has to be between 0 and 1, but got 1\.5"):
            fn(g(positive(2, 3, 4), device), 1.5)
    for cls in ("Dropout1d", "Dropout2d", "Dropout3d", "AlphaDropout", "FeatureAlphaDropout"):
        with pytest.raises(ValueError, match=r"dropout probability has to be between 0 and 1, but got -0\.1"):
            getattr(nn, cls)(-0.1)


@pytest.mark.parametrize(
    "cls", ["Dropout", "Dropout1d", "Dropout2d", "Dropout3d", "AlphaDropout", "FeatureAlphaDropout"]
)
def test_reprs_match_torch(cls):
    assert repr(getattr(nn, cls)()) == repr(getattr(torch.nn, cls)())
    assert repr(getattr(nn, cls)(0.2, True)) == repr(getattr(torch.nn, cls)(0.2, True))


def test_modules_follow_training_mode(device):
    data = positive(4, 8, 3, 3)
    for module in (nn.Dropout2d(0.5), nn.FeatureAlphaDropout(0.5)):
        out = to_torch(module(g(data, device)))
        assert not torch.equal(out, data)


def test_top_level_forms(device):
    data = positive(4, 6)
    x = g(data, device)
    assert genesis.dropout(x, 0.5, False) is x and genesis.alpha_dropout(x, 0.5, False) is x
    ratio = to_torch(genesis.dropout(x, 0.5, True)) / data
    assert ((ratio == 0) | ((ratio - 2).abs() < 1e-12)).all()
    y = g(data, device)
    assert genesis.dropout_(y, 0.5, True) is y and genesis.alpha_dropout_(y, 0.5, True) is y
    z = g(data, device)
    assert genesis.feature_alpha_dropout_(z, 0.5, True) is z
    assert genesis.feature_alpha_dropout(z, 0.5, False) is z
    with pytest.raises(TypeError):
        genesis.dropout(x, 0.5)  # torch's top-level dropout has no default for train
