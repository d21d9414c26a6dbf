"""Gradients through advanced indexing (repeated indices accumulate, overwritten slots get zero)
and DLPack at the Tensor level, against torch on every device."""

from __future__ import annotations

import pytest
import torch
from ag_helpers import assert_close, to_genesis, values

import genesis


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


def test_tensor_dlpack_round_trip(device):
    xt = torch.randn(3, 4).to(device)
    x = genesis.from_dlpack(xt)
    assert isinstance(x, genesis.Tensor) and not x.requires_grad
    assert x.data_ptr() == xt.data_ptr()
    back = torch.from_dlpack(x)
    assert back.data_ptr() == xt.data_ptr()
    torch.testing.assert_close(back, xt)


def test_dlpack_refuses_tensors_that_require_grad(device):
    x = genesis.randn(3, device=device, requires_grad=True)
    with pytest.raises(RuntimeError, match="detach"):
        torch.from_dlpack(x)
    assert torch.from_dlpack(x.detach()).shape == (3,)
