"""The cross_entropy NDArray ops (per-row loss / logsumexp / target weight, and the logits' gradient)
against torch's cross_entropy in float64, on both backends."""

from __future__ import annotations

import pytest
import torch
from nd_helpers import assert_same, from_torch, random_tensor

F32, F64, BF16 = torch.float32, torch.float64, torch.bfloat16


def _targets(rows, n, ignore):
    t = torch.randint(0, n, rows)
    t.view(-1)[::3] = ignore
    return t


@pytest.mark.parametrize("dtype", [F32, F64])
@pytest.mark.parametrize("weighted,eps", [(False, 0.0), (True, 0.0), (False, 0.3), (True, 0.2)])
def test_cross_entropy_rows_and_backward(device, dtype, weighted, eps):
    n = 11
    t = random_tensor((2, 5, n), dtype) * 3
    target = _targets((2, 5), n, ignore=4)
    w = torch.rand(n, dtype=dtype) + 0.5 if weighted else None
    a = from_torch(t, device)
    loss, lse, row_weight = a.cross_entropy(
        from_torch(target, device), None if w is None else from_torch(w, device), 4, eps
    )
    x = t.clone().requires_grad_()
    expected = torch.nn.functional.cross_entropy(
        x.movedim(-1, 1), target, w, ignore_index=4, reduction="none", label_smoothing=eps
    )
    tol = {} if dtype == F64 else dict(rtol=1e-5, atol=1e-6)
    assert_same(loss, expected.detach(), **tol)
    assert_same(lse, torch.logsumexp(t, -1), **tol)
    kept = (target != 4).to(dtype)
    assert_same(row_weight, (kept if w is None else w[target.clamp(0, n - 1)] * kept), **tol)
    g = random_tensor((2, 5), dtype)
    (dx,) = torch.autograd.grad(expected, x, g)
    got = a.cross_entropy_backward(
        from_torch(target, device),
        None if w is None else from_torch(w, device),
        lse,
        from_torch(g, device),
        None,
        4,
        eps,
    )
    assert_same(got, dx, **tol)


def test_cross_entropy_backward_mean_in_place_bfloat16(device):
    n = 37
    t = random_tensor((6, n), F32) * 3
    target = _targets((6,), n, ignore=-100)
    a = from_torch(t.to(BF16), device)
    loss, lse, row_weight = a.cross_entropy(from_torch(target, device), None, -100, 0.0)
    assert loss.dtype.name == "float32" and lse.dtype.name == "float32"
    total = row_weight.sum()
    x = t.to(BF16).double().requires_grad_()
    expected = torch.nn.functional.cross_entropy(x, target)
    expected.backward()
    grad = from_torch(torch.ones((), dtype=F32), device)
    got = a.cross_entropy_backward(from_torch(target, device), None, lse, grad, total, -100, 0.0, out=a)
    assert got.dtype.name == "bfloat16"
    assert_same(a, x.grad.to(BF16), rtol=1e-2, atol=1e-5)  # written in place of the logits: one bf16 rounding


def test_cross_entropy_out_of_range_target_is_index_error(device):
    a = from_torch(random_tensor((3, 5), F32), device)
    with pytest.raises(IndexError, match="Target 5 is out of bounds"):
        a.cross_entropy(from_torch(torch.tensor([0, 5, 1]), device), None, -100, 0.0)


def test_cross_entropy_target_shape_mismatch(device):
    a = from_torch(random_tensor((3, 5), F32), device)
    with pytest.raises(ValueError, match=r"target of shape \[2\] does not match logits of shape \[3, 5\]"):
        a.cross_entropy(from_torch(torch.tensor([0, 1]), device), None, -100, 0.0)
