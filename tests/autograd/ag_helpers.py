"""Shared helpers of the autograd tests: devices, tensors made from the same values in torch and genesis."""

from __future__ import annotations

import numpy as np
import pytest
import torch

import genesis
from device_support import requires_cuda

CPU = "cpu"
CUDA = pytest.param("cuda", marks=requires_cuda)

TOL = {
    torch.float64: dict(rtol=1e-7, atol=1e-9),
    torch.float32: dict(rtol=1.3e-6, atol=1e-5),
}


def values(shape, domain: str = "any", dtype=torch.float64) -> torch.Tensor:
    """Fresh random values for an op's input (never zeros).

    any: normal, kept away from 0 (so relu / abs / sign have a gradient); pos: uniform in [0.5, 2);
    ties: small integers, so that max / maximum see equal elements.
    """
    if domain == "pos":
        return (torch.rand(shape, dtype=torch.float64) * 1.5 + 0.5).to(dtype)
    if domain == "ties":
        return torch.randint(-2, 3, shape).to(dtype)
    t = torch.randn(shape, dtype=torch.float64)
    t = t + 0.05 * torch.where(t >= 0, 1.0, -1.0)  # |t| >= 0.05, and still no ties between draws
    return t.to(dtype)


def to_genesis(t: torch.Tensor, device, requires_grad: bool = False) -> genesis.Tensor:
    """A genesis leaf with the values (and the dtype) of a torch tensor."""
    return genesis.tensor(t.detach().cpu().numpy(), device=device, requires_grad=requires_grad)


def assert_close(actual, expected: torch.Tensor, **tol) -> None:
    """A genesis Tensor equals a torch tensor: shape, dtype and values."""
    assert tuple(actual.shape) == tuple(expected.shape), (tuple(actual.shape), tuple(expected.shape))
    assert actual.dtype.torch == expected.dtype, (actual.dtype, expected.dtype)
    tol = tol or TOL.get(expected.dtype, dict(rtol=0, atol=0))
    got = torch.from_numpy(np.array(actual.detach().cpu().numpy()))
    torch.testing.assert_close(got, expected.detach().cpu(), **tol)


def make_inputs(specs, device, make_values=values):
    """Leaves (torch, genesis) and the op inputs, from (shape, requires_grad, domain, layout) specs.

    Layout "t" stores the transposed shape and hands the op a transposed (non-contiguous) view.
    """
    t_leaves, g_leaves, t_inputs, g_inputs = [], [], [], []
    for shape, rg, domain, layout in specs:
        stored = shape[:-2] + (shape[-1], shape[-2]) if layout == "t" else shape
        v = make_values(stored, domain)
        tl = v.clone().requires_grad_(rg)
        gl = to_genesis(v, device, requires_grad=rg)
        t_leaves.append(tl)
        g_leaves.append(gl)
        t_inputs.append(tl.mT if layout == "t" else tl)
        g_inputs.append(gl.mT if layout == "t" else gl)
        if layout == "t":
            assert not g_inputs[-1].is_contiguous()
    return t_leaves, g_leaves, t_inputs, g_inputs
