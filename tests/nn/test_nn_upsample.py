"""F.interpolate's modes over 1, 2 and 3 spatial dims, the deprecated upsample* wrappers, and
UpsamplingNearest2d / UpsamplingBilinear2d against torch, in float64: outputs, input gradients, errors."""

from __future__ import annotations

import pytest
import torch
from nn_helpers import check_forward_backward, check_module

import genesis
import genesis.nn as nn
import genesis.nn.functional as F

INTERPOLATE = [
    ((2, 3, 5), dict(size=8, mode="linear")),
    ((2, 3, 5), dict(scale_factor=1.5, mode="linear", align_corners=True)),
    ((2, 3, 6), dict(size=4, mode="area")),
    ((2, 3, 5), dict(scale_factor=2.5, mode="nearest-exact")),
    ((1, 2, 4, 5), dict(scale_factor=(1.7, 0.8), mode="bilinear", recompute_scale_factor=True)),
    ((1, 2, 4, 5), dict(size=(6, 7), mode="bicubic", align_corners=True)),
    ((1, 2, 4, 5), dict(scale_factor=1.6, mode="bicubic")),
    ((1, 2, 7, 5), dict(size=(3, 4), mode="area")),
    ((1, 2, 3, 4, 3), dict(size=(5, 6, 4), mode="trilinear")),
    ((1, 2, 3, 4, 3), dict(scale_factor=(2.0, 1.5, 0.7), mode="trilinear", align_corners=True)),
    ((1, 2, 3, 4, 3), dict(scale_factor=1.5, mode="trilinear", recompute_scale_factor=True)),
    ((1, 2, 3, 4, 3), dict(scale_factor=(2, 1.5, 1.7), mode="nearest")),
    ((1, 2, 3, 4, 3), dict(size=(5, 2, 4), mode="nearest-exact")),
    ((1, 2, 6, 5, 4), dict(size=(3, 4, 2), mode="area")),
]


@pytest.mark.parametrize("shape,kwargs", INTERPOLATE, ids=[f"{len(s) - 2}d-{k}" for s, k in INTERPOLATE])
def test_interpolate_matches_torch(device, shape, kwargs):
    check_forward_backward(
        lambda t: torch.nn.functional.interpolate(t, **kwargs),
        lambda t: F.interpolate(t, **kwargs),
        [torch.randn(*shape, dtype=torch.float64)],
        device,
    )


@pytest.mark.parametrize(
    "name,kwargs",
    [
        ("upsample", dict(scale_factor=2, mode="bilinear", align_corners=False)),
        ("upsample_nearest", dict(size=(5, 7))),
        ("upsample_bilinear", dict(scale_factor=1.5)),
    ],
)
def test_deprecated_upsample_functions(device, name, kwargs):
    with pytest.warns(UserWarning, match=f"nn.functional.{name} is deprecated"):
        torch_fn = getattr(torch.nn.functional, name)
        check_forward_backward(
            lambda t: torch_fn(t, **kwargs),
            lambda t: getattr(F, name)(t, **kwargs),
            [torch.randn(2, 3, 3, 4, dtype=torch.float64)],
            device,
        )


@pytest.mark.parametrize(
    "build",
    [
        lambda nn: nn.UpsamplingNearest2d(scale_factor=2),
        lambda nn: nn.UpsamplingNearest2d(size=(5, 7)),
        lambda nn: nn.UpsamplingBilinear2d(scale_factor=1.5),
        lambda nn: nn.UpsamplingBilinear2d(size=(6, 3)),
        lambda nn: nn.Upsample(scale_factor=(1.5, 2.0, 0.5), mode="trilinear"),
    ],
    ids=["nearest-scale", "nearest-size", "bilinear-scale", "bilinear-size", "upsample-trilinear"],
)
def test_upsampling_layers_match_torch(device, build):
    tmod, gmod = build(torch.nn), build(nn)
    assert repr(gmod) == repr(tmod)
    shape = (1, 2, 3, 4, 4) if "trilinear" in repr(tmod) else (2, 3, 3, 4)
    check_module(tmod, gmod, [torch.randn(*shape, dtype=torch.float64)], device)


def test_errors(device):
    data = genesis.randn(1, 1, 4, 4, device=device)
    with pytest.raises(NotImplementedError, match="Got 4D input, but trilinear mode needs 5D input"):
        F.interpolate(data, size=3, mode="trilinear")
    with pytest.raises(ValueError, match="recompute_scale_factor is not meaningful with an explicit size"):
        F.interpolate(data, size=3, recompute_scale_factor=True)
    with pytest.raises(ValueError, match="align_corners option can only be set with the interpolating modes"):
        F.interpolate(data, size=3, mode="area", align_corners=False)


@pytest.mark.parametrize(
    "shape,scale,mode",
    [
        ((1, 2, 3), 1.3, "nearest"),
        ((1, 2, 4, 3), (1.1, 1.3), "nearest"),
        ((1, 2, 4, 3), (1.5, 1.3), "nearest-exact"),
        ((1, 2, 3, 4, 3), (1.0, 1.0, 1.3), "nearest"),
    ],
)
def test_nearest_scale_at_unchanged_sizes(device, shape, scale, mode):
    # floor(3 * 1.3) = 3: torch samples such an axis by its scale (rows 0, 0, 1), except its 2-D "nearest"
    # kernel, which copies it. (torch's backward copies in every case, inconsistently with its forward, so
    # only forwards are compared.)
    data = torch.randn(*shape, dtype=torch.float64)
    got = F.interpolate(genesis.tensor(data.numpy(), device=device), scale_factor=scale, mode=mode)
    want = torch.nn.functional.interpolate(data, scale_factor=scale, mode=mode)
    torch.testing.assert_close(torch.from_numpy(got.cpu().numpy()), want)
