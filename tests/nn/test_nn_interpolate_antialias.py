"""F.interpolate(antialias=True) against torch: bilinear and bicubic (and lanczos where the installed torch has
it) down- and upsampling by size and by scale factor, align_corners, float64 and float32, values and input
gradients; the argument errors."""

from __future__ import annotations

import pytest
import torch
import torch.nn.functional as TF
from nn_helpers import check_forward_backward

import genesis
import genesis.nn.functional as F

RESIZES = [
    dict(size=(3, 4)),  # downsampling both axes
    dict(size=(2, 13)),  # down one, up the other
    dict(scale_factor=0.37),
    dict(scale_factor=(0.5, 1.7)),
    dict(size=(1, 1)),
]


@pytest.mark.parametrize("mode", ["bilinear", "bicubic"])
@pytest.mark.parametrize("align_corners", [False, True])
@pytest.mark.parametrize("resize", RESIZES, ids=lambda r: str(r))
def test_antialias_matches_torch(device, mode, align_corners, resize):
    x = torch.randn(2, 3, 8, 9, dtype=torch.float64)
    check_forward_backward(
        lambda a: TF.interpolate(a, mode=mode, align_corners=align_corners, antialias=True, **resize),
        lambda a: F.interpolate(a, mode=mode, align_corners=align_corners, antialias=True, **resize),
        [x],
        device,
    )


@pytest.mark.parametrize("mode", ["bilinear", "bicubic"])
def test_antialias_float32(device, mode):
    x = torch.randn(1, 2, 11, 7)
    check_forward_backward(
        lambda a: TF.interpolate(a, size=(4, 3), mode=mode, antialias=True),
        lambda a: F.interpolate(a, size=(4, 3), mode=mode, antialias=True),
        [x],
        device,
    )


def _torch_has_lanczos() -> bool:
    try:
        TF.interpolate(torch.randn(1, 1, 4, 4), size=(2, 2), mode="lanczos", antialias=True)
    except (ValueError, NotImplementedError, RuntimeError):
        return False
    return True


@pytest.mark.skipif(not _torch_has_lanczos(), reason="the installed torch has no lanczos mode (torch < 2.13)")
@pytest.mark.parametrize("resize", RESIZES[:4], ids=lambda r: str(r))
def test_lanczos_matches_torch(device, resize):
    x = torch.randn(2, 2, 9, 8, dtype=torch.float64)
    check_forward_backward(
        lambda a: TF.interpolate(a, mode="lanczos", antialias=True, **resize),
        lambda a: F.interpolate(a, mode="lanczos", antialias=True, **resize),
        [x],
        device,
    )


def test_antialias_errors(device):
    x3, x4 = genesis.randn(1, 2, 5, device=device), genesis.randn(1, 2, 5, 5, device=device)
    with pytest.raises(ValueError, match="Anti-alias option is restricted to bilinear, bicubic"):
        F.interpolate(x4, size=3, mode="nearest", antialias=True)
    with pytest.raises(ValueError, match="requires a 4-D tensor as input"):
        F.interpolate(x3, size=3, mode="linear", antialias=True)
    with pytest.raises(ValueError, match="Lanczos mode requires antialias=True"):
        F.interpolate(x4, size=3, mode="lanczos")
    with pytest.raises(ValueError, match=r"Lanczos mode does not support align_corners=True"):
        F.interpolate(x4, size=3, mode="lanczos", antialias=True, align_corners=True)
