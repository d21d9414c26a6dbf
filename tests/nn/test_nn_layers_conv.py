"""Convolutions, pooling and Upsample against torch, in float64; their argument errors."""

from __future__ import annotations

import pytest
import torch
from nn_helpers import assert_close, check_forward_backward, check_module, g

import genesis
import genesis.nn as nn
import genesis.nn.functional as F


def x(*shape):
    return lambda: [torch.randn(*shape, dtype=torch.float64)]


CASES = [
    ("conv1d", lambda nn: nn.Conv1d(3, 4, 3), x(2, 3, 9)),
    ("conv1d-stride-pad-dilation", lambda nn: nn.Conv1d(3, 4, 3, stride=2, padding=2, dilation=2), x(2, 3, 11)),
    ("conv1d-same-even-kernel", lambda nn: nn.Conv1d(2, 4, 4, padding="same", groups=2, bias=False), x(2, 2, 7)),
    ("conv1d-valid-unbatched", lambda nn: nn.Conv1d(3, 2, 2, padding="valid"), x(3, 6)),
    ("conv1d-reflect", lambda nn: nn.Conv1d(3, 2, 3, padding=1, padding_mode="reflect"), x(2, 3, 6)),
    ("conv2d", lambda nn: nn.Conv2d(3, 4, 3), x(2, 3, 7, 6)),
    ("conv2d-rect-stride-padding", lambda nn: nn.Conv2d(3, 4, (3, 2), stride=(2, 1), padding=(1, 2)), x(2, 3, 7, 6)),
    ("conv2d-dilation-groups", lambda nn: nn.Conv2d(4, 6, 3, dilation=(2, 1), groups=2, bias=False), x(2, 4, 8, 5)),
    ("conv2d-depthwise", lambda nn: nn.Conv2d(3, 6, 3, groups=3, padding=1), x(1, 3, 5, 5)),
    ("conv2d-same-dilated", lambda nn: nn.Conv2d(3, 2, (3, 4), padding="same", dilation=2), x(2, 3, 7, 8)),
    ("conv2d-replicate-unbatched", lambda nn: nn.Conv2d(3, 2, 3, padding=2, padding_mode="replicate"), x(3, 5, 4)),
    ("conv2d-circular", lambda nn: nn.Conv2d(2, 2, 3, padding=1, padding_mode="circular"), x(2, 2, 4, 5)),
    ("conv2d-reflect-same", lambda nn: nn.Conv2d(2, 2, 3, padding="same", padding_mode="reflect"), x(2, 2, 4, 5)),
    ("maxpool", lambda nn: nn.MaxPool2d(2), x(2, 3, 6, 7)),
    ("maxpool-stride-pad-dilation", lambda nn: nn.MaxPool2d(3, stride=2, padding=1, dilation=2), x(2, 3, 9, 8)),
    ("maxpool-ceil-unbatched", lambda nn: nn.MaxPool2d((3, 2), stride=2, padding=1, ceil_mode=True), x(3, 8, 7)),
    ("avgpool", lambda nn: nn.AvgPool2d(2), x(2, 3, 6, 7)),
    ("avgpool-pad-ceil", lambda nn: nn.AvgPool2d(3, stride=2, padding=1, ceil_mode=True), x(2, 3, 8, 7)),
    (
        "avgpool-exclude-pad",
        lambda nn: nn.AvgPool2d((3, 2), stride=(2, 1), padding=1, ceil_mode=True, count_include_pad=False),
        x(2, 3, 8, 7),
    ),
    ("avgpool-divisor", lambda nn: nn.AvgPool2d(2, padding=1, divisor_override=3), x(3, 5, 5)),
    ("adaptive-divisible", lambda nn: nn.AdaptiveAvgPool2d((2, 3)), x(2, 3, 6, 9)),
    ("adaptive-uneven", lambda nn: nn.AdaptiveAvgPool2d(4), x(2, 3, 7, 5)),
    ("adaptive-none", lambda nn: nn.AdaptiveAvgPool2d((None, 3)), x(3, 4, 7)),
    ("adaptive-global", lambda nn: nn.AdaptiveAvgPool2d(1), x(2, 3, 4, 5)),
    ("upsample-nearest-scale", lambda nn: nn.Upsample(scale_factor=2), x(2, 3, 3, 4)),
    ("upsample-nearest-size", lambda nn: nn.Upsample(size=(5, 7)), x(2, 3, 3, 4)),
    ("upsample-nearest-fractional", lambda nn: nn.Upsample(scale_factor=(1.5, 0.6)), x(1, 2, 5, 10)),
    ("upsample-bilinear", lambda nn: nn.Upsample(scale_factor=1.7, mode="bilinear"), x(2, 3, 4, 5)),
    (
        "upsample-bilinear-align",
        lambda nn: nn.Upsample(size=(7, 3), mode="bilinear", align_corners=True),
        x(2, 3, 4, 5),
    ),
    ("upsample-nearest-exact", lambda nn: nn.Upsample(size=(7, 3), mode="nearest-exact"), x(2, 3, 4, 5)),
    ("upsample-linear-1d", lambda nn: nn.Upsample(size=9, mode="linear"), x(2, 3, 4)),
]


