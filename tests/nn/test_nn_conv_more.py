"""Conv3d, the transposed convolutions, Fold / Unfold and conv_tbc against torch, in float64: outputs,
input and parameter gradients, forward's output_size, and the argument errors."""

from __future__ import annotations

import pytest
import torch
from nn_helpers import check_forward_backward, check_module

import genesis
import genesis.nn as nn
import genesis.nn.functional as F


def x(*shape):
    return lambda: [torch.randn(*shape, dtype=torch.float64)]


CASES = [
    ("conv3d", lambda nn: nn.Conv3d(2, 3, 2), x(2, 2, 3, 4, 3)),
    (
        "conv3d-stride-pad-dilation-groups",
        lambda nn: nn.Conv3d(4, 2, (2, 3, 1), stride=(1, 2, 1), padding=(1, 0, 1), dilation=(2, 1, 1), groups=2),
        x(1, 4, 4, 5, 3),
    ),
    ("conv3d-same-unbatched", lambda nn: nn.Conv3d(2, 2, 3, padding="same", bias=False), x(2, 3, 4, 3)),
    ("conv3d-circular", lambda nn: nn.Conv3d(2, 2, 3, padding=1, padding_mode="circular"), x(1, 2, 3, 4, 3)),
    ("convT1d", lambda nn: nn.ConvTranspose1d(3, 4, 3), x(2, 3, 5)),
    (
        "convT1d-stride-pad-outpad-dilation",
        lambda nn: nn.ConvTranspose1d(4, 2, 3, stride=3, padding=2, output_padding=1, groups=2, dilation=2),
        x(2, 4, 5),
    ),
    ("convT1d-unbatched", lambda nn: nn.ConvTranspose1d(3, 2, 2, stride=2, bias=False), x(3, 4)),
    ("convT2d", lambda nn: nn.ConvTranspose2d(3, 4, (3, 2)), x(2, 3, 4, 5)),
    (
        "convT2d-all-options",
        lambda nn: nn.ConvTranspose2d(
            4, 6, 3, stride=(2, 3), padding=(1, 2), output_padding=(1, 2), groups=2, dilation=(1, 2)
        ),
        x(2, 4, 3, 4),
    ),
    ("convT2d-big-padding", lambda nn: nn.ConvTranspose2d(2, 3, 3, padding=2), x(1, 2, 5, 4)),
    ("convT3d", lambda nn: nn.ConvTranspose3d(2, 3, 2, stride=2), x(1, 2, 2, 3, 2)),
    (
        "convT3d-options",
        lambda nn: nn.ConvTranspose3d(2, 2, (2, 3, 2), stride=(1, 2, 2), padding=(0, 1, 1), output_padding=(0, 1, 0)),
        x(2, 3, 3, 2),
    ),
    ("fold", lambda nn: nn.Fold((4, 5), 2), x(2, 3 * 4, 12)),
    ("fold-options", lambda nn: nn.Fold((5, 6), (2, 3), dilation=(1, 2), padding=1, stride=(2, 1)), x(2, 2 * 6, 12)),
    ("fold-unbatched", lambda nn: nn.Fold(4, 3, padding=1), x(9, 16)),
    ("unfold", lambda nn: nn.Unfold((2, 3), dilation=(2, 1), padding=1, stride=2), x(2, 3, 5, 6)),
]


@pytest.mark.parametrize("build,inputs", [pytest.param(b, i, id=n) for n, b, i in CASES])
def test_layer_matches_torch(device, build, inputs):
    tmod, gmod = build(torch.nn).double(), build(nn).double()
    assert repr(gmod) == repr(tmod)
    assert list(gmod.state_dict()) == list(tmod.state_dict())
    gmod.to(device)
    check_module(tmod, gmod, inputs(), device)


@pytest.mark.parametrize("output_size", [(9, 13), (1, 2, 10, 14), (10, 15)], ids=str)
def test_conv_transpose_output_size(device, output_size):
    tmod = torch.nn.ConvTranspose2d(2, 3, 3, stride=(2, 3), padding=1).double()
    gmod = nn.ConvTranspose2d(2, 3, 3, stride=(2, 3), padding=1).double().to(device)
    gmod.load_state_dict(tmod.state_dict())
    check_forward_backward(
        lambda t: tmod(t, output_size=output_size),
        lambda t: gmod(t, output_size=output_size),
        [torch.randn(1, 2, 5, 5, dtype=torch.float64)],
        device,
    )


