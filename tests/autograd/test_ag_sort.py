"""Sorting (functions/sort.py): gradients of sort and topk against torch in float64, on every device
(each value's gradient goes back to where it came from), gradcheck / gradgradcheck; indices and argsort
carry no gradient."""

from __future__ import annotations

import pytest
import torch
from ag_helpers import assert_close, compare, to_genesis, values

import genesis
from genesis.autograd import gradcheck, gradgradcheck


def _grad(x):
    return x.detach().requires_grad_()


@pytest.mark.parametrize("dim", [0, -1])
@pytest.mark.parametrize("descending", [False, True])
def test_sort_grad(device, dim, descending):
    x = _grad(values((4, 6)))
    compare(device, lambda x: x.sort(dim, descending), [x])


def test_sort_grad_zero_d_and_empty(device):
    compare(device, lambda x: x.sort(0), [_grad(values(()))])
    compare(device, lambda x: x.sort(-1)[0].sum(), [_grad(values((0, 3)))])


@pytest.mark.parametrize("k", [1, 3, 6])
@pytest.mark.parametrize("largest", [True, False])
def test_topk_grad(device, k, largest):
    x = _grad(values((4, 6)))
    compare(device, lambda x: x.topk(k, -1, largest), [x])
    compare(device, lambda x: x.t().topk(2, 0, largest), [x])  # a transposed input, along dim 0


def test_indices_and_argsort_have_no_grad(device):
    x = genesis.randn(4, 5, dtype="float64", device=device, requires_grad=True)
    values_, indices = x.sort(1)
    assert values_.requires_grad and not indices.requires_grad and indices.dtype == genesis.int64
    top = x.topk(2)
    assert top.values.requires_grad and not top.indices.requires_grad
    assert not x.argsort(0).requires_grad
    xt = torch.tensor(x.detach().cpu().numpy())
    assert_close(x.argsort(0), xt.argsort(0))


GRADCHECK = [
    ("sort", lambda x: x.sort(0, descending=True)[0]),
    ("topk", lambda x: x.topk(2, dim=1, largest=False)[0]),
]


@pytest.mark.parametrize("case", GRADCHECK, ids=[c[0] for c in GRADCHECK])
def test_gradcheck(device, case):
    _, fn = case
    x = to_genesis(values((3, 4)), device, requires_grad=True)
    assert gradcheck(fn, [x], eps=1e-6, atol=1e-5, rtol=1e-3)


@pytest.mark.parametrize("case", GRADCHECK, ids=[c[0] for c in GRADCHECK])
def test_gradgradcheck(device, case):
    _, fn = case
    x = to_genesis(values((3, 4)), device, requires_grad=True)
    # squared, so that the second derivative is not identically zero
    assert gradgradcheck(lambda x: fn(x) ** 2, [x], eps=1e-6, atol=1e-5, rtol=1e-3)
