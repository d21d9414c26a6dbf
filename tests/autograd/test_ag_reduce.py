"""Reductions (functions/reduce.py) against torch: forward values and every input's gradient (float64),
gradcheck and gradgradcheck; prod through zeros; vector norms (Tensor.norm / vector_norm,
genesis.linalg.vector_norm) at every order, ties and half types. The case tables and their harness:
ag_helpers.py."""

from __future__ import annotations

import math

import pytest
import torch
from ag_helpers import (
    CPU,
    CUDA,
    I,
    assert_close,
    check_forward_and_gradients,
    check_gradcheck,
    check_gradgradcheck,
    params,
    to_genesis,
    values,
)

import genesis
from genesis.autograd import gradcheck, gradgradcheck

CASES = [
    ("sum", lambda lib, a: a.sum(), [I((3, 4), layout="t")]),
    ("sum-dim", lambda lib, a: a.sum(1), [I((2, 3, 4))]),
    ("sum-dims-keep", lambda lib, a: a.sum((0, 2), keepdim=True), [I((2, 3, 4))]),
    ("mean", lambda lib, a: a.mean(), [I((3, 4))]),
    ("mean-dim", lambda lib, a: a.mean(-1, keepdim=True), [I((4, 3), layout="t")]),
    ("amax", lambda lib, a: a.amax(1), [I((3, 4))]),
    ("amax-ties", lambda lib, a: a.amax((0, 1)), [I((3, 4), domain="ties")]),
    ("amax-all-ties", lambda lib, a: a.amax(), [I((2, 5), domain="ties")]),
    ("max-all", lambda lib, a: a.max(), [I((3, 4))]),
    ("max-dim", lambda lib, a: a.max(1).values, [I((3, 4))]),
    ("max-dim-keep", lambda lib, a: a.max(0, keepdim=True)[0], [I((4, 3), layout="t")]),
    ("min-dim", lambda lib, a: a.min(-1).values, [I((2, 3, 4))]),
    ("var", lambda lib, a: a.var(), [I((3, 4))]),
    ("var-dim", lambda lib, a: a.var(1, keepdim=True), [I((3, 4), layout="t")]),
    ("var-unbiased-false", lambda lib, a: a.var(0, unbiased=False), [I((3, 4))]),
    ("std", lambda lib, a: a.std(1), [I((3, 4))]),
    ("logsumexp", lambda lib, a: a.logsumexp(1), [I((3, 4))]),
    ("logsumexp-dims", lambda lib, a: a.logsumexp((0, 2), keepdim=True), [I((2, 3, 4))]),
    ("prod", lambda lib, a: a.prod(), [I((2, 3), layout="t")]),
    ("prod-dim", lambda lib, a: a.prod(1), [I((3, 4))]),
    ("prod-dim-keep", lambda lib, a: a.prod(0, keepdim=True), [I((4, 3), layout="t")]),
    ("prod-neg-dim", lambda lib, a: a.prod(-2), [I((2, 3, 4))]),
    ("prod-zeros", lambda lib, a: a.prod(1), [I((3, 4), domain="zeros")]),
    ("prod-zeros-keep", lambda lib, a: a.prod(-1, keepdim=True), [I((3, 4), domain="zeros")]),
    ("prod-zeros-t", lambda lib, a: a.prod(0), [I((4, 3), domain="zeros", layout="t")]),
    ("prod-all-with-a-zero", lambda lib, a: a[1].prod(), [I((3, 4), domain="zeros")]),
]


@pytest.mark.parametrize("case,device", params(CASES))
def test_forward_and_gradients_match_torch(case, device):
    check_forward_and_gradients(case, device)


# Finite differences across a tie measure nothing: those cases are checked by the torch parity test only.
GRADCHECK_SKIP = {"amax-ties", "amax-all-ties"}
GC_PARAMS = params([c for c in CASES if c[0] not in GRADCHECK_SKIP])


@pytest.mark.parametrize("case,device", GC_PARAMS)
def test_gradcheck(case, device):
    check_gradcheck(case, device)


@pytest.mark.parametrize("case,device", GC_PARAMS)
def test_gradgradcheck(case, device):
    check_gradgradcheck(case, device)


def test_integer_prod_promotes_as_torch(device):
    ti = torch.randint(1, 6, (3, 4), dtype=torch.int32)
    assert_close(to_genesis(ti, device).prod(1), ti.prod(1))


def test_prod_bad_dim_raises_like_torch(device):
    with pytest.raises(TypeError):
        to_genesis(values((3,), dtype=torch.float32), device).prod((0,))
    with pytest.raises(TypeError):
        values((3,)).prod((0,))


# ---------------------------------------------------------------- vector norms
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
