"""F.interpolate(antialias=True) against torch: bilinear and bicubic (and lanczos where the installed torch has
it) down- and upsampling by size and by scale factor, align_corners, float64 and float32, values and input
gradients; the argument errors."""

from __future__ import annotations

import numpy as np
import pytest
import torch
import torch.nn.functional as TF
from nn_helpers import check_forward_backward

import genesis
import genesis.nn.functional as F
from device_support import requires_cuda

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


@pytest.mark.parametrize("resize", RESIZES[:4], ids=lambda r: str(r))
@pytest.mark.parametrize("device", [pytest.param("cuda", marks=requires_cuda)])
def test_lanczos_on_cuda_matches_cpu(device, resize):
    """On any torch (the GPU machine's 2.11 has no lanczos to compare with): the cuda result and input
    gradient equal the cpu path's, which test_lanczos_matches_torch checks against torch where it can."""
    x = torch.randn(2, 2, 9, 8, dtype=torch.float64)

    def run(dev: str, weight: np.ndarray | None = None) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        a = genesis.tensor(x.numpy(), device=dev, requires_grad=True)
        y = F.interpolate(a, mode="lanczos", antialias=True, **resize)
        if weight is None:
            weight = np.random.default_rng(1).standard_normal(tuple(y.shape))
        (y * genesis.tensor(weight, device=dev)).sum().backward()
        return y.detach().cpu().numpy(), a.grad.cpu().numpy(), weight

    cpu_y, cpu_grad, weight = run("cpu")
    dev_y, dev_grad, _ = run(device, weight)
    np.testing.assert_allclose(dev_y, cpu_y, rtol=1e-12, atol=1e-12)
    np.testing.assert_allclose(dev_grad, cpu_grad, rtol=1e-12, atol=1e-12)


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