@pytest.mark.parametrize(
    "name,args",
    [
        ("conv3d", dict(stride=2, padding=1, dilation=(1, 2, 1))),
        ("conv_transpose1d", dict(stride=2, padding=1, output_padding=1, dilation=1)),
        ("conv_transpose2d", dict(stride=(1, 2), padding=(0, 1), output_padding=(0, 1), groups=1, dilation=(2, 1))),
        ("conv_transpose3d", dict(stride=2, padding=1, output_padding=1)),
    ],
)
def test_functional_matches_torch(device, name, args):
    nd = int(name[-2])
    shapes = {1: (2, 4, 5), 2: (2, 4, 4, 5), 3: (1, 4, 3, 4, 3)}
    kernel = (2,) * nd if nd == 3 else (3,) * nd
    w = (4, 3, *kernel) if "transpose" in name else (3, 4, *kernel)
    inputs = [torch.randn(*shapes[nd], dtype=torch.float64), torch.randn(*w), torch.randn(3)]
    inputs = [t.double() for t in inputs]
    check_forward_backward(
        lambda a, b, c: getattr(torch.nn.functional, name)(a, b, c, **args),
        lambda a, b, c: getattr(F, name)(a, b, c, **args),
        inputs,
        device,
    )


def test_conv_tbc_matches_torch(device):
    inputs = [torch.randn(7, 2, 3, dtype=torch.float64), torch.randn(3, 3, 4).double(), torch.randn(4).double()]
    check_forward_backward(
        lambda a, b, c: torch.conv_tbc(a, b, c, 1), lambda a, b, c: F.conv_tbc(a, b, c, 1), inputs, device
    )
    check_forward_backward(torch.conv_tbc, genesis.conv_tbc, inputs, device)


def test_float32_transpose_and_fold(device):
    tmod, gmod = torch.nn.ConvTranspose2d(3, 4, 3, stride=2), nn.ConvTranspose2d(3, 4, 3, stride=2).to(device)
    check_module(tmod, gmod, [torch.randn(2, 3, 4, 4)], device, rtol=1e-4, atol=1e-5)


def test_init_bounds_of_transposed_weight():
    conv = nn.ConvTranspose2d(4, 6, 3, groups=2)
    assert tuple(conv.weight.shape) == (4, 3, 3, 3)
    bound = 1 / (3 * 9) ** 0.5  # fan_in = weight.shape[1] * kh * kw, as torch's
    w = torch.from_numpy(conv.weight.detach().numpy())
    assert w.abs().max() <= bound and w.std() > bound / 3


def test_errors(device):
    data = genesis.randn(1, 4, 5, 5, device=device)
    weight = genesis.randn(4, 2, 3, 3, device=device)
    with pytest.raises(RuntimeError, match="output padding must be smaller than either stride or dilation"):
        F.conv_transpose2d(data, weight, output_padding=1)
    with pytest.raises(RuntimeError, match="output_padding_width: 1 stride_height: 1"):
        F.conv_transpose1d(
            genesis.randn(1, 4, 5, device=device), genesis.randn(4, 2, 3, device=device), output_padding=1
        )
    with pytest.raises(RuntimeError, match=r"expected weight to be divisible by 3 at dimension 0"):
        F.conv_transpose2d(data, weight, groups=3)
    with pytest.raises(RuntimeError, match=r"expected input\[1, 3, 5, 5\] to have 4 channels, but got 3 channels"):
        F.conv_transpose2d(genesis.randn(1, 3, 5, 5, device=device), weight)
    with pytest.raises(RuntimeError, match=r"Expected 3D \(unbatched\) or 4D \(batched\) input to conv_transpose2d"):
        F.conv_transpose2d(genesis.randn(5, 5, device=device), weight)
    with pytest.raises(RuntimeError, match="negative padding is not supported"):
        F.conv_transpose2d(data, weight, padding=-1)
    with pytest.raises(RuntimeError, match="non-positive stride is not supported"):
        F.conv_transpose2d(data, weight, stride=0)
    with pytest.raises(RuntimeError, match=r"Expected 4D \(unbatched\) or 5D \(batched\) input to conv3d"):
        F.conv3d(genesis.randn(2, 3, 4, device=device), genesis.randn(2, 3, 1, 1, 1, device=device))
    with pytest.raises(ValueError, match=r"requested an output size of \[20, 20\], but valid sizes range from"):
        nn.ConvTranspose2d(4, 2, 3, stride=2).to(device)(data, output_size=(20, 20))
    with pytest.raises(ValueError, match='Only "zeros" padding mode is supported for ConvTranspose2d'):
        nn.ConvTranspose2d(4, 2, 3, padding_mode="reflect")
    with pytest.raises(RuntimeError, match="divisible by the product of kernel_size"):
        F.fold(genesis.randn(1, 11, 9, device=device), (4, 4), 2)
    with pytest.raises(RuntimeError, match="to match the calculated number of sliding blocks 3 \\* 3 = 9"):
        F.fold(genesis.randn(1, 12, 8, device=device), (4, 4), 2)
    with pytest.raises(RuntimeError, match=r"Expected 2D or 3D \(batch mode\) tensor"):
        F.fold(genesis.randn(2, 3, 4, 4, device=device), (4, 4), 2)
    with pytest.raises(RuntimeError, match="Input must have 3 dims: time, batch, in_channel"):
        F.conv_tbc(genesis.randn(3, 4, device=device), genesis.randn(2, 3, 4), genesis.randn(4))
