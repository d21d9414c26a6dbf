"""nn.CrossMapLRN2d against torch's legacy layer in float64: its forward (channel 0 kept in every window)
and its hand-written backward (not the forward's exact derivative), for odd and even window sizes, windows
wider than the channels, the repr and the errors."""

from __future__ import annotations

import pytest
import torch
from nn_helpers import check_module

import genesis
import genesis.nn as nn

CASES = [
    (5, 0.5, 0.75, 1.0, 7),  # odd window, more channels than it
    (4, 0.3, 0.6, 2.0, 6),  # even window
    (3, 1.0, 0.9, 1.5, 2),  # window wider than the channels
    (6, 0.2, 0.5, 1.0, 3),
    (2, 1e-4, 0.75, 1.0, 5),  # torch's defaults but the size
]


@pytest.mark.parametrize("size,alpha,beta,k,channels", CASES)
def test_crossmaplrn_matches_torch(device, size, alpha, beta, k, channels):
    tmod = torch.nn.CrossMapLRN2d(size, alpha=alpha, beta=beta, k=k)
    gmod = nn.CrossMapLRN2d(size, alpha=alpha, beta=beta, k=k)
    assert repr(gmod) == repr(tmod)
    x = torch.randn(2, channels, 3, 4, dtype=torch.float64) * 2
    check_module(tmod, gmod, [x], device)


def test_gradient_is_torchs_not_the_exact_one(device):
    """The reproduced backward differs from the forward's true derivative, exactly as torch's does."""
    x = torch.randn(1, 6, 2, 2, dtype=torch.float64)
    legacy = torch.nn.CrossMapLRN2d(3, alpha=1.0, beta=0.75, k=1.0)
    eps = 1e-6  # the exact derivative by central differences of torch's forward
    steps = torch.eye(x.numel(), dtype=torch.float64).reshape(-1, *x.shape) * eps
    with torch.no_grad():
        exact = torch.stack([(legacy(x + h).sum() - legacy(x - h).sum()) / (2 * eps) for h in steps]).reshape(x.shape)
    gx = genesis.tensor(x.numpy(), device=device, requires_grad=True)
    nn.CrossMapLRN2d(3, alpha=1.0, beta=0.75, k=1.0)(gx).sum().backward()
    tx = x.clone().requires_grad_()
    legacy(tx).sum().backward()
    got = torch.from_numpy(gx.grad.cpu().numpy())
    torch.testing.assert_close(got, tx.grad)
    assert not torch.allclose(got, exact)


def test_crossmaplrn_float32_defaults(device):
    tmod, gmod = torch.nn.CrossMapLRN2d(3), nn.CrossMapLRN2d(3)
    assert repr(gmod) == "CrossMapLRN2d(3, alpha=0.0001, beta=0.75, k=1)"
    check_module(tmod, gmod, [torch.randn(2, 4, 3, 3) * 10], device)


def test_crossmaplrn_wants_4d(device):
    with pytest.raises(ValueError, match=r"CrossMapLRN2d: Expected input to be 4D, got 3D instead\."):
        nn.CrossMapLRN2d(3)(genesis.randn(2, 3, 4, device=device))


def test_import_paths():
    from genesis.nn.modules.normalization import CrossMapLRN2d

    assert CrossMapLRN2d is nn.CrossMapLRN2d
