"""Vector norms (Tensor.norm / vector_norm, genesis.linalg.vector_norm): forward and gradients against torch."""

from __future__ import annotations

import math

import pytest
import torch
from ag_helpers import CPU, CUDA, assert_close, to_genesis, values

import genesis
from genesis.autograd import gradcheck, gradgradcheck

DEVICES = [CPU, CUDA]
ORDS = [2, 1, 3, 0.5, math.inf, -math.inf, 0]


@pytest.mark.parametrize("device", DEVICES)
@pytest.mark.parametrize("ord", ORDS)
@pytest.mark.parametrize("dim,keepdim", [(None, False), (1, False), ((0, 2), True), (-1, True)])
def test_vector_norm_forward_and_grad(device, ord, dim, keepdim):
    x = values((4, 5, 6))
    x[1, 2, 3] = 0.0  # a zero element: p = 0 counts it, |0|^(p-1) must not poison the gradient
    tx = x.clone().requires_grad_()
    gx = to_genesis(x, device, requires_grad=True)
    ty = torch.linalg.vector_norm(tx, ord=ord, dim=dim, keepdim=keepdim)
    gy = gx.vector_norm(ord, dim, keepdim)
    assert_close(gy, ty)
    w = torch.randn(ty.shape, dtype=torch.float64)
    (ty * w).sum().backward()
    (gy * to_genesis(w, device)).sum().backward()
    if ord == 0:  # torch gives the count of non-zeros no gradient at all
        assert tx.grad is None and gx.grad is None
    else:
        assert_close(gx.grad, tx.grad)


@pytest.mark.parametrize("device", DEVICES)
def test_norm_ties_zero_norm_and_fro(device):
    x = torch.tensor([[3.0, -3.0, 1.0], [0.0, 0.0, 0.0]], dtype=torch.float64)
    for ord in (math.inf, 2, 3):
        tx = x.clone().requires_grad_()
        gx = to_genesis(x, device, requires_grad=True)
        torch.linalg.vector_norm(tx, ord=ord, dim=1).sum().backward()
        gx.vector_norm(ord, 1).sum().backward()
        assert_close(gx.grad, tx.grad)  # ties share the inf-norm gradient; an all-zero row gets 0
    y = values((3, 4), dtype=torch.float32)
    assert_close(to_genesis(y, device).norm(), torch.norm(y))
    assert_close(to_genesis(y, device).norm(p="fro", dim=0), torch.norm(y, p="fro", dim=0))
    assert_close(genesis.linalg.vector_norm(to_genesis(y, device), 1.5, dim=1), torch.linalg.vector_norm(y, 1.5, dim=1))


@pytest.mark.parametrize("device", DEVICES)
@pytest.mark.parametrize("dtype", [torch.float16, torch.bfloat16])
def test_norm_half_types(device, dtype):
    x = values((7, 33), dtype=torch.float32)
    got = to_genesis(x, device).to(dtype=getattr(genesis, str(dtype)[6:])).vector_norm(2, 1)
    # Accumulated in float32, rounded once to the half type: within one half-type ulp of torch
    # (2^-10 relative for float16, 2^-7 for bfloat16; the norms here are about 5, so no atol).
    assert got.dtype.torch == dtype
    ref = torch.linalg.vector_norm(x.to(dtype), dim=1).float()
    assert_close(got.to(dtype=genesis.float32), ref, rtol=2e-3 if dtype == torch.float16 else 1.6e-2, atol=0)


@pytest.mark.parametrize("device", DEVICES)
def test_norm_bad_input(device):
    with pytest.raises(RuntimeError, match="floating point"):
        genesis.arange(5, device=device).norm()
    with pytest.raises(RuntimeError, match="identity"):
        genesis.zeros(0, 3, device=device).vector_norm(math.inf, 0)
    with pytest.raises(RuntimeError, match="matrix norm"):
        genesis.ones(2, 2, device=device).norm(p="nuc")


@pytest.mark.parametrize("device", DEVICES)
@pytest.mark.parametrize("ord", [2, 1, 3, math.inf])
def test_norm_gradcheck(device, ord):
    x = to_genesis(values((3, 4)), device, requires_grad=True)
    assert gradcheck(lambda t: t.vector_norm(ord, 1), (x,))
    if ord in (2, 3):
        assert gradgradcheck(lambda t: t.vector_norm(ord, 1), (x,))