@pytest.mark.filterwarnings("ignore:Using padding='same' with even kernel")  # torch's note on its own copy
@pytest.mark.parametrize("build,inputs", [pytest.param(b, i, id=n) for n, b, i in CASES])
def test_layer_matches_torch(device, build, inputs):
    tmod, gmod = build(torch.nn).double(), build(nn).double()
    assert repr(gmod) == repr(tmod)
    gmod.to(device)
    check_module(tmod, gmod, inputs(), device)


@pytest.mark.parametrize(
    "kwargs",
    [
        dict(kernel_size=2),
        dict(kernel_size=3, stride=2, padding=1, dilation=2),
        dict(kernel_size=(3, 2), stride=2, padding=1, ceil_mode=True),
    ],
    ids=str,
)
def test_max_pool2d_indices_match_torch(device, kwargs):
    data = torch.randn(2, 3, 8, 7, dtype=torch.float64)
    values, idx = F.max_pool2d(g(data, device), return_indices=True, **kwargs)
    tvalues, tidx = torch.nn.functional.max_pool2d(data, return_indices=True, **kwargs)
    assert_close(values, tvalues)
    assert_close(idx, tidx)
    layer = nn.MaxPool2d(return_indices=True, **kwargs)
    assert len(layer(g(data, device))) == 2


def test_unfold_matches_torch(device):
    kw = dict(kernel_size=(2, 3), dilation=(1, 2), padding=1, stride=(2, 1))
    check_forward_backward(
        lambda t: torch.nn.functional.unfold(t, **kw),
        lambda t: F.unfold(t, **kw),
        [torch.randn(2, 3, 5, 6, dtype=torch.float64)],
        device,
    )


def test_conv_float32_matches_torch(device):
    tconv, conv = torch.nn.Conv2d(3, 8, 3, padding=1), nn.Conv2d(3, 8, 3, padding=1).to(device)
    check_module(tconv, conv, [torch.randn(2, 3, 6, 6)], device, rtol=1e-4, atol=1e-5)


def test_conv_init_bounds():
    conv = nn.Conv2d(4, 8, 3)
    bound = 1 / (4 * 9) ** 0.5  # kaiming_uniform_(a=sqrt(5)) on fan_in = C_in * kh * kw
    w = torch.from_numpy(conv.weight.detach().numpy())
    assert w.abs().max() <= bound and w.std() > bound / 3
    assert torch.from_numpy(conv.bias.detach().numpy()).abs().max() <= bound


def test_conv_errors(device):
    conv = nn.Conv2d(3, 4, 3).to(device)
    with pytest.raises(RuntimeError, match=r"expected input\[1, 5, 6, 6\] to have 3 channels, but got 5 channels"):
        conv(genesis.randn(1, 5, 6, 6, device=device))
    with pytest.raises(RuntimeError, match="Kernel size can't be greater than actual input size"):
        conv(genesis.randn(1, 3, 2, 2, device=device))
    with pytest.raises(RuntimeError, match=r"Expected 3D \(unbatched\) or 4D \(batched\) input to conv2d"):
        conv(genesis.randn(6, 6, device=device))
    with pytest.raises(RuntimeError, match="padding='same' is not supported for strided convolutions"):
        F.conv2d(genesis.randn(1, 3, 6, 6), conv.weight.cpu(), stride=2, padding="same")
    with pytest.raises(ValueError, match="padding='same' is not supported for strided convolutions"):
        nn.Conv2d(3, 4, 3, stride=2, padding="same")
    with pytest.raises(ValueError, match="Invalid padding string 'full'"):
        nn.Conv1d(3, 4, 3, padding="full")
    with pytest.raises(ValueError, match="in_channels must be divisible by groups"):
        nn.Conv2d(3, 4, 3, groups=2)
    with pytest.raises(ValueError, match="padding_mode must be one of"):
        nn.Conv2d(3, 4, 3, padding_mode="mirror")
    with pytest.raises(RuntimeError, match="non-positive stride is not supported"):
        F.conv1d(genesis.randn(1, 3, 6), genesis.randn(2, 3, 3), stride=0)


def test_pool_and_upsample_errors(device):
    data = genesis.randn(1, 1, 5, 5, device=device)
    with pytest.raises(RuntimeError, match="pad should be at most half of effective kernel size"):
        F.max_pool2d(data, 3, padding=2)
    with pytest.raises(RuntimeError, match="Output size is too small"):
        F.max_pool2d(genesis.randn(1, 2, 2, device=device), 3)
    with pytest.raises(ValueError, match="only one of size or scale_factor should be defined"):
        F.interpolate(data, size=3, scale_factor=2.0)
    with pytest.raises(ValueError, match="either size or scale_factor should be defined"):
        F.interpolate(data)
    with pytest.raises(ValueError, match="align_corners option can only be set with the interpolating modes"):
        F.interpolate(data, size=3, align_corners=True)
    with pytest.raises(NotImplementedError, match="Got 3D input, but bilinear mode needs 4D input"):
        F.interpolate(genesis.randn(1, 1, 5, device=device), size=3, mode="bilinear")
