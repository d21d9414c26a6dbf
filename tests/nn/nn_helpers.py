"""Shared helpers of the nn tests: torch <-> genesis tensors and modules with the same weights."""

from __future__ import annotations

import numpy as np
import torch

import genesis

TOL = {torch.float64: dict(rtol=1e-7, atol=1e-9), torch.float32: dict(rtol=1e-5, atol=1e-6)}


def g(t: torch.Tensor, device, requires_grad: bool = False) -> genesis.Tensor:
    return genesis.tensor(t.detach().cpu().numpy(), device=device, requires_grad=requires_grad)


def copy_weights(src: torch.nn.Module, dst: genesis.nn.Module) -> None:
    """Load torch's parameters into the genesis module with the same structure."""
    with genesis.no_grad():
        for (tn, tp), (gn, gp) in zip(src.named_parameters(), dst.named_parameters(), strict=True):
            assert tn == gn, (tn, gn)
            gp.copy_(g(tp, gp.device).to(dtype=gp.dtype))


def assert_close(actual, expected: torch.Tensor, **tol) -> None:
    assert tuple(actual.shape) == tuple(expected.shape), (tuple(actual.shape), tuple(expected.shape))
    assert actual.dtype.torch == expected.dtype, (actual.dtype, expected.dtype)
    tol = tol or TOL[expected.dtype]
    got = torch.from_numpy(np.array(actual.detach().cpu().numpy()))
    torch.testing.assert_close(got, expected.detach().cpu(), **tol)
