"""x[index] and x[index] = value (functions/getitem.py) against torch: basic indices (views), advanced
ones (repeated indices accumulate their gradients, overwritten slots get zero), forward values and
gradients (float64), gradcheck and gradgradcheck."""

from __future__ import annotations

import pytest
import torch
from ag_helpers import (
    I,
    assert_close,
    check_forward_and_gradients,
    check_gradcheck,
    check_gradgradcheck,
    leaf,
    params,
    to_genesis,
    values,
)

import genesis


def _setitem(lib, a, v):
    y = a * 1
    y[1:3, ::2] = v
    return y


def _setitem_scalar(lib, a):
    y = a * 2
    y[:, 1] = 0.5
    return y


CASES = [
    ("getitem-basic", lambda lib, a: a[1:, None, ::2], [I((3, 4))]),
    ("getitem-int-ellipsis", lambda lib, a: a[-1, ..., 1:3], [I((2, 3, 4))]),
    ("getitem-t", lambda lib, a: a[::2, 1], [I((3, 4), layout="t")]),
    ("setitem", _setitem, [I((3, 4)), I((2, 2))]),
    ("setitem-nograd-base", _setitem, [I((3, 4), False), I((2,))]),
    ("setitem-nograd-value", _setitem, [I((3, 4)), I((2, 2), False)]),
    ("setitem-scalar", _setitem_scalar, [I((3, 4))]),
]

# Advanced indexing with repeated integer indices (gradients must accumulate): cpu only for now.
CPU_ONLY_CASES = [
    ("getitem-repeated", lambda lib, a: a[lib.tensor([0, 2, 0, 0])], [I((3, 4))]),
    ("getitem-repeated-2d", lambda lib, a: a[lib.tensor([1, 1, 0]), lib.tensor([3, 3, 2])], [I((3, 4))]),
    ("getitem-mixed", lambda lib, a: a[:, lib.tensor([[0, 1], [1, 1]])], [I((3, 4), layout="t")]),
    ("getitem-mask", lambda lib, a: a[a > 0], [I((3, 4))]),
]


@pytest.mark.parametrize("case,device", params(CASES) + params(CPU_ONLY_CASES, ("cpu",)))
def test_forward_and_gradients_match_torch(case, device):
    check_forward_and_gradients(case, device)


# The mask case (its mask computed from the input itself) is left to the torch parity test, as before.
GC_PARAMS = params(CASES) + params([c for c in CPU_ONLY_CASES if c[0] != "getitem-mask"], ("cpu",))


@pytest.mark.parametrize("case,device", GC_PARAMS)
def test_gradcheck(case, device):
    check_gradcheck(case, device)


@pytest.mark.parametrize("case,device", GC_PARAMS)
def test_gradgradcheck(case, device):
    check_gradgradcheck(case, device)


def test_getitem_repeated_indices_accumulate(device):
    xt = values((5, 3)).requires_grad_()
    idx = torch.tensor([0, 3, 3, -1, 0, 0])
    gt = values((6, 3))
    xt[idx].backward(gt)
    x = to_genesis(xt, device, requires_grad=True)
    y = x[genesis.tensor(idx.numpy(), device=device)]
    assert_close(y, xt[idx])
    y.backward(to_genesis(gt, device))
    assert_close(x.grad, xt.grad)


def test_getitem_two_indices_and_mask_grad(device):
    xt = values((4, 5, 3)).requires_grad_()
    i, j = torch.tensor([[0, 3], [3, 3]]), torch.tensor([1, 1])
    mask = torch.tensor([True, False, True, True])
    (xt[i, :, j].sum() * 2 + (xt[mask] ** 2).sum()).backward()
    x = to_genesis(xt, device, requires_grad=True)
    gi, gj = genesis.tensor(i.numpy(), device=device), genesis.tensor(j.numpy(), device=device)
    gm = genesis.tensor(mask.numpy(), device=device)
    (x[gi, :, gj].sum() * 2 + (x[gm] ** 2).sum()).backward()
    assert_close(x.grad, xt.grad)


def test_setitem_tensor_indices_grad(device):
    at = values((5, 4)).requires_grad_()
    vt = values((2, 4)).requires_grad_()
    idx = torch.tensor([1, 3])
    yt = at * 1.0
    yt[idx] = vt * 3.0
    gt = values((5, 4))
    yt.backward(gt)
    a = to_genesis(at, device, requires_grad=True)
    v = to_genesis(vt, device, requires_grad=True)
    y = a * 1.0
    y[genesis.tensor(idx.numpy(), device=device)] = v * 3.0
    assert_close(y, yt)
    y.backward(to_genesis(gt, device))
    assert_close(a.grad, at.grad)  # the overwritten rows get zero
    assert_close(v.grad, vt.grad)


def test_setitem_gives_zero_gradient_to_overwritten_slots(device):
    tx, x = leaf((3, 4), device)
    tv, v = leaf((4,), device)
    y, ty = x * 2, tx * 2
    y[1] = v
    ty[1] = tv
    y[:, 0] = 7.0
    ty[:, 0] = 7.0
    w = values((3, 4))
    (y * to_genesis(w, device)).sum().backward()
    (ty * w).sum().backward()
    assert_close(x.grad, tx.grad)
    assert_close(v.grad, tv.grad)
    grad = torch.from_numpy(x.grad.cpu().numpy())
    assert (grad[1] == 0).all() and (grad[:, 0] == 0).all() and (grad[0, 1:] != 0).all()
